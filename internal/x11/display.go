package x11

import (
	"context"
	"errors"
	"io"
	"log"
	"sync"

	"github.com/jezek/xgb"
)

func init() {
	// xgb logs to stderr through its package logger, e.g. "Could not get
	// authority info" on every connection without ~/.Xauthority and every
	// read error when the server goes away. The library returns those as
	// errors too; a library must not write to the daemon's stderr.
	xgb.Logger = log.New(io.Discard, "", 0)
}

// Display is one X server, reached over a single connection for the server's
// life. It is safe for concurrent use. When the X server goes away, the call
// that notices fails or retries once on a fresh connection, and the next call
// reconnects; a restarted server on the same display is picked up without a
// new Display.
type Display struct {
	name string
	// noSHM makes every connection use core GetImage; tests and benchmarks
	// set it to compare the two capture paths.
	noSHM bool

	mu     sync.Mutex // guards cur and closed
	cur    *conn
	closed bool
}

// Open returns the Display for display (":0", "/tmp/.X11-unix/X0" …). It
// connects at once when it can; an X server that is not there yet is not an
// error, every later call tries again.
func Open(display string) (*Display, error) {
	if display == "" {
		return nil, ErrNoDisplay
	}
	d := &Display{name: display}
	if c, err := dial(display, false, nil); err == nil {
		d.cur = c
	}
	return d, nil
}

// Close restores any keycode it remapped, releases the shared-memory segment
// and closes the connection. Further calls return ErrClosed.
func (d *Display) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	if d.cur != nil {
		d.cur.close()
		d.cur = nil
	}
	return nil
}

// conn returns the live connection, dialling a new one when there is none or
// the last one died.
func (d *Display) conn() (*conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if d.cur != nil && !d.cur.dead.Load() {
		return d.cur, nil
	}
	if d.cur != nil {
		d.cur.close()
		d.cur = nil
	}
	c, err := dial(d.name, d.noSHM, nil)
	if err != nil {
		return nil, err
	}
	d.cur = c
	return c, nil
}

// with runs op on the live connection. If op fails because that connection
// was lost (the X server exited or restarted), it runs op once more on a new
// connection: nothing op sent on the lost one reached a server that still
// exists.
func with[T any](d *Display, op func(c *conn) (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		c, err := d.conn()
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := op(c)
		if err == nil || attempt > 0 || !c.lost(err) {
			return v, err
		}
	}
}

// await waits for an xgb reply, or for ctx. xgb's replies know no context;
// when ctx ends first, the reply is still read (and dropped) by the goroutine.
func await[T any](ctx context.Context, reply func() (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, err
	}
	if ctx.Done() == nil {
		return reply()
	}
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := reply()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// isXError reports whether err is an error the X server sent for one request
// (BadWindow, BadAccess …), as opposed to a lost connection or a context.
func isXError(err error) bool {
	var xe xgb.Error
	return errors.As(err, &xe)
}
