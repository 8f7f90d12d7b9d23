package osworld

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// getRuleRelativeTime is get_rule_relativeTime: the rules with the dates
// in rules.expected written out for "tomorrow", "next Monday" and the other
// phrases OSWorld knows, counted from the guest's clock (or from now in
// rules.timezone).
func getRuleRelativeTime(ctx context.Context, e *Env, cfg Getter) (any, error) {
	rules, ok := deepCopy(cfg["rules"]).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("KeyError: 'rules'")
	}
	rel, ok := rules["relativeTime"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("KeyError: 'relativeTime'")
	}
	expected, ok := rules["expected"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("KeyError: 'expected'")
	}
	now := e.guestNow(ctx, rules)
	from, _ := rel["from"].(string)
	if _, ok := relativeKnown[from]; !ok {
		return nil, fmt.Errorf("KeyError: %s", pyvalue.Repr(from))
	}
	to, hasTo := rel["to"].(string)
	if !hasTo {
		day, err := singleDay(now, from)
		if err != nil {
			return nil, err
		}
		switch t := expected["time"].(type) {
		case string:
			expected["time"] = applyTimeFormat(t, day)
		case []any:
			out := make([]any, len(t))
			for i, x := range t {
				s, _ := x.(string)
				out[i] = applyTimeFormat(s, day)
			}
			expected["time"] = out
		default:
			return nil, fmt.Errorf("KeyError: 'time'")
		}
		return rules, nil
	}
	if _, ok := relativeKnown[to]; !ok {
		return nil, fmt.Errorf("KeyError: %s", pyvalue.Repr(to))
	}
	fromDay, err := rangeFromDay(now, from)
	if err != nil {
		return nil, err
	}
	if from == "next Monday split" {
		for _, k := range []string{"puDay", "puMonth", "puYear"} {
			s, _ := expected[k].(string)
			expected[k] = applyTimeFormat(s, fromDay)
		}
	} else {
		s, _ := expected["from"].(string)
		expected["from"] = applyTimeFormat(s, fromDay)
	}
	toDay, err := rangeToDay(now, from, to, fromDay)
	if err != nil {
		return nil, err
	}
	if to == "next Friday split" {
		for _, k := range []string{"doDay", "doMonth", "doYear"} {
			s, _ := expected[k].(string)
			expected[k] = applyTimeFormat(s, toDay)
		}
	} else {
		s, _ := expected["to"].(string)
		expected["to"] = applyTimeFormat(s, toDay)
	}
	return rules, nil
}

// relativeKnown is OSWorld's relativeTime_to_IntDay: the phrases it has a
// rule for (a value of 0 means "special", computed below).
var relativeKnown = map[string]int{
	"tomorrow": 1, "5th next month": 0, "10th next month": 0, "11th next month": 0, "this month": 0,
	"this Saturday": 0, "this Sunday": 0, "next Monday": 0, "next Friday": 0, "next Saturday": 0,
	"next Sunday": 0, "next week Friday": 0, "next week Saturday": 0, "next week Sunday": 0,
	"first monday four months later": 0, "first monday eight months later": 0,
	"next Monday split": 0, "next Friday split": 0,
}

// pyWeekday is Python's date.weekday(): Monday 0 … Sunday 6.
func pyWeekday(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

func days(t time.Time, n int) time.Time { return t.AddDate(0, 0, n) }

func dateIn(now time.Time, y, m, d int) (time.Time, error) {
	if m < 1 || m > 12 {
		return time.Time{}, fmt.Errorf("ValueError: month must be in 1..12")
	}
	return time.Date(y, time.Month(m), d, 0, 0, 0, 0, now.Location()), nil
}

func nextMonthDay(now time.Time, day int) (time.Time, error) {
	y, m := now.Year(), int(now.Month())+1
	if m > 12 {
		y, m = y+1, 1
	}
	return dateIn(now, y, m, day)
}

func firstMondayLater(now time.Time, months, yearFrom int) (time.Time, error) {
	y := now.Year()
	if int(now.Month()) >= yearFrom {
		y++
	}
	t, err := dateIn(now, y, (int(now.Month())+months)%12, 1)
	if err != nil {
		return t, err
	}
	return days(t, ((6-pyWeekday(t))+1)%7), nil
}

func unbound(what string) error {
	return fmt.Errorf("UnboundLocalError: no rule for %q", what)
}

func singleDay(now time.Time, from string) (time.Time, error) {
	switch from {
	case "tomorrow":
		return days(now, 1), nil
	case "5th next month":
		return nextMonthDay(now, 5)
	case "10th next month":
		return nextMonthDay(now, 10)
	case "this month":
		return now, nil
	case "next Monday":
		return days(now, 6-pyWeekday(now)+1), nil
	case "first monday four months later":
		return firstMondayLater(now, 4, 9)
	case "first monday eight months later":
		return firstMondayLater(now, 8, 5)
	}
	return time.Time{}, unbound(from)
}

func rangeFromDay(now time.Time, from string) (time.Time, error) {
	wd := pyWeekday(now)
	switch from {
	case "tomorrow":
		return days(now, 1), nil
	case "this Saturday":
		return days(now, 5-wd), nil
	case "10th next month":
		return nextMonthDay(now, 10)
	case "next Monday", "next Monday split":
		return days(now, 6-wd+1), nil
	case "next Friday":
		switch {
		case wd < 4:
			return days(now, 4-wd), nil
		case wd == 4:
			return days(now, 7), nil
		}
		return days(now, 7-wd+4), nil
	case "next Saturday":
		switch {
		case wd < 5:
			return days(now, 5-wd), nil
		case wd == 5:
			return days(now, 7), nil
		}
		return days(now, 6), nil
	case "next week Friday":
		return days(now, 7-wd+4), nil
	case "next week Saturday":
		return days(now, 7-wd+5), nil
	case "next week Sunday":
		return days(now, 7-wd+6), nil
	}
	return time.Time{}, unbound(from)
}

func rangeToDay(now time.Time, from, to string, fromDay time.Time) (time.Time, error) {
	wd := pyWeekday(now)
	switch to {
	case "tomorrow":
		return days(now, 1), nil
	case "this Sunday":
		return days(now, 6-wd), nil
	case "11th next month":
		return nextMonthDay(now, 11)
	case "next Friday", "next Friday split":
		if from == "next Monday" || from == "next Monday split" {
			return days(fromDay, 4), nil
		}
		if wd < 4 {
			return days(now, 4-wd), nil
		}
		return days(now, 6-wd+5), nil
	case "next Sunday":
		if from == "next Friday" || from == "next Saturday" {
			return days(fromDay, 6-pyWeekday(fromDay)), nil
		}
		if wd < 6 {
			return days(now, 6-wd), nil
		}
		return days(now, 7), nil
	case "next week Sunday":
		if from == "next week Friday" || from == "next week Saturday" {
			return days(fromDay, 6-pyWeekday(fromDay)), nil
		}
		return days(now, 7-wd+6), nil
	}
	return time.Time{}, unbound(to)
}

var (
	monthAbbr  = []string{"", "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}
	monthFull  = []string{"", "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayOfWeek3 = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}
)

// applyTimeFormat is apply_rules_to_timeFormat: each placeholder's first
// occurrence replaced, in OSWorld's order.
func applyTimeFormat(f string, d time.Time) string {
	two := func(n int) string {
		if n < 10 {
			return "0" + strconv.Itoa(n)
		}
		return strconv.Itoa(n)
	}
	m := int(d.Month())
	for _, r := range [][2]string{
		{"{DoW}", dayOfWeek3[pyWeekday(d)]},
		{"{Month}", monthAbbr[m]},
		{"{DayD}", strconv.Itoa(d.Day())},
		{"{Year}", strconv.Itoa(d.Year())},
		{"{Month0D}", two(m)},
		{"{month}", strings.ToLower(monthFull[m])},
		{"{MonthFull}", monthFull[m]},
		{"{Day0D}", two(d.Day())},
		{"{MonthD}", strconv.Itoa(m)},
	} {
		f = strings.Replace(f, r[0], r[1], 1)
	}
	return f
}

// guestNow is the evaluation's "now": in rules.timezone when the rules name
// one, else the guest's local time (as OSWorld reads it with Python on the
// VM), else the host's.
func (e *Env) guestNow(ctx context.Context, rules map[string]any) time.Time {
	if tz, ok := rules["timezone"].(string); ok && tz != "" {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			loc = time.UTC
		}
		return e.now().In(loc)
	}
	r, err := e.Guest.Execute(ctx, "/execute", []string{"python3", "-c",
		"from datetime import datetime; print(datetime.now().astimezone().isoformat())"}, false)
	if err == nil && r.ReturnCode == 0 {
		if t, err := time.Parse("2006-01-02T15:04:05.999999-07:00", strings.TrimSpace(r.Output)); err == nil {
			return t
		}
	}
	return e.now()
}

// deepCopy copies a JSON-shaped value, so a getter that rewrites its rules
// (as OSWorld's does in place) leaves the task untouched.
func deepCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
