package pyauto

import (
	"path"
	"strings"
	"unicode/utf8"

	"github.com/drums-dev/drums/internal/pyvalue"
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

func isIdentStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isIdentChar(c byte) bool  { return isIdentStart(c) || (c >= '0' && c <= '9') }

// tokenize splits code into tokens with Python's line structure: newlines
// inside brackets and after a backslash join lines, comments and blank
// lines vanish, and a logical line must not be indented.
func tokenize(code string) ([]token, bool) {
	// Python's tokenizer reads source with universal newlines.
	s := pyvalue.UniversalNewlines(code)
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
			lit, ok := pyvalue.StringLiteral(s[i:], "")
			if !ok || lit.Warns {
				return nil, false
			}
			emit(tString, "", strV(lit.Value))
			i, line = i+lit.Len, line+lit.Lines
		case isIdentStart(c):
			j := i
			for j < len(s) && isIdentChar(s[j]) {
				j++
			}
			word := s[i:j]
			if j < len(s) && (s[j] == '\'' || s[j] == '"') && len(word) <= 2 {
				lit, ok := pyvalue.StringLiteral(s[j:], strings.ToLower(word))
				if !ok || lit.Warns {
					return nil, false
				}
				emit(tString, "", strV(lit.Value))
				i, line = j+lit.Len, line+lit.Lines
				continue
			}
			if j < len(s) && s[j] >= 0x80 {
				return nil, false // a non-ASCII identifier: not one of ours
			}
			emit(tName, word, none)
			i = j
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9'):
			lit := pyvalue.LexNumber(s[i:])
			j := i + len(lit)
			if lit == "" || (j < len(s) && (isIdentChar(s[j]) || s[j] == '.' || s[j] >= 0x80)) {
				return nil, false
			}
			n, ok := pyvalue.NumberLiteral(lit)
			if !ok {
				return nil, false
			}
			v := intV(n.Int)
			if n.IsFloat {
				v = floatV(n.Float)
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
