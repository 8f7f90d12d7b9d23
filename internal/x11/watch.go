package x11

import (
	"context"
	"fmt"
	"image"
	"io"
	"time"

	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

// Watcher follows the screen for a live view: it waits for the screen to
// change and brings a copy of it up to date, redrawing only what changed.
//
// It has an X connection of its own, made by Watch and closed by Close, so
// that a live view nobody watches holds nothing in the X server, and a
// DAMAGE object of its own: screenshots take the damage of theirs, which
// must not take it from the live view or the other way round. Waiting is
// driven by the server's events on that connection (DamageNotify, sent
// once each time the damage goes from empty to not; XFixes CursorNotify,
// when the cursor's image changes), with one exception: the X server
// draws the software cursor without reporting damage and sends no event
// when the pointer moves, so while Wait waits it asks where the pointer
// is (pointerPoll).
//
//	viewer          Watcher                          X server
//	Wait          ← DamageNotify / CursorNotify / the pointer moved
//	Update        → GetGeometry, DamageSubtract + FetchRegion,
//	                GetCursorImage, QueryPointer   (one round trip)
//	              → [ShmGetImage of the changed area's bounding box]
//
// Drawing that lands between Subtract and GetImage is in this update and
// in the next one too: drawn twice, never lost. A Watcher is used by one
// goroutine at a time.
type Watcher struct {
	c *conn
	// started is set by the first Update, which sends the whole screen.
	started bool
	// shown is the cursor drawn into the frame by the last Update.
	shown *shownCursor
	// moved is when Wait last saw the pointer move.
	moved time.Time
}

// How often Wait asks where the pointer is: pointerPoll while it moves, often
// enough that a viewer sees it move smoothly (25 times a second), and
// pointerPollStill once it has not moved for pointerStill, so that a
// watched, idle desktop costs 5 round trips a second (guestd's side of
// each, with the timer, is a few hundred microseconds of CPU on a loaded
// 2-core machine) while the first motion after a pause shows within 200
// ms.
const (
	pointerPoll      = 40 * time.Millisecond
	pointerPollStill = 200 * time.Millisecond
	pointerStill     = time.Second
)

// Watch connects to display for a live view. The X server must have
// DAMAGE and XFixes, as every Xvfb has.
func Watch(display string) (*Watcher, error) {
	if display == "" {
		return nil, ErrNoDisplay
	}
	c, err := dial(display, false, make(chan struct{}, 1))
	if err != nil {
		return nil, err
	}
	if c.formatErr != nil || c.damage == nil {
		c.close()
		if c.formatErr != nil {
			return nil, c.formatErr
		}
		return nil, ErrNoDamage
	}
	// Without it a changed cursor image is noticed at the next damage or
	// pointer motion only.
	xfixes.SelectCursorInput(c.x, c.root, xfixes.CursorNotifyMaskDisplayCursor)
	return &Watcher{c: c}, nil
}

// Close closes the Watcher's connection, and with it everything it holds
// in the X server.
func (w *Watcher) Close() error {
	w.c.close()
	return nil
}

// Wait returns once the screen may have changed since the last Update
// (at once before the first), or ctx ended, or the connection was lost.
// A wake-up may find nothing changed.
func (w *Watcher) Wait(ctx context.Context) error {
	if !w.started {
		return nil
	}
	interval := pointerPoll
	if time.Since(w.moved) > pointerStill {
		interval = pointerPollStill
	}
	poll := time.NewTimer(interval)
	defer poll.Stop()
	for {
		select {
		case <-w.c.changed:
			return nil
		case <-w.c.drained:
			return fmt.Errorf("wait for screen changes: %w", io.EOF)
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			// Not through await: a goroutine per poll would be most of
			// a watched, idle desktop's cost. A lost connection still
			// ends the wait (xgb fails the reply).
			p, err := xproto.QueryPointer(w.c.x, w.c.root).Reply()
			if err != nil {
				return fmt.Errorf("query pointer: %w", err)
			}
			if s := w.shown; s != nil && (int(p.RootX) != s.x || int(p.RootY) != s.y) {
				w.moved = time.Now()
				return nil
			}
			if time.Since(w.moved) > pointerStill {
				interval = pointerPollStill
			}
			poll.Reset(interval)
		}
	}
}

// Update brings fb, a copy of the screen with the cursor drawn as the
// screen shows it (its hotspot at the pointer), up to date and returns it
// with the rectangles that changed since the last Update. A nil fb, or
// one of another size than the screen (after a RandR resize), is replaced
// by a new image of the whole screen, and the whole screen is the one
// rectangle returned. Only the bounding box of what changed is captured;
// fb's pixels outside it are left alone.
func (w *Watcher) Update(ctx context.Context, fb *image.RGBA) (*image.RGBA, []image.Rectangle, error) {
	c := w.c
	geom := xproto.GetGeometry(c.x, xproto.Drawable(c.root))
	region := c.damage.take(c.x)
	cur := c.askCursor()
	g, err := await(ctx, geom.Reply)
	if err != nil {
		return fb, nil, fmt.Errorf("get root window geometry: %w", err)
	}
	damaged, err := await(ctx, region.Reply)
	if err != nil {
		return fb, nil, fmt.Errorf("fetch damage region: %w", err)
	}
	shown, err := c.readCursor(ctx, cur)
	if err != nil {
		return fb, nil, err
	}
	screen := image.Rect(0, 0, int(g.Width), int(g.Height))
	var rects []image.Rectangle
	if fb == nil || fb.Rect != screen || !w.started {
		fb = image.NewRGBA(screen)
		rects = []image.Rectangle{screen}
	} else {
		for _, r := range damaged.Rectangles {
			rects = appendRect(rects, image.Rect(int(r.X), int(r.Y), int(r.X)+int(r.Width), int(r.Y)+int(r.Height)).Intersect(screen))
		}
		if !sameCursor(shown, w.shown) {
			rects = appendRect(rects, cursorRect(w.shown).Intersect(screen))
			rects = appendRect(rects, cursorRect(shown).Intersect(screen))
		}
	}
	w.started = true
	if len(rects) == 0 {
		w.shown = shown
		return fb, nil, nil
	}
	box := rects[0]
	for _, r := range rects[1:] {
		box = box.Union(r)
	}
	if err := c.lockFrame(ctx); err != nil {
		return fb, nil, err
	}
	defer c.unlockFrame()
	src, stride, err := c.grabArea(ctx, box)
	if err != nil {
		// What the damage said is gone from the server: the next Update
		// must send everything again.
		w.started = false
		return fb, nil, err
	}
	sub := fb.SubImage(box).(*image.RGBA)
	c.format.toRGBA(sub, src, stride)
	drawCursor(sub, shown)
	w.shown = shown
	return fb, rects, nil
}

// appendRect appends r unless it is empty.
func appendRect(rs []image.Rectangle, r image.Rectangle) []image.Rectangle {
	if r.Empty() {
		return rs
	}
	return append(rs, r)
}

// cursorRect is where drawCursor draws s (empty for none).
func cursorRect(s *shownCursor) image.Rectangle {
	if s == nil {
		return image.Rectangle{}
	}
	return image.Rect(s.x-s.hotX, s.y-s.hotY, s.x-s.hotX+s.w, s.y-s.hotY+s.h)
}

// sameCursor is shownCursor.equal with the hotspot, which the live view
// draws by.
func sameCursor(a, b *shownCursor) bool {
	return a.equal(b) && (a == nil || a.hotX == b.hotX && a.hotY == b.hotY)
}

// drawCursor draws the XFixes cursor s (premultiplied ARGB) over img, as
// a screen shows it: hotspot at the pointer, clipped to img's bounds.
func drawCursor(img *image.RGBA, s *shownCursor) {
	if s == nil || len(s.argb) < s.w*s.h {
		return
	}
	cr := cursorRect(s)
	r := cr.Intersect(img.Rect)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := s.argb[(y-cr.Min.Y)*s.w:]
		o := img.Pix[img.PixOffset(r.Min.X, y):]
		for x := r.Min.X; x < r.Max.X; x++ {
			p := row[x-cr.Min.X]
			if a := p >> 24; a != 0 {
				o[0] = over(o[0], p>>16&0xff, a)
				o[1] = over(o[1], p>>8&0xff, a)
				o[2] = over(o[2], p&0xff, a)
			}
			o = o[4:]
		}
	}
}

// over is one premultiplied channel src with alpha a over dst.
func over(dst byte, src, a uint32) byte {
	return byte(min(src+(uint32(dst)*(255-a)+127)/255, 255))
}
