package pyvalue

import "testing"

func TestEqualAndIn(t *testing.T) {
	for _, c := range []struct {
		a, b any
		want bool
	}{
		{true, 1.0, true},
		{1.0, 1.0, true},
		{"1", 1.0, false},
		{nil, nil, true},
		{[]any{"a", 1.0}, []any{"a", true}, true},
		{map[string]any{"a": []any{}}, map[string]any{"a": []any{}}, true},
		{map[string]any{"a": 1.0}, map[string]any{"a": 1.0, "b": 2.0}, false},
	} {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%#v, %#v) = %v", c.a, c.b, got)
		}
	}
	if in, err := In("ell", "hello"); !in || err != nil {
		t.Errorf("substring: %v %v", in, err)
	}
	if _, err := In(1.0, "hello"); err == nil {
		t.Error("'in <string>' with a number must raise")
	}
	if _, err := In("x", nil); err == nil {
		t.Error("'in None' must raise")
	}
	if in, _ := In("k", map[string]any{"k": nil}); !in {
		t.Error("dict key membership")
	}
}
