package pyvalue

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DecodeReplace is Python's bytes.decode("utf-8", "replace"): each maximal
// invalid subpart (a lead byte and the continuation bytes that could still
// have completed it) becomes one U+FFFD, as Python (and the Unicode
// standard's recommended practice) does. Go's strings.ToValidUTF8 replaces
// a whole run with one, and ranging over a string gives one per byte of a
// truncated sequence: both differ from Python.
func DecodeReplace(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		n, valid := SequenceAt(s[i:])
		if n > 0 && valid == n {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += max(valid, 1)
	}
	return b.String()
}

// SequenceAt reads the UTF-8 sequence at the start of s (not empty): n is
// the length its first byte announces (0 for a byte that starts none) and
// valid how many of its bytes are there and valid, the lead byte
// included. A whole sequence has valid == n; a broken one's first valid
// bytes are what Python's codec reports (or replaces) as one.
func SequenceAt(s string) (n, valid int) {
	c := s[0]
	if c < 0x80 {
		return 1, 1
	}
	lo, hi := byte(0x80), byte(0xBF) // the second byte's range
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c == 0xED:
		n, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		n = 3
	case c == 0xF0:
		n, lo = 4, 0x90
	case c == 0xF4:
		n, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	default:
		return 0, 0
	}
	valid = 1
	for ; valid < n && valid < len(s); valid++ {
		if s[valid] < lo || s[valid] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n, valid
}

// UnicodeDecodeError is Python's UnicodeDecodeError for the utf-8 codec.
type UnicodeDecodeError struct {
	start, end int // the offending bytes, [start, end)
	b          byte
	reason     string
}

func (e *UnicodeDecodeError) Error() string {
	if e.end-e.start == 1 {
		return fmt.Sprintf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", e.b, e.start, e.reason)
	}
	return fmt.Sprintf("'utf-8' codec can't decode bytes in position %d-%d: %s", e.start, e.end-1, e.reason)
}

// DecodeUTF8 is bytes.decode("utf-8") in strict mode: it returns the first
// error with CPython's positions and reasons ("invalid start byte",
// "invalid continuation byte", "unexpected end of data").
func DecodeUTF8(b []byte) (string, error) {
	s := string(b)
	for i := 0; i < len(s); {
		n, valid := SequenceAt(s[i:])
		switch {
		case n == 0:
			return "", &UnicodeDecodeError{start: i, end: i + 1, b: s[i], reason: "invalid start byte"}
		case valid < n && i+valid == len(s):
			return "", &UnicodeDecodeError{start: i, end: len(s), b: s[i], reason: "unexpected end of data"}
		case valid < n:
			return "", &UnicodeDecodeError{start: i, end: i + valid, b: s[i], reason: "invalid continuation byte"}
		}
		i += n
	}
	return s, nil
}

// Text is what subprocess gives for captured output in text mode: strict
// UTF-8, then universal newlines ("\r\n" and a lone "\r" become "\n").
func Text(b []byte) (string, error) {
	s, err := DecodeUTF8(b)
	if err != nil {
		return "", err
	}
	return UniversalNewlines(s), nil
}
