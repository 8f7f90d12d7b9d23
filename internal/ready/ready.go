package ready

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Line returns the first line the daemon writes on r, without surrounding
// white space. exited is closed when the daemon has exited. When r ends
// without a line the daemon has closed its end and is going away: Line then
// waits for exited and fails with ErrExited, so that the caller can say how
// the daemon ended.
func Line(ctx context.Context, r io.Reader, exited <-chan struct{}) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		ch <- result{strings.TrimSpace(line), err}
	}()
	select {
	case res := <-ch:
		if res.line != "" {
			return res.line, nil
		}
		select {
		case <-exited:
			return "", ErrExited
		case <-ctx.Done():
			return "", fmt.Errorf("no readiness line (%v) and still running: %w", res.err, ctx.Err())
		}
	case <-exited:
		return "", ErrExited
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// NameOwner blocks until name has an owner on conn: it subscribes to
// NameOwnerChanged first and then asks, so an owner that appears in between
// is not missed.
func NameOwner(ctx context.Context, conn *dbus.Conn, name string) error {
	if err := conn.AddMatchSignalContext(ctx,
		dbus.WithMatchInterface("org.freedesktop.DBus"),
		dbus.WithMatchMember("NameOwnerChanged"),
		dbus.WithMatchArg(0, name)); err != nil {
		return fmt.Errorf("watch %s: %w", name, err)
	}
	ch := make(chan *dbus.Signal, 8)
	conn.Signal(ch)
	defer conn.RemoveSignal(ch)
	var has bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&has); err != nil {
		return fmt.Errorf("ask owner of %s: %w", name, err)
	}
	for !has {
		select {
		case sig := <-ch:
			if sig.Name == "org.freedesktop.DBus.NameOwnerChanged" && len(sig.Body) == 3 && sig.Body[0] == name && sig.Body[2] != "" {
				has = true
			}
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", name, ctx.Err())
		}
	}
	return nil
}
