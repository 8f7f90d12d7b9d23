package pyvalue

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Truthy is Python's bool(v): False, None, 0, 0.0, "", [] and {} are false,
// everything else (the string "false" included) is true.
func Truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case int:
		return x != 0
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return err != nil || f != 0 // an out-of-range literal is not zero
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case []string:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// TypeName is type(v).__name__, as Python's TypeError messages name it. A
// float64 is a float: only json.Number tells an int literal apart.
func TypeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case float64:
		return "float"
	case int:
		return "int"
	case json.Number:
		if IsFloatLiteral(x) {
			return "float"
		}
		return "int"
	case string:
		return "str"
	case []any, []string:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// IsFloatLiteral reports whether Python's json.loads makes n a float.
func IsFloatLiteral(n json.Number) bool {
	return strings.ContainsAny(string(n), ".eE")
}

// IsInt reports whether a float64 from JSON decoded without UseNumber was
// (very likely) an int literal.
func IsInt(f float64) bool {
	return f == math.Trunc(f) && math.Abs(f) < 1<<53
}

// Number is the numeric value of a number or a bool (bool counts, as in
// Python); ok is false for any other type. A json.Number out of float64's
// range is an infinity, as Python's float() makes it.
func Number(v any) (f float64, ok bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case float64:
		return x, true
	case int:
		return float64(x), true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			// Only out-of-range literals fail; Python makes them inf.
			if strings.HasPrefix(string(x), "-") {
				return math.Inf(-1), true
			}
			return math.Inf(1), true
		}
		return f, true
	}
	return 0, false
}

// Str is Python's str(v): a string as it is, anything else as Repr.
func Str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return Repr(v)
}

// Repr is Python's repr(v). A float64 without a fraction is taken as an int
// (see IsInt). Python keeps a dict's insertion order, which decoding into a
// Go map loses, so keys are sorted for a stable text.
func Repr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case float64:
		if IsInt(x) {
			return strconv.FormatInt(int64(x), 10)
		}
		return ReprFloat(x)
	case int:
		return strconv.Itoa(x)
	case json.Number:
		return numberText(x)
	case string:
		return ReprStr(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = Repr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []string:
		return ReprStrList(x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = ReprStr(k) + ": " + Repr(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// numberText is how Python prints a number json.loads produced: an int
// literal as the int (so "-0" is "0"), anything with a fraction or exponent
// as repr(float).
func numberText(n json.Number) string {
	s := string(n)
	if IsFloatLiteral(n) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if strings.HasPrefix(s, "-") {
				return "-inf"
			}
			return "inf"
		}
		return ReprFloat(f)
	}
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	if digits == "" {
		return "0"
	}
	if neg {
		return "-" + digits
	}
	return digits
}
