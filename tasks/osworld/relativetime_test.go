package osworld

import (
	"testing"
	"time"
)

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
