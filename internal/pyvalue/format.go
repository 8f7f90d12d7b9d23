package pyvalue

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReprFloat is repr(float): the shortest digits that round-trip, positional when
// the decimal exponent is in [-4, 16) (with ".0" when there is no fraction),
// scientific otherwise with a signed, at least two-digit exponent.
func ReprFloat(v float64) string {
	switch {
	case v != v:
		return "nan"
	case v > 1.7976931348623157e308:
		return "inf"
	case v < -1.7976931348623157e308:
		return "-inf"
	}
	e := strconv.FormatFloat(v, 'e', -1, 64) // "-d.ddde±XX"
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		es := strconv.Itoa(exp)
		if len(es) < 2 {
			es = "0" + es
		}
		return mant + "e" + sign + es
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// ReprStr is repr(str): single quotes unless the text contains a single quote
// and no double quote; backslash, the quote, \t \n \r escaped; other
// non-printable characters as \xNN, \uNNNN or \UNNNNNNNN.
func ReprStr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == utf8.RuneError:
			// Python strings hold no invalid UTF-8; surrogateescape'd
			// bytes would print as \udcXX, which this never sees.
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex(uint32(r), 2))
		case r < 0x7f || printable(r):
			b.WriteRune(r)
		case r <= 0xff:
			b.WriteString(`\x`)
			b.WriteString(hex(uint32(r), 2))
		case r <= 0xffff:
			b.WriteString(`\u`)
			b.WriteString(hex(uint32(r), 4))
		default:
			b.WriteString(`\U`)
			b.WriteString(hex(uint32(r), 8))
		}
	}
	b.WriteByte(q)
	return b.String()
}

// ReprStrList is repr(list of str): "['a', 'b']".
func ReprStrList(items []string) string {
	parts := make([]string, len(items))
	for i, s := range items {
		parts[i] = ReprStr(s)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// printable approximates str.isprintable for non-ASCII: letters, marks,
// numbers, punctuation and symbols print; separators other than the plain
// space, controls, formats, surrogates and unassigned code points do not.
func printable(r rune) bool {
	if unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return false
	}
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S)
}

func hex(v uint32, width int) string {
	s := strconv.FormatUint(uint64(v), 16)
	for len(s) < width {
		s = "0" + s
	}
	return s
}
