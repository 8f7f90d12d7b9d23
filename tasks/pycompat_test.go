package tasks

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPyEqualAndIn(t *testing.T) {
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
		if got := pyEqual(c.a, c.b); got != c.want {
			t.Errorf("pyEqual(%#v, %#v) = %v", c.a, c.b, got)
		}
	}
	if in, err := pyIn("ell", "hello"); !in || err != nil {
		t.Errorf("substring: %v %v", in, err)
	}
	if _, err := pyIn(1.0, "hello"); err == nil {
		t.Error("'in <string>' with a number must raise")
	}
	if _, err := pyIn("x", nil); err == nil {
		t.Error("'in None' must raise")
	}
	if in, _ := pyIn("k", map[string]any{"k": nil}); !in {
		t.Error("dict key membership")
	}
}

func TestParsePyLiteral(t *testing.T) {
	for in, want := range map[string]any{
		"['thunderbird.desktop', 'vim.desktop']\n": []any{"thunderbird.desktop", "vim.desktop"},
		"@as []":        []any{},
		`["a\"b", 'c']`: []any{`a"b`, "c"},
		"(1, True)":     []any{1.0, true},
		"'text'":        "text",
	} {
		got, err := parsePyLiteral(in)
		if err != nil {
			t.Errorf("parsePyLiteral(%q): %v", in, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("parsePyLiteral(%q) (-want +got):\n%s", in, diff)
		}
	}
	for _, bad := range []string{"", "['a'", "[a]", "'a' b"} {
		if _, err := parsePyLiteral(bad); err == nil {
			t.Errorf("parsePyLiteral(%q) succeeded", bad)
		}
	}
}

func TestCompareURLs(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"https://www.airbnb.com", "https://airbnb.com/", true},
		{"https://www.airbnb.com.sg", "https://airbnb.com", true},
		{"www.lonelyplanet.com", "http://lonelyplanet.com", true},
		{"https://a.com/x?q=1", "https://a.com/x?q=2", false},
		{"https://maps.google.com", "https://google.com", false},
		{"file:///home/user/a.html", "file:///home/user/a.html", true},
		{"file:///home/user/a.html", "file:///home/user/b.html", false},
		{"HTTPS://A.COM/Path", "https://a.com/Path", true},
	} {
		if got := compareURLs(c.a, c.b, true); got != c.want {
			t.Errorf("compareURLs(%q, %q) = %v (%s vs %s)", c.a, c.b, got, normalizeURL(c.a, true), normalizeURL(c.b, true))
		}
	}
}

func TestApplyTimeFormat(t *testing.T) {
	d := mustDate(t, "2024-03-07")
	got := applyTimeFormat("{DoW}, {Month} {DayD}, {Year} {Month0D}/{Day0D} {month} {MonthFull} {MonthD}", d)
	if want := "Thu, Mar 7, 2024 03/07 march March 3"; got != want {
		t.Errorf("applyTimeFormat = %q, want %q", got, want)
	}
}

func TestRelativeDays(t *testing.T) {
	now := mustDate(t, "2024-03-07") // a Thursday
	for _, c := range []struct {
		from, want string
	}{
		{"tomorrow", "2024-03-08"},
		{"next Monday", "2024-03-11"},
		{"5th next month", "2024-04-05"},
		{"first monday four months later", "2024-07-01"},
	} {
		got, err := singleDay(now, c.from)
		if err != nil || got.Format("2006-01-02") != c.want {
			t.Errorf("singleDay(%s) = %s, %v; want %s", c.from, got.Format("2006-01-02"), err, c.want)
		}
	}
	from, _ := rangeFromDay(now, "next Friday")
	to, _ := rangeToDay(now, "next Friday", "next Sunday", from)
	if from.Format("2006-01-02") != "2024-03-08" || to.Format("2006-01-02") != "2024-03-10" {
		t.Errorf("next Friday..next Sunday = %s..%s", from.Format("2006-01-02"), to.Format("2006-01-02"))
	}
	if _, err := singleDay(now, "this Sunday"); err == nil {
		t.Error("a phrase OSWorld has no single-day rule for must fail")
	}
}

func mustDate(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse("2006-01-02", s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
