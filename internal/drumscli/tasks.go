//go:build linux

package drumscli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
	"github.com/drums-dev/drums/tasks"
	"github.com/drums-dev/drums/tasks/osworld"
)

const tasksUsage = `Usage: drums tasks COMMAND [flags]

Commands:
  run     run a suite (or the built-in tasks) on leased desktops and write the report
  list    show each task's requirements (apps, file cache, live web, services); no desktop needed
  report  write a run's report again from its report.json (--html: report.html)

Run 'drums tasks COMMAND --help' for a command's flags.
`

// commaList is a flag holding a comma-separated, repeatable list.
type commaList []string

func (l *commaList) String() string { return strings.Join(*l, ",") }
func (l *commaList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// suiteFlags are the flags that pick tasks.
type suiteFlags struct {
	Suite    string
	Examples string
	Domains  commaList
	IDs      commaList
	Cache    string
	HFMirror string
	Builtin  bool
}

func (s *suiteFlags) register(fs *flag.FlagSet) {
	def := ""
	if root := os.Getenv("DRUMS_OSWORLD"); root != "" {
		def = filepath.Join(root, "evaluation_examples", "test_nogdrive.json")
	}
	fs.StringVar(&s.Suite, "suite", def, "suite file: domain → task ids (default $DRUMS_OSWORLD/evaluation_examples/test_nogdrive.json)")
	fs.StringVar(&s.Examples, "examples", "", "directory of DOMAIN/ID.json task files (default: examples/ next to the suite file)")
	fs.Var(&s.Domains, "domain", "only these domains (comma-separated, repeatable)")
	fs.Var(&s.IDs, "id", "only these task ids or unique id prefixes (comma-separated, repeatable)")
	fs.StringVar(&s.Cache, "cache", os.Getenv("DRUMS_OSWORLD_CACHE"), "OSWorld file cache (its cache_dir: DIR/TASK_ID/FILE); downloads come only from here and --hf-mirror (default $DRUMS_OSWORLD_CACHE)")
	fs.StringVar(&s.HFMirror, "hf-mirror", os.Getenv("DRUMS_HF_MIRROR"), "a copy of OSWorld's file-cache dataset (DIR/PATH for .../ubuntu_osworld_file_cache/resolve/main/PATH; sha256s checked against DIR/MANIFEST.tsv); used where --cache lacks a file (default $DRUMS_HF_MIRROR)")
	fs.BoolVar(&s.Builtin, "builtin", false, "the built-in drums tasks instead of a suite")
}

// check says what is missing to pick tasks.
func (s *suiteFlags) check() error {
	if s.Suite == "" && !s.Builtin {
		return errors.New("no suite: give --suite FILE (or set DRUMS_OSWORLD), or --builtin")
	}
	return nil
}

// fileCache is where task files come from: --cache, then --hf-mirror.
func (s *suiteFlags) fileCache() (osworld.FileCache, error) {
	c := osworld.FileCache{Dir: s.Cache}
	if s.HFMirror != "" {
		m, err := osworld.OpenMirror(s.HFMirror)
		if err != nil {
			return c, err
		}
		c.Mirror = m
	}
	return c, nil
}

// load returns the selected tasks as entries (suite) or tasks (built-in).
func (s *suiteFlags) load() ([]osworld.Entry, []*osworld.Task, error) {
	if s.Builtin {
		all, err := tasks.Builtin()
		if err != nil {
			return nil, nil, err
		}
		var out []*osworld.Task
		for _, t := range all {
			if len(s.IDs) == 0 || slices.Contains(s.IDs, t.ID) {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return nil, nil, fmt.Errorf("no built-in task matches --id %v", s.IDs)
		}
		return nil, out, nil
	}
	if s.Examples == "" {
		s.Examples = filepath.Join(filepath.Dir(s.Suite), "examples")
	}
	// --via-python's worker runs in another directory: it gets task files
	// by absolute path.
	var err error
	if s.Examples, err = filepath.Abs(s.Examples); err != nil {
		return nil, nil, err
	}
	suite, err := osworld.LoadSuite(s.Suite)
	if err != nil {
		return nil, nil, err
	}
	entries, err := suite.Select(osworld.Filter{Domains: s.Domains, IDs: s.IDs})
	if err != nil {
		return nil, nil, err
	}
	return entries, nil, nil
}

// tasksRunConfig is the configuration of `drums tasks run`.
type tasksRunConfig struct {
	Suite       suiteFlags
	Out         string
	Files       string
	Parallel    int
	Socket      string
	StartDaemon bool
	Width       int
	Height      int
	Settle      time.Duration
	TaskTimeout time.Duration
	OpenTimeout time.Duration
	LiveWeb     bool
	ViaPython   bool
	Python      osworld.PythonConfig
	ImageDir    string
	Image       string
	Args        []string // the command line, for the report
}

func parseTasksRun(args []string, stderr io.Writer) (tasksRunConfig, error) {
	cfg := tasksRunConfig{Out: "tasks-report", Parallel: 2, StartDaemon: true, Width: 1920, Height: 1080,
		Settle: 10 * time.Second, TaskTimeout: 10 * time.Minute, OpenTimeout: osworld.DefaultTimeouts.Open, Args: args}
	fs := newFlags("tasks run", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums tasks run [flags]

Runs OSWorld tasks on drums desktops leased from the daemon (started as a
child when none answers on --socket), several in parallel, each on a clean
desktop: the task's setup (OSWorld's SetupController semantics), an
observation (screenshot and accessibility tree), then its evaluation before
any action (the score an agent that does nothing gets). Tasks whose
programs are missing, whose file-cache files are absent or whose steps drums
cannot perform are classified without running; tasks that need the internet
are run offline and reported as needs-live-web. Writes report.json,
run.json, report.md and report.html (the screenshots, accessibility trees
and timing of each task, a chart of the totals) to --out, screenshots,
accessibility trees and fetched files to --files.

  drums tasks run --suite ~/OSWorld/evaluation_examples/test_nogdrive.json --out report --parallel 3
  drums tasks run --domain os --id 94d95f96 --out /tmp/r
  drums tasks run --suite ... --hf-mirror ../shared/osworld/hf-cache --out report
  drums tasks run --builtin --out /tmp/builtin

With --via-python each task runs through OSWorld's own DesktopEnv
(provider_name="drums") from the checkout in --osworld, for comparison; the
task's files from --cache and --hf-mirror are put in DesktopEnv's cache_dir
first, under the names OSWorld's SetupController looks for.

OSWorld's Python is the evaluator of record: with an OSWorld checkout
(--osworld, $DRUMS_OSWORLD) a native run scores every metric with OSWorld's
own desktop_env.evaluators.metrics over drums' getters, computes drums' Go
metric beside it, and reports a difference as the status diverged. Without
one, drums' Go metrics score alone (the report's evaluator column says so).

Flags:
`)
		fs.PrintDefaults()
	}
	cfg.Suite.register(fs)
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for report.json, run.json, report.md and report.html")
	fs.StringVar(&cfg.Files, "files", "", "directory for screenshots/, accessibility/, work/ (files steps and getters write) and logs (default: --out)")
	fs.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "desktops used at once")
	fs.StringVar(&cfg.Socket, "socket", client.DefaultSocketPath(), "the daemon's unix socket (default $DRUMS_SOCKET, else /run/drums/drums.sock)")
	fs.BoolVar(&cfg.StartDaemon, "start-daemon", cfg.StartDaemon, "start `drums serve` (and stop it at the end) when no daemon answers")
	fs.StringVar(&cfg.ImageDir, "image-dir", images.DefaultDir, "the image store (for the daemon this run starts)")
	fs.StringVar(&cfg.Image, "image", sessions.DefaultImage, "the image the desktops run from (built first when it is a built-in recipe's and this run starts the daemon)")
	fs.IntVar(&cfg.Width, "width", cfg.Width, "screen width of the desktops")
	fs.IntVar(&cfg.Height, "height", cfg.Height, "screen height of the desktops")
	fs.DurationVar(&cfg.Settle, "settle", cfg.Settle, "pause between setup and observation (OSWorld's runner sleeps 60 s) so applications finish starting")
	fs.DurationVar(&cfg.TaskTimeout, "task-timeout", cfg.TaskTimeout, "bound on one task, setup to score")
	fs.DurationVar(&cfg.OpenTimeout, "open-timeout", cfg.OpenTimeout, "bound on an open step waiting for its window (OSWorld: 30 min)")
	fs.BoolVar(&cfg.LiveWeb, "live-web", false, "the desktops reach the internet: judge tasks that need it like the others")
	fs.BoolVar(&cfg.ViaPython, "via-python", false, "run each task through OSWorld's DesktopEnv(provider_name=\"drums\") instead of drums' native runner")
	fs.StringVar(&cfg.Python.OSWorld, "osworld", os.Getenv("DRUMS_OSWORLD"), "OSWorld checkout: --via-python's DesktopEnv, and the metrics that score native runs (default $DRUMS_OSWORLD)")
	fs.StringVar(&cfg.Python.PythonPath, "osworld-pythonpath", os.Getenv("DRUMS_OSWORLD_PYTHONPATH"), "extra PYTHONPATH for OSWorld's dependencies (default $DRUMS_OSWORLD_PYTHONPATH)")
	fs.StringVar(&cfg.Python.ProviderPath, "provider-python", defaultProviderPython(), "directory holding the drums_osworld package (provider/python)")
	fs.StringVar(&cfg.Python.Python, "python", "/usr/bin/python3", "Python interpreter for --via-python")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see drums tasks run --help)", fs.Args())
	}
	if cfg.Parallel < 1 {
		return cfg, fmt.Errorf("--parallel %d: must be at least 1", cfg.Parallel)
	}
	if err := cfg.Suite.check(); err != nil {
		return cfg, err
	}
	if cfg.ViaPython && cfg.Suite.Builtin {
		return cfg, errors.New("--via-python runs suite tasks, not --builtin")
	}
	return cfg, nil
}

func runTasksRun(ctx context.Context, cfg tasksRunConfig, s stdio) error {
	entries, builtin, err := cfg.Suite.load()
	if err != nil {
		return err
	}
	out, err := filepath.Abs(cfg.Out)
	if err != nil {
		return err
	}
	files := out
	if cfg.Files != "" {
		if files, err = filepath.Abs(cfg.Files); err != nil {
			return err
		}
	}
	cache, err := cfg.Suite.fileCache()
	if err != nil {
		return err
	}
	rc := tasks.Config{
		Examples: cfg.Suite.Examples, Cache: cache, Files: files,
		Parallel: cfg.Parallel, Width: cfg.Width, Height: cfg.Height, TaskTimeout: cfg.TaskTimeout,
		Settle: cfg.Settle, LiveWeb: cfg.LiveWeb,
		Timeouts: osworld.Timeouts{Open: cfg.OpenTimeout},
	}
	if cfg.ViaPython {
		p := cfg.Python
		p.Socket, p.CacheDir, p.LogDir, p.Image = cfg.Socket, cfg.Suite.Cache, filepath.Join(files, "logs"), cfg.Image
		if p.CacheDir == "" {
			p.CacheDir = filepath.Join(files, "osworld-cache")
		}
		if err := p.Check(); err != nil {
			return err
		}
		rc.Python = &p
	} else if cfg.Python.OSWorld != "" {
		// OSWorld's own metrics score native runs too, drums' beside them.
		p := cfg.Python
		p.LogDir = filepath.Join(files, "logs")
		if err := p.Check(); err != nil {
			return err
		}
		judge := &osworld.PythonJudge{Config: &p, Warn: s.err}
		defer judge.Close()
		rc.Judge = judge
	}

	if cfg.StartDaemon {
		if err := ensureImage(ctx, cfg.ImageDir, cfg.Image, s.err); err != nil {
			return fmt.Errorf("image %s: %w", cfg.Image, err)
		}
	}
	d, err := connectDaemon(ctx, cfg.Socket, cfg.StartDaemon, filepath.Join(files, "logs"), []string{"--image-dir", cfg.ImageDir, "--image", cfg.Image}, s.err)
	if err != nil {
		return err
	}
	defer func() {
		if err := d.Stop(); err != nil {
			fmt.Fprintln(s.err, "drums tasks:", err)
		}
	}()
	desktops := &tasks.ProviderDesktops{Client: d.Client, LeaseSeconds: int((cfg.TaskTimeout + 5*time.Minute).Seconds()), Image: cfg.Image}
	runner := tasks.NewRunner(rc, desktops, tasks.NewTextProgress(s.err))
	start := time.Now()
	var results []tasks.Result
	if builtin != nil {
		results, err = runner.RunTasks(ctx, builtin)
	} else {
		results, err = runner.Run(ctx, entries)
	}
	if err != nil {
		return err
	}
	rep := tasks.Report{Results: results, Started: start, Duration: time.Since(start), Mode: "native",
		Command: "drums tasks run " + strings.Join(cfg.Args, " "), Files: files}
	if cfg.ViaPython {
		rep.Mode = "osworld"
	}
	if err := rep.WriteFiles(out); err != nil {
		return err
	}
	t := tasks.Totals(results)
	var parts []string
	for _, st := range tasks.Statuses {
		parts = append(parts, fmt.Sprintf("%s %d", st, t[st]))
	}
	fmt.Fprintf(s.out, "%d tasks in %s: %s\nreport: %s (screenshots, accessibility trees, timing), %s, %s\n", len(results),
		time.Since(start).Round(time.Second), strings.Join(parts, ", "),
		filepath.Join(out, tasks.ReportHTML), filepath.Join(out, tasks.ReportMD), filepath.Join(out, tasks.ReportJSON))
	return ctx.Err()
}

// tasksReportConfig is the configuration of `drums tasks report`.
type tasksReportConfig struct {
	Dir   string
	Files string
	HTML  bool
}

func parseTasksReport(args []string, stderr io.Writer) (tasksReportConfig, error) {
	var cfg tasksReportConfig
	fs := newFlags("tasks report", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums tasks report --html [flags] DIR

Writes DIR/report.html again from DIR/report.json (and DIR/run.json, where
the run wrote one: its command, start, duration and files directory), as
drums tasks run writes it: for a report kept from an earlier run, or after
its screenshots were copied next to it. Screenshots and accessibility
trees are linked relative to DIR; those not on disk are shown as not kept.

  drums tasks report --html tasks/report
  drums tasks report --html --files /tmp/drums-tasks /tmp/r

Flags:
`)
		fs.PrintDefaults()
	}
	fs.BoolVar(&cfg.HTML, "html", false, "write report.html (the one format this rebuilds so far)")
	fs.StringVar(&cfg.Files, "files", "", "the directory the run kept screenshots/ and accessibility/ in (default: run.json's, else DIR)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() != 1 {
		return cfg, fmt.Errorf("want one report directory, got %q (see drums tasks report --help)", fs.Args())
	}
	if !cfg.HTML {
		return cfg, errors.New("say which report to write: --html (see drums tasks report --help)")
	}
	cfg.Dir = fs.Arg(0)
	return cfg, nil
}

func runTasksReport(_ context.Context, cfg tasksReportConfig, s stdio) error {
	rep, err := tasks.ReadReport(cfg.Dir)
	if err != nil {
		return err
	}
	if cfg.Files != "" {
		rep.Files = cfg.Files
	}
	if err := rep.WriteHTMLFile(cfg.Dir); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "report: %s (%d tasks)\n", filepath.Join(cfg.Dir, tasks.ReportHTML), len(rep.Results))
	return nil
}

// defaultProviderPython finds provider/python next to the binary's
// checkout (bin/drums → provider/python) or in the working directory.
func defaultProviderPython() string {
	if p := os.Getenv("DRUMS_PROVIDER_PYTHON"); p != "" {
		return p
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(filepath.Dir(exe)), "provider", "python")
		if _, err := os.Stat(filepath.Join(p, "drums_osworld")); err == nil {
			return p
		}
	}
	return filepath.Join("provider", "python")
}

// connectDaemon returns the daemon on socket, starting `drums serve` as a
// child when none answers and start is set; it says so on stderr.
func connectDaemon(ctx context.Context, socket string, start bool, logDir string, serveArgs []string, stderr io.Writer) (*tasks.Daemon, error) {
	if !start {
		c, err := client.New(socket, "")
		if err != nil {
			return nil, err
		}
		if _, err := c.Health(ctx); err != nil {
			return nil, fmt.Errorf("no drums daemon on %s (start one with drums serve, or drop --start-daemon=false): %w", socket, err)
		}
		return &tasks.Daemon{Client: c, Socket: socket}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary: %w", err)
	}
	d, err := tasks.EnsureDaemon(ctx, exe, socket, append([]string{"--drain-on-exit"}, serveArgs...), filepath.Join(logDir, "drums-serve.log"))
	if err != nil {
		return nil, err
	}
	if d.Started {
		fmt.Fprintf(stderr, "drums: started a daemon on %s (log %s); it stops when this run ends\n", socket, d.Log)
	}
	return d, nil
}

// tasksListConfig is the configuration of `drums tasks list`.
type tasksListConfig struct {
	Suite  suiteFlags
	JSON   bool
	Native bool
}

func parseTasksList(args []string, stderr io.Writer) (tasksListConfig, error) {
	var cfg tasksListConfig
	fs := newFlags("tasks list", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums tasks list [flags]

Prints each selected task's requirements as read from its JSON: the programs
it needs, its file-cache files (and whether --cache or --hf-mirror has them), the internet
hosts it reaches, the system services it uses, and the getters and metrics
drums leaves to OSWorld. No desktop or daemon is needed.

Flags:
`)
		fs.PrintDefaults()
	}
	cfg.Suite.register(fs)
	fs.BoolVar(&cfg.JSON, "json", false, "print JSON lines instead of text")
	fs.BoolVar(&cfg.Native, "native", false, "print the getters and metrics drums computes itself, and stop")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.Native {
		return cfg, nil
	}
	return cfg, cfg.Suite.check()
}

func runTasksList(_ context.Context, cfg tasksListConfig, s stdio) error {
	if cfg.Native {
		fmt.Fprintf(s.out, "native getters: %s\nnative metrics: %s\n", strings.Join(osworld.NativeGetters(), ", "), strings.Join(osworld.NativeMetrics(), ", "))
		return nil
	}
	entries, builtin, err := cfg.Suite.load()
	if err != nil {
		return err
	}
	cache, err := cfg.Suite.fileCache()
	if err != nil {
		return err
	}
	list := builtin
	for _, e := range entries {
		t, err := tasks.LoadTask(cfg.Suite.Examples, e.Domain, e.ID)
		if err != nil {
			return err
		}
		list = append(list, t)
	}
	enc := json.NewEncoder(s.out)
	for _, t := range list {
		req := tasks.Analyze(t, cache)
		nn := osworld.NotNativeParts(t)
		if cfg.JSON {
			if err := enc.Encode(map[string]any{"domain": t.Domain, "id": t.ID, "requirements": req, "not_native": nn}); err != nil {
				return err
			}
			continue
		}
		present := 0
		for _, f := range req.FileCache {
			if f.Present {
				present++
			}
		}
		fmt.Fprintf(s.out, "%s/%s\n  apps: %s\n  file cache: %d/%d present\n  live web: %s\n  services: %s\n  not native: %s\n",
			t.Domain, t.ID, orNone(req.Apps), present, len(req.FileCache), orNone(req.LiveWeb), orNone(req.Services), orNone(nn))
	}
	return nil
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, ", ")
}
