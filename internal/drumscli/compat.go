//go:build linux

package drumscli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
)

var _ compat.SessionEngine = (*sessions.Engine)(nil)

// randomPrefix is a host prefix of a run's own (head and 4 random
// letters), so that the run never touches the provider's desktops and its
// leftovers are recognisable: "cmp" for compat, "bnc" for bench.
func randomPrefix(head string) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := []byte(head)
	for range 4 {
		b = append(b, letters[rand.IntN(len(letters))])
	}
	return string(b)
}

// compatConfig is the configuration of `drums compat`.
type compatConfig struct {
	Cases       string
	Known       string
	Out         string
	IncludeSlow bool
	Only        string
	UpstreamURL string
	GuestdURL   string
	Exec        string
	Bench       bool
	BenchFile   string
	BenchN      int
	BenchWarmup int
	BenchOut    string
	ImageDir    string
	Image       string
	Args        []string // the command line, for the report
}

func parseCompat(args []string, stderr io.Writer) (compatConfig, error) {
	cfg := compatConfig{Out: "compat-report", BenchN: 30, BenchWarmup: 3, Args: args}
	fs := newFlags("compat", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums compat [flags]

Sends every case to guestd and to OSWorld's unmodified main.py on one desktop
and compares the answers field by field (see compat/doc.go). Writes
report.md and report.json to --out and exits non-zero when a difference is
not on the known-differences list or a case could not run.

By default it brings up one drums session (root needed) with guestd on a
side port and upstream main.py started inside it from $DRUMS_UPSTREAM (a
directory with main.py and pyxcursor.py) with $DRUMS_UPSTREAM_PYTHONPATH.
With --upstream-url, --guestd-url and --exec it uses a desktop you brought
up yourself instead (for example a real OSWorld VM running both servers).

With --bench it compares latency instead, on the same desktop: each
benchmark (compat/latency.json, or --bench-file) is sent --bench-n times to
each server, interleaved, and the medians, 95th percentiles and ratios are
printed (and written to --bench-out as Markdown).

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Cases, "cases", "", "case file (JSON) to run instead of the built-in cases")
	fs.StringVar(&cfg.ImageDir, "image-dir", images.DefaultDir, "the image store")
	fs.StringVar(&cfg.Image, "image", sessions.DefaultImage, "the image the compat desktop runs from")
	fs.StringVar(&cfg.Known, "known", "", "known-differences file instead of the built-in, reviewed one")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for report.md and report.json")
	fs.BoolVar(&cfg.IncludeSlow, "include-slow", false, "also run the slow cases that wait out upstream's fixed timeouts (120 s, 30 s, 1800 s)")
	fs.StringVar(&cfg.Only, "run", "", "only cases (or with --bench, benchmarks) whose names match one of these comma-separated globs (e.g. 'execute/*,file/*')")
	fs.StringVar(&cfg.UpstreamURL, "upstream-url", "", "upstream main.py of an existing desktop (needs --guestd-url and --exec)")
	fs.StringVar(&cfg.GuestdURL, "guestd-url", "", "guestd of the same existing desktop")
	fs.StringVar(&cfg.Exec, "exec", "", "command prefix that runs a command inside the existing desktop as its user, split on spaces (e.g. 'ip netns exec NS runuser -u user --')")
	fs.BoolVar(&cfg.Bench, "bench", false, "time requests against both servers instead of comparing answers")
	fs.StringVar(&cfg.BenchFile, "bench-file", "", "benchmark file (JSON) to run instead of the built-in latency benchmarks")
	fs.IntVar(&cfg.BenchN, "bench-n", cfg.BenchN, "timed requests per server and benchmark")
	fs.IntVar(&cfg.BenchWarmup, "bench-warmup", cfg.BenchWarmup, "untimed requests per server sent before the timed ones")
	fs.StringVar(&cfg.BenchOut, "bench-out", "", "also write the latency table as Markdown to this file")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see --help)", fs.Args())
	}
	external := cfg.UpstreamURL != "" || cfg.GuestdURL != "" || cfg.Exec != ""
	if external && (cfg.UpstreamURL == "" || cfg.GuestdURL == "" || cfg.Exec == "") {
		return cfg, errors.New("--upstream-url, --guestd-url and --exec go together")
	}

	if cfg.Bench && (cfg.BenchN < 1 || cfg.BenchWarmup < 0) {
		return cfg, errors.New("--bench-n must be at least 1 and --bench-warmup at least 0")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	compareOnly, benchOnly := []string{"cases", "known", "out", "include-slow"}, []string{"bench-file", "bench-n", "bench-warmup", "bench-out"}
	for _, name := range compareOnly {
		if cfg.Bench && set[name] {
			return cfg, fmt.Errorf("--%s is for comparing answers, not with --bench", name)
		}
	}
	for _, name := range benchOnly {
		if !cfg.Bench && set[name] {
			return cfg, fmt.Errorf("--%s needs --bench", name)
		}
	}
	return cfg, nil
}

func runCompat(ctx context.Context, cfg compatConfig, s stdio) error {
	var benches []compat.Benchmark
	var cases []compat.Case
	var allow *compat.Allowlist
	var err error
	if cfg.Bench {
		if benches, err = loadBenchmarks(cfg); err != nil {
			return err
		}
	} else {
		if cases, allow, err = loadCases(cfg); err != nil {
			return err
		}
	}

	var desk compat.Desktop
	desc := ""
	if cfg.UpstreamURL != "" { // with --guestd-url and --exec: parseCompat saw to it
		desk = &compat.External{UpstreamURL: cfg.UpstreamURL, GuestdURL: cfg.GuestdURL, ExecPrefix: strings.Fields(cfg.Exec)}
		desc = "an existing desktop reached with --exec " + cfg.Exec
	} else {
		tree, err := compat.UpstreamFromEnv()
		if err != nil {
			return err
		}
		// A private state directory: the run shares nothing with the
		// host's daemon and leaves nothing behind. Its desktop runs from
		// the osworld image (upstream's main.py asks LibreOffice its
		// version).
		state, err := os.MkdirTemp("", "drums-compat-state-")
		if err != nil {
			return fmt.Errorf("create compat state dir: %w", err)
		}
		defer os.RemoveAll(state)
		eng, err := sessions.New(sessions.Config{Prefix: randomPrefix("cmp"), StateDir: state, ImageDir: cfg.ImageDir, Image: cfg.Image})
		if err != nil {
			return fmt.Errorf("start the session engine: %w", err)
		}
		defer eng.Close()
		sd, err := compat.NewSessionDesktop(ctx, eng, tree, "", s.err)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := sd.Close(); cerr != nil {
				fmt.Fprintf(s.err, "compat: %v\n", cerr)
			}
		}()
		desk, desc = sd, sd.Describe()
	}

	if cfg.Bench {
		return runBench(ctx, cfg, desk, desc, benches, s)
	}
	fmt.Fprintf(s.err, "compat: %d cases, upstream %s, guestd %s\n", len(cases), desk.URL(compat.Upstream), desk.URL(compat.Guestd))
	rep, err := compat.Run(ctx, desk, cases, compat.Options{IncludeSlow: cfg.IncludeSlow, Allow: allow, Progress: s.err})
	if err != nil {
		return err
	}
	rep.Command = "drums compat " + strings.Join(cfg.Args, " ")
	rep.Desktop = desc
	if err := rep.Write(cfg.Out); err != nil {
		return err
	}
	t := rep.Totals
	fmt.Fprintf(s.err, "compat: same %d, intended %d, different %d, error %d, skipped %d, stale known differences %d; report in %s\n",
		t[compat.Same], t[compat.Intended], t[compat.Different], t[compat.Error], t[compat.Skipped], len(rep.StaleAllowed), cfg.Out)
	if rep.Failed() {
		return fmt.Errorf("%d unexplained differences, %d cases that could not run, %d known differences that explained nothing in a case that ran (prune them)",
			t[compat.Different], t[compat.Error], len(rep.StaleAllowed))
	}
	return nil
}

// loadCases reads the cases (built-in or --cases), keeps those --run
// selects, and reads the known differences.
func loadCases(cfg compatConfig) ([]compat.Case, *compat.Allowlist, error) {
	cases, err := compat.BuiltinCases()
	if cfg.Cases != "" {
		cases, err = compat.LoadCases(cfg.Cases)
	}
	if err != nil {
		return nil, nil, err
	}
	if cfg.Only != "" {
		cases = compat.Select(cases, strings.Split(cfg.Only, ","))
		if len(cases) == 0 {
			return nil, nil, fmt.Errorf("no case matches --run %q", cfg.Only)
		}
	}
	allow, err := compat.BuiltinAllowlist()
	if cfg.Known != "" {
		allow, err = compat.LoadAllowlist(cfg.Known)
	}
	if err != nil {
		return nil, nil, err
	}
	return cases, allow, nil
}

// loadBenchmarks reads the benchmarks (built-in or --bench-file) and keeps
// those --run selects.
func loadBenchmarks(cfg compatConfig) ([]compat.Benchmark, error) {
	bs, err := compat.BuiltinBenchmarks()
	if cfg.BenchFile != "" {
		bs, err = compat.LoadBenchmarks(cfg.BenchFile)
	}
	if err != nil {
		return nil, err
	}
	if cfg.Only != "" {
		bs = compat.SelectBenchmarks(bs, strings.Split(cfg.Only, ","))
		if len(bs) == 0 {
			return nil, fmt.Errorf("no benchmark matches --run %q", cfg.Only)
		}
	}
	return bs, nil
}

// runBench times the benchmarks on desk and prints the table.
func runBench(ctx context.Context, cfg compatConfig, desk compat.Desktop, desc string, bs []compat.Benchmark, s stdio) error {
	fmt.Fprintf(s.err, "compat: %d benchmarks, %d requests each per server, upstream %s, guestd %s\n", len(bs), cfg.BenchN, desk.URL(compat.Upstream), desk.URL(compat.Guestd))
	rep, err := compat.Bench(ctx, desk, bs, compat.BenchOptions{N: cfg.BenchN, Warmup: cfg.BenchWarmup, Progress: s.err})
	if err != nil {
		return err
	}
	rep.Command = "drums compat " + strings.Join(cfg.Args, " ")
	rep.Desktop = desc
	md := rep.Markdown()
	fmt.Fprint(s.out, md)
	if cfg.BenchOut != "" {
		if err := os.WriteFile(cfg.BenchOut, []byte("# guestd against upstream main.py: latency\n\n"+md), 0o644); err != nil {
			return fmt.Errorf("write bench report: %w", err)
		}
	}
	return nil
}
