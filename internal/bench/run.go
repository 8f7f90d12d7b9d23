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
	"github.com/drums-dev/drums/sessions"
)

// The parts of a run, in the order they run: the light desktops first, on
// a machine with nothing else of the run up.
const (
	PartSessions = "sessions"
	PartDensity  = "density"
	PartLatency  = "latency"
	PartSteps    = "steps"
)

// Parts are every part, in order.
var Parts = []string{PartSessions, PartDensity, PartLatency, PartSteps}

// Config is what a run measures and where it writes.
type Config struct {
	Parts []string
	// Sessions desktops from LightImage are created, idle for Idle,
	// reset and removed.
	Sessions   int
	Idle       time.Duration
	LightImage string
	// Standby says the engine keeps standbys (sessions.Config.Standby):
	// each desktop's memory then counts its standby's, and the part says
	// how many resets took one.
	Standby bool
	// Spares is how many spares the engine keeps (sessions.Config.Spares,
	// of LightImage): the part's creates take them, and it times creates
	// that each find one up too.
	Spares int
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
	// StepUpstreamMax, if positive, is the largest desktop count whose
	// loop runs against upstream too: larger counts step drums alone,
	// on desktops brought up without main.py (those of the smaller
	// counts keep theirs, idle).
	StepUpstreamMax int
	// StepSetup, if not nil, is the benchmark whose setup readies every
	// step desktop (opens its application) before the loops; nil leaves
	// the desktops empty.
	StepSetup *compat.Benchmark
	// Density are the density part's ramps, one after the other: each
	// adds desktops of its workload until one answers GET /screenshot
	// later than DensityLimit, fails, or MemAvailable would fall below
	// DensityFloor (KiB), measuring DensitySettle after each step.
	// Image is the image of the application workloads (LightImage that
	// of the idle one).
	Density       []DensitySpec
	DensityLimit  time.Duration
	DensityFloor  int64
	DensitySettle time.Duration
	Image         string
	// KSM measures same-page merging where each ramp stopped: ksmd runs
	// at KSMPagesToScan pages every KSMSleep until merging settles or
	// KSMTime passes, and a ramp that memory stopped goes on with it.
	// The host's KSM settings are put back after each ramp. The
	// desktops must be marked (the engine's sessions.Config.MemoryMerge).
	KSM            bool
	KSMPagesToScan int
	KSMSleep       time.Duration
	KSMTime        time.Duration
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
	Steps  *sessions.StepLog
	// Desktop brings up one desktop of the latency and step parts, with
	// upstream main.py beside guestd if upstream (and the run has it).
	Desktop func(ctx context.Context, upstream bool) (Desktop, error)
	// Proc is the host's /proc ("" is "/proc"), KSM its
	// /sys/kernel/mm/ksm ("" is that).
	Proc, KSM string
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
	if host.KSM == "" {
		host.KSM = "/sys/kernel/mm/ksm"
	}
	rep := &Report{Started: time.Now().UTC(), Command: cfg.Command, Machine: compat.Machine(), LoadStart: compat.LoadAverages(3),
		Upstream: cfg.Upstream, NoUpstream: cfg.NoUpstream, Name: cfg.Name}
	say := func(format string, a ...any) { fmt.Fprintf(host.Stderr, "bench: "+format+"\n", a...) }
	if cfg.Upstream == "" {
		say("no upstream (%s): drums alone", cfg.NoUpstream)
	}
	if slices.Contains(cfg.Parts, PartSessions) {
		say("sessions: %s of image %s, created one after the other, %s idle, reset, removed", plural(cfg.Sessions, "desktop"), cfg.LightImage, cfg.Idle)
		s, err := runSessions(ctx, host.Engine, host.Steps, procfs{host.Proc}, cfg.Sessions, cfg.LightImage, cfg.Idle, cfg.Standby, cfg.Spares, host.Stdout)
		if err != nil {
			return nil, fmt.Errorf("sessions: %w", err)
		}
		rep.Sessions = s
	}
	if slices.Contains(cfg.Parts, PartDensity) {
		d, err := runDensity(ctx, cfg, host, procfs{host.Proc}, ksmfs{host.KSM}, say)
		if err != nil {
			return nil, err
		}
		rep.Density = d
	}
	// Desktops come up as a part needs them: the latency part runs with
	// one up, each step loop with only as many as it steps on, so that no
	// idle desktop (upstream's reloader polls its files every second)
	// takes from what is measured.
	pool := &desktops{host: host, proc: procfs{host.Proc}, say: say}
	defer pool.close()
	if slices.Contains(cfg.Parts, PartLatency) {
		desks, err := pool.grow(ctx, 1, true)
		if err != nil {
			return nil, err
		}
		say("latency: %d benchmarks, %d timed requests per server after %d untimed, on one desktop", len(cfg.Latency), cfg.LatencyN, cfg.LatencyWarmup)
		l, err := compat.Bench(ctx, desks[0], cfg.Latency, compat.BenchOptions{N: cfg.LatencyN, Warmup: cfg.LatencyWarmup, Progress: host.Stdout})
		if err != nil {
			return nil, fmt.Errorf("latency: %w", err)
		}
		l.Command, l.Desktop = cfg.Command, desks[0].Describe()
		rep.Latency = l
	}
	if slices.Contains(cfg.Parts, PartSteps) {
		d := &StepLoopDescription{Loop: cfg.StepDuration.Seconds(), Rounds: cfg.Rounds, Requests: describeSteps(DefaultSteps()), Setup: "nothing open"}
		if cfg.Upstream != "" && cfg.StepUpstreamMax > 0 && slices.Max(cfg.StepDesktops) > cfg.StepUpstreamMax {
			d.UpstreamMax = cfg.StepUpstreamMax
		}
		if b := cfg.StepSetup; b != nil {
			d.Setup = fmt.Sprintf("%s, readied by the setup of the latency benchmark %s", b.Doc, b.Name)
		}
		d.begin()
		s, err := runSteps(ctx, pool, cfg, host.Stdout, say)
		if err != nil {
			return nil, fmt.Errorf("step loop: %w", err)
		}
		d.end()
		rep.Steps, rep.StepLoop = s, d
	}
	rep.LoadEnd = compat.LoadAverages(3)
	if err := rep.Write(cfg.Out); err != nil {
		return nil, err
	}
	return rep, nil
}

// desktops are the desktops of the latency and step parts, brought up as
// they are needed.
type desktops struct {
	host  Host
	proc  procfs
	say   func(string, ...any)
	desks []Desktop
	ready int // how many the step loop has readied and warmed
}

// grow brings up desktops, desktopParallel at a time, until there are n,
// with upstream beside guestd if upstream, and returns the first n. A
// desktop that came up stays for close, even when another failed.
func (p *desktops) grow(ctx context.Context, n int, upstream bool) ([]Desktop, error) {
	more := n - len(p.desks)
	if more <= 0 {
		return p.desks[:n], nil
	}
	p.say("bringing up %s (%d at a time)", plural(more, "desktop"), desktopParallel)
	start := time.Now()
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, desktopParallel)
	var wg sync.WaitGroup
	for range more {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := p.host.Desktop(ctx, upstream)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			p.desks = append(p.desks, d)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("bring up a desktop: %w", err)
	}
	p.say("%s up in %.1f s", plural(more, "desktop"), time.Since(start).Seconds())
	return p.desks[:n], nil
}

// close removes every desktop that came up.
func (p *desktops) close() {
	for _, d := range p.desks {
		if err := d.Close(); err != nil {
			p.say("%v", err)
		}
	}
	p.desks = nil
}

// runSteps runs the step loop on the first n desktops for each n of
// cfg.StepDesktops, each server cfg.Rounds times, alternating which goes
// first. Before its first loop a desktop is readied (cfg.StepSetup) and
// takes one untimed step against each server.
func runSteps(ctx context.Context, pool *desktops, cfg Config, out io.Writer, say func(string, ...any)) ([]StepRow, error) {
	steps := DefaultSteps()
	var order []string
	for _, s := range steps {
		order = append(order, s.Name)
	}
	var rows []StepRow
	for _, n := range cfg.StepDesktops {
		servers := []compat.Server{compat.Guestd, compat.Upstream}
		if cfg.Upstream == "" || cfg.StepUpstreamMax > 0 && n > cfg.StepUpstreamMax {
			servers = servers[:1]
		}
		desks, err := pool.grow(ctx, n, len(servers) == 2)
		if err != nil {
			return nil, err
		}
		if fresh := desks[min(pool.ready, n):]; len(fresh) > 0 {
			if b := cfg.StepSetup; b != nil {
				say("step loop: readying %s as %s's setup does", plural(len(fresh), "desktop"), b.Name)
				if err := prepare(ctx, fresh, b); err != nil {
					return nil, err
				}
			}
			if err := warm(ctx, fresh, servers, steps); err != nil {
				return nil, err
			}
			pool.ready = max(pool.ready, n)
		}
		say("step loop: %s, %s per loop, %d rounds of %v", plural(n, "desktop"), cfg.StepDuration, cfg.Rounds, servers)
		sums := map[compat.Server]*LoopResult{}
		loads := map[compat.Server][2]string{}
		for round := range cfg.Rounds {
			for k := range servers {
				s := servers[(round+k)%len(servers)]
				var targets []Target
				for _, d := range desks {
					targets = append(targets, Target{URL: d.URL(s), CPU: d.CPU})
				}
				before := compat.LoadAverages(1)
				r, err := Loop(ctx, string(s), targets, steps, cfg.StepDuration, pool.proc.hostCPU)
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
