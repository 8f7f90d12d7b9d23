package x11

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xfixes"
	"github.com/jezek/xgb/xproto"
)

// pollInterval paces the waits for an application to paint or to write a
// file: nothing announces those, so the tests look again at this interval.
const pollInterval = 20 * time.Millisecond

func openDisplay(t testing.TB, display string) *Display {
	t.Helper()
	d, err := Open(display)
	if err != nil {
		t.Fatalf("open %s: %v", display, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// screenshot is d.ScreenshotPNG decoded.
func screenshot(ctx context.Context, d *Display) (*image.RGBA, error) {
	b, err := d.ScreenshotPNG(ctx)
	if err != nil {
		return nil, err
	}
	return decodePNG(b)
}

// clientRect is window w's rectangle in root coordinates.
func clientRect(t testing.TB, d *Display, w xproto.Window) image.Rectangle {
	t.Helper()
	c, err := d.conn()
	if err != nil {
		t.Fatal(err)
	}
	g, err := xproto.GetGeometry(c.x, xproto.Drawable(w)).Reply()
	if err != nil {
		t.Fatalf("geometry of %#x: %v", w, err)
	}
	tr, err := xproto.TranslateCoordinates(c.x, w, c.root, 0, 0).Reply()
	if err != nil {
		t.Fatalf("translate %#x: %v", w, err)
	}
	return image.Rect(int(tr.DstX), int(tr.DstY), int(tr.DstX)+int(g.Width), int(tr.DstY)+int(g.Height))
}

// waitFor calls check until it reports true or the test's deadline passes.
func waitFor(t testing.TB, what string, check func() (bool, error)) {
	t.Helper()
	ctx := testutil.WithTimeout(t)
	for {
		ok, err := check()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// solidWindow starts an xterm whose whole client area is c (text, cursor
// and border drawn in the background colour) and returns its rectangle once
// it shows on the screen.
func solidWindow(t testing.TB, desk *testutil.Desktop, d *Display, class, hex, geometry string) image.Rectangle {
	t.Helper()
	desk.StartApp(t, "xterm", "-class", class, "-bg", hex, "-fg", hex, "-cr", hex, "-bw", "0",
		"-geometry", geometry, "-e", "sleep", "600")
	id, err := testutil.WaitWindow(testutil.WithTimeout(t), desk.X.Display, class)
	if err != nil {
		t.Fatalf("xterm window: %v", err)
	}
	r := clientRect(t, d, xproto.Window(id))
	want := parseHex(t, hex)
	waitFor(t, "xterm painted "+hex, func() (bool, error) {
		img, err := d.Capture(context.Background())
		if err != nil {
			return false, err
		}
		return uniform(img, r, want), nil
	})
	return r
}

func parseHex(t testing.TB, hex string) color.RGBA {
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		t.Fatal(err)
	}
	return color.RGBA{byte(v >> 16), byte(v >> 8), byte(v), 255}
}

func uniform(img *image.RGBA, r image.Rectangle, c color.RGBA) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if img.RGBAAt(x, y) != c {
				return false
			}
		}
	}
	return true
}

func TestScreenshotShowsWindows(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{Width: 1024, Height: 768, WM: true})
	d := openDisplay(t, desk.X.Display)
	ctx := testutil.WithTimeout(t)
	// A screenshot of the empty desktop first: the windows reach the next
	// one through the root window's damage.
	if _, err := d.ScreenshotPNG(ctx); err != nil {
		t.Fatal(err)
	}
	red := solidWindow(t, desk, d, "DrumsRed", "#ff0000", "40x10+60+80")
	blue := solidWindow(t, desk, d, "DrumsBlue", "#2040c0", "30x8+400+300")
	// The pointer, drawn into the screenshot, stays clear of both.
	if err := d.MoveTo(ctx, 1000, 740); err != nil {
		t.Fatal(err)
	}
	img, err := screenshot(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if img.Rect != image.Rect(0, 0, 1024, 768) {
		t.Fatalf("screenshot is %v, want 1024x768", img.Rect)
	}
	if red.Overlaps(blue) {
		t.Fatalf("the window manager stacked the windows: %v, %v", red, blue)
	}
	if !uniform(img, blue, color.RGBA{0x20, 0x40, 0xc0, 255}) {
		t.Errorf("blue window %v is not uniformly #2040c0 in the screenshot", blue)
	}
	if !uniform(img, red, color.RGBA{0xff, 0, 0, 255}) {
		t.Errorf("red window %v is not uniformly #ff0000 in the screenshot", red)
	}
	if p := red.Max.Add(image.Pt(10, 10)); img.RGBAAt(p.X, p.Y) == (color.RGBA{0xff, 0, 0, 255}) {
		t.Errorf("pixel %v outside the red window is red", p)
	}
	w, h, err := d.ScreenSize(ctx)
	if err != nil || w != 1024 || h != 768 {
		t.Errorf("ScreenSize = %d, %d, %v; want 1024, 768", w, h, err)
	}
}

func TestSHMAndCoreGiveSamePixels(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	d := openDisplay(t, desk.X.Display)
	core := &Display{name: desk.X.Display, noSHM: true}
	t.Cleanup(func() { core.Close() })
	solidWindow(t, desk, d, "DrumsGreen", "#10c020", "40x10+60+80")
	ctx := testutil.WithTimeout(t)
	// The comparison means something only if the screen held still
	// between the two captures (openbox repaints a frame when focus
	// settles, later on a loaded machine): core between two equal SHM
	// captures.
	var a, b *image.RGBA
	for {
		var err error
		if a, err = d.Capture(ctx); err != nil {
			t.Fatal(err)
		}
		if b, err = core.Capture(ctx); err != nil {
			t.Fatal(err)
		}
		again, err := d.Capture(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a.Pix, again.Pix) {
			break
		}
	}
	c, _ := d.conn()
	if c.shmOff {
		t.Fatal("the SHM path was not used on a server in our IPC namespace")
	}
	cc, _ := core.conn()
	if !cc.shmOff {
		t.Fatal("the core path was not used")
	}
	if a.Rect != b.Rect {
		t.Fatalf("SHM %v vs core %v", a.Rect, b.Rect)
	}
	for i := range a.Pix {
		if a.Pix[i] != b.Pix[i] {
			t.Fatalf("SHM and core differ at byte %d (pixel %d,%d)", i, (i/4)%a.Rect.Dx(), i/4/a.Rect.Dx())
		}
	}
}

// The cursor lands with its top-left corner at the pointer (hotspot
// ignored), red and blue swapped, blended by its alpha.
func TestScreenshotCompositesCursorLikeUpstream(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	d := openDisplay(t, desk.X.Display)
	r := solidWindow(t, desk, d, "DrumsCursor", "#30a0f0", "40x10+60+80")
	ctx := testutil.WithTimeout(t)
	px, py := r.Min.X+40, r.Min.Y+30
	if err := d.MoveTo(ctx, px, py); err != nil {
		t.Fatal(err)
	}
	x, y, err := d.CursorPosition(ctx)
	if err != nil || x != px || y != py {
		t.Fatalf("CursorPosition = %d, %d, %v; want %d, %d", x, y, err, px, py)
	}
	bare, err := d.Capture(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shot, err := screenshot(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := d.conn()
	cur, err := xfixes.GetCursorImage(c.x).Reply()
	if err != nil {
		t.Fatal(err)
	}
	opaque, clear := 0, 0
	for cy := 0; cy < int(cur.Height); cy++ {
		for cx := 0; cx < int(cur.Width); cx++ {
			p := cur.CursorImage[cy*int(cur.Width)+cx]
			got := shot.RGBAAt(px+cx, py+cy)
			switch p >> 24 {
			case 0xff:
				opaque++
				want := color.RGBA{byte(p), byte(p >> 8), byte(p >> 16), 255}
				if got != want {
					t.Fatalf("cursor pixel (%d,%d) %#08x drawn as %v, want %v", cx, cy, p, got, want)
				}
			case 0:
				clear++
				if want := bare.RGBAAt(px+cx, py+cy); got != want {
					t.Fatalf("transparent cursor pixel (%d,%d) changed the screen: %v, want %v", cx, cy, got, want)
				}
			}
		}
	}
	if opaque == 0 || clear == 0 {
		t.Fatalf("cursor %dx%d has %d opaque and %d clear pixels; the test needs both", cur.Width, cur.Height, opaque, clear)
	}
	// Outside the cursor's box the screenshot is the bare screen.
	for _, p := range []image.Point{{px - 1, py}, {px, py - 1}, {px + int(cur.Width), py}, {px, py + int(cur.Height)}} {
		if shot.RGBAAt(p.X, p.Y) != bare.RGBAAt(p.X, p.Y) {
			t.Errorf("pixel %v outside the cursor changed", p)
		}
	}
}

func TestWindowSize(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	d := openDisplay(t, desk.X.Display)
	r := solidWindow(t, desk, d, "DrumsSized", "#808080", "40x10+60+80")
	ctx := testutil.WithTimeout(t)
	for _, name := range []string{"drumssized", "DRUMSSIZED", "xterm"} {
		w, h, ok, err := d.WindowSize(ctx, name)
		if err != nil || !ok || w != r.Dx() || h != r.Dy() {
			t.Errorf("WindowSize(%q) = %d, %d, %v, %v; want %d, %d, true", name, w, h, ok, err, r.Dx(), r.Dy())
		}
	}
	if _, _, ok, err := d.WindowSize(ctx, "nosuchapp"); ok || err != nil {
		t.Errorf("WindowSize(nosuchapp) = ok %v, err %v; want no match", ok, err)
	}

	bare := testutil.StartXvfb(t, 320, 200)
	nowm := openDisplay(t, bare.Display)
	if _, _, _, err := nowm.WindowSize(ctx, "xterm"); !errors.Is(err, ErrNoClientList) {
		t.Errorf("WindowSize without a window manager: %v, want ErrNoClientList", err)
	}
}

// shellTerm starts an xterm running sh in dir, focused by a click.
func shellTerm(t testing.TB, desk *testutil.Desktop, d *Display, dir string) {
	t.Helper()
	desk.StartApp(t, "xterm", "-class", "DrumsShell", "-geometry", "80x10+40+40", "-e", "sh", "-c", "cd "+dir+" && exec sh")
	id, err := testutil.WaitWindow(testutil.WithTimeout(t), desk.X.Display, "DrumsShell")
	if err != nil {
		t.Fatal(err)
	}
	r := clientRect(t, d, xproto.Window(id))
	ctx := testutil.WithTimeout(t)
	click(t, ctx, d, r.Min.X+20, r.Min.Y+20)
	waitActive(t, d, id)
}

// waitActive waits until the window manager has made window id active, so
// that key events go to it.
func waitActive(t testing.TB, d *Display, id uint32) {
	t.Helper()
	c, err := d.conn()
	if err != nil {
		t.Fatal(err)
	}
	ctx := testutil.WithTimeout(t)
	atom, err := c.atom(ctx, "_NET_ACTIVE_WINDOW")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "window active", func() (bool, error) {
		p, err := xproto.GetProperty(c.x, false, c.root, atom, xproto.AtomWindow, 0, 1).Reply()
		if err != nil {
			return false, err
		}
		return len(p.Value) == 4 && xgb.Get32(p.Value) == id, nil
	})
}

func click(t testing.TB, ctx context.Context, d *Display, x, y int) {
	t.Helper()
	for _, err := range []error{d.MoveTo(ctx, x, y), d.Button(ctx, 1, true), d.Button(ctx, 1, false)} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func waitFile(t testing.TB, path, want string) {
	t.Helper()
	waitFor(t, "file "+path, func() (bool, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return string(b) == want, err
	})
}

func TestTypingAndKeysReachXterm(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	d := openDisplay(t, desk.X.Display)
	dir := t.TempDir()
	shellTerm(t, desk, d, dir)
	ctx := testutil.WithTimeout(t)
	// Shifted characters ('>', '"', '|', capitals) go through Shift.
	if err := d.TypeText(ctx, `echo "Hello, World|~" > typed.txt`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitFile(t, filepath.Join(dir, "typed.txt"), "Hello, World|~\n")

	// Key presses by keysym. Key adds no Shift: '>' is the shifted keysym
	// of the period key, so a bare Key('>') types '.', as pyautogui does;
	// with Shift held it types '>'.
	const shift = 0xffe1
	keys := []struct {
		sym     uint32
		shifted bool
	}{{'e', false}, {'c', false}, {'h', false}, {'o', false}, {' ', false}, {'k', false}, {'>', false}, {'x', false},
		{' ', false}, {'>', true}, {' ', false}, {'k', false}, {'e', false}, {'y', false}, {'s', false}, {0xff0d, false}}
	for _, k := range keys {
		seq := []struct {
			sym  uint32
			down bool
		}{{k.sym, true}, {k.sym, false}}
		if k.shifted {
			seq = append([]struct {
				sym  uint32
				down bool
			}{{shift, true}}, append(seq, struct {
				sym  uint32
				down bool
			}{shift, false})...)
		}
		for _, e := range seq {
			if err := d.Key(ctx, e.sym, e.down); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitFile(t, filepath.Join(dir, "keys"), "k.x\n")
}

// Unicode that the US keymap lacks is typed through spare keycodes, into a
// GTK3 entry (zenity prints what was entered when Return is pressed).
func TestUnicodeIntoGTKEntry(t *testing.T) {
	desk := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	testutil.Tier1(t, "zenity")
	d := openDisplay(t, desk.X.Display)
	cmd := testutil.Command(desk.Env(), "zenity", "--entry", "--title", "DrumsEntry")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.StartCmd(t, cmd)
	ctx := testutil.WithTimeout(t)
	w, err := testutil.WaitWindow(ctx, desk.X.Display, "zenity")
	if err != nil {
		t.Fatal(err)
	}
	// The entry has the keyboard focus once the window manager activated
	// the dialog.
	waitActive(t, d, w)
	// More distinct characters outside the keymap than Xvfb has spare
	// keycodes (19): some keycodes get rebound within the one call.
	const text = "Zé€✓ä ß Ωmega 日本 一二三四五六七八九十百千万上下左右中大小"
	if err := d.TypeText(ctx, text+"\n"); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case got := <-line:
		if got != text+"\n" {
			t.Fatalf("zenity read %q, want %q", got, text+"\n")
		}
	case <-p.Done():
		t.Fatalf("zenity exited: %v", p.Err())
	case <-ctx.Done():
		t.Fatal("zenity printed nothing")
	}
	c, _ := d.conn()
	if len(c.in.binds) == 0 {
		t.Fatal("no spare keycode was bound")
	}
	if err := c.restoreKeys(ctx, true); err != nil {
		t.Fatal(err)
	}
	km, err := func() (*keymap, error) {
		c.in.mu.Lock()
		defer c.in.mu.Unlock()
		c.keymapStale.Store(true)
		return c.keymapLocked(ctx)
	}()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range text {
		if sym, _ := runeKeysym(r); r > 0x7e {
			if _, bound := km.first[sym]; bound {
				t.Errorf("keysym %#x of %q still bound after restore", sym, r)
			}
		}
	}
}

// A keysym the keymap lacks (F13 on Xvfb) is bound while held and goes
// back to NoSymbol once released and restored.
func TestKeyBindsMissingKeysym(t *testing.T) {
	x := testutil.StartXvfb(t, 320, 200)
	d := openDisplay(t, x.Display)
	ctx := testutil.WithTimeout(t)
	const f13 = 0xffca
	if err := d.Key(ctx, f13, true); err != nil {
		t.Fatal(err)
	}
	c, _ := d.conn()
	kc := serverKeycode(t, c, f13)
	if kc == 0 {
		t.Fatal("F13 is not bound while held")
	}
	if err := c.restoreKeys(ctx, false); err != nil || serverKeycode(t, c, f13) != kc {
		t.Fatalf("a held binding was restored (err %v)", err)
	}
	if err := d.Key(ctx, f13, false); err != nil {
		t.Fatal(err)
	}
	if err := c.restoreKeys(ctx, true); err != nil {
		t.Fatal(err)
	}
	if got := serverKeycode(t, c, f13); got != 0 {
		t.Fatalf("F13 still bound to %d after restore", got)
	}
}

// serverKeycode reads the server's mapping afresh and returns the keycode
// carrying sym, or 0.
func serverKeycode(t testing.TB, c *conn, sym xproto.Keysym) xproto.Keycode {
	t.Helper()
	n := int(c.maxKeycode) - int(c.minKeycode) + 1
	r, err := xproto.GetKeyboardMapping(c.x, c.minKeycode, byte(n)).Reply()
	if err != nil {
		t.Fatal(err)
	}
	km := newKeymap(c.minKeycode, int(r.KeysymsPerKeycode), r.Keysyms)
	return km.first[sym].code
}

func TestReconnectsAfterServerRestart(t *testing.T) {
	first := testutil.StartXvfb(t, 640, 480)
	d := openDisplay(t, first.Display)
	ctx := testutil.WithTimeout(t)
	if w, h, err := d.ScreenSize(ctx); err != nil || w != 640 || h != 480 {
		t.Fatalf("ScreenSize = %d, %d, %v", w, h, err)
	}
	first.Proc.Kill()
	// The display's socket is gone, so calls fail now, and keep failing
	// without wedging until a server is back.
	if _, err := screenshot(ctx, d); err == nil {
		t.Fatal("screenshot succeeded with no X server")
	}
	testutil.StartXvfbOn(t, nil, first.Display, 800, 600)
	img, err := screenshot(ctx, d)
	if err != nil {
		t.Fatalf("screenshot after restart: %v", err)
	}
	if img.Rect.Dx() != 800 || img.Rect.Dy() != 600 {
		t.Fatalf("screenshot after restart is %v, want 800x600", img.Rect)
	}
	if err := d.MoveTo(ctx, 10, 20); err != nil {
		t.Fatal(err)
	}
	if x, y, err := d.CursorPosition(ctx); err != nil || x != 10 || y != 20 {
		t.Fatalf("CursorPosition after restart = %d, %d, %v", x, y, err)
	}
}

// An X server in another IPC namespace cannot attach our segment
// (BadAccess): capture falls back to core GetImage and stays there.
func TestCaptureFallsBackToCoreAcrossIPCNamespaces(t *testing.T) {
	testutil.RequireRoot(t, "unshare")
	display := testutil.StartXvfbOn(t, []string{"unshare", "--ipc"}, "", 320, 200).Display
	d := openDisplay(t, display)
	ctx := testutil.WithTimeout(t)
	for range 2 {
		img, err := screenshot(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if img.Rect.Dx() != 320 || img.Rect.Dy() != 200 {
			t.Fatalf("screenshot is %v", img.Rect)
		}
	}
	c, _ := d.conn()
	if !c.shmOff || c.seg != nil {
		t.Fatalf("SHM still in use across IPC namespaces (off %v)", c.shmOff)
	}
}
