package client

import (
	"errors"
	"fmt"
)

var (
	// ErrStatus: the guest answered with an error status (an *Error).
	ErrStatus = errors.New("guest error")
	// ErrFileNotFound is OSWorld's FileNotFoundError from get_file: the
	// guest has no such file (after GetFile's retries).
	ErrFileNotFound = errors.New("file not found")
)

// Error is a non-200 answer of the guest server.
type Error struct {
	Endpoint string
	Status   int
	Body     string
}

func (e *Error) Error() string {
	return fmt.Sprintf("guest %s answered %d: %s", e.Endpoint, e.Status, e.Body)
}

// Unwrap lets errors.Is(err, ErrStatus) match.
func (e *Error) Unwrap() error { return ErrStatus }
