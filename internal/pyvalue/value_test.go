package pyvalue

import (
	"encoding/json"
	"testing"
)

func TestTruthy(t *testing.T) {
	for _, v := range []any{nil, false, 0.0, "", []any{}, map[string]any{}} {
		if Truthy(v) {
			t.Errorf("Truthy(%#v) = true", v)
		}
	}
	for _, v := range []any{true, 1.0, "true", "false", []any{1.0}, map[string]any{"a": nil}} {
		if !Truthy(v) {
			t.Errorf("Truthy(%#v) = false", v)
		}
	}
}

func TestTruthyDecoded(t *testing.T) {
	cases := []struct {
		json string
		want bool
	}{
		{`false`, false}, {`null`, false}, {`0`, false}, {`0.0`, false}, {`-0`, false},
		{`0e10`, false}, {`""`, false}, {`[]`, false}, {`{}`, false},
		{`true`, true}, {`"false"`, true}, {`"true"`, true}, {`"0"`, true}, {`" "`, true},
		{`1`, true}, {`-1`, true}, {`0.0001`, true}, {`[0]`, true}, {`{"a": 0}`, true},
		{`1e400`, true},
	}
	for _, c := range cases {
		v, err := Decode([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		if got := Truthy(v); got != c.want {
			t.Errorf("Truthy(%s) = %v, want %v", c.json, got, c.want)
		}
	}
}

func TestRepr(t *testing.T) {
	for want, v := range map[string]any{
		"None": nil, "True": true, "3": 3.0, "0.5": 0.5, "'it'": "it", `"it's"`: "it's",
		"['a', 1]": []any{"a", 1.0}, "{'a': 1, 'b': None}": map[string]any{"b": nil, "a": 1.0},
	} {
		if got := Repr(v); got != want {
			t.Errorf("Repr(%#v) = %s, want %s", v, got, want)
		}
	}
}

func TestReprNumber(t *testing.T) {
	cases := map[string]string{
		"100": "100", "-0": "0", "30.5": "30.5", "1e2": "100.0", "1.50": "1.5",
		"1e-05": "1e-05", "1e16": "1e+16", "123456789012345678901234567890": "123456789012345678901234567890",
	}
	for in, want := range cases {
		if got := Repr(json.Number(in)); got != want {
			t.Errorf("Repr(json.Number(%s)) = %s, want %s", in, got, want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a": 1} x`, "{\"a\": \"\xff\"}", `{'a': 1}`, `NaN`} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) succeeded", in)
		}
	}
}
