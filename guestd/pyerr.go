package guestd

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/drums-dev/drums/internal/pyfmt"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// Where upstream's Python text reaches a client (str(exception) in an error
// body, captured output), guestd produces the same text. This file holds
// those texts: OSError, UnicodeDecodeError and the decoding of captured
// output.

// osError is a Python OSError as str() prints it:
// "[Errno 2] No such file or directory: 'name'".
type osError struct {
	errno    syscall.Errno
	filename string
	named    bool
}

func newOSError(errno syscall.Errno, filename string) *osError {
	return &osError{errno: errno, filename: filename, named: true}
}

func (e *osError) Error() string {
	s := fmt.Sprintf("[Errno %d] %s", int(e.errno), strerror(e.errno))
	if e.named {
		s += ": " + pyfmt.Str(e.filename)
	}
	return s
}

func (e *osError) Unwrap() error { return e.errno }

// asOSError turns a Go filesystem or exec error into the OSError Python
// would raise for the same call on filename. Errors without an errno keep
// their Go text.
func asOSError(err error, filename string) error {
	var oe *osError
	if errors.As(err, &oe) {
		return oe
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return newOSError(errno, filename)
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

// decodeError is Python's UnicodeDecodeError for the utf-8 codec.
type decodeError struct {
	start, end int // the offending bytes, [start, end)
	b          byte
	reason     string
}

func (e *decodeError) Error() string {
	if e.end-e.start == 1 {
		return fmt.Sprintf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", e.b, e.start, e.reason)
	}
	return fmt.Sprintf("'utf-8' codec can't decode bytes in position %d-%d: %s", e.start, e.end-1, e.reason)
}

// decodeUTF8 is bytes.decode("utf-8") in strict mode: it returns the first
// error with CPython's positions and reasons ("invalid start byte",
// "invalid continuation byte", "unexpected end of data").
func decodeUTF8(b []byte) (string, error) {
	s := string(b)
	for i := 0; i < len(s); {
		n, valid := pyvalue.SequenceAt(s[i:])
		switch {
		case n == 0:
			return "", &decodeError{start: i, end: i + 1, b: s[i], reason: "invalid start byte"}
		case valid < n && i+valid == len(s):
			return "", &decodeError{start: i, end: len(s), b: s[i], reason: "unexpected end of data"}
		case valid < n:
			return "", &decodeError{start: i, end: i + valid, b: s[i], reason: "invalid continuation byte"}
		}
		i += n
	}
	return s, nil
}

// pyText is what subprocess gives for captured output in text mode: strict
// UTF-8, then universal newlines ("\r\n" and a lone "\r" become "\n").
func pyText(b []byte) (string, error) {
	s, err := decodeUTF8(b)
	if err != nil {
		return "", err
	}
	if strings.IndexByte(s, '\r') < 0 {
		return s, nil
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), nil
}
