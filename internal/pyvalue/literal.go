package pyvalue

import (
	"fmt"
	"strings"
)

// ParseLiteral reads a Python literal of strings and lists (what
// gsettings prints: ['a.desktop', 'b.desktop'], @as [], 'text'), the subset
// of eval() OSWorld's metrics apply to command output.
func ParseLiteral(s string) (any, error) {
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
		lit, ok := StringLiteral(p.s[p.i:], "")
		if !ok {
			return nil, fmt.Errorf("SyntaxError: bad string literal in %q", p.s)
		}
		p.i += lit.Len
		return lit.Value, nil
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
		if f, ok := numberToken(tok); ok {
			return f, nil
		}
		return nil, fmt.Errorf("NameError: name %q is not defined", tok)
	}
}

// numberToken is a number literal with an optional sign as a float64 (the
// type JSON-shaped values give every number).
func numberToken(tok string) (float64, bool) {
	lit := strings.TrimLeft(tok, "+-")
	if len(tok)-len(lit) > 1 || LexNumber(lit) != lit {
		return 0, false
	}
	n, ok := NumberLiteral(lit)
	f := n.Float64()
	if strings.HasPrefix(tok, "-") {
		f = -f
	}
	return f, ok
}
