package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drums-dev/drums/compat"
)

// The density part: how many desktops of a workload fit on this machine
// while every one answers GET /screenshot within a limit. A ramp adds
// desktops a step at a time, lets them settle, then times one screenshot
// of every desktop and reads the host's MemAvailable and each desktop's
// memory; it stops at the first desktop that fails to come up or answers
// late, when the next desktops would take MemAvailable below a floor (the
// host must never reach its OOM killer: other work shares it), or at the
// ramp's maximum. With KSM, ksmd then merges the desktops' pages (they are
// marked: sessions.Config.MemoryMerge) and, if memory stopped the ramp, the
// ramp goes on with merging until it stops again.

// Workload names.
const (
	WorkloadChromium = "chromium"
	WorkloadCalc     = "calc"
	WorkloadIdle     = "idle"
)

// Workload is what every desktop of a ramp has open.
type Workload struct {
	Name, Doc string
	// Light desktops run from Config.LightImage with nothing open; the
	// others from the run's image, readied by Setup.
	Light bool
	Setup *compat.Benchmark
	// Guess is the host memory one desktop is taken to need, in KiB,
	// until the ramp has measured it: above what it measures, so that
	// the first step cannot cross the floor.
	Guess int64
}

// densityPage is the page every Chromium desktop shows: local, from the
// desktop's own files (file://), with text, a table, a form and an
// image drawn by the page, as a task's page has.
const densityPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>drums density page</title>
<style>body{font-family:sans-serif;margin:2em;background:#f7f7f2}table{border-collapse:collapse}td,th{border:1px solid #999;padding:4px 8px}
.card{display:inline-block;width:14em;margin:.5em;padding:1em;background:#fff;box-shadow:0 1px 4px #0003;border-radius:6px}</style></head>
<body><h1>drums density page</h1>
<p>A page served from the desktop's own files, as the density part of drums bench shows it in every Chromium desktop.</p>
<form><label>Search <input name="q" value="desktops"></label> <select><option>one</option><option>two</option></select> <button type="button">Go</button></form>
<svg width="480" height="120"><rect x="10" y="10" width="200" height="100" fill="#2b6cb0"/><circle cx="320" cy="60" r="50" fill="#dd6b20"/></svg>
<div id="cards"></div><table id="t"><tr><th>#</th><th>name</th><th>value</th></tr></table>
<script>
for (let i = 1; i <= 12; i++) document.getElementById('cards').insertAdjacentHTML('beforeend', '<div class="card"><b>Card ' + i + '</b><p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p></div>');
const t = document.getElementById('t');
for (let i = 1; i <= 200; i++) t.insertAdjacentHTML('beforeend', '<tr><td>' + i + '</td><td>row ' + i + '</td><td>' + (i * 37 % 101) + '</td></tr>');
</script></body></html>
`

// Workloads are the built-in workloads.
func Workloads() []Workload {
	return []Workload{
		{Name: WorkloadChromium, Doc: "Chromium (google-chrome, as OSWorld starts it) showing a local page (file://, text, a form, a table of 200 rows, an SVG)",
			Guess: 700 << 10, Setup: &compat.Benchmark{Name: "density/chromium", Needs: []string{"google-chrome", "wmctrl"}, Setup: []compat.Action{
				{Sh: "mkdir -p ~/density && cat > ~/density/page.html <<'EOF'\n" + densityPage + "EOF"},
				{Sh: "setsid -f google-chrome --remote-debugging-port=1337 file://$HOME/density/page.html >/dev/null 2>&1 </dev/null"},
				{Sh: "wmctrl -l | grep -q 'drums density page'", Until: 120},
			}}},
		{Name: WorkloadCalc, Doc: "LibreOffice Calc holding a sheet (2000 rows of 5 columns, opened from CSV)",
			Guess: 600 << 10, Setup: &compat.Benchmark{Name: "density/calc", Needs: []string{"soffice", "wmctrl"}, Setup: []compat.Action{
				{Sh: `mkdir -p ~/density && { echo 'id,name,group,value,total'; seq 1 2000 | awk '{printf "%d,item %d,%d,%.2f,%d\n", $1, $1, $1 % 97, $1 / 7, $1 * 13}'; } > ~/density/sheet.csv`},
				{Sh: "setsid -f soffice --calc --infilter=CSV:44,34,76,1 $HOME/density/sheet.csv >/dev/null 2>&1 </dev/null"},
				{Sh: "wmctrl -l | grep -q 'sheet.csv'", Until: 120},
			}}},
		{Name: WorkloadIdle, Doc: "nothing open (desktops of the light image)", Light: true, Guess: 100 << 10},
	}
}

// DensitySpec is one ramp: a workload up to Max desktops, Step at a time.
type DensitySpec struct {
	Workload  string `json:"workload"`
	Max, Step int
}

// rampConfig is what a ramp needs to know.
type rampConfig struct {
	Max, Step int
	Limit     time.Duration // every desktop answers /screenshot within it
	Floor     int64         // KiB of MemAvailable that must stay
	Guess     int64         // KiB a desktop is taken to need, until measured
	Settle    time.Duration // after a step, before it is measured
	Parallel  int           // desktops brought up at once
}

// rampEnv is what a ramp does to the machine (real desktops, or fakes in
// tests).
type rampEnv struct {
	// add brings up one more desktop with the workload open; it may be
	// called Parallel times at once.
	add func(ctx context.Context) error
	// probe times one screenshot of every desktop up, in the order they
	// came up.
	probe func(ctx context.Context) ([]time.Duration, error)
	// avail is the host's MemAvailable, in KiB.
	avail func() (int64, error)
	// measure reads each desktop's memory at the end of a step.
	measure func() (DensityMemory, error)
	// wait lets a step settle (a setting of the measurement, not a
	// readiness wait: every desktop was ready when add returned).
	wait func(ctx context.Context, d time.Duration) error
}

// RampStep is the measurement after a step.
type RampStep struct {
	Desktops     int   `json:"desktops"`
	MemAvailable int64 `json:"mem_available_kib"`
	// HostPerDesktop is the ramp's baseline MemAvailable less this one,
	// over the desktops.
	HostPerDesktop int64        `json:"host_per_desktop_kib"`
	Screenshot     compat.Stats `json:"screenshot"`
	// Slowest is the desktop (its place in bring-up order) that answered
	// last.
	Slowest int           `json:"slowest"`
	Memory  DensityMemory `json:"memory"`
	KSM     bool          `json:"ksm,omitempty"` // ksmd was merging
	Seconds float64       `json:"seconds"`       // since the ramp began
}

// DensityMemory is the mean per desktop of what its processes map, and by
// process name.
type DensityMemory struct {
	PerDesktop ProcMem      `json:"per_desktop"`
	ByProcess  []MemProcRow `json:"by_process,omitempty"`
}

// MemProcRow is a process name's mean memory per desktop.
type MemProcRow struct {
	Name string  `json:"name"`
	Mem  ProcMem `json:"mem"`
}

// Stop kinds: why a ramp ended.
const (
	StopMax     = "max"     // it reached its maximum
	StopMemory  = "memory"  // the next desktops would cross the floor
	StopLatency = "latency" // a desktop answered late
	StopFailed  = "failed"  // a desktop did not come up or answer
)

// RampStop says why a ramp ended and how many desktops fit: every one
// answering within the limit, the floor kept.
type RampStop struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Fit    int    `json:"fit"`
}

// ramp runs steps from the n desktops up (each step adds cfg.Step, in
// batches of cfg.Parallel) until it stops. baseline is MemAvailable with
// none of the ramp's desktops up. An error is the run's (the context
// ended, memory unreadable); what the desktops do is a stop. Each step is
// passed to show as it is measured.
func ramp(ctx context.Context, cfg rampConfig, env rampEnv, n int, baseline int64, ksm bool, began time.Time, show func(RampStep)) ([]RampStep, RampStop, error) {
	var steps []RampStep
	fit := n
	est := cfg.Guess
	for {
		if n >= cfg.Max {
			return steps, RampStop{Kind: StopMax, Reason: fmt.Sprintf("reached the ramp's maximum, %d", cfg.Max), Fit: fit}, nil
		}
		before, err := env.avail()
		if err != nil {
			return nil, RampStop{}, err
		}
		added, stop, err := rampAdd(ctx, cfg, env, n, min(cfg.Step, cfg.Max-n), est)
		if err != nil {
			return nil, RampStop{}, err
		}
		if stop != nil && (stop.Kind == StopFailed || added == 0) {
			stop.Fit = fit
			return steps, *stop, nil
		}
		// What came up is measured, also when the floor cut the step short.
		n += added
		st, lstop, err := rampMeasure(ctx, cfg, env, n, baseline, ksm, began)
		if err != nil {
			return nil, RampStop{}, err
		}
		steps = append(steps, st)
		show(st)
		if lstop != nil {
			lstop.Fit = fit
			return steps, *lstop, nil
		}
		fit = n
		if stop != nil {
			stop.Fit = fit
			return steps, *stop, nil
		}
		// The next step's estimate: the larger of this step's cost per
		// desktop and the ramp's mean, so that a step cheaper than the
		// rest (pages shared once loaded) does not lower it.
		est = max(st.HostPerDesktop, (before-st.MemAvailable)/int64(added), 1)
	}
}

// rampAdd brings up want desktops after the n up, cfg.Parallel at a time,
// as long as est KiB for each leaves MemAvailable above the floor. It
// returns how many came up and, if it stopped short, why (the memory
// floor, or a desktop that failed).
func rampAdd(ctx context.Context, cfg rampConfig, env rampEnv, n, want int, est int64) (int, *RampStop, error) {
	added := 0
	for added < want {
		avail, err := env.avail()
		if err != nil {
			return 0, nil, err
		}
		batch := min(cfg.Parallel, want-added, int((avail-cfg.Floor)/max(1, est)))
		if batch < 1 {
			return added, &RampStop{Kind: StopMemory, Reason: fmt.Sprintf("MemAvailable %.0f MiB: one more desktop (%.0f MiB) would take it below the floor of %.0f MiB",
				mib(avail), mib(est), mib(cfg.Floor))}, nil
		}
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = env.add(ctx) }()
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return 0, nil, err
		}
		if err := errors.Join(errs...); err != nil {
			return added, &RampStop{Kind: StopFailed, Reason: fmt.Sprintf("a desktop did not come up as the %s: %v", ordinal(n+added+1), err)}, nil
		}
		added += batch
	}
	return added, nil, nil
}

// rampMeasure settles and measures n desktops; a stop is returned when one
// answers late or not at all.
func rampMeasure(ctx context.Context, cfg rampConfig, env rampEnv, n int, baseline int64, ksm bool, began time.Time) (RampStep, *RampStop, error) {
	if err := env.wait(ctx, cfg.Settle); err != nil {
		return RampStep{}, nil, err
	}
	times, perr := env.probe(ctx)
	if err := ctx.Err(); err != nil {
		return RampStep{}, nil, err
	}
	avail, err := env.avail()
	if err != nil {
		return RampStep{}, nil, err
	}
	mem, err := env.measure()
	if err != nil {
		return RampStep{}, nil, err
	}
	st := RampStep{Desktops: n, MemAvailable: avail, HostPerDesktop: (baseline - avail) / int64(max(1, n)), Memory: mem, KSM: ksm,
		Seconds: time.Since(began).Seconds()}
	if len(times) > 0 {
		st.Screenshot = compat.NewStats(times)
		for i, t := range times {
			if t > times[st.Slowest] {
				st.Slowest = i
			}
		}
	}
	if perr != nil {
		return st, &RampStop{Kind: StopFailed, Reason: fmt.Sprintf("with %d desktops up: %v", n, perr)}, nil
	}
	if st.Screenshot.Max > cfg.Limit {
		return st, &RampStop{Kind: StopLatency, Reason: fmt.Sprintf("with %d desktops up the %s answered GET /screenshot in %s, over the limit of %s",
			n, ordinal(st.Slowest+1), compat.Millis(st.Screenshot.Max), cfg.Limit)}, nil
	}
	return st, nil, nil
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}

// probeTimeout bounds one probe's screenshot: far above the limit, so
// that a late answer is timed, not cut.
const probeTimeout = 30 * time.Second

// screenshotTimes times one GET /screenshot of each URL, one after the
// other (a probe measures each desktop under the load of all the others
// idle, not of the probe itself), each on a new connection as OSWorld's
// client makes them. An answer that is not a 200 PNG is an error.
func screenshotTimes(ctx context.Context, urls []string) ([]time.Duration, error) {
	client := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	var times []time.Duration
	for i, u := range urls {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+"/screenshot", nil)
		if err != nil {
			return times, err
		}
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return times, fmt.Errorf("the %s desktop's GET /screenshot: %w", ordinal(i+1), err)
		}
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		times = append(times, time.Since(start))
		if err := errors.Join(rerr, checkPNG(resp.StatusCode, body)); err != nil {
			return times, fmt.Errorf("the %s desktop's GET /screenshot: %w", ordinal(i+1), err)
		}
	}
	return times, nil
}

// densityMemory is the mean per desktop of what the desktops' processes
// map, and by process name, largest PSS first.
func densityMemory(byDesktop []map[string]ProcMem) DensityMemory {
	var out DensityMemory
	names := map[string]ProcMem{}
	for _, m := range byDesktop {
		for name, pm := range m {
			out.PerDesktop.add(pm)
			sum := names[name]
			sum.add(pm)
			names[name] = sum
		}
	}
	n := int64(max(1, len(byDesktop)))
	out.PerDesktop = out.PerDesktop.per(n)
	for name, pm := range names {
		out.ByProcess = append(out.ByProcess, MemProcRow{Name: name, Mem: pm.per(n)})
	}
	slices.SortFunc(out.ByProcess, func(a, b MemProcRow) int {
		return cmp.Or(cmp.Compare(b.Mem.Pss, a.Mem.Pss), strings.Compare(a.Name, b.Name))
	})
	return out
}
