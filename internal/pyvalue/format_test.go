package pyvalue

import (
	"math"
	"os/exec"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

func TestReprFloat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0.0"}, {50, "50.0"}, {0.1, "0.1"}, {0.0001, "0.0001"}, {1e-5, "1e-05"},
		{1e15, "1000000000000000.0"}, {1e16, "1e+16"}, {1.2345678901234568e+17, "1.2345678901234568e+17"},
		{2.5e-310, "2.5e-310"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"}, {math.NaN(), "nan"},
		{math.Copysign(0, -1), "-0.0"}, {-1.5, "-1.5"}, {123.456, "123.456"}, {1e100, "1e+100"},
	} {
		if got := ReprFloat(c.v); got != c.want {
			t.Errorf("ReprFloat(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestReprStr(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"sleep", `'sleep'`}, {"it's", `"it's"`}, {`a'b"c`, `'a\'b"c'`}, {"a\\b", `'a\\b'`},
		{"tab\tnl\ncr\r", `'tab\tnl\ncr\r'`}, {"\x01\x7f", `'\x01\x7f'`}, {"é€✓", `'é€✓'`},
		{"\u00a0", `'\xa0'`}, {"\u200b", `'\u200b'`}, {"\U0001F600", "'\U0001F600'"},
	} {
		if got := ReprStr(c.in); got != c.want {
			t.Errorf("ReprStr(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	if got, want := ReprStrList([]string{"sleep", "200"}), `['sleep', '200']`; got != want {
		t.Errorf("StrList = %s, want %s", got, want)
	}
}

// TestAgainstCPython checks the formatting against Debian's python3 where it
// is installed; the tables above pin the behaviour everywhere else.
func TestReprAgainstCPython(t *testing.T) {
	py, err := exec.LookPath("/usr/bin/python3")
	testutil.Need(t, "Debian's /usr/bin/python3 to compare with", err)
	inputs := []string{"plain", "it's", `both'"`, "\x00\x1b[0m", "naïve ☃ \u0085 \u2028 \ufeff", "\U0001F600\U000e0001"}
	floats := []float64{0, 3.14159, 1e-7, 123456789012345678, 0.30000000000000004, 5e-324}
	var script strings.Builder
	script.WriteString("import sys\nfor l in sys.stdin.read().split('\\x1e')[:-1]:\n  k,v=l.split('\\x1f',1)\n  print(repr(v) if k=='s' else repr(float(v)))\n")
	var in strings.Builder
	var want []string
	for _, s := range inputs {
		in.WriteString("s\x1f" + s + "\x1e")
		want = append(want, ReprStr(s))
	}
	for _, f := range floats {
		in.WriteString("f\x1f" + ReprFloat(f) + "\x1e")
		want = append(want, ReprFloat(f))
	}
	cmd := exec.Command(py, "-c", script.String())
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("python printed %d lines, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("case %d: python %s, pyvalue %s", i, got[i], want[i])
		}
	}
}
