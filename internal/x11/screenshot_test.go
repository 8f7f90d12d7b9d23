package x11

import (
	"context"
	"image"
	"image/color"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

// painter is a second X client drawing on the root window, as an
// application draws in its own.
type painter struct {
	x    *xgb.Conn
	root xproto.Window
	gc   xproto.Gcontext
	rows int // rows per PutImage: a request is at most MaximumRequestLength words
}

func newPainter(t testing.TB, display string) *painter {
	t.Helper()
	x, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatalf("painter: %v", err)
	}
	t.Cleanup(x.Close)
	setup := xproto.Setup(x)
	scr := setup.DefaultScreen(x)
	gc, err := xproto.NewGcontextId(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := xproto.CreateGCChecked(x, gc, xproto.Drawable(scr.Root), 0, nil).Check(); err != nil {
		t.Fatalf("create GC: %v", err)
	}
	rows := (int(setup.MaximumRequestLength)*4 - 24) / (4 * int(scr.WidthInPixels))
	return &painter{x: x, root: scr.Root, gc: gc, rows: rows}
}

// put draws a w-pixel-wide BGRX image at (x, y) and waits until the server
// has drawn it.
func (p *painter) put(t testing.TB, data []byte, w, x, y int) {
	t.Helper()
	h := len(data) / (4 * w)
	for y0 := 0; y0 < h; y0 += p.rows {
		n := min(p.rows, h-y0)
		xproto.PutImage(p.x, xproto.ImageFormatZPixmap, xproto.Drawable(p.root), p.gc,
			uint16(w), uint16(n), int16(x), int16(y+y0), 0, 24, data[y0*4*w:(y0+n)*4*w])
	}
	p.sync(t)
}

// fill paints r in c and waits until the server has.
func (p *painter) fill(t testing.TB, r image.Rectangle, c color.RGBA) {
	t.Helper()
	xproto.ChangeGC(p.x, p.gc, xproto.GcForeground, []uint32{uint32(c.R)<<16 | uint32(c.G)<<8 | uint32(c.B)})
	xproto.PolyFillRectangle(p.x, xproto.Drawable(p.root), p.gc,
		[]xproto.Rectangle{{X: int16(r.Min.X), Y: int16(r.Min.Y), Width: uint16(r.Dx()), Height: uint16(r.Dy())}})
	p.sync(t)
}

// sync is a round trip: the server has processed every request before it.
// Unchecked requests' errors arrive as events, so one is a failure.
func (p *painter) sync(t testing.TB) {
	t.Helper()
	if _, err := xproto.GetInputFocus(p.x).Reply(); err != nil {
		t.Fatalf("painter round trip: %v", err)
	}
	if ev, xerr := p.x.PollForEvent(); ev != nil || xerr != nil {
		t.Fatalf("painter: %v %v", ev, xerr)
	}
}

// todaysFrame is what /screenshot encoded before the PNG cache: the
// screen without the cursor, then the cursor composited at the pointer.
func todaysFrame(t testing.TB, ctx context.Context, d *Display) *image.RGBA {
	t.Helper()
	img, cur := frameAndCursor(t, ctx, d)
	compositeCursor(rgbaFrame(img), cur.x, cur.y, cur.w, cur.h, cur.argb)
	return img
}

// frameAndCursor is the screen without the cursor, and the cursor.
func frameAndCursor(t testing.TB, ctx context.Context, d *Display) (*image.RGBA, *shownCursor) {
	t.Helper()
	img, err := d.Capture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.conn()
	if err != nil {
		t.Fatal(err)
	}
	ci, err := xfixes.GetCursorImage(c.x).Reply()
	if err != nil {
		t.Fatalf("cursor image: %v", err)
	}
	ptr, err := c.pointer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return img, &shownCursor{x: int(ptr.RootX), y: int(ptr.RootY), w: int(ci.Width), h: int(ci.Height),
		hotX: int(ci.Xhot), hotY: int(ci.Yhot), argb: ci.CursorImage}
}

// ScreenshotPNG follows every change, whole-screen or small, of the
// pixels and of the cursor, and decodes to exactly the pixels the old
// encoder wrote for the same screen; without DAMAGE, too.
func TestScreenshotPNGFollowsTheScreen(t *testing.T) {
	for _, tracked := range []bool{true, false} {
		name := "damage"
		if !tracked {
			name = "no damage"
		}
		t.Run(name, func(t *testing.T) {
			x := testutil.StartXvfb(t, 1024, 768)
			d := openDisplay(t, x.Display)
			p := newPainter(t, x.Display)
			ctx := testutil.WithTimeout(t)
			c, err := d.conn()
			if err != nil {
				t.Fatal(err)
			}
			if c.damage == nil {
				t.Fatal("Xvfb has DAMAGE, but the connection does not track it")
			}
			if !tracked {
				c.damage = nil // as on a server without the extension
			}
			noise := bgrx(noiseFrame(1024, 768, 1))
			patch := bgrx(noiseFrame(200, 100, 2))
			var last []byte
			steps := []struct {
				name   string
				change func()
				cached bool // tracked: nothing changed, the same PNG
			}{
				{"first", func() {}, false},
				{"again", func() {}, true},
				{"whole screen", func() { p.put(t, noise, 1024, 0, 0) }, false},
				{"one rectangle", func() { p.fill(t, image.Rect(500, 300, 540, 310), color.RGBA{200, 10, 90, 255}) }, false},
				{"pointer moved", func() {
					if err := d.MoveTo(ctx, 100, 700); err != nil {
						t.Fatal(err)
					}
				}, false},
				{"still", func() {}, true},
				{"patch under the pointer", func() { p.put(t, patch, 200, 50, 650) }, false},
				{"pointer to the edge", func() {
					if err := d.MoveTo(ctx, 1020, 765); err != nil {
						t.Fatal(err)
					}
				}, false},
				{"last row", func() { p.fill(t, image.Rect(0, 767, 1024, 768), color.RGBA{1, 2, 3, 255}) }, false},
			}
			for _, s := range steps {
				t.Run(s.name, func(t *testing.T) {
					s.change()
					got, err := d.ScreenshotPNG(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if cached := last != nil && &got[0] == &last[0]; cached != (s.cached && tracked) {
						t.Errorf("served the last PNG again: %v", cached)
					}
					last = got
					n, old := checkAgainstOld(t, got, todaysFrame(t, ctx, d))
					t.Logf("%d bytes, old encoder %d", n, old)
				})
			}
		})
	}
}
