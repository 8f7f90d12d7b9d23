package pyvalue

import (
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

var shlexCases = []string{
	`echo hello world`,
	`python -c "import pyautogui; pyautogui.click(10, 20)"`,
	`a 'b c' "d e" f\ g`,
	`x\y "x\y" 'x\y' "a\"b" "a\\b" "a\$b"`,
	`''  ""  a''b a""b`,
	"tab\tsep\nnew\rline",
	`# not a comment`,
	`a#b #c`,
	`"multi word" 'it''s'`,
	`   leading and trailing   `,
	``,
	`\ `,
	`\\`,
	`"ü 日本" é`,
	`a"b c"d`,
	`"\n" '\n' \n`,
	`"a'b" 'a"b'`,
	`echo \"$HOME\"`,
	`"unterminated`,
	`'unterminated`,
	`trailing\`,
	`"esc at end\`,
}

func TestShlexSplit(t *testing.T) {
	fixed := map[string][]string{
		`echo hello world`:                     {"echo", "hello", "world"},
		`a 'b c' "d e" f\ g`:                   {"a", "b c", "d e", "f g"},
		`x\y "x\y" 'x\y' "a\"b" "a\\b" "a\$b"`: {"xy", `x\y`, `x\y`, `a"b`, `a\b`, `a\$b`},
		`''  ""  a''b a""b`:                    {"", "", "ab", "ab"},
		`a#b #c`:                               {"a#b", "#c"},
		``:                                     nil,
	}
	for in, want := range fixed {
		got, err := ShlexSplit(in)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("ShlexSplit(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]error{`"x`: ErrNoClosingQuotation, `'x`: ErrNoClosingQuotation, `x\`: ErrNoEscapedCharacter} {
		if _, err := ShlexSplit(in); err != want {
			t.Errorf("ShlexSplit(%q) error %v, want %v", in, err, want)
		}
	}

	t.Run("cpython", func(t *testing.T) {
		script := `
import json, shlex, sys
out = []
for c in json.load(sys.stdin):
    try: out.append({"words": shlex.split(c)})
    except ValueError as e: out.append({"error": str(e)})
print(json.dumps(out))
`
		var want []struct {
			Words []string
			Error string
		}
		testutil.PythonOracle(t, script, shlexCases, &want)
		for i, c := range shlexCases {
			got, err := ShlexSplit(c)
			if want[i].Error != "" {
				if err == nil || err.Error() != want[i].Error {
					t.Errorf("ShlexSplit(%q) = %q, %v; Python raised %q", c, got, err, want[i].Error)
				}
				continue
			}
			if err != nil || len(got) != len(want[i].Words) || (len(got) > 0 && !cmp.Equal(got, want[i].Words)) {
				t.Errorf("ShlexSplit(%q) = %q, %v; Python %q", c, got, err, want[i].Words)
			}
		}
	})
}
