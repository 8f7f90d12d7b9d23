package ready

import "errors"

// ErrExited is Line's error when the daemon exited before it printed its
// line.
var ErrExited = errors.New("exited before it was ready")
