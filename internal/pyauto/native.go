package pyauto

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"
)

// EnvSocket names the environment variable that tells the callback module
// where the native implementation listens.
const EnvSocket = "DRUMS_PYAUTOGUI_SOCKET"

// Options configure New.
type Options struct {
	// Python is the interpreter ChildEnv asks (once) whether a real
	// pyautogui is importable, e.g. /usr/bin/python3. Empty: assume not.
	Python string
	// SocketDir is a directory New owns: the callback socket and the
	// extracted module go there. It must exist.
	SocketDir string
	// Disabled makes Run hand every snippet back to the caller; ChildEnv
	// still offers the callback module.
	Disabled bool
}

// Native is the pyautogui fast path and the callback server behind the
// module it gives Python children. It is safe for concurrent use.
type Native struct {
	in         Input
	opts       Options
	sock       string
	moduleDir  string
	ln         net.Listener
	leftHanded func(ctx context.Context) bool
	wait       func(ctx context.Context, d time.Duration) error // nil: real sleeps

	probe      sync.Once
	realModule bool

	ctx    context.Context // ends with Close: stops running callbacks
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// New extracts the callback module into opts.SocketDir and starts the
// callback server there.
func New(in Input, opts Options) (*Native, error) {
	return newNative(in, opts, newDconfCache(dconfLeftHanded, os.Getenv).leftHanded, nil)
}

// newNative is New with the left-handed probe and the sleeper given (tests
// count sleeps and fix the setting); they are set before any goroutine
// reads them.
func newNative(in Input, opts Options, leftHanded func(context.Context) bool,
	wait func(context.Context, time.Duration) error) (*Native, error) {
	if opts.SocketDir == "" {
		return nil, errors.New("pyauto: no socket directory given")
	}
	if fi, err := os.Stat(opts.SocketDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("pyauto socket directory %s: not a directory (%v)", opts.SocketDir, err)
	}
	moduleDir := filepath.Join(opts.SocketDir, "python")
	if err := writeModule(moduleDir); err != nil {
		return nil, err
	}
	sock := filepath.Join(opts.SocketDir, "pyautogui.sock")
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", sock, err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", sock, err)
	}
	// Only our own user's processes may drive the desktop's input.
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict %s: %w", sock, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Native{
		in: in, opts: opts, sock: sock, moduleDir: moduleDir, ln: ln,
		leftHanded: leftHanded, wait: wait, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{},
	}
	n.wg.Add(1)
	go n.accept()
	return n, nil
}

// Close stops the callback server, ends running callbacks and removes the
// socket and the module.
func (n *Native) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	n.cancel()
	err := n.ln.Close()
	n.wg.Wait()
	return errors.Join(err, os.RemoveAll(n.moduleDir))
}

// Run executes argv natively when it is `python -c CODE` (python,
// python3, or an absolute path to one) and CODE is a snippet the fast path
// covers (see parse.go), returning what the Python child would have
// printed and its exit status. Every statement is first checked in a dry
// pass; a snippet whose arguments would make pyautogui raise anything but
// its fail-safe is handed back (handled false), so that the real Python
// reports it. If ctx ends midway, Run stops and reports code -9, as for a
// killed child; the caller tells a timeout by ctx.Err().
func (n *Native) Run(ctx context.Context, argv []string) (stdout, stderr string, code int, handled bool) {
	if n.opts.Disabled {
		return "", "", 0, false
	}
	src, ok := snippetCode(argv)
	if !ok {
		return "", "", 0, false
	}
	stmts, ok := parseSnippet(src)
	if !ok {
		return "", "", 0, false
	}
	dry := &proc{in: &dryInput{real: n.in}, dry: true}
	if _, err := dry.run(ctx, stmts); err != nil {
		return "", "", 0, false
	}
	p := &proc{in: n.in, leftHanded: n.leftHanded, wait: n.wait}
	line, err := p.run(ctx, stmts)
	switch {
	case err == nil:
		return "", "", 0, true
	case ctx.Err() != nil:
		return "", "", -9, true
	}
	return "", traceback(line, err), 1, true
}

// run executes statements in order; on an error it reports the failing
// statement's line.
func (p *proc) run(ctx context.Context, stmts []stmt) (int, error) {
	imported := false
	for _, s := range stmts {
		var err error
		switch s.kind {
		case stmtImport:
			if !imported && s.importsPyautogui() {
				imported = true
				var w, h int
				if w, h, err = p.size(ctx); err == nil {
					p.set = defaultSettings(w, h)
				}
			}
		case stmtFailsafe:
			p.set.failsafe = s.val.Bool
		case stmtPause:
			p.set.pause = s.val
		case stmtSleep:
			err = p.sleep(ctx, s.val)
		case stmtCall:
			if s.fn != "position" && s.fn != "size" {
				_, err = p.call(ctx, s.fn, s.args, s.kw)
			}
		}
		if err != nil {
			return s.line, err
		}
	}
	return 0, nil
}

// traceback is what Python prints for an uncaught exception in `-c` code.
// The frames inside pyautogui are left out: their paths and line numbers
// belong to an installation drums does not have.
func traceback(line int, err error) string {
	var pe *pyError
	if !errors.As(err, &pe) {
		pe = &pyError{Type: "RuntimeError", Msg: err.Error()}
	}
	return fmt.Sprintf("Traceback (most recent call last):\n  File \"<string>\", line %d, in <module>\n%s\n", line, pe.Error())
}

// ChildEnv is the environment a Python child needs on top of the caller's:
// the callback socket, and — when the real pyautogui is not importable by
// opts.Python — a PYTHONPATH that puts the callback module first.
func (n *Native) ChildEnv() []string {
	env := []string{EnvSocket + "=" + n.sock}
	if n.realImportable() {
		return env
	}
	pp := n.moduleDir
	if old := os.Getenv("PYTHONPATH"); old != "" {
		pp += string(os.PathListSeparator) + old
	}
	return append([]string{"PYTHONPATH=" + pp}, env...)
}

// probeTimeout bounds the one-time import probe: above a cold python3
// start on a loaded machine (~1 s), below anything a request would notice
// twice.
const probeTimeout = 10 * time.Second

// realImportable asks opts.Python once whether `import pyautogui` would
// find a module, without importing it.
func (n *Native) realImportable() bool {
	n.probe.Do(func() {
		if n.opts.Python == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, n.opts.Python, "-c",
			"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pyautogui') else 1)")
		n.realModule = cmd.Run() == nil
	})
	return n.realModule
}

// leftHandedKey is where pyautogui's _mouse_is_swapped looks.
const leftHandedKey = "/org/gnome/desktop/peripherals/mouse/left-handed"

// dconfLeftHanded is _mouse_is_swapped: `dconf read` of GNOME's
// left-handed setting prints exactly "true\n"; no dconf means not swapped.
func dconfLeftHanded(ctx context.Context) bool {
	out, _ := exec.CommandContext(ctx, "dconf", "read", leftHandedKey).Output()
	return string(out) == "true\n"
}

func (s stmt) importsPyautogui() bool {
	for _, m := range s.mods {
		if m == "pyautogui" {
			return true
		}
	}
	return false
}
