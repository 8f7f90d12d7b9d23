package pyauto

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// pyKind is the Python type of a pyValue.
type pyKind int

const (
	kindNone pyKind = iota
	kindBool
	kindInt
	kindFloat
	kindStr
	kindTuple
	kindList
	// kindFunc is a tween function: one of pyautogui's (Func names it) or,
	// from the callback module, the user's own (Callable is its id there).
	kindFunc
	// kindOther is any other object the callback module passed; Type is
	// its Python type name, for error messages.
	kindOther
)

// pyValue is a Python value as far as pyautogui's arguments need: literals
// from a snippet, or what the callback module sent.
type pyValue struct {
	Kind     pyKind
	Bool     bool
	Int      int64
	Float    float64
	Str      string
	Items    []pyValue // kindTuple, kindList
	Func     string    // kindFunc: pyautogui's tween name
	Callable int       // kindFunc: the callback module's id of a user function (Func empty)
	Type     string    // kindOther
}

// Constructors for the values pyautogui's defaults use.
var (
	none = pyValue{Kind: kindNone}
	// linearTween is pyautogui.linear, every mover's default tween.
	linearTween = pyValue{Kind: kindFunc, Func: "linear"}
)

func boolV(b bool) pyValue         { return pyValue{Kind: kindBool, Bool: b} }
func intV(i int64) pyValue         { return pyValue{Kind: kindInt, Int: i} }
func floatV(f float64) pyValue     { return pyValue{Kind: kindFloat, Float: f} }
func strV(s string) pyValue        { return pyValue{Kind: kindStr, Str: s} }
func tupleV(vs ...pyValue) pyValue { return pyValue{Kind: kindTuple, Items: vs} }

// typeName is type(v).__name__.
func (v pyValue) typeName() string {
	switch v.Kind {
	case kindNone:
		return "NoneType"
	case kindBool:
		return "bool"
	case kindInt:
		return "int"
	case kindFloat:
		return "float"
	case kindStr:
		return "str"
	case kindTuple:
		return "tuple"
	case kindList:
		return "list"
	case kindFunc:
		return "function"
	default:
		return v.Type
	}
}

func (v pyValue) isNone() bool { return v.Kind == kindNone }
func (v pyValue) isSeq() bool  { return v.Kind == kindTuple || v.Kind == kindList }

// isNumber is isinstance(v, (int, float)) (bool is an int).
func (v pyValue) isNumber() bool {
	return v.Kind == kindBool || v.Kind == kindInt || v.Kind == kindFloat
}

// num is a number's value as a float64 (callers check isNumber).
func (v pyValue) num() float64 {
	switch v.Kind {
	case kindBool:
		if v.Bool {
			return 1
		}
		return 0
	case kindInt:
		return float64(v.Int)
	}
	return v.Float
}

// truthy is bool(v).
func (v pyValue) truthy() bool {
	switch v.Kind {
	case kindNone:
		return false
	case kindBool:
		return v.Bool
	case kindInt:
		return v.Int != 0
	case kindFloat:
		return v.Float != 0
	case kindStr:
		return v.Str != ""
	case kindTuple, kindList:
		return len(v.Items) > 0
	}
	return true
}

// repr is repr(v), for error messages.
func (v pyValue) repr() string {
	switch v.Kind {
	case kindNone:
		return "None"
	case kindBool:
		if v.Bool {
			return "True"
		}
		return "False"
	case kindInt:
		return strconv.FormatInt(v.Int, 10)
	case kindFloat:
		return pyvalue.ReprFloat(v.Float)
	case kindStr:
		return pyvalue.ReprStr(v.Str)
	case kindTuple, kindList:
		parts := make([]string, len(v.Items))
		for i, it := range v.Items {
			parts[i] = it.repr()
		}
		if v.Kind == kindList {
			return "[" + strings.Join(parts, ", ") + "]"
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case kindFunc:
		return "<function " + v.Func + ">"
	}
	return "<" + v.Type + " object>"
}

// equalsZero is v == 0.
func (v pyValue) equalsZero() bool { return v.isNumber() && v.num() == 0 }

// pyLen is len(v).
func pyLen(v pyValue) (int, error) {
	switch v.Kind {
	case kindStr:
		return utf8.RuneCountInString(v.Str), nil
	case kindTuple, kindList:
		return len(v.Items), nil
	}
	return 0, typeError("object of type '%s' has no len()", v.typeName())
}

// iterate is list(v) for the iterables pyautogui loops over: a string's
// characters or a sequence's items.
func iterate(v pyValue) ([]pyValue, error) {
	switch v.Kind {
	case kindStr:
		out := make([]pyValue, 0, len(v.Str))
		for _, r := range v.Str {
			out = append(out, strV(string(r)))
		}
		return out, nil
	case kindTuple, kindList:
		return v.Items, nil
	}
	return nil, typeError("'%s' object is not iterable", v.typeName())
}

// index is v[i] for a sequence.
func index(v pyValue, i int) (pyValue, error) {
	if i < len(v.Items) {
		return v.Items[i], nil
	}
	return none, &pyError{Type: "IndexError", Msg: v.typeName() + " index out of range"}
}

// pyInt is int(v).
func pyInt(v pyValue) (int64, error) {
	switch v.Kind {
	case kindBool, kindInt:
		return int64(v.num()), nil
	case kindFloat:
		switch {
		case math.IsNaN(v.Float):
			return 0, &pyError{Type: "ValueError", Msg: "cannot convert float NaN to integer"}
		case math.IsInf(v.Float, 0):
			return 0, &pyError{Type: "OverflowError", Msg: "cannot convert float infinity to integer"}
		case math.Abs(v.Float) >= 1<<63:
			return 0, &pyError{Type: "OverflowError", Msg: "Python int too large to convert to C long"}
		}
		return int64(v.Float), nil // truncates toward zero, as int() does
	case kindStr:
		s := strings.TrimSpace(v.Str)
		if n, ok := parseIntLiteral(s); ok {
			return n, nil
		}
		return 0, &pyError{Type: "ValueError", Msg: "invalid literal for int() with base 10: " + pyvalue.ReprStr(v.Str)}
	}
	return 0, typeError("int() argument must be a string, a bytes-like object or a real number, not '%s'", v.typeName())
}

// parseIntLiteral parses int(str) for base 10: optional sign, digits with
// single underscores between them.
func parseIntLiteral(s string) (int64, bool) {
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 || body == "" || body[0] == '_' || body[len(body)-1] == '_' || strings.Contains(body, "__") {
		return 0, false
	}
	for _, c := range body {
		if c != '_' && (c < '0' || c > '9') {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s[:len(s)-len(body)]+strings.ReplaceAll(body, "_", ""), 10, 64)
	return n, err == nil
}

// pyFloat is float(v).
func pyFloat(v pyValue) (float64, error) {
	switch v.Kind {
	case kindBool, kindInt, kindFloat:
		return v.num(), nil
	case kindStr:
		s := strings.ToLower(strings.TrimSpace(v.Str))
		switch strings.TrimLeft(s, "+-") {
		case "inf", "infinity", "nan":
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f, nil
			}
		}
		if s != "" && !strings.ContainsAny(s, "xp") && !strings.HasPrefix(strings.TrimLeft(s, "+-"), "_") {
			if f, err := strconv.ParseFloat(s, 64); err == nil || math.IsInf(f, 0) {
				return f, nil
			}
		}
		return 0, &pyError{Type: "ValueError", Msg: "could not convert string to float: " + pyvalue.ReprStr(v.Str)}
	}
	return 0, typeError("float() argument must be a string or a real number, not '%s'", v.typeName())
}

// greater is a > b for a number b, with Python's TypeError for a
// non-number a.
func greater(a pyValue, b float64) (bool, error) {
	if !a.isNumber() {
		return false, typeError("'>' not supported between instances of '%s' and 'float'", a.typeName())
	}
	return a.num() > b, nil
}

// pyLower is str.lower for the purpose of matching key and button names
// (all ASCII): ASCII letters fold, and of the rest only characters whose
// lowercase is ASCII matter — U+212A KELVIN SIGN lowers to 'k'; U+0130
// lowers to "i̇" in Python (two code points), never to a plain 'i'.
func pyLower(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		case r == 0x212a:
			b.WriteByte('k')
		case r == 0x130:
			b.WriteString("i\u0307")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// pyError is a Python exception raised by pyautogui's code (or by Python
// itself inside it). Type is the name a traceback prints: builtins bare
// ("TypeError"), pyautogui's own qualified ("pyautogui.FailSafeException").
type pyError struct {
	Type string
	Msg  string
}

func (e *pyError) Error() string {
	if e.Msg == "" {
		return e.Type
	}
	return e.Type + ": " + e.Msg
}

func typeError(format string, a ...any) *pyError {
	return &pyError{Type: "TypeError", Msg: fmt.Sprintf(format, a...)}
}

// pyautoguiError is pyautogui.PyAutoGUIException.
func pyautoguiError(format string, a ...any) *pyError {
	return &pyError{Type: "pyautogui.PyAutoGUIException", Msg: fmt.Sprintf(format, a...)}
}

// failSafeMessage is the text of pyautogui's FailSafeException.
const failSafeMessage = "PyAutoGUI fail-safe triggered from mouse moving to a corner of the screen. " +
	"To disable this fail-safe, set pyautogui.FAILSAFE to False. DISABLING FAIL-SAFE IS NOT RECOMMENDED."

var errFailSafe = &pyError{Type: "pyautogui.FailSafeException", Msg: failSafeMessage}
