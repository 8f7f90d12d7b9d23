package x11

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/damage"
	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"
)

// conn is one xgb connection and everything cached for it. A new X server
// (after a restart) gets a new conn: nothing here outlives its connection.
type conn struct {
	x      *xgb.Conn
	root   xproto.Window
	format pixelFormat
	// formatErr is why format is unusable (Capture returns it); the other
	// methods still work on such a screen.
	formatErr  error
	minKeycode xproto.Keycode
	maxKeycode xproto.Keycode
	hasXTest   bool
	hasXFixes  bool

	// dead is set once the connection is closed or lost; Display then
	// dials a new one.
	dead atomic.Bool
	// keymapStale is set by the event loop on MappingNotify; the next key
	// lookup re-reads the keyboard mapping.
	keymapStale atomic.Bool
	drained     chan struct{}
	// changed, on a Watcher's connection only (nil otherwise), receives a
	// token (it holds one) on every DamageNotify and XFixes CursorNotify.
	changed chan struct{}

	// capLock (a one-slot semaphore, so that waiting for it honours a
	// context) is held by one capture, from its request until it is done
	// with the frame; it guards seg, shmOff, rgba, shot and damage.
	capLock chan struct{}
	seg     *shmSegment
	shmOff  bool // SHM unusable on this connection: core GetImage
	// rgba is the screenshot frame for pixel formats that screenshots
	// cannot read as they are, reused by every screenshot.
	rgba []byte
	// shot is the last screenshot, kept for the next one.
	shot screenshotCache
	// damage reports what changed on the screen since the last one; nil
	// when the server cannot (no DAMAGE), and then every screenshot is
	// captured and encoded whole.
	damage *damageTracker

	in inputState // guarded by its own mutex

	atomMu sync.Mutex
	atoms  map[string]xproto.Atom
}

// dial connects to display name. changed is conn.changed: nil but for a
// Watcher.
func dial(name string, noSHM bool, changed chan struct{}) (*conn, error) {
	x, err := xgb.NewConnDisplay(name)
	if err != nil {
		return nil, fmt.Errorf("connect to X display %s: %w", name, err)
	}
	setup := xproto.Setup(x)
	scr := setup.DefaultScreen(x)
	c := &conn{
		x:          x,
		root:       scr.Root,
		minKeycode: setup.MinKeycode,
		maxKeycode: setup.MaxKeycode,
		drained:    make(chan struct{}),
		changed:    changed,
		capLock:    make(chan struct{}, 1),
		atoms:      map[string]xproto.Atom{},
	}
	c.format, c.formatErr = pixelFormatOf(setup, scr)
	c.hasXTest = xtest.Init(x) == nil
	if xfixes.Init(x) == nil {
		// XFixes answers GetCursorImage only after the client said which
		// version it speaks.
		if _, err := xfixes.QueryVersion(x, 5, 0).Reply(); err == nil {
			c.hasXFixes = true
		}
	}
	c.shmOff = noSHM || shm.Init(x) != nil
	if c.hasXFixes {
		// Without it screenshots work as well, only slower.
		c.damage, _ = newDamageTracker(x, c.root)
	}
	go c.events()
	return c, nil
}

// events drains the connection's event queue for the connection's life.
// xgb's reader blocks once 5000 events or unchecked-request errors are
// queued, which would stall every reply, so something must always read.
// MappingNotify (sent to every client, unasked) marks the keymap stale;
// a Watcher's DamageNotify and CursorNotify wake it (the events themselves
// carry nothing it needs); errors of unchecked requests are dropped
// because every request whose failure matters is checked or followed by a
// checked one.
func (c *conn) events() {
	defer close(c.drained)
	for {
		ev, xerr := c.x.WaitForEvent()
		if ev == nil && xerr == nil {
			c.dead.Store(true)
			return
		}
		switch ev.(type) {
		case xproto.MappingNotifyEvent:
			c.keymapStale.Store(true)
		case damage.NotifyEvent, xfixes.CursorNotifyEvent:
			if c.changed != nil {
				select {
				case c.changed <- struct{}{}:
				default: // a token is already waiting
				}
			}
		}
	}
}

// lost reports whether err means the connection is gone, and marks it dead.
func (c *conn) lost(err error) bool {
	if errors.Is(err, io.EOF) || c.dead.Load() {
		c.dead.Store(true)
		return true
	}
	return false
}

// close restores remapped keycodes (while the server is still there),
// releases the SHM segment and closes the connection.
func (c *conn) close() {
	if !c.dead.Load() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		_ = c.restoreKeys(ctx, true)
		cancel()
	}
	c.capLock <- struct{}{}
	if c.seg != nil {
		c.seg.release(c.x)
		c.seg = nil
	}
	<-c.capLock
	c.dead.Store(true)
	c.x.Close()
	<-c.drained
}

// closeTimeout bounds the keymap restore in close: it must stay above a
// round trip on a loaded server (milliseconds) and below what a shutting
// down guestd may wait.
const closeTimeout = 2 * time.Second

// atom interns name once per connection.
func (c *conn) atom(ctx context.Context, name string) (xproto.Atom, error) {
	c.atomMu.Lock()
	a, ok := c.atoms[name]
	c.atomMu.Unlock()
	if ok {
		return a, nil
	}
	r, err := await(ctx, xproto.InternAtom(c.x, false, uint16(len(name)), name).Reply)
	if err != nil {
		return 0, fmt.Errorf("intern atom %s: %w", name, err)
	}
	c.atomMu.Lock()
	c.atoms[name] = r.Atom
	c.atomMu.Unlock()
	return r.Atom, nil
}

// rootSize is the root window's current size. The connection setup's screen
// size goes stale after a RandR resize; the root's geometry does not.
func (c *conn) rootSize(ctx context.Context) (int, int, error) {
	g, err := await(ctx, xproto.GetGeometry(c.x, xproto.Drawable(c.root)).Reply)
	if err != nil {
		return 0, 0, fmt.Errorf("get root window geometry: %w", err)
	}
	return int(g.Width), int(g.Height), nil
}

// ScreenSize is the default screen's size in pixels.
func (d *Display) ScreenSize(ctx context.Context) (width, height int, err error) {
	type wh struct{ w, h int }
	r, err := with(d, func(c *conn) (wh, error) {
		w, h, err := c.rootSize(ctx)
		return wh{w, h}, err
	})
	return r.w, r.h, err
}

// CursorPosition is the pointer in root coordinates (QueryPointer).
func (d *Display) CursorPosition(ctx context.Context) (x, y int, err error) {
	r, err := with(d, func(c *conn) (*xproto.QueryPointerReply, error) {
		return c.pointer(ctx)
	})
	if err != nil {
		return 0, 0, err
	}
	return int(r.RootX), int(r.RootY), nil
}

func (c *conn) pointer(ctx context.Context) (*xproto.QueryPointerReply, error) {
	r, err := await(ctx, xproto.QueryPointer(c.x, c.root).Reply)
	if err != nil {
		return nil, fmt.Errorf("query pointer: %w", err)
	}
	return r, nil
}
