package pyvalue

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// OSError is a Python OSError as str() prints it:
// "[Errno 2] No such file or directory: 'name'".
type OSError struct {
	Errno    syscall.Errno
	Filename string
	Named    bool // whether str() names the file
}

func NewOSError(errno syscall.Errno, filename string) *OSError {
	return &OSError{Errno: errno, Filename: filename, Named: true}
}

func (e *OSError) Error() string {
	s := fmt.Sprintf("[Errno %d] %s", int(e.Errno), strerror(e.Errno))
	if e.Named {
		s += ": " + ReprStr(e.Filename)
	}
	return s
}

func (e *OSError) Unwrap() error { return e.Errno }

// AsOSError turns a Go filesystem or exec error into the OSError Python
// would raise for the same call on filename. Errors without an errno keep
// their Go text.
func AsOSError(err error, filename string) error {
	var oe *OSError
	if errors.As(err, &oe) {
		return oe
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return NewOSError(errno, filename)
	}
	return err
}

// strerror is glibc's strerror(3): Go's table has the same texts with the
// first letter lower-cased.
func strerror(errno syscall.Errno) string {
	if errno == 133 { // EHWPOISON, missing from Go's table
		return "Memory page has hardware error"
	}
	s := errno.Error()
	if strings.HasPrefix(s, "errno ") {
		return "Unknown error " + strings.TrimPrefix(s, "errno ")
	}
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}
