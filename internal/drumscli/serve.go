//go:build linux

package drumscli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/drums-dev/drums/provider"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// serveConfig is the configuration of `drums serve`.
type serveConfig struct {
	Provider provider.Config // Token read from --token-file when given
	Engine   sessions.Config
	LogLevel slog.Level
}

func parseServe(args []string, stderr io.Writer) (serveConfig, error) {
	cfg := serveConfig{Provider: provider.DefaultConfig()}
	if s := os.Getenv(client.EnvSocket); s != "" {
		cfg.Provider.Socket = s
	}
	p := &cfg.Provider
	fs := newFlags("serve", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums serve [flags]

Runs the provider daemon (root): it keeps warm desktops per shape (size,
snapshot), leases them over a JSON API (/v1/desktops, /v1/snapshots,
/v1/health, /metrics) on a unix socket, reverts and snapshots them, and takes
back leases that are not renewed. It records what it owns under --provider-dir:
a daemon restarted after a crash (even kill -9) adopts the healthy desktops
and removes the rest. Snapshots keep files only, not running processes.
It prints "drums serve: ready on unix:SOCKET" once the socket answers.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&p.Socket, "socket", p.Socket, "unix socket of the API, mode 0600 ($DRUMS_SOCKET sets the default)")
	fs.StringVar(&p.Listen, "listen", "", "also serve the API on this TCP address (e.g. 127.0.0.1:7070); needs --token or --token-file")
	fs.StringVar(&p.Token, "token", "", "bearer token TCP clients must send (visible in ps; prefer --token-file)")
	tokenFile := fs.String("token-file", "", "file holding the bearer token")
	fs.StringVar(&p.AdvertiseURL, "advertise-url", "", "this daemon's own API `URL` (http://NODE:PORT), named in every desktop it answers, for clients that lease through a load balancer in front of many daemons (a Kubernetes Service)")
	fs.StringVar(&p.StateDir, "provider-dir", "", "the daemon's own records: leases, pools, snapshots (default STATE-DIR/provider-PREFIX)")
	fs.IntVar(&p.Capacity, "capacity", p.Capacity, "most desktops at once, warm ones included")
	fs.IntVar(&p.PoolSize, "pool-size", p.PoolSize, "warm desktops kept per shape that was leased recently or is listed in --warm (0: none)")
	fs.Func("warm", "WIDTHxHEIGHT[:SNAPSHOT][@IMAGE] shape to keep warm from the start; repeat for more", func(v string) error {
		s, err := provider.ParseShape(v)
		if err != nil {
			return err
		}
		p.Warm = append(p.Warm, s)
		return nil
	})
	fs.DurationVar(&p.PoolIdle, "pool-idle", p.PoolIdle, "drop the warm desktops of a shape not leased for this long (--warm shapes are kept)")
	fs.DurationVar(&p.LeaseTime, "lease", p.LeaseTime, "default lease; a lease not renewed in time is taken back")
	fs.DurationVar(&p.MaxLease, "max-lease", p.MaxLease, "longest lease a client may ask for")
	fs.DurationVar(&p.CreateTimeout, "create-timeout", p.CreateTimeout, "bound on one desktop's start, reset or snapshot")
	fs.IntVar(&p.MaxParallelCreates, "parallel-creates", p.MaxParallelCreates, "warm desktops started at once")
	fs.IntVar(&p.Width, "width", p.Width, "default screen width")
	fs.IntVar(&p.Height, "height", p.Height, "default screen height")
	fs.BoolVar(&p.DrainOnExit, "drain-on-exit", false, "remove every desktop on SIGTERM/SIGINT (default: keep them for the next daemon to adopt)")
	var pub sessions.Publish
	fs.TextVar(&pub.Address, "publish-address", netip.Addr{}, "publish each desktop's guest ports (5000, 9222, 8006, 8080) on this IPv4 `address` of the host, e.g. a Kubernetes node's (needs --publish-ports); leases then report this address and the desktop's ports")
	publishPorts := fs.String("publish-ports", "", "the TCP ports `FIRST-LAST` of --publish-address to publish on, 4 per desktop (at least 4 x (--capacity + --spares))")
	var ef engineFlags
	ef.register(fs)
	spares := fs.Int("spares", 0, "keep this many spare desktops of the default shape (1920x1080, the engine's image: --width and --height must stay at it) started ahead, with no network, for a create of that shape (a warm pool's refill, a lease that finds none warm) to take instead of starting one; each holds an idle desktop's memory, beyond --capacity")
	standby := fs.Bool("standby", false, "keep every desktop's next incarnation started ahead, with no network, for its next revert (reset) to take over: a revert then skips the desktop's start, but every desktop holds about twice its idle memory (21.4 MiB more PSS measured for a light one) and a second set of processes")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see drums serve --help)", fs.Args())
	}
	if err := readTokenFile(*tokenFile, &p.Token); err != nil {
		return cfg, err
	}
	// Spares are the engine's desktops of Request{}: of its default
	// screen, which the daemon's default shape must then be.
	if *spares < 0 {
		return cfg, fmt.Errorf("--spares %d: must not be negative", *spares)
	}
	if *spares > 0 && (p.Width != sessions.DefaultWidth || p.Height != sessions.DefaultHeight) {
		return cfg, fmt.Errorf("--spares are desktops of %dx%d, the engine's default screen: leave --width and --height at it", sessions.DefaultWidth, sessions.DefaultHeight)
	}
	if err := parsePublish(&pub, *publishPorts, p.Capacity, *spares); err != nil {
		return cfg, err
	}
	var err error
	if cfg.Engine, err = ef.config(stderr); err != nil {
		return cfg, err
	}
	cfg.Engine.Publish, cfg.Engine.Standby, cfg.Engine.Spares = pub, *standby, *spares
	if p.StateDir == "" {
		p.StateDir = provider.DefaultStateDir(cfg.Engine.StateDir, cfg.Engine.Prefix)
	}
	// The engine never needs more slots than the daemon's capacity and
	// its spares: a spare holds a slot, and one taken leaves its slot to
	// the desktop it became, so the spares never take a slot from a
	// desktop of another shape.
	cfg.Engine.MaxSessions = p.Capacity + *spares
	p.Image = cfg.Engine.Image
	return cfg, p.Validate()
}

// parsePublish completes pub from --publish-ports FIRST-LAST, which must
// hold 4 ports for each of capacity desktops and spares spares.
func parsePublish(pub *sessions.Publish, ports string, capacity, spares int) error {
	if !pub.Address.IsValid() && ports == "" {
		return nil
	}
	if !pub.Address.IsValid() || ports == "" {
		return fmt.Errorf("--publish-address and --publish-ports go together")
	}
	first, last, ok := strings.Cut(ports, "-")
	f, err1 := strconv.ParseUint(first, 10, 16)
	l, err2 := strconv.ParseUint(last, 10, 16)
	if !ok || err1 != nil || err2 != nil || f == 0 || l < f {
		return fmt.Errorf("--publish-ports %q: want FIRST-LAST, 1 <= FIRST <= LAST <= 65535", ports)
	}
	pub.FirstPort, pub.Ports = uint16(f), int(l-f+1)
	if pub.Ports < 4*(capacity+spares) {
		want := fmt.Sprintf("--capacity %d", capacity)
		if spares > 0 {
			want = fmt.Sprintf("--capacity %d + --spares %d", capacity, spares)
		}
		return fmt.Errorf("--publish-ports %s: %d ports hold %d desktops of 4 ports, fewer than %s", ports, pub.Ports, pub.Ports/4, want)
	}
	return nil
}

// readTokenFile sets *token to the content of path (trimmed), if path is
// not "".
func readTokenFile(path string, token *string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read token file: %w", err)
	}
	*token = strings.TrimSpace(string(b))
	return nil
}

func runServe(ctx context.Context, cfg serveConfig, s stdio) error {
	log := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: cfg.LogLevel}))
	e := cfg.Engine
	if e.Logger == nil { // -v gave the engine a debug logger of its own
		e.Logger = log
	}
	eng, err := sessions.New(e)
	if err != nil {
		return fmt.Errorf("start session engine: %w", err)
	}
	defer eng.Close()
	return provider.Run(ctx, cfg.Provider, eng, log, func() {
		fmt.Fprintf(s.out, "drums serve: ready on unix:%s\n", cfg.Provider.Socket)
	})
}
