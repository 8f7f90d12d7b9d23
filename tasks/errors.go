package tasks

import (
	"errors"
	"fmt"
)

var (
	// ErrBadTask: a task file OSWorld could not load either.
	ErrBadTask = errors.New("bad task file")
	// ErrBadFilter: a domain or id filter that selects nothing.
	ErrBadFilter = errors.New("bad filter")
	// ErrNeedsFileCache: a download's file is not in the local file cache.
	ErrNeedsFileCache = errors.New("file not in the file cache")
	// ErrMirrorMismatch: a mirrored file whose sha256 is not its manifest's.
	ErrMirrorMismatch = errors.New("file differs from the mirror's manifest")
	// ErrNotNative: a setup step, getter or metric the native runner does not
	// implement (run the task with --via-python for OSWorld's own).
	ErrNotNative = errors.New("not implemented natively")
	// ErrUnsupported: something a drums desktop cannot provide at all.
	ErrUnsupported = errors.New("unsupported")
	// ErrFileNotFound is OSWorld's FileNotFoundError in a result getter: the
	// evaluation scores 0 (under "and") instead of failing.
	ErrFileNotFound = errors.New("file not found")
	// ErrGuest: the guest answered with an error status.
	ErrGuest = errors.New("guest error")
	// ErrMetric: a metric raised (OSWorld's evaluate() would propagate it).
	ErrMetric = errors.New("metric failed")
)

// GuestError is a non-200 answer of the guest server.
type GuestError struct {
	Endpoint string
	Status   int
	Body     string
}

func (e *GuestError) Error() string {
	return fmt.Sprintf("guest %s answered %d: %s", e.Endpoint, e.Status, e.Body)
}

// Unwrap lets errors.Is(err, ErrGuest) match.
func (e *GuestError) Unwrap() error { return ErrGuest }
