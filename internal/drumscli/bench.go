//go:build linux

package drumscli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/bench"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
)

var _ bench.Engine = (*sessions.Engine)(nil)

// benchConfig is the configuration of `drums bench`.
type benchConfig struct {
	Run bench.Config
	// LatencyFile and LatencyOnly choose the latency benchmarks as
	// drums compat --bench-file and --run do.
	LatencyFile, LatencyOnly string
	// StepSetup names the built-in latency benchmark whose setup readies
	// the step desktops, or is "none".
	StepSetup string
	// FromJSON is a run's NAME.json to write NAME.md and NAME.svg from
	// again, without running anything.
	FromJSON string
	// The engine's: the run's own prefix and state directory unless
	// given (for a caller that sweeps after it).
	Prefix, StateDir, ImageDir, Image, Guestd string
}

// benchMaxDesktops bounds --step-desktops: the largest count is
// 50; each desktop of the step loop also runs upstream's Flask twice.
const benchMaxDesktops = 100

func parseBench(args []string, stderr io.Writer) (benchConfig, error) {
	cfg := benchConfig{Run: bench.Config{Sessions: 5, Idle: 65 * time.Second, LightImage: "core", LatencyN: 10, LatencyWarmup: 2,
		DensityLimit: time.Second, DensityFloor: 2 << 20, DensitySettle: 10 * time.Second,
		KSMPagesToScan: 1000, KSMSleep: 20 * time.Millisecond, KSMTime: 5 * time.Minute,
		StepDuration: 5 * time.Second, Rounds: 1, Out: filepath.Join("bench", "results"), Name: "bench",
		Command: strings.Join(append([]string{"drums", "bench"}, args...), " ")}}
	r := &cfg.Run
	fs := newFlags("bench", stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: drums bench [flags]

Runs drums' benchmarks, side by side with OSWorld's upstream main.py where
upstream applies, prints each figure as it is measured, and writes
NAME.md, NAME.svg (a chart) and NAME.json to --out. Every figure carries the
machine, the date, the load average and the command. Needs root (it brings
up desktops) and the images (make images); it removes every desktop it
brings up, and leaves its sessions under a prefix of its own.

Parts (--parts, in this order):
  sessions  --sessions desktops of --light-image created one after the
            other (create-to-ready: guestd answers GET /screenshot), idle for
            --idle with all up, then the PSS of each desktop's processes and
            the host's MemAvailable; reset each, remove each.
  density   for each ramp of --density (WORKLOAD=MAX[:STEP], STEP default
            MAX/16 rounded up): add desktops with the workload open, STEP at
            a time, settle for --density-settle, time one GET /screenshot of
            every desktop and read MemAvailable and each desktop's memory
            (smaps_rollup: PSS, RSS, anon/file/shmem by process); stop at
            the first desktop that fails or answers later than
            --density-limit, when the next would take MemAvailable below
            --density-floor-mib, or at MAX. Workloads: chromium (a local
            file:// page), calc (LibreOffice Calc holding a 2000-row sheet),
            idle (nothing open, on --light-image). With --ksm the desktops
            are marked for same-page merging and, where each ramp stopped,
            ksmd runs (--ksm-pages-to-scan every --ksm-sleep) until merging
            settles or --ksm-time passes: memory saved, ksmd's CPU time; a
            ramp that memory stopped goes on with merging. The host's KSM
            settings (/sys/kernel/mm/ksm: run, pages_to_scan,
            sleep_millisecs) are put back after each ramp, also on failure
            or interrupt.
  latency   compat's latency benchmarks (drums compat --bench) on one
            desktop: each request --latency-n times per server, interleaved.
  steps     the RL step loop: on each count of --step-desktops, every
            desktop at once loops POST /execute (a pyautogui click, PAUSE =
            0), GET /screenshot, GET /accessibility as fast as it is answered
            for --step-duration, --rounds times per server; steps/s in all
            and per desktop, p50/p95 per step and per request, CPU per step
            (the desktops' cgroups, by process) and the client's.

Upstream comes from the environment, as for drums compat:
  $%s            a directory with main.py and pyxcursor.py
  $%s  where pyautogui and the other pure-Python
                            modules main.py imports live
Without them drums bench says so and measures drums alone.

How long the defaults take depends on the machine and its load: the
waits the flags set come to 145 s (--idle 65 s; --density-settle 10 s
after each of the 6 density steps; --step-duration 5 s for each of the 4
step loops, 2 without upstream), and bringing up the desktops and their
applications comes on top.

The issue's sizes: --step-desktops 1,10,50 --step-duration 30s --rounds 3
(--step-upstream-max 10: drums alone on 50), and
--parts density --density chromium=150:5,calc=150:5,idle=300:25 --ksm
(with nothing else on the machine: it fills memory to the floor).

Flags:
`, compat.EnvUpstream, compat.EnvUpstreamPythonPath)
		fs.PrintDefaults()
	}
	parts := strings.Join(bench.Parts, ",")
	desktops := "1,4"
	density := "chromium=4:2,calc=4:2,idle=20:10"
	floorMiB := r.DensityFloor >> 10
	fs.StringVar(&parts, "parts", parts, "the parts to run, comma-separated")
	fs.StringVar(&r.Out, "out", r.Out, "directory for the report")
	fs.StringVar(&r.Name, "name", r.Name, "the report's file name, without .md, .svg or .json")
	fs.IntVar(&r.Sessions, "sessions", r.Sessions, "desktops of the sessions part, of --light-image")
	fs.BoolVar(&r.Standby, "standby", false, "the run's engine keeps standbys (as drums serve --standby): resets take them; the sessions part counts their memory in each desktop's and says how many resets took one (with --parts sessions only: the other parts do not count standbys)")
	fs.IntVar(&r.Spares, "spares", 0, "the run's engine keeps this many spares of --light-image (as drums serve --spares): the sessions part's creates start once they are up and take them, and as many creates again, each once they are up, are timed and removed; the part says which creates took one (with --parts sessions only: the engine's default image is then --light-image)")
	fs.DurationVar(&r.Idle, "idle", r.Idle, "idle time before the memory is read (guestd gives back its screenshot memory after 60 s idle)")
	fs.StringVar(&r.LightImage, "light-image", r.LightImage, "the image of the sessions part's desktops")
	fs.StringVar(&density, "density", density, "the density part's ramps, WORKLOAD=MAX[:STEP] comma-separated (workloads: chromium, calc, idle)")
	fs.DurationVar(&r.DensityLimit, "density-limit", r.DensityLimit, "every density desktop must answer GET /screenshot within this")
	fs.Int64Var(&floorMiB, "density-floor-mib", floorMiB, "MiB of the host's MemAvailable a density ramp never takes (it stops before)")
	fs.DurationVar(&r.DensitySettle, "density-settle", r.DensitySettle, "wait after each density step before it is measured")
	fs.BoolVar(&r.KSM, "ksm", false, "density: mark the run's desktops for same-page merging and measure ksmd where each ramp stopped (sets the host's /sys/kernel/mm/ksm for the measurement, then puts it back)")
	fs.IntVar(&r.KSMPagesToScan, "ksm-pages-to-scan", r.KSMPagesToScan, "ksmd's pages per wake-up during the measurement")
	fs.DurationVar(&r.KSMSleep, "ksm-sleep", r.KSMSleep, "ksmd's sleep between wake-ups during the measurement")
	fs.DurationVar(&r.KSMTime, "ksm-time", r.KSMTime, "at most this long for merging to settle")
	fs.IntVar(&r.LatencyN, "latency-n", r.LatencyN, "timed requests per server and latency benchmark")
	fs.IntVar(&r.LatencyWarmup, "latency-warmup", r.LatencyWarmup, "untimed requests per server before the timed ones")
	fs.StringVar(&cfg.LatencyOnly, "latency-run", "", "only the latency benchmarks whose names match one of these comma-separated globs (e.g. 'screenshot,execute/*')")
	fs.StringVar(&cfg.LatencyFile, "latency-file", "", "latency benchmark file (JSON, as drums compat --bench-file) instead of the built-in one")
	fs.StringVar(&desktops, "step-desktops", desktops, "desktop counts of the step loop, comma-separated (e.g. 1,10,50)")
	fs.DurationVar(&r.StepDuration, "step-duration", r.StepDuration, "how long each step loop runs")
	fs.IntVar(&r.Rounds, "rounds", r.Rounds, "step loops per server and desktop count")
	fs.IntVar(&r.StepUpstreamMax, "step-upstream-max", 0, "step upstream main.py too only on desktop counts up to this (0: on every count); larger counts step drums alone, on desktops without main.py")
	fs.StringVar(&cfg.StepSetup, "step-setup", "accessibility/gnome-terminal", "the built-in latency benchmark whose setup readies each step desktop (opens its application), or none for an empty desktop")
	fs.StringVar(&cfg.Image, "image", sessions.DefaultImage, "the image of the latency and step desktops (upstream's main.py asks LibreOffice its version)")
	fs.StringVar(&cfg.ImageDir, "image-dir", images.DefaultDir, "the image store")
	fs.StringVar(&cfg.Guestd, "guestd", "", "guestd binary to run in the desktops (default $DRUMS_BIN/guestd or next to drums)")
	fs.StringVar(&cfg.Prefix, "prefix", "", "host prefix of the run's sessions (default: bnc and 4 random letters)")
	fs.StringVar(&cfg.StateDir, "state-dir", "", "directory of the run's session records (default: a temporary one, removed after)")
	fs.StringVar(&cfg.FromJSON, "from-json", "", "run nothing: write --out/--name's .md and .svg (and .json) again from this report of an earlier run (after a change of the rendering)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see drums bench --help)", fs.Args())
	}
	for _, p := range strings.Split(parts, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(bench.Parts, p) {
			return cfg, fmt.Errorf("--parts: unknown part %q (the parts: %s)", p, strings.Join(bench.Parts, ", "))
		}
		if !slices.Contains(r.Parts, p) {
			r.Parts = append(r.Parts, p)
		}
	}
	if len(r.Parts) == 0 {
		return cfg, errors.New("--parts names no part")
	}
	// Only the sessions part counts a standby's cgroup: the others would
	// report desktops at half what they hold, and their timings beside
	// starts they do not name.
	sessionsOnly := slices.Equal(r.Parts, []string{bench.PartSessions})
	if r.Standby && !sessionsOnly {
		return cfg, fmt.Errorf("--standby measures the sessions part only: run it with --parts %s", bench.PartSessions)
	}
	// Spares are of the engine's default image, which the other parts'
	// desktops use: the spares are of the light image only in a run of
	// the sessions part alone.
	if r.Spares < 0 {
		return cfg, fmt.Errorf("--spares %d: must not be negative", r.Spares)
	}
	if r.Spares > 0 && !sessionsOnly {
		return cfg, fmt.Errorf("--spares measures the sessions part only: run it with --parts %s", bench.PartSessions)
	}
	var err error
	if r.Density, err = parseDensity(density); err != nil {
		return cfg, err
	}
	r.DensityFloor = floorMiB << 10
	r.Image = cfg.Image
	for _, d := range strings.Split(desktops, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(d))
		if err != nil || n < 1 || n > benchMaxDesktops {
			return cfg, fmt.Errorf("--step-desktops %q: want counts from 1 to %d, comma-separated", desktops, benchMaxDesktops)
		}
		r.StepDesktops = append(r.StepDesktops, n)
	}
	switch {
	case r.Sessions < 1:
		return cfg, fmt.Errorf("--sessions %d: must be at least 1", r.Sessions)
	case r.Idle < 0:
		return cfg, fmt.Errorf("--idle %s: must not be negative", r.Idle)
	case r.LatencyN < 1 || r.LatencyWarmup < 0:
		return cfg, errors.New("--latency-n must be at least 1 and --latency-warmup at least 0")
	case r.StepDuration <= 0:
		return cfg, fmt.Errorf("--step-duration %s: must be positive", r.StepDuration)
	case r.Rounds < 1:
		return cfg, fmt.Errorf("--rounds %d: must be at least 1", r.Rounds)
	case r.StepUpstreamMax < 0:
		return cfg, fmt.Errorf("--step-upstream-max %d: must not be negative", r.StepUpstreamMax)
	case r.DensityLimit <= 0 || floorMiB < 0 || r.DensitySettle < 0:
		return cfg, errors.New("--density-limit must be positive, --density-floor-mib and --density-settle not negative")
	case r.KSMPagesToScan < 1 || r.KSMSleep < time.Millisecond || r.KSMTime <= 0:
		return cfg, errors.New("--ksm-pages-to-scan must be at least 1, --ksm-sleep at least 1ms, --ksm-time positive")
	case r.Name == "" || strings.ContainsRune(r.Name, '/'):
		return cfg, fmt.Errorf("--name %q: want a file name", r.Name)
	}
	if cfg.StepSetup != "none" {
		bs, err := compat.BuiltinBenchmarks()
		if err != nil {
			return cfg, err
		}
		var names []string
		for i := range bs {
			if bs[i].Name == cfg.StepSetup && len(bs[i].Setup) > 0 {
				r.StepSetup = &bs[i]
			} else if len(bs[i].Setup) > 0 {
				names = append(names, bs[i].Name)
			}
		}
		if r.StepSetup == nil {
			return cfg, fmt.Errorf("--step-setup %q: want none or a built-in latency benchmark with a setup: %s", cfg.StepSetup, strings.Join(names, ", "))
		}
	}
	return cfg, nil
}

// parseDensity reads --density: WORKLOAD=MAX[:STEP], comma-separated.
func parseDensity(spec string) ([]bench.DensitySpec, error) {
	var names []string
	for _, w := range bench.Workloads() {
		names = append(names, w.Name)
	}
	var out []bench.DensitySpec
	for _, item := range strings.Split(spec, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		bad := fmt.Errorf("--density %q: want WORKLOAD=MAX[:STEP] with MAX from 1 to %d and STEP from 1 to MAX, workloads %s", item, sessions.DefaultMaxSessions, strings.Join(names, ", "))
		name, sizes, ok := strings.Cut(item, "=")
		if !ok || !slices.Contains(names, name) {
			return nil, bad
		}
		maxS, stepS, hasStep := strings.Cut(sizes, ":")
		n, err := strconv.Atoi(maxS)
		if err != nil || n < 1 || n > sessions.DefaultMaxSessions {
			return nil, bad
		}
		step := (n + 15) / 16
		if hasStep {
			if step, err = strconv.Atoi(stepS); err != nil || step < 1 || step > n {
				return nil, bad
			}
		}
		out = append(out, bench.DensitySpec{Workload: name, Max: n, Step: step})
	}
	return out, nil
}

func runBenchmarks(ctx context.Context, cfg benchConfig, s stdio) error {
	r := cfg.Run
	if cfg.FromJSON != "" {
		rep, err := bench.ReadReport(cfg.FromJSON)
		if err != nil {
			return err
		}
		rep.Name = r.Name
		if err := rep.Write(r.Out); err != nil {
			return err
		}
		fmt.Fprintf(s.out, "wrote %s.{md,svg,json} from %s\n", filepath.Join(r.Out, r.Name), cfg.FromJSON)
		return nil
	}
	if slices.Contains(r.Parts, bench.PartLatency) {
		var err error
		if r.Latency, err = loadBenchmarks(compatConfig{BenchFile: cfg.LatencyFile, Only: cfg.LatencyOnly}); err != nil {
			return err
		}
	}
	tree, err := compat.UpstreamFromEnv()
	if err != nil {
		r.NoUpstream, tree = err.Error(), compat.UpstreamTree{}
	} else {
		r.Upstream = fmt.Sprintf("`main.py` from %s (%s=%s)", tree.Dir, compat.EnvUpstreamPythonPath, strings.Join(tree.PythonPath, ":"))
	}

	state := cfg.StateDir
	if state == "" {
		if state, err = os.MkdirTemp("", "drums-bench-state-"); err != nil {
			return fmt.Errorf("create bench state dir: %w", err)
		}
		defer os.RemoveAll(state)
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = randomPrefix("bnc")
	}
	steps := &sessions.StepLog{}
	// With --ksm every desktop of the run is marked: marked memory is
	// scanned only while the density part runs ksmd.
	image := cfg.Image
	if r.Spares > 0 {
		image = r.LightImage // the sessions part's alone
	}
	eng, err := sessions.New(sessions.Config{Prefix: prefix, StateDir: state, ImageDir: cfg.ImageDir, Image: image,
		Guestd: cfg.Guestd, Logger: slog.New(steps), MemoryMerge: r.KSM, Standby: r.Standby, Spares: r.Spares})
	if err != nil {
		return fmt.Errorf("start the session engine: %w", err)
	}
	defer eng.Close()
	eng.StartSpares() // the run's prefix is its own: nothing to adopt first
	fmt.Fprintf(s.err, "bench: sessions under the prefix %s\n", prefix)
	rep, err := bench.Run(ctx, r, bench.Host{
		Engine: eng, Steps: steps,
		Desktop: func(ctx context.Context, upstream bool) (bench.Desktop, error) {
			t := tree
			if !upstream {
				t = compat.UpstreamTree{}
			}
			return bench.NewSessionDesktop(ctx, eng, t, io.Discard)
		},
		Stdout: s.out, Stderr: s.err,
	})
	// Whatever happened, nothing of the run stays: its desktops are
	// removed already; the sweep takes what a failed removal left.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if _, serr := eng.Sweep(sctx); serr != nil {
		err = errors.Join(err, fmt.Errorf("sweep the run's leftovers: %w", serr))
	}
	if err != nil {
		return err
	}
	for _, ext := range []string{".md", ".svg", ".json"} {
		fmt.Fprintf(s.out, "wrote %s\n", filepath.Join(r.Out, rep.Name+ext))
	}
	return nil
}
