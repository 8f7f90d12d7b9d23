package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/drums-dev/drums/compat"
)

// The parts of a run, in the order they run: the light desktops first, on
// a machine with nothing else of the run up.
const (
	PartSessions = "sessions"
	PartLatency  = "latency"
	PartSteps    = "steps"
)

// Parts are every part, in order.
var Parts = []string{PartSessions, PartLatency, PartSteps}

// Config is what a run measures and where it writes.
type Config struct {
	Parts []string
	// Sessions light desktops from LightImage are created, idle for Idle,
	// reset and removed.
	Sessions   int
	Idle       time.Duration
	LightImage string
	// Latency benchmarks are timed LatencyN times per server after
	// LatencyWarmup untimed requests, on the first step desktop.
	Latency       []compat.Benchmark
	LatencyN      int
	LatencyWarmup int
	// The step loop runs on each count of StepDesktops, for StepDuration,
	// Rounds times per server (alternating which server goes first).
	StepDesktops []int
	StepDuration time.Duration
	Rounds       int
	// StepSetup, if not nil, is the benchmark whose setup readies every
	// step desktop (opens its application) before the loops; nil leaves
	// the desktops empty.
	StepSetup *compat.Benchmark
	// Out is the directory the report goes to, as Name.md, Name.svg and
	// Name.json.
	Out, Name string
	// Command is the command line, for the report.
	Command string
	// Upstream describes the upstream tree the desktops run main.py from;
	// "" means drums alone, and NoUpstream says why.
	Upstream, NoUpstream string
}

// Desktop is one desktop of the latency and step parts: guestd, and
// upstream main.py beside it unless the run is drums alone.
type Desktop interface {
	compat.Desktop
	// CPU is what the desktop's processes have used so far.
	CPU() (CPUSample, error)
	Describe() string
	Close() error
}

// Host is what a run needs of the machine, from its caller.
type Host struct {
	// Engine makes the sessions part's light desktops; Steps, if not nil,
	// is the log handler the engine was given.
	Engine Engine
	Steps  *StepLog
	// Desktop brings up one desktop of the latency and step parts.
	Desktop func(ctx context.Context) (Desktop, error)
	// Proc is the host's /proc ("" is "/proc").
	Proc string
	// Stdout gets the tables as they are measured, Stderr the progress.
	Stdout, Stderr io.Writer
}

// desktopParallel is how many step desktops come up at once. Upstream's
// start is CPU-bound (Flask's reloader imports pyautogui, lxml and pyatspi
// twice); on a 2-core machine more at once only queue.
const desktopParallel = 2

// Run runs the parts of cfg, printing each figure as it is measured, and
// writes the report. Every desktop it brings up is removed, whatever
// fails.
func Run(ctx context.Context, cfg Config, host Host) (*Report, error) {
	if host.Proc == "" {
		host.Proc = "/proc"
	}
	rep := &Report{Started: time.Now().UTC(), Command: cfg.Command, Machine: compat.Machine(), LoadStart: compat.LoadAverages(3),
		Upstream: cfg.Upstream, NoUpstream: cfg.NoUpstream, Name: cfg.Name}
	say := func(format string, a ...any) { fmt.Fprintf(host.Stderr, "bench: "+format+"\n", a...) }
	if cfg.Upstream == "" {
		say("no upstream (%s): drums alone", cfg.NoUpstream)
	}
	if slices.Contains(cfg.Parts, PartSessions) {
		say("sessions: %s (image %s), created one after the other, %s idle, reset, removed", plural(cfg.Sessions, "light desktop"), cfg.LightImage, cfg.Idle)
		s, err := runSessions(ctx, host.Engine, host.Steps, procfs{host.Proc}, cfg.Sessions, cfg.LightImage, cfg.Idle, host.Stdout)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		rep.Sessions = s
	}
	latency, steps := slices.Contains(cfg.Parts, PartLatency), slices.Contains(cfg.Parts, PartSteps)
	if latency || steps {
		n := 1
		if steps {
			n = slices.Max(cfg.StepDesktops)
		}
		desks, err := bringUp(ctx, host, n, say)
		defer func() {
			for _, d := range desks {
				if err := d.Close(); err != nil {
					say("%v", err)
				}
			}
		}()
		if err != nil {
			return nil, err
		}
		if latency {
			say("latency: %d benchmarks, %d timed requests per server after %d untimed, on one desktop", len(cfg.Latency), cfg.LatencyN, cfg.LatencyWarmup)
			l, err := compat.Bench(ctx, desks[0], cfg.Latency, compat.BenchOptions{N: cfg.LatencyN, Warmup: cfg.LatencyWarmup, Progress: host.Stdout})
			if err != nil {
				return nil, fmt.Errorf("latency: %w", err)
			}
			l.Command, l.Desktop = cfg.Command, desks[0].Describe()
			rep.Latency = l
		}
		if steps {
			d := &StepLoopDescription{Loop: cfg.StepDuration.Seconds(), Rounds: cfg.Rounds, Requests: describeSteps(DefaultSteps()), Setup: "nothing open"}
			if b := cfg.StepSetup; b != nil {
				d.Setup = fmt.Sprintf("%s, readied by the setup of the latency benchmark %s", b.Doc, b.Name)
			}
			d.begin()
			s, err := runSteps(ctx, desks, cfg, host.Stdout, say)
			if err != nil {
				return nil, fmt.Errorf("step loop: %w", err)
			}
			d.end()
			rep.Steps, rep.StepLoop = s, d
		}
	}
	rep.LoadEnd = compat.LoadAverages(3)
	if err := rep.Write(cfg.Out); err != nil {
		return nil, err
	}
	return rep, nil
}

// bringUp brings up n desktops, desktopParallel at a time. On failure it
// returns the ones that came up, for the caller to close, with the error.
func bringUp(ctx context.Context, host Host, n int, say func(string, ...any)) ([]Desktop, error) {
	say("bringing up %s for the latency and step parts (%d at a time)", plural(n, "desktop"), desktopParallel)
	start := time.Now()
	var mu sync.Mutex
	var desks []Desktop
	var errs []error
	sem := make(chan struct{}, desktopParallel)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := host.Desktop(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			desks = append(desks, d)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return desks, fmt.Errorf("bring up the step desktops: %w", err)
	}
	say("%s up in %.1f s", plural(n, "desktop"), time.Since(start).Seconds())
	return desks, nil
}

// runSteps runs the step loop on the first n desktops for each n of
// cfg.StepDesktops, each server cfg.Rounds times, alternating which goes
// first.
func runSteps(ctx context.Context, desks []Desktop, cfg Config, out io.Writer, say func(string, ...any)) ([]StepRow, error) {
	steps := DefaultSteps()
	var order []string
	for _, s := range steps {
		order = append(order, s.Name)
	}
	servers := []compat.Server{compat.Guestd, compat.Upstream}
	if cfg.Upstream == "" {
		servers = servers[:1]
	}
	if b := cfg.StepSetup; b != nil {
		say("step loop: readying %s as %s's setup does", plural(len(desks), "desktop"), b.Name)
		if err := prepare(ctx, desks, b); err != nil {
			return nil, err
		}
	}
	if err := warm(ctx, desks, servers, steps); err != nil {
		return nil, err
	}
	var rows []StepRow
	for _, n := range cfg.StepDesktops {
		say("step loop: %s, %s per loop, %d rounds of %v", plural(n, "desktop"), cfg.StepDuration, cfg.Rounds, servers)
		sums := map[compat.Server]*LoopResult{}
		loads := map[compat.Server][2]string{}
		for round := range cfg.Rounds {
			for k := range servers {
				s := servers[(round+k)%len(servers)]
				var targets []Target
				for _, d := range desks[:n] {
					targets = append(targets, Target{URL: d.URL(s), CPU: d.CPU})
				}
				before := compat.LoadAverages(1)
				r, err := Loop(ctx, string(s), targets, steps, cfg.StepDuration)
				if err != nil {
					return nil, err
				}
				l := loads[s]
				if l[0] == "" {
					l[0] = before
				}
				l[1] = compat.LoadAverages(1)
				loads[s] = l
				if sums[s] == nil {
					sums[s] = r
				} else if err := sums[s].add(r); err != nil {
					return nil, err
				}
			}
		}
		for _, s := range servers {
			row := sums[s].row(order)
			row.LoadBefore, row.LoadAfter = loads[s][0], loads[s][1]
			if row.Steps == 0 {
				return nil, fmt.Errorf("%s on %s completed no step: %s", s, plural(n, "desktop"), row.FirstError)
			}
			printStepRow(out, row)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// prepare runs b's setup on every desktop, desktopParallel at a time.
func prepare(ctx context.Context, desks []Desktop, b *compat.Benchmark) error {
	sem := make(chan struct{}, desktopParallel)
	errs := make([]error, len(desks))
	var wg sync.WaitGroup
	for i, d := range desks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = b.Prepare(ctx, d)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// warm runs one step on every desktop against every server, untimed: the
// first screenshot maps shared memory and the first accessibility walk
// dials the applications. A step that fails here fails the run at once,
// with the reason.
func warm(ctx context.Context, desks []Desktop, servers []compat.Server, steps []StepRequest) error {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for _, d := range desks {
		for _, s := range servers {
			for k := range steps {
				if _, err := steps[k].do(ctx, client, d.URL(s), 0); err != nil {
					return fmt.Errorf("warm-up step on %s at %s: %s %s: %w", s, d.URL(s), steps[k].Method, steps[k].Path, err)
				}
			}
		}
	}
	return nil
}

func printStepRow(w io.Writer, r StepRow) {
	fmt.Fprintf(w, "steps %-12s %-8s %7.1f steps/s (%.1f per desktop), step p50 %s p95 %s;", plural(r.Desktops, "desktop"), r.Server,
		r.StepsPerSecond, r.PerDesktop, compat.Millis(r.Step.Median), compat.Millis(r.Step.P95))
	for _, q := range r.Requests {
		fmt.Fprintf(w, " %s %s", q.Name, compat.Millis(q.Stats.Median))
	}
	if r.CPUMeasured {
		fmt.Fprintf(w, "; CPU %s per step (client %s)", compat.Millis(r.CPUPerStep), compat.Millis(r.ClientPerStep))
	}
	fmt.Fprintf(w, "; %d errors\n", r.Errors)
}

// describeSteps is the step's requests as sent, for the report.
func describeSteps(steps []StepRequest) []string {
	var out []string
	for _, s := range steps {
		line := fmt.Sprintf("`%s %s`", s.Method, s.Path)
		for i, body := range s.Bodies {
			if i == 0 {
				line += " with, alternating,"
			} else {
				line += " and"
			}
			line += " `" + string(body) + "`"
		}
		out = append(out, line)
	}
	return out
}
