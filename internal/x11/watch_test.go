package x11

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
)

// watchedFrame is what a Watcher's copy must hold: the screen, then the
// cursor drawn with its hotspot at the pointer.
func watchedFrame(t testing.TB, ctx context.Context, d *Display) *image.RGBA {
	t.Helper()
	img, cur := frameAndCursor(t, ctx, d)
	drawCursor(img, cur)
	return img
}

// waitChange is Watcher.Wait with a deadline: the change must wake it.
func waitChange(t testing.TB, w *Watcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testutil.ReadyTimeout)
	defer cancel()
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("wait for the change: %v", err)
	}
}

// A Watcher's copy follows the screen, the cursor included, and reports
// what changed; it does so beside screenshots without taking their
// damage, and holds its own X connection only until Close.
func TestWatcherFollowsTheScreen(t *testing.T) {
	x := testutil.StartXvfb(t, 800, 600)
	d := openDisplay(t, x.Display)
	p := newPainter(t, x.Display)
	ctx := testutil.WithTimeout(t)
	before, err := testutil.XClients(x.Display)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Watch(x.Display)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.XClients(x.Display); n != before+1 {
		t.Errorf("a Watcher: %d X clients, %d before", n, before)
	}
	if err := w.Wait(ctx); err != nil {
		t.Fatal(err) // at once: nothing sent yet
	}
	fb, rects, err := w.Update(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rects) != 1 || rects[0] != image.Rect(0, 0, 800, 600) || !bytes.Equal(fb.Pix, watchedFrame(t, ctx, d).Pix) {
		t.Fatalf("first update %v", rects)
	}
	if _, err := d.ScreenshotPNG(ctx); err != nil {
		t.Fatal(err)
	}

	patch := bgrx(noiseFrame(120, 80, 3))
	for _, s := range []struct {
		name   string
		change func()
		within image.Rectangle // what changed
	}{
		{"one rectangle", func() { p.fill(t, image.Rect(500, 300, 540, 310), color.RGBA{200, 10, 90, 255}) }, image.Rect(500, 300, 540, 310)},
		{"a patch", func() { p.put(t, patch, 120, 10, 20) }, image.Rect(10, 20, 130, 100)},
		{"pointer moved", func() {
			if err := d.MoveTo(ctx, 380, 270); err != nil { // Xvfb starts it at the centre
				t.Fatal(err)
			}
		}, image.Rect(0, 0, 800, 600)},
		{"patch under the pointer", func() { p.put(t, patch, 120, 330, 220) }, image.Rect(330, 220, 450, 300)},
	} {
		s.change()
		start := time.Now()
		waitChange(t, w)
		waited := time.Since(start)
		var got []image.Rectangle
		// A wake-up may carry nothing; the change comes with the next.
		for len(got) == 0 {
			if fb, got, err = w.Update(ctx, fb); err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				waitChange(t, w)
			}
		}
		for _, r := range got {
			if !r.In(s.within) {
				t.Errorf("%s: %v reported changed, outside %v", s.name, r, s.within)
			}
		}
		if want := watchedFrame(t, ctx, d); !bytes.Equal(fb.Pix, want.Pix) {
			t.Errorf("%s: the copy differs from the screen", s.name)
		}
		t.Logf("%s: woken after %v, %v", s.name, waited, got)
	}
	// The screenshots' damage is their own: the changes are in the next
	// screenshot too.
	png, err := d.ScreenshotPNG(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkAgainstOld(t, png, todaysFrame(t, ctx, d))

	w.Close()
	waitFor(t, "the Watcher's connection to close", func() (bool, error) {
		n, err := testutil.XClients(x.Display)
		return n == before, err
	})
}
