package pyvalue

import (
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

func TestParseLiteral(t *testing.T) {
	for in, want := range map[string]any{
		"['thunderbird.desktop', 'vim.desktop']\n": []any{"thunderbird.desktop", "vim.desktop"},
		"@as []":        []any{},
		`["a\"b", 'c']`: []any{`a"b`, "c"},
		"(1, True)":     []any{1.0, true},
		"'text'":        "text",
	} {
		got, err := ParseLiteral(in)
		if err != nil {
			t.Errorf("ParseLiteral(%q): %v", in, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ParseLiteral(%q) (-want +got):\n%s", in, diff)
		}
	}
	for _, bad := range []string{"", "['a'", "[a]", "'a' b"} {
		if _, err := ParseLiteral(bad); err == nil {
			t.Errorf("ParseLiteral(%q) succeeded", bad)
		}
	}
}

// ParseLiteral's strings and numbers are what Python's eval makes of them.
func TestParseLiteralAgainstCPython(t *testing.T) {
	cases := []string{`'\x41\n\q\101'`, `["a\"b", 'c\\d', "\u00e9"]`, `[1_0, -2.5, 0x10, 1e3, .5]`, `"it's"`, `('x',)`}
	var want []any
	testutil.PythonOracle(t, "import ast, json, sys\nprint(json.dumps([ast.literal_eval(c) for c in json.load(sys.stdin)]))", cases, &want)
	for i, c := range cases {
		got, err := ParseLiteral(c)
		if err != nil || !Equal(got, want[i]) {
			t.Errorf("ParseLiteral(%s) = %#v, %v; Python %#v", c, got, err, want[i])
		}
	}
	for _, bad := range []string{"inf", "01", `'\N{DIGIT ONE}'`, `'\ud800'`} {
		if v, err := ParseLiteral(bad); err == nil {
			t.Errorf("ParseLiteral(%s) = %#v, want an error", bad, v)
		}
	}
}
