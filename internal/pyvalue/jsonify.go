package pyvalue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Jsonify renders v the way Flask's Jsonify does in debug mode (upstream
// runs with debug on): keys sorted by code point, indent 2, ": " after keys,
// ensure_ascii escaping, and a final newline. Values: nil, bool, string,
// int, int64, float64 (repr, with Infinity/NaN as Python writes them),
// json.Number, []any, []int, map[string]any.
func Jsonify(v any) []byte {
	var b bytes.Buffer
	writeJSON(&b, v, 0)
	b.WriteByte('\n')
	return b.Bytes()
}

func writeJSON(b *bytes.Buffer, v any, depth int) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case string:
		writeJSONString(b, x)
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(jsonFloat(x))
	case json.Number:
		if IsFloatLiteral(x) {
			f, _ := strconv.ParseFloat(string(x), 64)
			b.WriteString(jsonFloat(f))
		} else {
			b.WriteString(Repr(x))
		}
	case []int:
		items := make([]any, len(x))
		for i, n := range x {
			items[i] = n
		}
		writeJSON(b, items, depth)
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(b, depth+1)
			writeJSON(b, e, depth+1)
		}
		newline(b, depth)
		b.WriteByte(']')
	case map[string]any:
		if len(x) == 0 {
			b.WriteString("{}")
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Byte order of UTF-8 is code point order, which is Python's.
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(b, depth+1)
			writeJSONString(b, k)
			b.WriteString(": ")
			writeJSON(b, x[k], depth+1)
		}
		newline(b, depth)
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("Jsonify: unsupported type %T", v))
	}
}

func newline(b *bytes.Buffer, depth int) {
	b.WriteByte('\n')
	for range depth {
		b.WriteString("  ")
	}
}

// jsonFloat is float.__repr__ as json.dumps writes it.
func jsonFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return ReprFloat(f)
}

const hexDigits = "0123456789abcdef"

// writeJSONString escapes like json.dumps(ensure_ascii=True): short forms
// for " \ \b \f \n \r \t, everything else outside 0x20-0x7e as \uxxxx in
// lowercase, astral characters as surrogate pairs. Bytes that are not
// UTF-8 (file names) become \udcXX, the lone surrogates Python's
// surrogateescape decoding gives them.
func writeJSONString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			writeU16(b, 0xdc00|uint16(s[i]))
			i++
			continue
		}
		i += size
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			switch {
			case r >= 0x20 && r <= 0x7e:
				b.WriteByte(byte(r))
			case r > 0xffff:
				r -= 0x10000
				writeU16(b, uint16(0xd800|(r>>10)&0x3ff))
				writeU16(b, uint16(0xdc00|r&0x3ff))
			default:
				writeU16(b, uint16(r))
			}
		}
	}
	b.WriteByte('"')
}

func writeU16(b *bytes.Buffer, v uint16) {
	b.WriteString(`\u`)
	b.WriteByte(hexDigits[v>>12])
	b.WriteByte(hexDigits[v>>8&0xf])
	b.WriteByte(hexDigits[v>>4&0xf])
	b.WriteByte(hexDigits[v&0xf])
}
