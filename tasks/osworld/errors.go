package osworld

import (
	"errors"
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
	// ErrMetric: a metric raised (OSWorld's evaluate() would propagate it).
	ErrMetric = errors.New("metric failed")
)
