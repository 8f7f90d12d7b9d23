package bench

import (
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/sessions"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

func stats(median, p95 time.Duration) compat.Stats {
	return compat.Stats{N: 10, Median: median, P95: p95, Min: median / 2, Max: p95 * 2}
}

// sampleReport is a run of every part, with figures of the shape real
// runs give.
func sampleReport() *Report {
	date := time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)
	stamp := Stamp{Date: date, Seconds: 12, LoadBefore: "0.50", LoadAfter: "1.20"}
	ms := time.Millisecond
	req := func(e, s, a time.Duration) []RequestRow {
		return []RequestRow{{"execute", stats(e, 2*e), 76}, {"screenshot", stats(s, 2*s), 180 << 10}, {"accessibility", stats(a, 2*a), 9000}}
	}
	return &Report{
		Name: "bench", Started: date, Command: "drums bench --step-desktops 1,10", Machine: "2 × AMD EPYC, 24 GiB RAM, kernel 6.18, go1.26",
		LoadStart: "0.50 0.40 0.30", LoadEnd: "2.00 1.00 0.50", Upstream: "`main.py` from /up (DRUMS_UPSTREAM_PYTHONPATH=/lib)",
		Sessions: &SessionsResult{Stamp: stamp, Desktops: 5, Image: "core", Idle: 65 * time.Second,
			Create: stats(120*ms, 150*ms), Reset: stats(110*ms, 140*ms), Remove: stats(30*ms, 40*ms),
			InitSteps: []sessions.StepTime{{Name: "net", Ms: 5.1}, {Name: "xvfb", Ms: 40.2}, {Name: "guestd", Ms: 55}},
			PSS:       []int64{27000, 27500, 28000, 27200, 27300},
			ByProcess: []MemRow{{"Xvfb", 12000}, {"guestd", 5000}, {"openbox", 4000}, {"drums", 2700}, {"drums-spawner", 2300}, {"at-spi2-registr", 1000},
				{"at-spi-bus-laun", 900}, {"dbus-daemon", 600}},
			HostPerDesktop: 36000},
		Latency: &compat.BenchReport{Started: date, Command: "drums bench --step-desktops 1,10", Desktop: "one drums session", Machine: "2 × AMD EPYC",
			N: 10, Warmup: 2, Upstream: "http://10.0.0.2:5000", Guestd: "http://10.0.0.2:5001",
			Results: []compat.BenchResult{
				{Name: "screenshot", Doc: "1920x1080", Method: "GET", Path: "/screenshot", Request: "GET /screenshot",
					Upstream: stats(109*ms, 113*ms), Guestd: stats(4*ms, 6*ms), LoadBefore: "0.9", LoadAfter: "1.0"},
				{Name: "cursor_position", Method: "GET", Path: "/cursor_position", Request: "GET /cursor_position",
					Upstream: stats(700*time.Microsecond, 800*time.Microsecond), Guestd: stats(400*time.Microsecond, 500*time.Microsecond), LoadBefore: "1.0", LoadAfter: "1.1"},
			}},
		StepLoop: &StepLoopDescription{Stamp: stamp, Loop: 5, Rounds: 2, Requests: describeSteps(DefaultSteps()), Setup: "gnome-terminal open, readied by the setup of the latency benchmark accessibility/gnome-terminal"},
		Steps: []StepRow{
			{Server: "guestd", Desktops: 1, Loops: 2, Seconds: 10, Steps: 600, StepsPerSecond: 60, PerDesktop: 60, SlowestDesktop: 60, FastestDesktop: 60,
				Step: stats(16*ms, 25*ms), Requests: req(1*ms, 4*ms, 11*ms), CPUPerStep: 15 * ms, ClientPerStep: 2 * ms, CPUMeasured: true,
				Procs: []ProcRow{{"guestd", 9 * ms}, {"gnome-terminal-", 4 * ms}, {"Xvfb", 2 * ms}}, LoadBefore: "1.0", LoadAfter: "1.5",
				Host: &HostShare{Desktops: 0.45, Client: 0.05, Others: 0.1, IOWait: 0.05, Steal: 0.01, Idle: 0.34}},
			{Server: "upstream", Desktops: 1, Loops: 2, Seconds: 10, Steps: 16, Errors: 1, FirstError: "GET /accessibility: status 500 | boom",
				StepsPerSecond: 1.6, PerDesktop: 1.6, SlowestDesktop: 1.6, FastestDesktop: 1.6,
				Step: stats(600*ms, 900*ms), Requests: req(160*ms, 200*ms, 220*ms), CPUPerStep: 420 * ms, ClientPerStep: 3 * ms, CPUMeasured: true,
				Procs:      []ProcRow{{endedProcs, 290 * ms}, {"python3", 80 * ms}, {"gnome-terminal-", 24 * ms}, {"Xvfb", 14 * ms}, {"guestd", 1 * ms}, {"a", ms}, {"b", ms}, {"c", ms}},
				LoadBefore: "1.5", LoadAfter: "1.8"},
			{Server: "guestd", Desktops: 10, Loops: 2, Seconds: 10, Steps: 1000, StepsPerSecond: 100, PerDesktop: 10, SlowestDesktop: 9, FastestDesktop: 11,
				Step: stats(90*ms, 150*ms), Requests: req(5*ms, 30*ms, 50*ms), CPUPerStep: 18 * ms, ClientPerStep: 2 * ms, CPUMeasured: true,
				Procs: []ProcRow{{"guestd", 10 * ms}, {"gnome-terminal-", 5 * ms}, {"Xvfb", 3 * ms}}, LoadBefore: "1.8", LoadAfter: "2.0"},
		},
	}
}

// The Markdown and the chart of a run, for review: testdata/*.golden
// (go test -update rewrites them).
func TestReportGolden(t *testing.T) {
	r := sampleReport()
	testutil.Golden(t, filepath.Join("testdata", "report.md.golden"), r.Markdown(), *update)
	testutil.Golden(t, filepath.Join("testdata", "report.svg.golden"), r.SVG(), *update)
}

// Every figure of the chart carries the machine, its part's date and load,
// and the command.
func TestEveryPanelHasItsProvenance(t *testing.T) {
	r := sampleReport()
	ps := r.panels()
	var titles []string
	for _, p := range ps {
		titles = append(titles, p.title)
		text := strings.Join(p.caption, " ")
		for _, want := range []string{"Machine: 2 × AMD EPYC", "Date: 2026-12-01T18:00:00Z", "load average (1 min)", "Command: drums bench --step-desktops 1,10"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: caption %q lacks %q", p.title, text, want)
			}
		}
	}
	want := []string{"Sessions: create, reset and remove (median)", "Idle memory per desktop (PSS, by process)", "Request latency, one desktop (median)",
		"RL step loop: steps per second per desktop", "Where a step's time goes (median of each request)", "CPU per step, by process of the desktops",
		"The host's CPU over the loops"}
	if !slices.Equal(titles, want) {
		t.Errorf("panels %q, want %q", titles, want)
	}
	// The upstream row's many processes fold into "other" after six.
	cpu := ps[5].bars[1]
	if len(cpu.segs) != 7 || cpu.segs[6].name != "other" || cpu.segs[6].v != 2 {
		t.Errorf("upstream cpu bar %+v", cpu)
	}
}

func TestWrapAndNumbers(t *testing.T) {
	if got := wrap("aa bb cc dd", 5); !slices.Equal(got, []string{"aa bb", "cc dd"}) {
		t.Errorf("wrap: %q", got)
	}
	if got := wrap("averyverylongword x", 5); !slices.Equal(got, []string{"averyverylongword", "x"}) {
		t.Errorf("wrap of a long word: %q", got)
	}
	for v, want := range map[float64]string{0.123: "0.12", 12.34: "12.3", 123.4: "123", 0: "0.00"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %s, want %s", v, got, want)
		}
	}
	if got := esc(`<a & "b">`); got != "&lt;a &amp; &#34;b&#34;&gt;" {
		t.Errorf("esc: %s", got)
	}
}

// A report written as JSON reads back to the same Markdown and chart.
func TestReportRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	back.Name = r.Name
	if back.Markdown() != r.Markdown() || back.SVG() != r.SVG() {
		t.Error("the report read back renders differently")
	}
	if _, err := ReadReport(filepath.Join(dir, "bench.md")); err == nil {
		t.Error("Markdown parsed as a report")
	}
}
