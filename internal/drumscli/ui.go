//go:build linux

package drumscli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/drums-dev/drums/provider"
	"github.com/drums-dev/drums/provider/client"
)

// uiConfig is the configuration of `drums ui`.
type uiConfig struct {
	Daemon string // socket path or http(s) URL; "" is $DRUMS_SOCKET or the default
	Token  string
	Listen string
}

func parseUI(args []string, stderr io.Writer) (uiConfig, error) {
	cfg := uiConfig{Listen: "127.0.0.1:0"}
	fs := newFlags("drums ui", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums ui [flags]

Serves the daemon's page (every desktop with a live thumbnail, its state,
lease and live-view link; charts of the metrics) on a loopback port for a
browser on this machine, passing its requests to the daemon's unix socket
(or to --daemon URL with the token). It prints the URL to open: it carries
a one-time code that the browser exchanges for a cookie, so other users of
the machine cannot read the page through the port. Runs until interrupted.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.Daemon, "daemon", "", "the daemon: its unix socket, or the URL of its --listen (default $DRUMS_SOCKET, else "+client.DefaultSocket+")")
	fs.StringVar(&cfg.Token, "token", "", "the daemon's bearer token, for a --daemon URL (visible in ps; prefer --token-file)")
	tokenFile := fs.String("token-file", "", "file holding the daemon's bearer token")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "loopback `address` to serve the page on (port 0: any free one)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see drums ui --help)", fs.Args())
	}
	return cfg, readTokenFile(*tokenFile, &cfg.Token)
}

func runUI(ctx context.Context, cfg uiConfig, s stdio) error {
	c, err := client.New(cfg.Daemon, cfg.Token)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.Health(ctx); err != nil {
		return fmt.Errorf("reach the daemon: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		ln.Close()
		return fmt.Errorf("listen on %s: drums ui serves loopback addresses only (ssh -L carries it elsewhere)", cfg.Listen)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p := provider.NewUIProxy(c, port)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(s.out, "drums ui: open http://%s%s\n", ln.Addr(), p.LoginPath())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve the page: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("stop the page: %w", err)
	}
	return nil
}
