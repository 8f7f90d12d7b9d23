package pyvalue

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// numberRE matches a Python number literal (not its sign); a tokenizer
// then checks what may follow it.
var numberRE = regexp.MustCompile(`^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|` +
	`(?:(?:[0-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|[0-9](?:_?[0-9])*\.?)(?:[eE][+-]?[0-9](?:_?[0-9])*)?)`)

// decimalRE is a decimal int Python accepts: no leading zeros except 0…0.
var decimalRE = regexp.MustCompile(`^(?:[1-9](?:_?[0-9])*|0(?:_?0)*)$`)

// LexNumber is the number literal (without a sign) at the start of s, or ""
// when s does not start with one.
func LexNumber(s string) string { return numberRE.FindString(s) }

// NumberLit is a number literal's value: Python's int (Int) or, for a literal
// with a fraction or an exponent, its float (Float, IsFloat set).
type NumberLit struct {
	Int     int64
	Float   float64
	IsFloat bool
}

// Float64 is the number as a float64.
func (n NumberLit) Float64() float64 {
	if n.IsFloat {
		return n.Float
	}
	return float64(n.Int)
}

// NumberLiteral is the value of a number literal (LexNumber's). ok is
// false for what Python's parser rejects (leading zeros) and for an int
// beyond int64, which no caller needs.
func NumberLiteral(lit string) (n NumberLit, ok bool) {
	clean := strings.ReplaceAll(lit, "_", "")
	lower := strings.ToLower(clean)
	isPrefixed := len(lower) > 1 && lower[0] == '0' && strings.ContainsAny(lower[1:2], "xob")
	if !isPrefixed && strings.ContainsAny(lower, ".e") {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return NumberLit{}, false
		}
		return NumberLit{Float: f, IsFloat: true}, true // out of range is inf or 0, as in Python
	}
	if !isPrefixed && !decimalRE.MatchString(lit) {
		return NumberLit{}, false
	}
	i, err := strconv.ParseInt(clean, 0, 64)
	if err != nil {
		return NumberLit{}, false // beyond int64: not ours
	}
	return NumberLit{Int: i}, true
}

// StrLit is a string literal as StringLiteral read it.
type StrLit struct {
	Value string
	Len   int  // its length in bytes in the source, prefix excluded
	Lines int  // the newlines it spans
	Warns bool // Python 3.12+ warns about an escape in it (see StringLiteral)
}

// StringLiteral reads the string literal at the start of s (a quote; its
// prefix, lower-cased, in prefix). Escapes that Python 3.12+ warns about
// (unknown ones, which keep their backslash, and octal above \377) set
// Warns; \N{…}, bytes, f-strings and lone surrogates, which UTF-8 text
// cannot hold, are refused (ok false): a caller that cannot refuse says
// what Python says, a SyntaxError.
func StringLiteral(s, prefix string) (lit StrLit, ok bool) {
	raw := false
	switch prefix {
	case "", "u":
	case "r":
		raw = true
	default:
		return StrLit{}, false
	}
	delim := s[:1]
	if strings.HasPrefix(s, strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	triple := len(delim) == 3
	var b strings.Builder
	i, lines, warns := len(delim), 0, false
	for {
		if i >= len(s) {
			return StrLit{}, false
		}
		if strings.HasPrefix(s[i:], delim) {
			return StrLit{Value: b.String(), Len: i + len(delim), Lines: lines, Warns: warns}, true
		}
		c := s[i]
		switch {
		case c == '\n' && !triple:
			return StrLit{}, false
		case c == '\n':
			lines++
			b.WriteByte('\n')
			i++
		case c == '\\' && i+1 >= len(s):
			return StrLit{}, false
		case c == '\\' && raw:
			// The backslash stays, and the character after it cannot
			// end the string.
			r, n := utf8.DecodeRuneInString(s[i+1:])
			if r == '\n' {
				lines++
			}
			b.WriteByte('\\')
			b.WriteRune(r)
			i += 1 + n
		case c == '\\':
			n, warn, ok := escape(&b, s[i+1:])
			if !ok {
				return StrLit{}, false
			}
			warns = warns || warn
			if s[i+1] == '\n' {
				lines++
			}
			i += 1 + n
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += n
		}
	}
}

// escape decodes the escape sequence at the start of s (after the
// backslash) into b and returns the bytes it used and whether Python 3.12+
// warns about it.
func escape(b *strings.Builder, s string) (n int, warn, ok bool) {
	simple := map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}
	c := s[0]
	if v, ok := simple[c]; ok {
		b.WriteByte(v)
		return 1, false, true
	}
	switch {
	case c == '\n':
		return 1, false, true // line continuation inside the string
	case c >= '0' && c <= '7':
		n := 1
		for n < 3 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[:n], 8, 32)
		b.WriteRune(rune(v))
		return n, v > 0o377, true
	case c == 'x' || c == 'u' || c == 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if len(s) < 1+n {
			return 0, false, false
		}
		v, err := strconv.ParseUint(s[1:1+n], 16, 32)
		if err != nil || strings.ContainsAny(s[1:1+n], "+-_") || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) {
			return 0, false, false // lone surrogates cannot be UTF-8 text
		}
		b.WriteRune(rune(v))
		return 1 + n, false, true
	case c == 'N':
		return 0, false, false
	}
	// An unknown escape keeps its backslash.
	r, size := utf8.DecodeRuneInString(s)
	b.WriteByte('\\')
	b.WriteRune(r)
	return size, true, true
}
