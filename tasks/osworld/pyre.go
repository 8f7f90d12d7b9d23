package osworld

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pyRegexp is a Python re pattern (of a str, re.search) translated to RE2
// where the translation is exact; compilePy refuses the rest. Some
// constructs are exact only on ASCII text (RE2's \w and \b are ASCII,
// Python folds a few ASCII letters to non-ASCII ones under re.I):
// MatchString then refuses non-ASCII text.
type pyRegexp struct {
	re *regexp.Regexp
	// asciiOnly names the construct that needs ASCII text, "" for none.
	asciiOnly string
}

// MatchString is re.search(pattern, s) is not None.
func (p *pyRegexp) MatchString(s string) (bool, error) {
	if err := p.check(s); err != nil {
		return false, err
	}
	return p.re.MatchString(s), nil
}

// check refuses text the translation is not exact on.
func (p *pyRegexp) check(s string) error {
	if p.asciiOnly != "" && !isASCII(s) {
		return fmt.Errorf("%w: Python's %s on non-ASCII text differs from RE2's", ErrNotNative, p.asciiOnly)
	}
	return nil
}

// FindAllString is re.findall(pattern, s) for a pattern without groups.
func (p *pyRegexp) FindAllString(s string) ([]string, error) {
	if err := p.check(s); err != nil {
		return nil, err
	}
	return p.re.FindAllString(s, -1), nil
}

// mustCompilePy is compilePy for a pattern of OSWorld's own metrics.
func mustCompilePy(pattern string) *pyRegexp {
	p, err := compilePy(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// mustPy is the RE2 regexp of such a pattern that needs no ASCII text.
func mustPy(pattern string) *regexp.Regexp {
	p := mustCompilePy(pattern)
	if p.asciiOnly != "" {
		panic("Python regex " + pattern + " needs ASCII text: use mustCompilePy")
	}
	return p.re
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Python 3.11's \d and \s on str (Unicode 14.0): \d is Nd less the Kawi
// and Nag Mundari digits Go's Unicode 15.0 tables add; \s is str.isspace(). TestPyRegexp
// checks both on every code point against what Debian's python3 said.
const (
	pyDigitNot = `\x{11F50}-\x{11F59}\x{1E4F0}-\x{1E4F9}` // Kawi, Nag Mundari: in Go's \p{Nd}, not in Python's \d
	pySpace    = `\t\n\v\f\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	asciiSpace = `\t\n\v\f\r `
)

// pyFlags are the re flags a translation follows.
type pyFlags struct {
	ignoreCase, multiline, dotAll, ascii bool
}

// refused is the error for a construct compilePy does not translate.
func refused(pattern, construct string) error {
	return fmt.Errorf("%w: Python regex %q: %s is not translated to RE2", ErrNotNative, pattern, construct)
}

// compilePy compiles a Python regular expression searched in a str, with
// the re flags named as _match_value_to_rule names them ("re.I.M": names
// of attributes of Python's re module). Every construct whose meaning
// differs between Python's re and RE2 is translated exactly or refused
// with an error naming it (ErrNotNative: OSWorld's Python must judge).
func compilePy(pattern string, flagNames ...string) (*pyRegexp, error) {
	var f pyFlags
	for _, n := range flagNames {
		switch n {
		case "I", "IGNORECASE":
			f.ignoreCase = true
		case "M", "MULTILINE":
			f.multiline = true
		case "S", "DOTALL":
			f.dotAll = true
		case "A", "ASCII":
			f.ascii = true
		case "U", "UNICODE", "NOFLAG":
		default:
			return nil, refused(pattern, "flag re."+n)
		}
	}
	t := pyTranslator{src: pattern, flags: f}
	out, err := t.translate()
	if err != nil {
		return nil, err
	}
	prefix := ""
	if t.flags.ignoreCase {
		if err := t.foldASCII(); err != nil {
			return nil, err
		}
		prefix += "i"
	}
	if t.flags.dotAll {
		prefix += "s"
	}
	if prefix != "" {
		out = "(?" + prefix + ")" + out
	}
	re, err := regexp.Compile(out)
	if err != nil {
		return nil, fmt.Errorf("%w: Python regex %q as RE2 %q: %v", ErrNotNative, pattern, out, err)
	}
	return &pyRegexp{re: re, asciiOnly: t.asciiOnly}, nil
}

type pyTranslator struct {
	src       string
	pos       int
	flags     pyFlags
	asciiOnly string
	depth     int
	out       strings.Builder
}

// foldASCII allows case folding only between ASCII pattern and text,
// where Python's and RE2's agree.
func (t *pyTranslator) foldASCII() error {
	if !isASCII(t.src) {
		return refused(t.src, "re.IGNORECASE with non-ASCII characters")
	}
	t.asciiOnly = "re.IGNORECASE"
	return nil
}

func (t *pyTranslator) more() bool { return t.pos < len(t.src) }

func (t *pyTranslator) next() rune {
	r, n := utf8.DecodeRuneInString(t.src[t.pos:])
	t.pos += n
	return r
}

func (t *pyTranslator) rest() string { return t.src[t.pos:] }

// lazy copies the ? that makes a quantifier lazy.
func (t *pyTranslator) lazy() {
	if t.more() && t.rest()[0] == '?' {
		t.out.WriteRune(t.next())
	}
}

func (t *pyTranslator) translate() (string, error) {
	quantified := false // the last token was a quantifier
	for t.more() {
		wasQuant := quantified
		quantified = false
		start := t.pos
		var err error
		switch c := t.next(); c {
		case '\\':
			err = t.escape(false)
		case '[':
			err = t.class()
		case '(':
			err = t.group(start)
		case ')':
			t.depth--
			t.out.WriteByte(')')
		case '^':
			if t.flags.multiline {
				t.out.WriteString(`(?m:^)`)
			} else {
				t.out.WriteString(`\A`)
			}
		case '$':
			switch {
			case t.flags.multiline:
				t.out.WriteString(`(?m:$)`)
			case t.depth == 0 && (!t.more() || t.rest()[0] == '|'):
				// Python's $ also matches before a final newline; nothing
				// follows it in its branch, so consuming that is the same.
				t.out.WriteString(`(?:\n?\z)`)
			default:
				err = refused(t.src, "$ followed by more pattern (Python's $ also matches before a final newline)")
			}
		case '*', '+', '?':
			if wasQuant && c == '+' {
				return "", refused(t.src, "possessive quantifier")
			}
			t.out.WriteRune(c)
			quantified = true
			t.lazy()
		case '{':
			q, ok := t.repeat()
			switch {
			case !ok:
				t.out.WriteString(`\{`)
			case wasQuant:
				err = refused(t.src, "repeat after a quantifier")
			default:
				t.out.WriteString(q)
				quantified = true
				t.lazy()
			}
		case '|', '.':
			t.out.WriteRune(c)
		default:
			t.out.WriteString(regexp.QuoteMeta(string(c)))
		}
		if err != nil {
			return "", err
		}
	}
	return t.out.String(), nil
}

// repeatRE is a {m,n} repeat after its brace: Python reads {,n} as {0,n},
// RE2 as literal text.
var repeatRE = regexp.MustCompile(`^(\d*)(,(\d*))?\}`)

func (t *pyTranslator) repeat() (string, bool) {
	m := repeatRE.FindStringSubmatch(t.rest())
	if m == nil || (m[1] == "" && m[2] == "") {
		return "", false
	}
	t.pos += len(m[0])
	lo := m[1]
	if lo == "" {
		lo = "0"
	}
	if m[2] == "" {
		return "{" + lo + "}", true
	}
	return "{" + lo + "," + m[3] + "}", true
}

// group translates what follows an opening parenthesis at start.
func (t *pyTranslator) group(start int) error {
	rest := t.rest()
	if !strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, "?P<") || strings.HasPrefix(rest, "?:") {
		t.depth++
		t.out.WriteByte('(')
		return nil
	}
	for _, x := range []struct{ prefix, what string }{
		{"?=", "look-ahead"}, {"?!", "look-ahead"}, {"?<=", "look-behind"}, {"?<!", "look-behind"},
		{"?P=", "backreference"}, {"?P>", "recursion"}, {"?>", "atomic group"}, {"?#", "comment group"},
		{"?(", "conditional group"}, {"?<", "group name without P"},
	} {
		if strings.HasPrefix(rest, x.prefix) {
			return refused(t.src, x.what+" (("+x.prefix+")")
		}
	}
	// Inline flags: global (?aiLmsux) at the start, or scoped (?ims-ims:...).
	end := strings.IndexAny(rest, ":)")
	if end < 0 {
		return refused(t.src, "unterminated group")
	}
	on, off, _ := strings.Cut(rest[1:end], "-")
	t.pos += end + 1
	if rest[end] == ')' {
		if start != 0 || off != "" {
			return refused(t.src, "inline flags not at the start of the pattern")
		}
		for _, c := range on {
			switch c {
			case 'i':
				t.flags.ignoreCase = true
			case 'm':
				t.flags.multiline = true
			case 's':
				t.flags.dotAll = true
			case 'a':
				t.flags.ascii = true
			case 'u':
			default:
				return refused(t.src, "inline flag "+string(c))
			}
		}
		return nil
	}
	// Scoped i and s carry over to RE2's own scoped flags.
	for _, c := range on + off {
		if c != 'i' && c != 's' {
			return refused(t.src, "scoped inline flag "+string(c))
		}
	}
	if strings.ContainsRune(on, 'i') {
		if err := t.foldASCII(); err != nil {
			return err
		}
	}
	t.depth++
	t.out.WriteString("(" + rest[:end+1])
	return nil
}

// class translates a character set after its opening bracket.
func (t *pyTranslator) class() error {
	t.out.WriteByte('[')
	if t.more() && t.rest()[0] == '^' {
		t.out.WriteRune(t.next())
	}
	first := true
	for t.more() {
		c := t.next()
		switch {
		case c == ']' && !first:
			t.out.WriteByte(']')
			return nil
		case c == '\\':
			if err := t.escape(true); err != nil {
				return err
			}
		case c == '[' || c == ']':
			t.out.WriteString(`\` + string(c))
		default:
			t.out.WriteRune(c)
		}
		first = false
	}
	return refused(t.src, "unterminated character set")
}

// escape translates what follows a backslash, in a character set or not.
func (t *pyTranslator) escape(inClass bool) error {
	if !t.more() {
		return refused(t.src, "trailing backslash")
	}
	c := t.next()
	set := func(items string, negated bool) {
		switch {
		case inClass:
			t.out.WriteString(items)
		case negated:
			t.out.WriteString("[^" + items + "]")
		default:
			t.out.WriteString("[" + items + "]")
		}
	}
	switch c {
	case 'd', 'D':
		switch {
		case t.flags.ascii:
			t.out.WriteString(`\` + string(c))
		case inClass:
			return refused(t.src, `\`+string(c)+` in a character set (Python's Unicode digits)`)
		case c == 'd':
			t.out.WriteString(`[^\P{Nd}` + pyDigitNot + `]`)
		default:
			t.out.WriteString(`[\P{Nd}` + pyDigitNot + `]`)
		}
	case 's':
		if t.flags.ascii {
			set(asciiSpace, false)
		} else {
			set(pySpace, false)
		}
	case 'S':
		switch {
		case inClass:
			return refused(t.src, `\S in a character set`)
		case t.flags.ascii:
			set(asciiSpace, true)
		default:
			set(pySpace, true)
		}
	case 'w', 'W', 'b', 'B':
		switch {
		case inClass && c == 'b':
			t.out.WriteString(`\x08`) // backspace, as in Python
			return nil
		case inClass && c == 'B':
			return refused(t.src, `\B in a character set`)
		case !t.flags.ascii:
			// Python's are Unicode-aware; on ASCII text they are RE2's.
			t.asciiOnly = `\` + string(c)
		}
		t.out.WriteString(`\` + string(c))
	case 'A', 'Z':
		if inClass {
			return refused(t.src, `\`+string(c)+` in a character set`)
		}
		if c == 'Z' {
			t.out.WriteString(`\z`) // Python's \Z is the very end
		} else {
			t.out.WriteString(`\A`)
		}
	case 'a', 'f', 'n', 'r', 't', 'v':
		t.out.WriteString(`\` + string(c))
	case 'x', 'u', 'U':
		n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[c]
		if len(t.rest()) < n {
			return refused(t.src, `incomplete \`+string(c)+` escape`)
		}
		hex := t.rest()[:n]
		v, err := strconv.ParseUint(hex, 16, 32)
		if err != nil || v > utf8.MaxRune {
			return refused(t.src, `bad \`+string(c)+hex+` escape`)
		}
		t.pos += n
		fmt.Fprintf(&t.out, `\x{%x}`, v)
	default:
		switch {
		case c >= '0' && c <= '9':
			return refused(t.src, `\`+string(c)+` (backreference or octal escape)`)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			return refused(t.src, `\`+string(c)+` (an escape Python's re does not know, or RE2 reads otherwise)`)
		case c < utf8.RuneSelf && c > ' ' && c != 0x7f:
			t.out.WriteString(`\` + string(c))
		default:
			t.out.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return nil
}
