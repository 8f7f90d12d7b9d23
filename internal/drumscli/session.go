//go:build linux

package drumscli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/drums-dev/drums/internal/term"
	"github.com/drums-dev/drums/sessions"
)

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

// sessionFlags is the flag set of `drums session SUB`, with the engine's
// flags.
type sessionFlags struct {
	*flag.FlagSet
	ef     engineFlags
	stderr io.Writer
}

func newSessionFlags(sub string, stderr io.Writer) *sessionFlags {
	f := &sessionFlags{FlagSet: newFlags("drums session "+sub, stderr), stderr: stderr}
	f.ef.register(f.FlagSet)
	return f
}

// engine is the engine's configuration the parsed flags give.
func (f *sessionFlags) engine() (sessions.Config, error) { return f.ef.config(f.stderr) }

// sessionCreateConfig is the configuration of `drums session create`, and
// of `drums session plan` with Slot.
type sessionCreateConfig struct {
	Engine  sessions.Config
	Request sessions.Request
	JSON    bool
	Slot    int
}

func parseSessionCreate(args []string, stderr io.Writer) (sessionCreateConfig, error) {
	return parseRequest("create", args, stderr)
}

func parseSessionPlan(args []string, stderr io.Writer) (sessionCreateConfig, error) {
	return parseRequest("plan", args, stderr)
}

// parseRequest parses the flags of create or plan: a desktop's request.
func parseRequest(sub string, args []string, stderr io.Writer) (sessionCreateConfig, error) {
	var cfg sessionCreateConfig
	fs := newSessionFlags(sub, stderr)
	var rf requestFlags
	rf.register(fs.FlagSet)
	if sub == "plan" {
		fs.IntVar(&cfg.Slot, "slot", 0, "slot the plan is for")
	} else {
		fs.BoolVar(&cfg.JSON, "json", false, "print the desktop as one JSON object")
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.Request = rf.request()
	var err error
	cfg.Engine, err = fs.engine()
	return cfg, err
}

func runSessionCreate(ctx context.Context, cfg sessionCreateConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	start := time.Now()
	sess, err := e.Create(ctx, cfg.Request)
	if err != nil {
		return err
	}
	return printSession(s.out, sess, cfg.JSON, time.Since(start))
}

// printSession prints a ready desktop: one JSON object with --json.
func printSession(w io.Writer, s *sessions.Session, asJSON bool, took time.Duration) error {
	if asJSON {
		return json.NewEncoder(w).Encode(s)
	}
	fmt.Fprintf(w, "%s\t%s:%d\t(ready in %d ms)\n", s.ID, s.Address, s.GuestPort, took.Milliseconds())
	return nil
}

// sessionConfig is the configuration of the session commands that name
// desktops: ls (none), rm (IDs), reset (one), screenshot (an ID, then the
// file).
type sessionConfig struct {
	Engine sessions.Config
	Args   []string
	JSON   bool
}

func parseSessionList(args []string, stderr io.Writer) (sessionConfig, error) {
	// Arguments are ignored, as they always were.
	return parseSessionIDs("ls", args, stderr, "print a JSON array", func(int) error { return nil })
}

func runSessionList(_ context.Context, cfg sessionConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	list := e.List()
	if cfg.JSON {
		if list == nil {
			list = []*sessions.Session{}
		}
		return json.NewEncoder(s.out).Encode(list)
	}
	w := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tADDRESS\tSCREEN\tINIT\tCREATED\tRESETS")
	for _, d := range list {
		state := string(d.State)
		if d.Reason != "" {
			state += " (" + d.Reason + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s:%d\t%dx%d\t%d\t%s\t%d\n", d.ID, state, d.Address, d.GuestPort, d.Width, d.Height,
			d.InitPID, d.Created.Local().Format(time.DateTime), d.Resets)
	}
	return w.Flush()
}

// parseSessionIDs parses the flags of sub, which has --json when jsonHelp
// says what it prints, and takes the desktops it names: want says whether
// their number is right, and otherwise what to say.
func parseSessionIDs(sub string, args []string, stderr io.Writer, jsonHelp string, want func(n int) error) (sessionConfig, error) {
	var cfg sessionConfig
	fs := newSessionFlags(sub, stderr)
	if jsonHelp != "" {
		fs.BoolVar(&cfg.JSON, "json", false, jsonHelp)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := want(fs.NArg()); err != nil {
		return cfg, err
	}
	cfg.Args = fs.Args()
	var err error
	cfg.Engine, err = fs.engine()
	return cfg, err
}

func parseSessionRemove(args []string, stderr io.Writer) (sessionConfig, error) {
	return parseSessionIDs("rm", args, stderr, "", func(n int) error {
		if n == 0 {
			return errors.New("rm: which session? (drums session ls)")
		}
		return nil
	})
}

func runSessionRemove(ctx context.Context, cfg sessionConfig, _ stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	var errs []error
	for _, id := range cfg.Args {
		errs = append(errs, e.Remove(ctx, id))
	}
	return errors.Join(errs...)
}

func parseSessionReset(args []string, stderr io.Writer) (sessionConfig, error) {
	return parseSessionIDs("reset", args, stderr, "print the desktop as one JSON object", func(n int) error {
		if n != 1 {
			return errors.New("reset: want one session id")
		}
		return nil
	})
}

func runSessionReset(ctx context.Context, cfg sessionConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	start := time.Now()
	sess, err := e.Reset(ctx, cfg.Args[0])
	if err != nil {
		return err
	}
	return printSession(s.out, sess, cfg.JSON, time.Since(start))
}

func parseSessionScreenshot(args []string, stderr io.Writer) (sessionConfig, error) {
	return parseSessionIDs("screenshot", args, stderr, "", func(n int) error {
		if n != 2 {
			return errors.New("screenshot: want ID FILE")
		}
		return nil
	})
}

func runSessionScreenshot(ctx context.Context, cfg sessionConfig, _ stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	s, err := e.Get(cfg.Args[0])
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
	f, err := os.Create(cfg.Args[1])
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("save screenshot: %w", err)
	}
	return f.Close()
}

// sessionExecConfig is the configuration of `drums session exec` and, with
// Shell, of `drums session shell`.
type sessionExecConfig struct {
	Engine sessions.Config
	ID     string
	Argv   []string // a login shell's for a shell
	Root   bool
	Env    []string
	Shell  bool
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

func parseSessionExec(args []string, stderr io.Writer) (sessionExecConfig, error) {
	return parseExec("exec", args, stderr)
}

func parseSessionShell(args []string, stderr io.Writer) (sessionExecConfig, error) {
	return parseExec("shell", args, stderr)
}

func parseExec(sub string, args []string, stderr io.Writer) (sessionExecConfig, error) {
	cfg := sessionExecConfig{Shell: sub == "shell"}
	fs := newSessionFlags(sub, stderr)
	fs.BoolVar(&cfg.Root, "root", false, "run as root (with a session's reduced capabilities) instead of the user")
	var env envFlags
	fs.Var(&env, "env", "KEY=VALUE added to the environment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	argv := fs.Args()
	if len(argv) == 0 {
		return cfg, errors.New("which session? (drums session ls)")
	}
	cfg.ID, argv = argv[0], argv[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if cfg.Shell {
		argv = []string{"/bin/bash", "-l"}
	} else if len(argv) == 0 {
		return cfg, errors.New("exec: no command (drums session exec ID -- CMD...)")
	}
	cfg.Argv, cfg.Env = argv, env
	var err error
	cfg.Engine, err = fs.engine()
	return cfg, err
}

func runSessionExec(ctx context.Context, cfg sessionExecConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	opts := sessions.ExecOptions{Env: cfg.Env, Stdin: s.in, Stdout: s.out, Stderr: s.err}
	if cfg.Root {
		opts.User = "root"
	}
	if cfg.Shell {
		restore, resize, err := shellTerminal(s.in, s.out)
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
		if term.IsTerminal(s.in) {
			opts.Stdin = struct{ io.Reader }{s.in}
		}
		if term.IsTerminal(s.out) {
			opts.Stdout = struct{ io.Writer }{s.out}
		}
		if term.IsTerminal(s.err) {
			opts.Stderr = struct{ io.Writer }{s.err}
		}
	}
	res, err := e.Exec(ctx, cfg.ID, cfg.Argv, opts)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 && !cfg.Shell {
		return exitError(res.ExitCode)
	}
	return nil
}

// shellTerminal puts the terminal in in raw mode for a shell and reports
// the size of out, now and on every SIGWINCH, until restore.
func shellTerminal(in, out *os.File) (restore func(), resize <-chan sessions.TermSize, err error) {
	restoreMode, err := term.MakeRaw(in)
	if errors.Is(err, term.ErrNotTerminal) {
		return nil, nil, errors.New("shell: stdin is not a terminal")
	} else if err != nil {
		return nil, nil, fmt.Errorf("shell: %w", err)
	}
	ch := make(chan sessions.TermSize, 4)
	stop := term.WatchSize(out, func(s term.Size) {
		select {
		case ch <- sessions.TermSize(s):
		default:
		}
	})
	return func() {
		stop()
		close(ch) // as ExecOptions.Resize asks: nothing is sent after stop
		restoreMode()
	}, ch, nil
}

func runSessionPlan(_ context.Context, cfg sessionCreateConfig, s stdio) error {
	p, err := sessions.PlanFor(cfg.Engine, cfg.Request, cfg.Slot)
	if err != nil {
		return err
	}
	fmt.Fprintln(s.out, p)
	return nil
}
