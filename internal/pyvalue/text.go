package pyvalue

import "strings"

// UniversalNewlines is what Python's text mode does on read.
func UniversalNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// Lines is iterating a text file in Python: lines with their "\n".
func Lines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Splitlines is str.splitlines() for the line breaks text files use.
func Splitlines(s string) []string {
	s = UniversalNewlines(s)
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// Strip is Python's str.strip() with no argument: it removes what
// str.isspace() calls whitespace from both ends.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Rstrip is str.rstrip().
func Rstrip(s string) string { return strings.TrimRightFunc(s, IsSpace) }

// IsSpace is str.isspace() for one character: Unicode White_Space plus the
// separators U+001C–U+001F, which Go's unicode.IsSpace leaves out.
func IsSpace(r rune) bool {
	switch {
	case r >= 0x09 && r <= 0x0D, r >= 0x1C && r <= 0x20, r == 0x85, r == 0xA0,
		r == 0x1680, r >= 0x2000 && r <= 0x200A, r == 0x2028, r == 0x2029,
		r == 0x202F, r == 0x205F, r == 0x3000:
		return true
	}
	return false
}
