//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drums-dev/drums/internal/term"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
)

func init() {
	commands["session"] = command{summary: "create, list, reset, remove and enter desktops (no daemon needed)", run: runSession}
}

// engineFlags are the flags every command that uses the session engine
// shares; defaults come from sessions.Config.
type engineFlags struct {
	prefix, stateDir, imageDir, image, guestd, network string
	upperOnDisk, verbose                               bool
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.prefix, "prefix", sessions.DefaultPrefix, "host prefix: every host-global name of these sessions carries it")
	fs.StringVar(&f.stateDir, "state-dir", sessions.DefaultStateDir, "directory of the sessions' records (shared with the daemon)")
	fs.StringVar(&f.imageDir, "image-dir", images.DefaultDir, "the image store desktops run from (drums image ls)")
	fs.StringVar(&f.image, "image", sessions.DefaultImage, "the image a desktop runs from when a request names none")
	fs.StringVar(&f.guestd, "guestd", "", "guestd binary to run in sessions (default $DRUMS_BIN/guestd or next to drums)")
	fs.StringVar(&f.network, "network", "", "private IPv4 range for session addresses, a /30 each (default: a /21 of 10.0.0.0/8 chosen by a hash of --prefix; addresses are claimed host-wide, so ranges may overlap)")
	fs.BoolVar(&f.upperOnDisk, "upper-on-disk", false, "keep sessions' upper layers on disk under STATE-DIR instead of tmpfs")
	fs.BoolVar(&f.verbose, "v", false, "log the engine's steps to stderr")
}

func (f *engineFlags) config() (sessions.Config, error) {
	var network netip.Prefix
	if f.network != "" {
		var err error
		if network, err = netip.ParsePrefix(f.network); err != nil {
			return sessions.Config{}, badUsage(fmt.Errorf("--network %q: %w", f.network, err))
		}
	}
	cfg := sessions.Config{Prefix: f.prefix, StateDir: f.stateDir, ImageDir: f.imageDir, Image: f.image, Guestd: f.guestd,
		Network: network, UpperOnDisk: f.upperOnDisk}
	if f.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cfg, nil
}

func (f *engineFlags) engine() (*sessions.Engine, error) {
	cfg, err := f.config()
	if err != nil {
		return nil, err
	}
	return sessions.New(cfg)
}

// requestFlags describe one desktop.
type requestFlags struct {
	width, height, depth, guestPort, pids int
	snapshot                              string
	memory                                int64
	cpus                                  float64
	noEgress, glx                         bool
}

func (r *requestFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.width, "width", sessions.DefaultWidth, "screen width")
	fs.IntVar(&r.height, "height", sessions.DefaultHeight, "screen height")
	fs.IntVar(&r.depth, "depth", sessions.DefaultDepth, "screen depth (16 or 24)")
	fs.StringVar(&r.snapshot, "snapshot", "", "directory of files (a saved upper layer) to start from")
	fs.IntVar(&r.guestPort, "guest-port", sessions.DefaultGuestPort, "port guestd listens on inside the session")
	fs.Int64Var(&r.memory, "memory", 0, "memory limit in bytes (0: engine default, 4 GiB)")
	fs.IntVar(&r.pids, "pids", 0, "process and thread limit (0: engine default, 4096)")
	fs.Float64Var(&r.cpus, "cpus", 0, "CPU limit in cores (0: engine default, 2)")
	fs.BoolVar(&r.noEgress, "no-egress", false, "no traffic to the public internet")
	fs.BoolVar(&r.glx, "glx", false, "load Xvfb's GLX extension (about 12 MiB more per desktop)")
}

func (r *requestFlags) request() sessions.Request {
	return sessions.Request{Width: r.width, Height: r.height, Depth: r.depth, Snapshot: r.snapshot,
		GuestPort: r.guestPort, NoEgress: r.noEgress, GLX: r.glx,
		Limits: sessions.Limits{MemoryBytes: r.memory, Pids: r.pids, CPUs: r.cpus}}
}

const sessionUsage = `Usage: drums session COMMAND [flags]

Desktops made directly by this process, without the daemon. They outlive it:
their records live in --state-dir, so 'ls' from any process (and the daemon,
with the same --prefix) sees them.

Commands:
  create [--json] [request flags]   make a desktop; prints its id and address once ready
  ls [--json]                       list desktops
  rm ID...                          remove desktops (already gone is fine)
  reset [--json] ID                 clean files and processes, same id, ready again
  exec [--root] [--env K=V] ID -- CMD...   run a command inside (as user, or root)
  shell [--root] ID                 an interactive shell inside
  screenshot ID FILE                save GET /screenshot of the desktop's guestd
  plan [request flags] [--slot N]   print the plan a request would get (creates nothing)

Run 'drums session COMMAND --help' for a command's flags.
`

func runSession(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(os.Stderr, sessionUsage)
		if len(args) == 0 {
			return badUsage(errors.New("no session command"))
		}
		return nil
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("drums session "+sub, flag.ContinueOnError)
	var ef engineFlags
	ef.register(fs)
	err := sessionCommand(ctx, sub, fs, &ef, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func sessionCommand(ctx context.Context, sub string, fs *flag.FlagSet, ef *engineFlags, args []string) error {
	switch sub {
	case "create":
		return sessionCreate(ctx, fs, ef, args)
	case "ls":
		return sessionList(fs, ef, args)
	case "rm":
		return sessionRemove(ctx, fs, ef, args)
	case "reset":
		return sessionReset(ctx, fs, ef, args)
	case "exec":
		return sessionExec(ctx, fs, ef, args, false)
	case "shell":
		return sessionExec(ctx, fs, ef, args, true)
	case "screenshot":
		return sessionScreenshot(ctx, fs, ef, args)
	case "plan":
		return sessionPlan(fs, ef, args)
	}
	fmt.Fprint(os.Stderr, sessionUsage)
	return badUsage(fmt.Errorf("unknown session command %q", sub))
}

// printSession prints a ready desktop: one JSON object with --json.
func printSession(s *sessions.Session, asJSON bool, took time.Duration) error {
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(s)
	}
	fmt.Printf("%s\t%s:%d\t(ready in %d ms)\n", s.ID, s.Address, s.GuestPort, took.Milliseconds())
	return nil
}

func sessionCreate(ctx context.Context, fs *flag.FlagSet, ef *engineFlags, args []string) error {
	var rf requestFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print the desktop as one JSON object")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	start := time.Now()
	s, err := e.Create(ctx, rf.request())
	if err != nil {
		return err
	}
	return printSession(s, *asJSON, time.Since(start))
}

func sessionList(fs *flag.FlagSet, ef *engineFlags, args []string) error {
	asJSON := fs.Bool("json", false, "print a JSON array")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	list := e.List()
	if *asJSON {
		if list == nil {
			list = []*sessions.Session{}
		}
		return json.NewEncoder(os.Stdout).Encode(list)
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tADDRESS\tSCREEN\tINIT\tCREATED\tRESETS")
	for _, s := range list {
		state := string(s.State)
		if s.Reason != "" {
			state += " (" + s.Reason + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s:%d\t%dx%d\t%d\t%s\t%d\n", s.ID, state, s.Address, s.GuestPort, s.Width, s.Height,
			s.InitPID, s.Created.Local().Format(time.DateTime), s.Resets)
	}
	return w.Flush()
}

func sessionRemove(ctx context.Context, fs *flag.FlagSet, ef *engineFlags, args []string) error {
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	if fs.NArg() == 0 {
		return badUsage(errors.New("rm: which session? (drums session ls)"))
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range fs.Args() {
		errs = append(errs, e.Remove(ctx, id))
	}
	return errors.Join(errs...)
}

func sessionReset(ctx context.Context, fs *flag.FlagSet, ef *engineFlags, args []string) error {
	asJSON := fs.Bool("json", false, "print the desktop as one JSON object")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	if fs.NArg() != 1 {
		return badUsage(errors.New("reset: want one session id"))
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	start := time.Now()
	s, err := e.Reset(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	return printSession(s, *asJSON, time.Since(start))
}

// envFlags collect repeated --env K=V.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, ",") }
func (e *envFlags) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("--env %q: want KEY=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}

func sessionExec(ctx context.Context, fs *flag.FlagSet, ef *engineFlags, args []string, shell bool) error {
	root := fs.Bool("root", false, "run as root (with a session's reduced capabilities) instead of the user")
	var env envFlags
	fs.Var(&env, "env", "KEY=VALUE added to the environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return badUsage(errors.New("which session? (drums session ls)"))
	}
	id, argv := argv[0], argv[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if shell {
		argv = []string{"/bin/bash", "-l"}
	} else if len(argv) == 0 {
		return badUsage(errors.New("exec: no command (drums session exec ID -- CMD...)"))
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	opts := sessions.ExecOptions{Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if *root {
		opts.User = "root"
	}
	if shell {
		restore, resize, err := shellTerminal()
		if err != nil {
			return err
		}
		defer restore()
		opts.TTY, opts.Resize = true, resize
		if t := os.Getenv("TERM"); t != "" {
			opts.Env = append(opts.Env, "TERM="+t)
		}
	} else {
		// A terminal passed into a session could be written to behind
		// the user's back (TIOCSTI): pass terminals through pipes.
		if term.IsTerminal(os.Stdin) {
			opts.Stdin = struct{ io.Reader }{os.Stdin}
		}
		if term.IsTerminal(os.Stdout) {
			opts.Stdout = struct{ io.Writer }{os.Stdout}
		}
		if term.IsTerminal(os.Stderr) {
			opts.Stderr = struct{ io.Writer }{os.Stderr}
		}
	}
	res, err := e.Exec(ctx, id, argv, opts)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		if shell {
			return nil
		}
		os.Exit(res.ExitCode)
	}
	return nil
}

// shellTerminal puts stdin in raw mode for a shell and reports stdout's
// size, now and on every SIGWINCH.
func shellTerminal() (restore func(), resize <-chan sessions.TermSize, err error) {
	restoreMode, err := term.MakeRaw(os.Stdin)
	if errors.Is(err, term.ErrNotTerminal) {
		return nil, nil, errors.New("shell: stdin is not a terminal")
	} else if err != nil {
		return nil, nil, fmt.Errorf("shell: %w", err)
	}
	ch := make(chan sessions.TermSize, 4)
	stop := term.WatchSize(os.Stdout, func(s term.Size) {
		select {
		case ch <- sessions.TermSize(s):
		default:
		}
	})
	return func() {
		stop()
		restoreMode()
	}, ch, nil
}

func sessionScreenshot(ctx context.Context, fs *flag.FlagSet, ef *engineFlags, args []string) error {
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	if fs.NArg() != 2 {
		return badUsage(errors.New("screenshot: want ID FILE"))
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	s, err := e.Get(fs.Arg(0))
	if err != nil {
		return err
	}
	url := fmt.Sprintf("http://%s:%d/screenshot", s.Address, s.GuestPort)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(fs.Arg(1))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("save screenshot: %w", err)
	}
	return f.Close()
}

func sessionPlan(fs *flag.FlagSet, ef *engineFlags, args []string) error {
	var rf requestFlags
	rf.register(fs)
	slot := fs.Int("slot", 0, "slot the plan is for")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	cfg, err := ef.config()
	if err != nil {
		return err
	}
	p, err := sessions.PlanFor(cfg, rf.request(), *slot)
	if err != nil {
		return err
	}
	fmt.Println(p)
	return nil
}
