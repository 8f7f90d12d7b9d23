package guestdcli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/drums-dev/drums/guestd"
	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/x11"
)

// serveLive starts the live view on cfg.VNCListen: the listener alone,
// until a viewer connects. Each watch opens an X connection of its own
// (x11.Watch) and closes it when the last viewer leaves, then gives the
// frame's memory back; takeover input goes through disp, guestd's own
// connection, as the agent's actions do. stop closes the listener and
// every viewer's connection.
func serveLive(cfg config, disp *x11.Display, takeover *guestd.Takeover) (stop func(), err error) {
	log := cfg.Guest.Logger.With("component", "live")
	name, _ := os.Hostname()
	viewers, err := rfb.NewServer(rfb.Options{
		Open:     func() (rfb.Screen, error) { return x11.Watch(cfg.Guest.Display) },
		Input:    takeover,
		Name:     name,
		Released: freeHeap,
		Logger:   log,
	})
	if err != nil {
		return nil, err
	}
	live, err := guestd.NewLive(cfg.Guest, guestd.LiveOptions{Web: cfg.VNCWeb, Takeover: takeover}, viewers)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.VNCListen)
	if err != nil {
		return nil, fmt.Errorf("listen on %s for the live view: %w", cfg.VNCListen, err)
	}
	hs := &http.Server{Handler: live, ReadHeaderTimeout: time.Minute}
	log.Info("live view listening", "address", ln.Addr().String(), "takeover", cfg.VNCTakeover, "novnc", cfg.VNCWeb)
	go func() {
		if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("live view stopped", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = hs.Shutdown(ctx) // viewers' WebSockets are hijacked: closed below
		live.Close()
		viewers.Close()
	}, nil
}

// Compile-time checks: what the live view is given is what x11 has.
var (
	_ rfb.Screen   = (*x11.Watcher)(nil)
	_ rfb.Input    = (*guestd.Takeover)(nil)
	_ guestd.Input = (*x11.Display)(nil)
)
