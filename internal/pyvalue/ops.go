package pyvalue

import (
	"cmp"
	"fmt"
	"strings"
)

// Equal is Python's == on JSON-shaped values (True == 1, 1 == 1.0, lists
// and dicts element-wise).
func Equal(a, b any) bool {
	if na, ok := Number(a); ok {
		nb, ok := Number(b)
		return ok && na == nb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := AsList(b)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case []string:
		l := make([]any, len(x))
		for i, s := range x {
			l[i] = s
		}
		return Equal(l, b)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// AsList is v as a list when it is one ([]any or []string).
func AsList(v any) ([]any, bool) {
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

// In is Python's `item in container`: substring for strings, membership
// for lists, key membership for dicts; a TypeError otherwise.
func In(item, container any) (bool, error) {
	switch c := container.(type) {
	case string:
		s, ok := item.(string)
		if !ok {
			return false, fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", TypeName(item))
		}
		return strings.Contains(c, s), nil
	case []any, []string:
		l, _ := AsList(c)
		for _, e := range l {
			if Equal(item, e) {
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
	return false, fmt.Errorf("TypeError: argument of type '%s' is not iterable", TypeName(container))
}

// Compare is Python's <, <=, >, >= ("lt", "le", "gt", "ge") between
// numbers or between strings; a TypeError otherwise.
func Compare(op string, a, b any) (bool, error) {
	if x, ok := Number(a); ok {
		if y, ok := Number(b); ok {
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
	return false, fmt.Errorf("TypeError: '%s' not supported between instances of '%s' and '%s'", op, TypeName(a), TypeName(b))
}

// compareOp is x op y; known is false for an op Compare does not know.
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
