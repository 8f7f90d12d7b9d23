package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/ctxtime"
)

// DensityResult is one ramp of the density part.
type DensityResult struct {
	Stamp
	Workload string        `json:"workload"`
	Doc      string        `json:"doc"`
	Image    string        `json:"image"`
	Max      int           `json:"max"`
	Step     int           `json:"step"`
	Limit    time.Duration `json:"limit_ns"`
	Floor    int64         `json:"floor_kib"`
	Settle   time.Duration `json:"settle_ns"`
	// Baseline is MemAvailable before the ramp's first desktop.
	Baseline int64      `json:"baseline_kib"`
	Steps    []RampStep `json:"steps"`
	Stop     RampStop   `json:"stop"`
	// KSM is the merging measured where the ramp stopped, and KSMStop
	// where the ramp went on to with merging (nil: it did not go on).
	KSM     *KSMResult `json:"ksm,omitempty"`
	KSMStop *RampStop  `json:"ksm_stop,omitempty"`
}

// KSMResult is what same-page merging did to a ramp's desktops.
type KSMResult struct {
	Desktops    int           `json:"desktops"`
	PagesToScan int           `json:"pages_to_scan"`
	Sleep       time.Duration `json:"sleep_ns"`
	// Settled says whether merging settled (a full scan that added less
	// than ksmSettled of the merged pages) before the time allowed.
	Settled bool        `json:"settled"`
	Seconds float64     `json:"seconds"`
	Before  KSMCounters `json:"before"`
	After   KSMCounters `json:"after"`
	// AvailBefore and AvailAfter are MemAvailable before ksmd ran and
	// once merging settled, in KiB.
	AvailBefore int64 `json:"avail_before_kib"`
	AvailAfter  int64 `json:"avail_after_kib"`
	// KsmdCPU is ksmd's CPU time until merging settled; KsmdCPUAll until
	// the ramp's end (the continuation with merging included), over
	// AllSeconds.
	KsmdCPU    time.Duration `json:"ksmd_cpu_ns"`
	KsmdCPUAll time.Duration `json:"ksmd_cpu_all_ns"`
	AllSeconds float64       `json:"all_seconds"`
	Scans      []KSMScan     `json:"scans"`
	// After merging, the desktops' memory and one screenshot each.
	Memory     DensityMemory `json:"memory"`
	Screenshot compat.Stats  `json:"screenshot"`
	// ProbeError is why a desktop did not answer after merging.
	ProbeError string `json:"probe_error,omitempty"`

	ksmd      int           // ksmd's pid
	ksmdStart time.Duration // ksmd's CPU time when it was turned on
	started   time.Time
}

// KSMScan is read when ksmd has finished a full scan (FullScans of them
// since it was turned on).
type KSMScan struct {
	FullScans    int64         `json:"full_scans"`
	Seconds      float64       `json:"seconds"`
	PagesSharing int64         `json:"pages_sharing"`
	KsmdCPU      time.Duration `json:"ksmd_cpu_ns"`
	MemAvailable int64         `json:"mem_available_kib"`
}

// pageKiB is the size of the pages KSM counts.
const pageKiB = 4

// ksmPoll is how often the KSM phase reads ksmd's counters; ksmSettled is
// the growth of pages_sharing over a full scan below which merging has
// settled. KSM merges a page in the second scan that sees it unchanged,
// so at least ksmMinScans full scans run.
const (
	ksmPoll     = time.Second
	ksmSettled  = 0.01
	ksmMinScans = 3
)

// runDensity runs each ramp of cfg.Density, one after the other, removing
// each ramp's desktops before the next.
func runDensity(ctx context.Context, cfg Config, host Host, proc procfs, ksm ksmfs, say func(string, ...any)) ([]DensityResult, error) {
	byName := map[string]Workload{}
	for _, w := range Workloads() {
		byName[w.Name] = w
	}
	var out []DensityResult
	for _, spec := range cfg.Density {
		w, ok := byName[spec.Workload]
		if !ok {
			return nil, fmt.Errorf("density: no workload %q", spec.Workload)
		}
		r, err := runRamp(ctx, cfg, spec, w, host, proc, ksm, say)
		if err != nil {
			return nil, fmt.Errorf("density %s: %w", w.Name, err)
		}
		out = append(out, *r)
	}
	return out, nil
}

// runRamp ramps one workload up, measures merging where it stopped if
// cfg.KSM, and removes every desktop it brought up, whatever fails. The
// host's KSM controls are put back before it returns.
func runRamp(ctx context.Context, cfg Config, spec DensitySpec, w Workload, host Host, proc procfs, ksm ksmfs, say func(string, ...any)) (res *DensityResult, err error) {
	image := cfg.Image
	if w.Light {
		image = cfg.LightImage
	}
	res = &DensityResult{Workload: w.Name, Doc: w.Doc, Image: image, Max: spec.Max, Step: spec.Step, Limit: cfg.DensityLimit,
		Floor: cfg.DensityFloor, Settle: cfg.DensitySettle}
	res.begin()
	var mu sync.Mutex
	var desks []*compat.SessionDesktop
	defer func() {
		// Removal takes what a desktop holds back to the host: one after
		// the other, each removal's own cost is small.
		for _, d := range desks {
			err = errors.Join(err, d.Close())
		}
	}()
	engImage := image
	if !w.Light {
		engImage = "" // the engine's default, the run's image
	}
	env := rampEnv{
		add: func(ctx context.Context) error {
			d, err := compat.NewSessionDesktop(ctx, host.Engine, compat.UpstreamTree{}, engImage, io.Discard)
			if err != nil {
				return err
			}
			mu.Lock()
			desks = append(desks, d)
			mu.Unlock()
			if w.Setup != nil {
				return w.Setup.Prepare(ctx, d)
			}
			return nil
		},
		probe: func(ctx context.Context) ([]time.Duration, error) {
			mu.Lock()
			var urls []string
			for _, d := range desks {
				urls = append(urls, d.URL(compat.Guestd))
			}
			mu.Unlock()
			return screenshotTimes(ctx, urls)
		},
		avail: proc.memAvailable,
		measure: func() (DensityMemory, error) {
			mu.Lock()
			defer mu.Unlock()
			var all []map[string]ProcMem
			for _, d := range desks {
				m, err := proc.memory(d.Session().Plan.Cgroup)
				if err != nil {
					return DensityMemory{}, fmt.Errorf("memory of session %s: %w", d.Session().ID, err)
				}
				all = append(all, m)
			}
			return densityMemory(all), nil
		},
		wait: ctxtime.Sleep,
	}
	if res.Baseline, err = proc.memAvailable(); err != nil {
		return nil, err
	}
	rc := rampConfig{Max: spec.Max, Step: spec.Step, Limit: cfg.DensityLimit, Floor: cfg.DensityFloor, Guess: w.Guess,
		Settle: cfg.DensitySettle, Parallel: desktopParallel}
	say("density %s: up to %d desktops, %d at a time (%s), every one answering GET /screenshot within %s, MemAvailable kept above %.0f MiB (now %.0f MiB)",
		w.Name, spec.Max, spec.Step, image, cfg.DensityLimit, mib(cfg.DensityFloor), mib(res.Baseline))
	show := func(s RampStep) { printRampStep(host.Stdout, w.Name, s) }
	steps, stop, err := ramp(ctx, rc, env, 0, res.Baseline, false, res.Date, show)
	if err != nil {
		return nil, err
	}
	res.Steps, res.Stop = steps, stop
	printDensityStop(host.Stdout, w.Name, "", stop)
	if cfg.KSM && len(desks) > 0 {
		kres, was, err := mergePhase(ctx, cfg, env, ksm, proc, len(desks), say)
		if was != nil {
			defer func() {
				if rerr := ksm.restore(was); rerr != nil {
					err = errors.Join(err, fmt.Errorf("put back the host's KSM settings %v: %w", was, rerr))
				}
			}()
		}
		if err != nil {
			return nil, err
		}
		res.KSM = kres
		printKSM(host.Stdout, res)
		if stop.Kind == StopMemory {
			// Memory stopped the ramp: with merging, more may fit.
			rc.Guess = max(1, steps[len(steps)-1].HostPerDesktop)
			more, kstop, err := ramp(ctx, rc, env, len(desks), res.Baseline, true, res.Date, show)
			if err != nil {
				return nil, err
			}
			res.Steps = append(res.Steps, more...)
			res.KSMStop = &kstop
			printDensityStop(host.Stdout, w.Name, " with merging", kstop)
		}
		cpu, err := proc.ksmdCPU(kres.ksmd)
		if err != nil {
			return nil, err
		}
		kres.KsmdCPUAll, kres.AllSeconds = cpu-kres.ksmdStart, time.Since(kres.started).Seconds()
	}
	res.end()
	return res, nil
}

// mergePhase runs ksmd over the n desktops up until merging settles or
// cfg.KSMTime passes, then measures them again. was is the host's KSM
// settings to put back (nil if nothing was changed), also with an error.
func mergePhase(ctx context.Context, cfg Config, env rampEnv, ksm ksmfs, proc procfs, n int, say func(string, ...any)) (_ *KSMResult, was KSMSettings, err error) {
	k := &KSMResult{Desktops: n, PagesToScan: cfg.KSMPagesToScan, Sleep: cfg.KSMSleep}
	if k.Before, err = ksm.counters(); err != nil {
		return nil, nil, err
	}
	if k.AvailBefore, err = proc.memAvailable(); err != nil {
		return nil, nil, err
	}
	if k.ksmd, err = proc.ksmdPID(); err != nil {
		return nil, nil, err
	}
	if k.ksmdStart, err = proc.ksmdCPU(k.ksmd); err != nil {
		return nil, nil, err
	}
	if was, err = ksm.start(cfg.KSMPagesToScan, cfg.KSMSleep); err != nil {
		return nil, nil, err
	}
	say("ksm: ksmd on (%d pages every %s) over %d desktops, until merging settles or %s pass", cfg.KSMPagesToScan, cfg.KSMSleep, n, cfg.KSMTime)
	start := time.Now()
	k.started = start
	last := k.Before
	for time.Since(start) < cfg.KSMTime {
		if err := ctxtime.Sleep(ctx, ksmPoll); err != nil {
			return nil, was, err
		}
		c, err := ksm.counters()
		if err != nil {
			return nil, was, err
		}
		if c.FullScans == last.FullScans {
			continue
		}
		avail, err := proc.memAvailable()
		if err != nil {
			return nil, was, err
		}
		cpu, err := proc.ksmdCPU(k.ksmd)
		if err != nil {
			return nil, was, err
		}
		k.Scans = append(k.Scans, KSMScan{FullScans: c.FullScans - k.Before.FullScans, Seconds: time.Since(start).Seconds(), PagesSharing: c.PagesSharing, KsmdCPU: cpu - k.ksmdStart, MemAvailable: avail})
		say("ksm: full scan %d after %.0f s: %d pages sharing (%.0f MiB saved), ksmd %.1f s CPU", c.FullScans-k.Before.FullScans,
			time.Since(start).Seconds(), c.PagesSharing, mib(c.PagesSharing*pageKiB), (cpu - k.ksmdStart).Seconds())
		grew := float64(c.PagesSharing-last.PagesSharing) / float64(max(1, c.PagesSharing))
		last = c
		if c.FullScans-k.Before.FullScans >= ksmMinScans && grew < ksmSettled {
			k.Settled = true
			break
		}
	}
	k.Seconds = time.Since(start).Seconds()
	if k.After, err = ksm.counters(); err != nil {
		return nil, was, err
	}
	cpu, err := proc.ksmdCPU(k.ksmd)
	if err != nil {
		return nil, was, err
	}
	k.KsmdCPU = cpu - k.ksmdStart
	times, perr := env.probe(ctx)
	if err := ctx.Err(); err != nil {
		return nil, was, err
	}
	if perr != nil {
		k.ProbeError = perr.Error()
	}
	k.Screenshot = compat.NewStats(times)
	if k.AvailAfter, err = proc.memAvailable(); err != nil {
		return nil, was, err
	}
	if k.Memory, err = env.measure(); err != nil {
		return nil, was, err
	}
	return k, was, nil
}
