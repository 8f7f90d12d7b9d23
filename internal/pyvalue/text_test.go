package pyvalue

import (
	"slices"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

func TestStrip(t *testing.T) {
	if got := Rstrip("text \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f\u0085\u00a0\u3000"); got != "text" {
		t.Fatalf("rstrip left %q", got)
	}
	if got := Strip(" a b "); got != "a b" {
		t.Fatalf("strip %q", got)
	}
	if got := Rstrip("x\u200b"); got != "x\u200b" {
		t.Fatal("U+200B is not whitespace in Python")
	}
}

func TestIsSpaceAgainstCPython(t *testing.T) {
	var want []rune
	testutil.PythonOracle(t, "import json, sys\nprint(json.dumps([c for c in range(0x110000) if chr(c).isspace()]))", nil, &want)
	var got []rune
	for r := rune(0); r < 0x110000; r++ {
		if IsSpace(r) {
			got = append(got, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("IsSpace holds for %U, str.isspace for %U", got, want)
	}
}
