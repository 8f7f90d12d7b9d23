package pyvalue

import (
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
