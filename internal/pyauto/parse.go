package pyauto

import (
	"errors"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The fast path accepts `python -c CODE` where CODE is nothing but:
//
//	import pyautogui / import time / import pyautogui, time
//	pyautogui.FAILSAFE = <bool>        pyautogui.PAUSE = <number>
//	time.sleep(<number>)
//	pyautogui.<function>(<literal arguments>)
//
// statements separated by semicolons and newlines, with comments and blank
// lines. Literals are what Python's parser itself evaluates: ints (decimal,
// hex, octal, binary, underscores), floats, unary signs on numbers,
// strings in every quoting ('', "", ''', """, r/u prefixes, adjacent ones
// concatenated) with the escapes of Python 3.6–3.13, True/False/None,
// tuples and lists of literals, pyautogui's button constants and its tween
// functions (pyautogui.easeInQuad, as OSWorld's computer_13 actions pass).
// Anything else — other names, expressions, f-strings, bytes, escapes that
// some Python versions warn about — is not ours: the caller runs the real
// Python, which then behaves exactly as upstream.

type stmtKind int

const (
	stmtImport stmtKind = iota
	stmtFailsafe
	stmtPause
	stmtSleep
	stmtCall
)

type stmt struct {
	kind stmtKind
	line int
	val  pyValue // FAILSAFE, PAUSE, time.sleep's argument
	fn   string
	args []pyValue
	kw   []kwarg
	mods []string // stmtImport
}

// fastFunctions are the pyautogui functions a snippet may call.
var fastFunctions = map[string]bool{
	"click": true, "leftClick": true, "doubleClick": true, "tripleClick": true, "rightClick": true,
	"middleClick": true, "moveTo": true, "moveRel": true, "move": true, "dragTo": true, "dragRel": true,
	"drag": true, "mouseDown": true, "mouseUp": true, "scroll": true, "hscroll": true, "vscroll": true,
	"typewrite": true, "write": true, "press": true, "keyDown": true, "keyUp": true, "hotkey": true,
	"shortcut": true,
	// Only as bare statements, whose result nothing uses: no effect.
	"position": true, "size": true,
}

// pyautoguiConstants are the module attributes a snippet may pass as a
// value besides the tween functions.
var pyautoguiConstants = map[string]string{
	"LEFT": "left", "MIDDLE": "middle", "RIGHT": "right", "PRIMARY": "primary", "SECONDARY": "secondary",
}

// snippetCode returns CODE when argv is [python|python3|/abs/…/python3,
// "-c", CODE].
func snippetCode(argv []string) (string, bool) {
	if len(argv) != 3 || argv[1] != "-c" {
		return "", false
	}
	prog := argv[0]
	if strings.Contains(prog, "/") {
		if !strings.HasPrefix(prog, "/") {
			return "", false
		}
		prog = path.Base(prog)
	}
	return argv[2], prog == "python" || prog == "python3"
}

// parseSnippet parses CODE into statements; ok is false for anything
// outside the subset above.
func parseSnippet(code string) (stmts []stmt, ok bool) {
	if !utf8.ValidString(code) || strings.ContainsRune(code, 0) {
		return nil, false
	}
	toks, ok := tokenize(code)
	if !ok {
		return nil, false
	}
	p := &parser{toks: toks, imported: map[string]bool{}}
	for p.peek().kind != tEOF {
		if p.peek().kind == tNewline {
			p.next()
			continue
		}
		for {
			s, ok := p.statement()
			if !ok {
				return nil, false
			}
			stmts = append(stmts, s)
			t := p.next()
			if t.kind == tNewline || t.kind == tEOF {
				break
			}
			if !t.is(";") {
				return nil, false
			}
			if k := p.peek().kind; k == tNewline || k == tEOF {
				p.next()
				break
			}
		}
	}
	return stmts, true
}

// --- tokens ---------------------------------------------------------------

type tokKind int

const (
	tName tokKind = iota
	tNumber
	tString
	tOp
	tNewline
	tEOF
)

type token struct {
	kind tokKind
	text string
	val  pyValue // tNumber, tString
	line int
}

func (t token) is(op string) bool { return t.kind == tOp && t.text == op }

// numberRE matches a Python number literal (not its sign); tokenize then
// checks what may follow it.
var numberRE = regexp.MustCompile(`^(?:0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|` +
	`(?:(?:[0-9](?:_?[0-9])*)?\.[0-9](?:_?[0-9])*|[0-9](?:_?[0-9])*\.?)(?:[eE][+-]?[0-9](?:_?[0-9])*)?)`)

// decimalRE is a decimal int Python accepts: no leading zeros except 0…0.
var decimalRE = regexp.MustCompile(`^(?:[1-9](?:_?[0-9])*|0(?:_?0)*)$`)

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || (c >= '0' && c <= '9') }

// tokenize splits code into tokens with Python's line structure: newlines
// inside brackets and after a backslash join lines, comments and blank
// lines vanish, and a logical line must not be indented.
func tokenize(code string) ([]token, bool) {
	// Python's tokenizer reads source with universal newlines.
	s := strings.ReplaceAll(strings.ReplaceAll(code, "\r\n", "\n"), "\r", "\n")
	var toks []token
	line, depth, i := 1, 0, 0
	lineStart := true
	emit := func(k tokKind, text string, v pyValue) {
		toks = append(toks, token{kind: k, text: text, val: v, line: line})
	}
	for {
		if lineStart && depth == 0 {
			j := i
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\f') {
				j++
			}
			switch {
			case j == len(s):
				i = j
			case s[j] == '#':
				for j < len(s) && s[j] != '\n' {
					j++
				}
				i = j
				continue
			case s[j] == '\n':
				i, line = j+1, line+1
				continue
			case j > i:
				return nil, false // IndentationError: unexpected indent
			}
			lineStart = false
		}
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\f') {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		switch {
		case c == '\\':
			// A continuation needs a next line: at the end of the source
			// Python says "unexpected EOF".
			if i+2 >= len(s) || s[i+1] != '\n' {
				return nil, false
			}
			i, line = i+2, line+1
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '\n':
			if depth == 0 {
				emit(tNewline, "", none)
				lineStart = true
			}
			i, line = i+1, line+1
		case c == '\'' || c == '"':
			str, n, lines, ok := lexString(s[i:], "")
			if !ok {
				return nil, false
			}
			emit(tString, "", strV(str))
			i, line = i+n, line+lines
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			word := s[i:j]
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && len(word) <= 2 {
				str, n, lines, ok := lexString(s[j:], strings.ToLower(word))
				if !ok {
					return nil, false
				}
				emit(tString, "", strV(str))
				i, line = j+n, line+lines
				continue
			}
			if j < len(s) && s[j] >= 0x80 {
				return nil, false // a non-ASCII identifier: not one of ours
			}
			emit(tName, word, none)
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			lit := numberRE.FindString(s[i:])
			j := i + len(lit)
			if lit == "" || (j < len(s) && (isIdentChar(s[j]) || s[j] == '.' || s[j] >= 0x80)) {
				return nil, false
			}
			v, ok := numberValue(lit)
			if !ok {
				return nil, false
			}
			emit(tNumber, lit, v)
			i = j
		case strings.IndexByte("()[],;=.+-", c) >= 0:
			switch c {
			case '(', '[':
				depth++
			case ')', ']':
				if depth--; depth < 0 {
					return nil, false
				}
			}
			// "==" or "+=" and the like are operators we do not accept.
			if i+1 < len(s) && s[i+1] == '=' && c != '(' && c != '[' && c != ',' && c != ';' {
				return nil, false
			}
			emit(tOp, string(c), none)
			i++
		default:
			return nil, false
		}
	}
	if depth != 0 {
		return nil, false
	}
	emit(tNewline, "", none)
	emit(tEOF, "", none)
	return toks, true
}

func numberValue(lit string) (pyValue, bool) {
	clean := strings.ReplaceAll(lit, "_", "")
	lower := strings.ToLower(clean)
	isPrefixed := len(lower) > 1 && lower[0] == '0' && strings.ContainsAny(lower[1:2], "xob")
	if !isPrefixed && strings.ContainsAny(lower, ".e") {
		f, err := strconv.ParseFloat(clean, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return none, false
		}
		return floatV(f), true // out of range is inf or 0, as in Python
	}
	if !isPrefixed && !decimalRE.MatchString(lit) {
		return none, false
	}
	n, err := strconv.ParseInt(clean, 0, 64)
	if err != nil {
		return none, false // beyond int64: not ours
	}
	return intV(n), true
}

// lexString reads one string literal (after its prefix) and returns its
// value, its length in bytes and the newlines it spans. Escapes that
// Python 3.12+ warns about (unknown ones, octal above \377) and \N{…} are
// refused, as are bytes and f-strings.
func lexString(s, prefix string) (string, int, int, bool) {
	raw := false
	switch prefix {
	case "", "u":
	case "r":
		raw = true
	default:
		return "", 0, 0, false
	}
	q := s[0]
	delim := s[:1]
	if strings.HasPrefix(s, strings.Repeat(delim, 3)) {
		delim = strings.Repeat(delim, 3)
	}
	triple := len(delim) == 3
	var b strings.Builder
	i, lines := len(delim), 0
	for {
		if i >= len(s) {
			return "", 0, 0, false
		}
		if strings.HasPrefix(s[i:], delim) {
			return b.String(), i + len(delim), lines, true
		}
		c := s[i]
		switch {
		case c == '\n' && !triple:
			return "", 0, 0, false
		case c == '\n':
			lines++
			b.WriteByte('\n')
			i++
		case c == '\\' && i+1 >= len(s):
			return "", 0, 0, false
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
			n, ok := escape(&b, s[i+1:], q)
			if !ok {
				return "", 0, 0, false
			}
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
// backslash) into b and returns the bytes it used.
func escape(b *strings.Builder, s string, quote byte) (int, bool) {
	simple := map[byte]byte{'\\': '\\', '\'': '\'', '"': '"', 'a': 7, 'b': 8, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}
	c := s[0]
	if v, ok := simple[c]; ok {
		b.WriteByte(v)
		return 1, true
	}
	switch {
	case c == '\n':
		return 1, true // line continuation inside the string
	case c >= '0' && c <= '7':
		n := 1
		for n < 3 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
			n++
		}
		v, _ := strconv.ParseUint(s[:n], 8, 32)
		if v > 0o377 {
			return 0, false
		}
		b.WriteRune(rune(v))
		return n, true
	case c == 'x' || c == 'u' || c == 'U':
		n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
		if len(s) < 1+n {
			return 0, false
		}
		v, err := strconv.ParseUint(s[1:1+n], 16, 32)
		if err != nil || strings.ContainsAny(s[1:1+n], "+-_") || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff) {
			return 0, false // lone surrogates cannot be UTF-8 text
		}
		b.WriteRune(rune(v))
		return 1 + n, true
	}
	return 0, false
}

// --- statements -----------------------------------------------------------

type parser struct {
	toks     []token
	pos      int
	imported map[string]bool
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) expect(op string) bool { return p.next().is(op) }

func (p *parser) statement() (stmt, bool) {
	t := p.next()
	st := stmt{line: t.line}
	if t.kind != tName {
		return st, false
	}
	if t.text == "import" {
		st.kind = stmtImport
		for {
			m := p.next()
			if m.kind != tName || (m.text != "pyautogui" && m.text != "time") {
				return st, false
			}
			p.imported[m.text] = true
			st.mods = append(st.mods, m.text)
			if !p.peek().is(",") {
				return st, true
			}
			p.next()
		}
	}
	if !p.imported[t.text] || !p.expect(".") {
		return st, false
	}
	attr := p.next()
	if attr.kind != tName {
		return st, false
	}
	switch {
	case t.text == "time" && attr.text == "sleep":
		args, kw, ok := p.callArgs()
		if !ok || len(args) != 1 || len(kw) != 0 || !args[0].isNumber() || args[0].Kind == kindBool {
			return st, false
		}
		st.kind, st.val = stmtSleep, args[0]
		return st, true
	case t.text != "pyautogui":
		return st, false
	case p.peek().is("="):
		p.next()
		v, ok := p.literal()
		switch {
		case !ok:
			return st, false
		case attr.text == "FAILSAFE" && v.Kind == kindBool:
			st.kind, st.val = stmtFailsafe, v
		case attr.text == "PAUSE" && (v.Kind == kindInt || v.Kind == kindFloat):
			st.kind, st.val = stmtPause, v
		default:
			return st, false
		}
		return st, true
	case fastFunctions[attr.text]:
		args, kw, ok := p.callArgs()
		if !ok || ((attr.text == "position" || attr.text == "size") && (len(args) > 0 || len(kw) > 0)) {
			return st, false
		}
		st.kind, st.fn, st.args, st.kw = stmtCall, attr.text, args, kw
		return st, true
	}
	return st, false
}

// callArgs parses "(" [arg {"," arg} [","]] ")" with positional arguments
// before keyword ones and no keyword twice (both SyntaxErrors in Python).
func (p *parser) callArgs() ([]pyValue, []kwarg, bool) {
	if !p.expect("(") {
		return nil, nil, false
	}
	var args []pyValue
	var kw []kwarg
	for !p.peek().is(")") {
		if t := p.peek(); t.kind == tName && p.toks[p.pos+1].is("=") {
			p.pos += 2
			v, ok := p.literal()
			if !ok {
				return nil, nil, false
			}
			for _, k := range kw {
				if k.name == t.text {
					return nil, nil, false
				}
			}
			kw = append(kw, kwarg{t.text, v})
		} else {
			v, ok := p.literal()
			if !ok || len(kw) > 0 {
				return nil, nil, false
			}
			args = append(args, v)
		}
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	return args, kw, p.expect(")")
}

// literal parses one literal value.
func (p *parser) literal() (pyValue, bool) {
	t := p.next()
	switch {
	case t.is("-") || t.is("+"):
		v, ok := p.literal()
		if !ok || (v.Kind != kindInt && v.Kind != kindFloat) {
			return none, false
		}
		if t.is("-") {
			v.Int, v.Float = -v.Int, -v.Float
		}
		return v, true
	case t.kind == tNumber:
		return t.val, true
	case t.kind == tString:
		s := t.val.Str
		for p.peek().kind == tString {
			s += p.next().val.Str
		}
		return strV(s), true
	case t.kind == tName:
		switch t.text {
		case "True":
			return boolV(true), true
		case "False":
			return boolV(false), true
		case "None":
			return none, true
		case "pyautogui":
			if !p.imported["pyautogui"] || !p.expect(".") {
				return none, false
			}
			attr := p.next()
			if c, ok := pyautoguiConstants[attr.text]; ok && attr.kind == tName {
				return strV(c), true
			}
			if _, ok := tweens[attr.text]; ok && attr.kind == tName {
				return pyValue{Kind: kindFunc, Func: attr.text}, true
			}
		}
		return none, false
	case t.is("(") || t.is("["):
		closer, kind := ")", kindTuple
		if t.is("[") {
			closer, kind = "]", kindList
		}
		items := []pyValue{}
		comma := false
		for !p.peek().is(closer) {
			v, ok := p.literal()
			if !ok {
				return none, false
			}
			items = append(items, v)
			if !p.peek().is(",") {
				break
			}
			p.next()
			comma = true
		}
		if !p.expect(closer) {
			return none, false
		}
		if kind == kindTuple && len(items) == 1 && !comma {
			return items[0], true // a parenthesised value, not a tuple
		}
		return pyValue{Kind: kind, Items: items}, true
	}
	return none, false
}
