package guestdcli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/drums-dev/drums/atspi"
	"github.com/drums-dev/drums/guestd"
	"github.com/drums-dev/drums/internal/pyauto"
	"github.com/drums-dev/drums/internal/x11"
)

// config is guestd's whole configuration: defaults in code, flags override.
type config struct {
	Listen   string
	LogLevel slog.Level
	Guest    guestd.Config
	// IdleHeap and IdleFrame are how long guestd waits without a request
	// in flight before it returns the Go heap's free pages to the OS, and
	// before it also releases the screen capture frame; 0 never.
	IdleHeap, IdleFrame time.Duration
	// VNCListen is the live view's address ("" serves none); VNCWeb is
	// noVNC's directory; VNCTakeover passes the viewers' input on.
	VNCListen   string
	VNCWeb      string
	VNCTakeover bool
}

// shutdownGrace bounds how long requests in flight may take to finish on
// SIGTERM; it must stay above a recording's 15 s stop wait.
const shutdownGrace = 20 * time.Second

// Main runs guestd with args (the command line after the program name) and
// returns its exit status: 0 after --help or a clean shutdown on SIGINT or
// SIGTERM, 2 for a bad command line, 1 when serving fails. getenv supplies
// the defaults that come from the environment; its log and its children's
// output go to stdout and stderr (files: children inherit them).
func Main(args []string, getenv func(string) string, stdout, stderr *os.File) int {
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "guestd:", err)
		return 2
	}
	cfg.Guest.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	cfg.Guest.Stdout, cfg.Guest.Stderr = stdout, stderr
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "guestd:", err)
		return 1
	}
	return 0
}

// parseFlags reads the command line; getenv supplies the defaults that
// come from the environment.
func parseFlags(args []string, getenv func(string) string, out io.Writer) (config, error) {
	cfg := config{Listen: "0.0.0.0:5000", IdleHeap: defaultIdleHeap, IdleFrame: defaultIdleFrame, VNCWeb: guestd.DefaultNoVNC}
	fs := flag.NewFlagSet("guestd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, `Usage: guestd [flags]

guestd answers OSWorld's guest API (the requests PythonController,
SetupController and the evaluator getters send to port 5000) for one X
display, as upstream's Flask main.py does.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen,
		"`address` to serve on (upstream: port 5000 on all addresses); port 0 picks a free one,\nlogged as \"listening address=…\"")
	fs.StringVar(&cfg.Guest.Display, "display", getenv("DISPLAY"),
		"X `display` to capture, drive and record (default $DISPLAY)")
	fs.StringVar(&cfg.Guest.Home, "home", getenv("HOME"),
		"home `directory`: \"~\" expands to it, children run in it with HOME set to it\n(upstream's WorkingDirectory=/home/user); taken from $HOME")
	level := fs.String("log-level", "info", "log `level`: debug, info, warn or error")
	fs.BoolVar(&cfg.Guest.NoFastPath, "no-fast-path", false,
		"run every /execute command as a real process instead of executing pyautogui snippets natively")
	fs.StringVar(&cfg.Guest.Python, "python", "/usr/bin/python3",
		"`interpreter` for /run_python, also used to check whether a real pyautogui is importable")
	maxBody := fs.String("max-body", "1GiB",
		"largest request `size` accepted (413 above it), in bytes or with a KiB/MiB/GiB suffix")
	fs.StringVar(&cfg.Guest.RecordingPath, "recording-path", "/tmp/recording.mp4",
		"`file` /start_recording writes and /end_recording sends")
	fs.Func("allow-origin",
		"also serve requests carrying this Origin header, an `origin` such as https://dashboard.example:8443\n"+
			"(repeatable). Default: none, every request with an Origin is refused with 403, since browsers\n"+
			"send one (\"null\" included, which cannot be allowed) and OSWorld's client does not",
		appendChecked(&cfg.Guest.AllowOrigins, guestd.CheckOrigin))
	fs.Func("allow-host",
		"also serve requests whose Host header is this host `name`, with any port (repeatable). Default:\n"+
			"only IP addresses and localhost, so that a web page's name rebound to this desktop (DNS\n"+
			"rebinding) is refused with 403",
		appendChecked(&cfg.Guest.AllowHosts, guestd.CheckHostName))
	fs.DurationVar(&cfg.IdleHeap, "idle-heap", cfg.IdleHeap,
		"after this `duration` without a request, return the Go heap's free memory to the OS; 0 never")
	fs.DurationVar(&cfg.IdleFrame, "idle-frame", cfg.IdleFrame,
		"after this `duration` without a request, also release the screen capture buffer (the MIT-SHM\nsegment the X server shares, 8 MB at 1920x1080); the next screenshot rebuilds it (~10 ms); 0 never")
	fs.StringVar(&cfg.VNCListen, "vnc-listen", "",
		"also serve the live view on this `address` (a desktop's stack uses 0.0.0.0:8006, OSWorld's noVNC port):\n"+
			"noVNC's page, and its RFB WebSocket at /websockify, which captures the screen only while a viewer\n"+
			"is connected; default none")
	fs.StringVar(&cfg.VNCWeb, "vnc-web", cfg.VNCWeb, "noVNC's `directory` (Debian's novnc package), served by the live view")
	fs.BoolVar(&cfg.VNCTakeover, "vnc-takeover", false,
		"let live viewers' keyboard and mouse drive the desktop (through XTEST); default view-only: their\n"+
			"events are read and dropped. POST /live_view {\"takeover\": true|false} turns it on and off later")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if err := cfg.LogLevel.UnmarshalText([]byte(*level)); err != nil {
		return cfg, fmt.Errorf("parse --log-level %q: %w", *level, err)
	}
	n, err := parseSize(*maxBody)
	if err != nil {
		return cfg, fmt.Errorf("parse --max-body %q: %w", *maxBody, err)
	}
	cfg.Guest.MaxBody = n
	if cfg.IdleHeap < 0 || cfg.IdleFrame < 0 {
		return cfg, errors.New("--idle-heap and --idle-frame must not be negative")
	}
	if cfg.Guest.Display == "" {
		return cfg, errors.New("no X display: set DISPLAY or pass --display")
	}
	if cfg.Guest.Home == "" {
		return cfg, errors.New("no home directory: set HOME or pass --home")
	}
	return cfg, nil
}

// appendChecked is a repeatable flag's setter: each value must pass
// check and is appended to *dst.
func appendChecked(dst *[]string, check func(string) error) func(string) error {
	return func(v string) error {
		if err := check(v); err != nil {
			return err
		}
		*dst = append(*dst, v)
		return nil
	}
}

// parseSize reads "1048576", "64KiB", "16MiB" or "1GiB".
func parseSize(s string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if rest, ok := strings.CutSuffix(s, suffix); ok {
			s, mult = rest, m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, errors.New("must be positive")
	}
	return n * mult, nil
}

// run serves until ctx ends, then drains requests in flight. cfg.Guest
// carries the logger and the streams.
func run(ctx context.Context, cfg config) error {
	log := cfg.Guest.Logger
	disp, err := x11.Open(cfg.Guest.Display)
	if err != nil {
		return fmt.Errorf("open display %s: %w", cfg.Guest.Display, err)
	}
	defer disp.Close()
	socketDir, err := os.MkdirTemp("", "guestd-")
	if err != nil {
		return fmt.Errorf("create pyautogui socket directory: %w", err)
	}
	defer os.RemoveAll(socketDir)
	acts, err := pyauto.New(disp, pyauto.Options{
		Python:    cfg.Guest.Python,
		SocketDir: socketDir,
		Disabled:  cfg.Guest.NoFastPath,
	})
	if err != nil {
		return fmt.Errorf("start native pyautogui: %w", err)
	}
	defer acts.Close()
	a11y := atspi.NewSource(atspi.SourceOptions{Display: cfg.Guest.Display})
	defer a11y.Close()

	deps := guestd.Deps{Display: disp, Accessibility: a11y, Actions: acts}
	if cfg.VNCListen != "" {
		deps.Takeover = guestd.NewTakeover(disp, cfg.VNCTakeover)
	}
	srv, err := guestd.New(cfg.Guest, deps)
	if err != nil {
		return err
	}
	defer srv.Close()

	if cfg.VNCListen != "" {
		// Before guestd says it listens: a desktop is ready when both are.
		stopLive, err := serveLive(cfg, disp, deps.Takeover)
		if err != nil {
			return err
		}
		defer stopLive()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	idle := newIdleRelease(srv, idleStages(cfg, disp)...)
	defer idle.stop()
	hs := &http.Server{Handler: idle, ReadHeaderTimeout: time.Minute}
	log.Info("listening", "component", "guestd", "address", ln.Addr().String(), "display", cfg.Guest.Display)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "component", "guestd")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// A request that outlives the grace (an /setup/open_file still
		// waiting for its window) is cut off; that is not a failure.
		log.Warn("requests still running at shutdown were cut off", "component", "guestd", "error", err)
		return hs.Close()
	}
	return nil
}

// What an idle guestd gives back, and why by these stages rather than the
// runtime's knobs; measured with BenchmarkMemory and a burst of 120
// screenshots against a 1920x1080 Xvfb (bench/results/guestd.md):
//
//   - A screenshot allocates no frame any more (x11 converts in the MIT-SHM
//     segment), so a burst leaves 4-6 MiB of anonymous memory instead of 57:
//     garbage under the GC's goal and pooled encoders. The runtime keeps it:
//     it returns only what exceeds its heap goal, and only after its
//     2-minute forced GC. freeHeap brings it to 3 MiB (startup: 2 MiB); on
//     the core GetImage path, where every capture is an 8 MB xgb reply, from
//     30 MiB to 3.
//   - GOGC=50 or GOMEMLIMIT=24MiB (debug.SetGCPercent / SetMemoryLimit here:
//     the environment would reach guestd's children) left the idle memory
//     where freeHeap puts it. They only lowered the core path's burst (30 to
//     20 MiB), and the limit slowed its screenshots (median 15 to 17-20 ms),
//     so neither is set.
//   - ReleaseFrame gives back the 8 MB segment: 4 MiB of guestd's PSS and 4
//     MiB of the X server's.
//
// Returning free heap pages costs two GCs of guestd's few live MiB, so it
// may come soon after the last request; the delay must stay above the gaps
// inside one agent step (an action and the screenshot after it) so that a
// burst is not slowed. Releasing the frame costs the next screenshot ~10
// ms, so it waits longer than an agent's usual step (a model's answer,
// seconds to tens of seconds) and less than the minutes a pooled desktop
// idles.
const (
	defaultIdleHeap  = 2 * time.Second
	defaultIdleFrame = time.Minute
)

// idleStages is what guestd gives back when idle, by cfg's delays (a stage
// with delay 0 is left out).
func idleStages(cfg config, disp *x11.Display) []idleStage {
	var stages []idleStage
	if cfg.IdleHeap > 0 {
		stages = append(stages, idleStage{cfg.IdleHeap, freeHeap})
	}
	if cfg.IdleFrame > 0 {
		stages = append(stages, idleStage{cfg.IdleFrame, func() {
			disp.ReleaseFrame()
			freeHeap()
		}})
	}
	slices.SortFunc(stages, func(a, b idleStage) int { return cmp.Compare(a.after, b.after) })
	return stages
}

// freeHeap returns every free heap page to the OS. The first GC moves
// sync.Pool contents to the pools' victim caches and the second drops them:
// among them the PNG encoder (1.5 MiB of zlib state), which the next
// screenshot makes again in well under a millisecond.
func freeHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}
