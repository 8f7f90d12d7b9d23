package x11

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jezek/xgb/xproto"
	"github.com/jezek/xgb/xtest"

	"github.com/drums-dev/drums/internal/ctxtime"
)

// Keysyms this package uses by value.
const (
	keysymShiftL    = 0xffe1
	keysymBackSpace = 0xff08
	keysymTab       = 0xff09
	keysymReturn    = 0xff0d
	keysymEscape    = 0xff1b
)

// Spare keycode remapping. A keysym the keymap lacks is typed by binding it
// to a keycode that has no keysym (Xvfb has 19), pressing that keycode, and
// later binding NoSymbol again.
//
// No wait is needed between the ChangeKeyboardMapping and the key event:
// the server applies requests of one connection in order, and every client
// receives the MappingNotify before the key event. What needs care is the
// other side: clients (Xlib's XKB code, GDK) do not copy the map when the
// notify arrives; they mark theirs stale and re-read the server's *current*
// map when they translate the next key event. So a keycode must keep its
// keysym until every client has translated the event, and X tells no one
// when that happened. Hence bindings are restored lazily, restoreIdle after
// their last use, and reused before any spare is rebound.
const (
	// restoreIdle is how long an unused binding stays: far above the time a
	// busy client needs to translate a queued key event (a few hundred ms
	// at worst), short enough that the keymap is clean soon after typing.
	restoreIdle = 2 * time.Second
	// rebindGrace is the least time between a binding's last use and
	// rebinding its keycode to another keysym. It only matters when a text
	// needs more distinct missing keysyms than there are spare keycodes
	// (pyautogui never does: it types nothing outside its key table); then
	// it is the unavoidable pause described above, once per spare-keycode
	// round, and it must stay above a loaded client's latency in handling a
	// queued key event: 250 ms was not, for zenity on a loaded CI machine
	// (two characters of a CJK line came out as later ones).
	rebindGrace = time.Second
)

// inputState is the keyboard state of one connection.
type inputState struct {
	mu      sync.Mutex
	km      *keymap
	binds   map[xproto.Keycode]*binding
	restore *time.Timer
}

// binding is a spare keycode we bound to sym.
type binding struct {
	sym  xproto.Keysym
	held bool // pressed and not yet released: must not be rebound
	used time.Time
}

// batch queues unchecked XTEST and keymap requests; conn.input follows it
// with one round trip.
type batch struct {
	c        *conn
	remapped bool
}

func (b *batch) fake(typ byte, detail byte, x, y int16) {
	xtest.FakeInput(b.c.x, typ, detail, 0, b.c.root, x, y, 0)
}

func (b *batch) key(kc xproto.Keycode, down bool) {
	typ := byte(xproto.KeyRelease)
	if down {
		typ = xproto.KeyPress
	}
	b.fake(typ, byte(kc), 0, 0)
}

// input runs fill under the keyboard lock and then waits for one round trip,
// so that the server has processed every request fill queued (XTEST
// requests are unchecked and answer nothing) before the call returns.
func (c *conn) input(ctx context.Context, fill func(b *batch) error) error {
	if !c.hasXTest {
		return ErrNoXTest
	}
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	b := &batch{c: c}
	err := fill(b)
	if serr := c.sync(ctx); err == nil {
		err = serr
	}
	if b.remapped {
		c.scheduleRestoreLocked()
	}
	return err
}

// sync is a round trip: when it returns, the server has processed every
// request sent before it.
func (c *conn) sync(ctx context.Context) error {
	if _, err := await(ctx, xproto.GetInputFocus(c.x).Reply); err != nil {
		return fmt.Errorf("sync with X server: %w", err)
	}
	return nil
}

func coord(v int) (int16, error) {
	if v < math.MinInt16 || v > math.MaxInt16 {
		return 0, fmt.Errorf("%w: %d", ErrCoordinate, v)
	}
	return int16(v), nil
}

// MoveTo moves the pointer to (x, y) in root coordinates (XTEST absolute
// motion; the server clamps it to the screen).
func (d *Display) MoveTo(ctx context.Context, x, y int) error {
	x16, err := coord(x)
	if err != nil {
		return err
	}
	y16, err := coord(y)
	if err != nil {
		return err
	}
	_, err = with(d, func(c *conn) (struct{}, error) {
		err := c.input(ctx, func(b *batch) error {
			b.fake(xproto.MotionNotify, 0, x16, y16)
			return nil
		})
		if err != nil {
			return struct{}{}, err
		}
		return struct{}{}, c.awaitPointer(ctx, x, y)
	})
	return err
}

// Pointer settling. The server holds input events back while a
// synchronous grab freezes the pointer: openbox (like most window managers)
// freezes it on every button press in a client window until it has handled
// the press and replayed it. A QueryPointer answered in between reports
// the old position, and pyautogui's next step (mouseUp after a drag asks
// where the pointer is) would act on it. X sends nothing when the freeze
// ends, so MoveTo polls until the pointer is where the motion put it.
const (
	// motionSettle bounds the wait: far above a window manager's latency
	// in replaying a press under load (milliseconds), low enough that a
	// pointer that cannot get there (a confining grab) costs little.
	motionSettle = 250 * time.Millisecond
	// motionPoll is the interval between checks; a thaw usually comes
	// within one or two.
	motionPoll = time.Millisecond
)

// awaitPointer waits until the pointer is at (x, y) clamped to the screen,
// or motionSettle has passed.
func (c *conn) awaitPointer(ctx context.Context, x, y int) error {
	p, err := c.pointer(ctx)
	if err != nil || (int(p.RootX) == x && int(p.RootY) == y) {
		return err
	}
	w, h, err := c.rootSize(ctx)
	if err != nil {
		return err
	}
	x, y = max(0, min(x, w-1)), max(0, min(y, h-1))
	deadline := time.Now().Add(motionSettle)
	for (int(p.RootX) != x || int(p.RootY) != y) && time.Now().Before(deadline) {
		if err := ctxtime.Sleep(ctx, motionPoll); err != nil {
			return err
		}
		if p, err = c.pointer(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Button presses (down) or releases button n where the pointer is: 1–3 are
// left, middle and right, 4/5 scroll up/down, 6/7 scroll left/right.
func (d *Display) Button(ctx context.Context, n int, down bool) error {
	if n < 1 || n > 255 {
		return fmt.Errorf("button %d: out of range 1-255", n)
	}
	typ := byte(xproto.ButtonRelease)
	if down {
		typ = xproto.ButtonPress
	}
	_, err := with(d, func(c *conn) (struct{}, error) {
		return struct{}{}, c.input(ctx, func(b *batch) error {
			b.fake(typ, byte(n), 0, 0)
			return nil
		})
	})
	return err
}

// Key presses (down) or releases the key of keysym and adds no modifier:
// the keycode is python-xlib's keysym_to_keycode choice (lowest column,
// then lowest keycode), which is what pyautogui presses. A keysym the
// keymap lacks is bound to a spare keycode in every column, kept while the
// key is down and restored some time after its release.
func (d *Display) Key(ctx context.Context, keysym uint32, down bool) error {
	_, err := with(d, func(c *conn) (struct{}, error) {
		return struct{}{}, c.input(ctx, func(b *batch) error {
			kc, err := c.keycodeLocked(ctx, b, xproto.Keysym(keysym))
			if err != nil {
				return err
			}
			if bd := c.in.binds[kc]; bd != nil {
				bd.held, bd.used = down, time.Now()
			}
			b.key(kc, down)
			return nil
		})
	})
	return err
}

// keycodeLocked finds the keycode of sym, binding a spare one when the
// keymap lacks it.
func (c *conn) keycodeLocked(ctx context.Context, b *batch, sym xproto.Keysym) (xproto.Keycode, error) {
	km, err := c.keymapLocked(ctx)
	if err != nil {
		return 0, err
	}
	if p, ok := km.first[sym]; ok {
		return p.code, nil
	}
	return c.bindLocked(ctx, b, km, sym)
}

// TypeText types text, any Unicode. A character whose keysym sits in the
// plain or shifted column of the keymap is typed with that key (Shift held
// for the shifted column); any other is typed through a spare keycode bound
// to its keysym. \n and \r type Return, \t Tab, \b BackSpace, ESC Escape;
// other control characters are skipped. Modifiers already held stay held.
func (d *Display) TypeText(ctx context.Context, text string) error {
	_, err := with(d, func(c *conn) (struct{}, error) {
		return struct{}{}, c.input(ctx, func(b *batch) error { return c.typeLocked(ctx, b, text) })
	})
	return err
}

func (c *conn) typeLocked(ctx context.Context, b *batch, text string) error {
	km, err := c.keymapLocked(ctx)
	if err != nil {
		return err
	}
	shift, hasShift := km.first[keysymShiftL]
	for _, r := range text {
		sym, ok := runeKeysym(r)
		if !ok {
			continue
		}
		p, found := km.first[sym]
		switch {
		case found && p.col == 0:
			b.key(p.code, true)
			b.key(p.code, false)
		case found && p.col == 1 && hasShift:
			b.key(shift.code, true)
			b.key(p.code, true)
			b.key(p.code, false)
			b.key(shift.code, false)
		default:
			kc, err := c.bindLocked(ctx, b, km, sym)
			if err != nil {
				return err
			}
			b.key(kc, true)
			b.key(kc, false)
			c.in.binds[kc].used = time.Now()
		}
	}
	return nil
}

// runeKeysym is the keysym that types r: Latin-1 printable characters are
// their own keysym, everything else 0x01000000 + code point (the X11
// Unicode keysym range), control characters only where a key types them.
func runeKeysym(r rune) (xproto.Keysym, bool) {
	switch {
	case r == '\n' || r == '\r':
		return keysymReturn, true
	case r == '\t':
		return keysymTab, true
	case r == '\b':
		return keysymBackSpace, true
	case r == 0x1b:
		return keysymEscape, true
	case r < 0x20 || (r >= 0x7f && r < 0xa0):
		return 0, false
	case r <= 0xff:
		return xproto.Keysym(r), true
	case r > 0x10ffff:
		return 0, false
	default:
		return xproto.Keysym(0x01000000 + r), true
	}
}

// bindLocked binds sym to a spare keycode: the one already bound to it, else
// a keycode without keysyms, else the binding unused the longest (never one
// held down).
func (c *conn) bindLocked(ctx context.Context, b *batch, km *keymap, sym xproto.Keysym) (xproto.Keycode, error) {
	if c.in.binds == nil {
		c.in.binds = map[xproto.Keycode]*binding{}
	}
	for kc, bd := range c.in.binds {
		if bd.sym == sym {
			return kc, nil
		}
	}
	var pick xproto.Keycode
	found := false
	// Highest first: low spare keycodes (8 …) are the ones other tools
	// and keyboard layouts are likeliest to claim.
	for i := km.codes() - 1; i >= 0; i-- {
		kc := km.min + xproto.Keycode(i)
		if _, ours := c.in.binds[kc]; !ours && km.empty(kc) {
			pick, found = kc, true
			break
		}
	}
	if !found {
		var oldest *binding
		for kc, bd := range c.in.binds {
			if !bd.held && (oldest == nil || bd.used.Before(oldest.used)) {
				pick, oldest, found = kc, bd, true
			}
		}
		if !found {
			return 0, ErrNoSpareKeycode
		}
		if wait := rebindGrace - time.Since(oldest.used); wait > 0 {
			if err := c.sync(ctx); err != nil {
				return 0, err
			}
			if err := ctxtime.Sleep(ctx, wait); err != nil {
				return 0, err
			}
		}
	}
	row := make([]xproto.Keysym, km.per)
	for i := range row {
		row[i] = sym
	}
	xproto.ChangeKeyboardMapping(c.x, 1, pick, byte(km.per), row)
	km.set(pick, sym)
	c.in.binds[pick] = &binding{sym: sym, used: time.Now()}
	b.remapped = true
	return pick, nil
}

// scheduleRestoreLocked arms the timer that gives idle bindings back.
func (c *conn) scheduleRestoreLocked() {
	if c.in.restore != nil {
		c.in.restore.Reset(restoreIdle)
		return
	}
	c.in.restore = time.AfterFunc(restoreIdle, func() {
		ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		_ = c.restoreKeys(ctx, false)
	})
}

// restoreKeys binds NoSymbol again to every binding (all, on close) or to
// those that are not held and have been idle for restoreIdle, re-arming the
// timer for the rest.
func (c *conn) restoreKeys(ctx context.Context, all bool) error {
	c.in.mu.Lock()
	defer c.in.mu.Unlock()
	if c.dead.Load() || len(c.in.binds) == 0 {
		return nil
	}
	km := c.in.km
	var zeros []xproto.Keysym
	if km != nil {
		zeros = make([]xproto.Keysym, km.per)
	}
	restored, pending := false, false
	for kc, bd := range c.in.binds {
		if !all && (bd.held || time.Since(bd.used) < restoreIdle) {
			pending = true
			continue
		}
		if km != nil {
			xproto.ChangeKeyboardMapping(c.x, 1, kc, byte(km.per), zeros)
			km.set(kc, 0)
			restored = true
		}
		delete(c.in.binds, kc)
	}
	if pending && !all {
		c.scheduleRestoreLocked()
	}
	if all && c.in.restore != nil {
		c.in.restore.Stop()
	}
	if restored {
		return c.sync(ctx)
	}
	return nil
}
