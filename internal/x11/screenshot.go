package x11

import (
	"context"
	"fmt"
	"slices"

	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

// ScreenshotPNG is the whole screen with the cursor composited the way
// OSWorld's server does (see compositeCursor), as an 8-bit RGB PNG (see
// png.go). The bytes are shared with other callers and must not be
// modified.
//
// A screen that did not change since the last screenshot, cursor
// included, costs one round trip and returns the last PNG again; a
// changed one is captured, and only the strips of rows that changed are
// encoded anew (damage.go). Without the DAMAGE extension every
// screenshot is captured and encoded whole.
func (d *Display) ScreenshotPNG(ctx context.Context) ([]byte, error) {
	return with(d, func(c *conn) ([]byte, error) {
		return c.screenshotPNG(ctx)
	})
}

// screenshotCache is the last screenshot: its PNG (in the encoder) and
// the cursor drawn into it.
type screenshotCache struct {
	enc pngEncoder
	// valid means enc's last frame is the screen as of the damage taken
	// last, with cursor drawn: together with that damage, it tells the
	// next screenshot what it may keep.
	valid  bool
	cursor *shownCursor
}

// forget drops the PNG; the next screenshot encodes everything.
func (s *screenshotCache) forget() {
	s.enc.reset()
	s.valid, s.cursor = false, nil
}

func (c *conn) screenshotPNG(ctx context.Context) ([]byte, error) {
	if c.formatErr != nil {
		return nil, c.formatErr
	}
	if err := c.lockFrame(ctx); err != nil {
		return nil, err
	}
	defer c.unlockFrame()
	// The damage this call takes is gone from the server: should the
	// call fail after taking it, the next one must not trust the cache.
	valid := c.shot.valid
	c.shot.valid = false

	// One round trip: the root's size (a RandR resize changes it), the
	// damage and the cursor.
	geom := xproto.GetGeometry(c.x, xproto.Drawable(c.root))
	var region xfixes.FetchRegionCookie
	if c.damage != nil {
		region = c.damage.take(c.x)
	}
	cur := c.askCursor()
	g, err := await(ctx, geom.Reply)
	if err != nil {
		return nil, fmt.Errorf("get root window geometry: %w", err)
	}
	var changed rowSpans
	if c.damage == nil {
		valid = false
	} else {
		r, err := await(ctx, region.Reply)
		switch {
		case err == nil:
			for _, rect := range r.Rectangles {
				changed.add(int(rect.Y), int(rect.Y)+int(rect.Height))
			}
		case isXError(err):
			// The server refuses what it accepted at setup: stop
			// relying on it.
			c.damage, valid = nil, false
		default:
			return nil, fmt.Errorf("fetch damage region: %w", err)
		}
	}
	shown, err := c.readCursor(ctx, cur)
	if err != nil {
		return nil, err
	}
	w, h := int(g.Width), int(g.Height)
	if valid && len(changed) == 0 && shown.equal(c.shot.cursor) && w == c.shot.enc.w && h == c.shot.enc.h {
		c.shot.valid = true
		return c.shot.enc.last, nil
	}

	src, stride, err := c.grab(ctx, w, h)
	if err != nil {
		return nil, err
	}
	f := c.screenFrame(src, stride, w, h)
	if shown != nil {
		compositeCursor(f, shown.x, shown.y, shown.w, shown.h, shown.argb)
	}
	if !valid {
		c.shot.enc.reset()
	}
	if !shown.equal(c.shot.cursor) {
		changed.add(c.shot.cursor.rows())
		changed.add(shown.rows())
	}
	out := c.shot.enc.encode(f, changed.overlaps)
	c.shot.valid, c.shot.cursor = c.damage != nil, shown
	return out, nil
}

// cursorRequest is the cursor image and the pointer position, asked for
// in the same round trip as the screen's size and damage.
type cursorRequest struct {
	image   xfixes.GetCursorImageCookie
	pointer xproto.QueryPointerCookie
}

// askCursor sends the cursor requests, or returns nil without XFixes (no
// cursor is drawn then).
func (c *conn) askCursor() *cursorRequest {
	if !c.hasXFixes {
		return nil
	}
	return &cursorRequest{image: xfixes.GetCursorImage(c.x), pointer: xproto.QueryPointer(c.x, c.root)}
}

// shownCursor is a cursor image and where compositeCursor draws it: its
// top-left corner at the pointer. nil stands for no cursor drawn. A
// Watcher draws it with its hotspot (hotX, hotY) at the pointer instead.
type shownCursor struct {
	x, y, w, h int
	hotX, hotY int
	argb       []uint32
}

// readCursor reads the replies of cur. A server without a current cursor
// (XFixes BadCursor) draws none.
func (c *conn) readCursor(ctx context.Context, cur *cursorRequest) (*shownCursor, error) {
	if cur == nil {
		return nil, nil
	}
	ci, err := await(ctx, cur.image.Reply)
	if err != nil && !isXError(err) {
		return nil, fmt.Errorf("get cursor image: %w", err)
	}
	ptr, perr := await(ctx, cur.pointer.Reply)
	if perr != nil {
		return nil, fmt.Errorf("query pointer: %w", perr)
	}
	if err != nil {
		return nil, nil
	}
	return &shownCursor{x: int(ptr.RootX), y: int(ptr.RootY), w: int(ci.Width), h: int(ci.Height),
		hotX: int(ci.Xhot), hotY: int(ci.Yhot), argb: ci.CursorImage}, nil
}

// equal reports whether s and o draw the same pixels in the same place.
func (s *shownCursor) equal(o *shownCursor) bool {
	if s == nil || o == nil {
		return s == o
	}
	return s.x == o.x && s.y == o.y && s.w == o.w && s.h == o.h && slices.Equal(s.argb, o.argb)
}

// rows is the range of screen rows the cursor covers (unclipped; empty
// for none).
func (s *shownCursor) rows() (int, int) {
	if s == nil {
		return 0, 0
	}
	return s.y, s.y + s.h
}
