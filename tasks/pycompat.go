package tasks

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// Values that cross from task JSON and getters into metrics are JSON-shaped:
// nil, bool, float64, string, []any, map[string]any. internal/pyvalue gives
// them bool(), type names, str() and repr(); these helpers add the rest of
// Python's semantics that OSWorld's metrics rely on.

// pyEqual is Python's == on JSON-shaped values (True == 1, 1 == 1.0, lists
// and dicts element-wise).
func pyEqual(a, b any) bool {
	if na, ok := pyvalue.Number(a); ok {
		nb, ok := pyvalue.Number(b)
		return ok && na == nb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := asList(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return pyEqual(l, b)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return l, true
	}
	return nil, false
}

// pyIn is Python's `item in container`: substring for strings, membership
// for lists, key membership for dicts; a TypeError otherwise.
func pyIn(item, container any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", pyvalue.TypeName(item))
		}
		return strings.Contains(c, s), nil
	case []any, []string:
		l, _ := asList(c)
		for _, e := range l {
			if pyEqual(item, e) {
				return true, nil
			}
		}
		return false, nil
	case map[string]any:
		s, ok := item.(string)
		if !ok {
			return false, nil
		}
		_, has := c[s]
		return has, nil
	}
	return false, fmt.Errorf("TypeError: argument of type '%s' is not iterable", pyvalue.TypeName(container))
}

// pyCompare is Python's <, <=, >, >= ("lt", "le", "gt", "ge") between
// numbers or between strings; a TypeError otherwise.
func pyCompare(op string, a, b any) (bool, error) {
	if x, ok := pyvalue.Number(a); ok {
		if y, ok := pyvalue.Number(b); ok {
			if r, ok := compareOp(op, x, y); ok {
				return r, nil
			}
		}
	}
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			if r, ok := compareOp(op, x, y); ok {
				return r, nil
			}
		}
	}
	return false, fmt.Errorf("TypeError: '%s' not supported between instances of '%s' and '%s'", op, pyvalue.TypeName(a), pyvalue.TypeName(b))
}

// compareOp is x op y; known is false for an op pyCompare does not know.
func compareOp[T cmp.Ordered](op string, x, y T) (result, known bool) {
	switch op {
	case "lt":
		return x < y, true
	case "le":
		return x <= y, true
	case "gt":
		return x > y, true
	case "ge":
		return x >= y, true
	}
	return false, false
}

// universalNewlines is what Python's text mode does on read.
func universalNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.ReplaceAll(s, "\r", "\n")
}

// pyLines is iterating a text file in Python: lines with their "\n".
func pyLines(s string) []string {
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

// pySplitlines is str.splitlines() for the line breaks text files use.
func pySplitlines(s string) []string {
	s = universalNewlines(s)
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// parsePyLiteral reads a Python literal of strings and lists (what
// gsettings prints: ['a.desktop', 'b.desktop'], @as [], 'text'), the subset
// of eval() OSWorld's metrics apply to command output.
func parsePyLiteral(s string) (any, error) {
	p := &litParser{s: strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "@as"))}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("SyntaxError: trailing text in %q", s)
	}
	return v, nil
}

type litParser struct {
	s string
	i int
}

func (p *litParser) skip() {
	for p.i < len(p.s) && strings.ContainsRune(" \t\n\r", rune(p.s[p.i])) {
		p.i++
	}
}

func (p *litParser) value() (any, error) {
	p.skip()
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("SyntaxError: unexpected end of %q", p.s)
	}
	switch c := p.s[p.i]; {
	case c == '[' || c == '(':
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		p.i++
		out := []any{}
		for {
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == closer {
				p.i++
				return out, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.skip()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == closer {
				p.i++
				return out, nil
			}
			return nil, fmt.Errorf("SyntaxError: expected ',' in %q", p.s)
		}
	case c == '\'' || c == '"':
		p.i++
		var b strings.Builder
		for p.i < len(p.s) {
			ch := p.s[p.i]
			switch {
			case ch == c:
				p.i++
				return b.String(), nil
			case ch == '\\' && p.i+1 < len(p.s):
				p.i++
				switch e := p.s[p.i]; e {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				case '\\', '\'', '"':
					b.WriteByte(e)
				default:
					b.WriteByte('\\')
					b.WriteByte(e)
				}
			default:
				b.WriteByte(ch)
			}
			p.i++
		}
		return nil, fmt.Errorf("SyntaxError: unterminated string in %q", p.s)
	default:
		j := p.i
		for j < len(p.s) && !strings.ContainsRune(",])} \t\n", rune(p.s[j])) {
			j++
		}
		tok := p.s[p.i:j]
		p.i = j
		switch tok {
		case "True", "true":
			return true, nil
		case "False", "false":
			return false, nil
		case "None":
			return nil, nil
		}
		if f, err := strconv.ParseFloat(tok, 64); err == nil {
			return f, nil
		}
		return nil, fmt.Errorf("NameError: name %q is not defined", tok)
	}
}
