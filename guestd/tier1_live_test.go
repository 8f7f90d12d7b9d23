package guestd

import (
	"context"
	"image"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/internal/x11"
)

// liveView is the live view of a test desktop as guestd --vnc-listen
// serves it: internal/rfb opening x11 Watchers, behind Live, on loopback.
type liveView struct {
	url     string
	viewers *rfb.Server
}

func startLiveView(t testing.TB, dt *desktop, takeover bool) *liveView {
	t.Helper()
	sw := NewTakeover(dt.disp, takeover)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	viewers, err := rfb.NewServer(rfb.Options{
		Open:  func() (rfb.Screen, error) { return x11.Watch(dt.d.X.Display) },
		Input: sw, Name: "drums test", Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	live, err := NewLive(Config{Logger: log}, LiveOptions{Takeover: sw}, viewers)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(live)
	t.Cleanup(func() { live.Close(); viewers.Close(); hs.Close() })
	return &liveView{url: hs.URL, viewers: viewers}
}

// viewer connects to the live view as noVNC does: a WebSocket from the
// page's origin at /websockify, RFB inside, asking for encs (and Raw).
func (lv *liveView) viewer(t testing.TB, encs ...rfb.Encoding) (*rfb.Client, *websocket.Conn) {
	t.Helper()
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(lv.url, "http")+"/websockify", "", lv.url)
	if err != nil {
		t.Fatal(err)
	}
	ws.PayloadType = websocket.BinaryFrame
	t.Cleanup(func() { ws.Close() })
	c, err := rfb.NewClient(ws, encs...)
	if err != nil {
		t.Fatal(err)
	}
	return c, ws
}

func xClients(t testing.TB, display string) int {
	t.Helper()
	n, err := testutil.XClients(display)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// countNear counts the pixels of img within 8 of c in every channel.
func countNear(img *image.RGBA, c [3]uint8) int {
	n := 0
	for i := 0; i+4 <= len(img.Pix); i += 4 {
		p := img.Pix[i : i+3]
		if near(p[0], c[0]) && near(p[1], c[1]) && near(p[2], c[2]) {
			n++
		}
	}
	return n
}

func near(a, b uint8) bool { return max(a, b)-min(a, b) < 8 }

// The live view of a real desktop: the page is noVNC's; a viewer over the
// WebSocket gets the screen and then, after an /execute changes it, the
// change; nothing of it runs while nobody watches.
func TestLiveView(t *testing.T) {
	dt := startDesktop(t, testutil.DesktopOptions{Width: 640, Height: 480})
	display := dt.d.X.Display
	dt.screenshot() // guestd's own connection is up
	before := xClients(t, display)
	lv := startLiveView(t, dt, false)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(lv.url + "/")
	if err != nil || resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), "/vnc.html?autoconnect=true") {
		t.Fatalf("GET /: %v %v", resp, err)
	}
	resp.Body.Close()
	for path, want := range map[string]string{"/vnc.html": "noVNC", "/app/ui.js": "import", "/core/rfb.js": "websock"} {
		resp, err := client.Get(lv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(strings.ToLower(string(body)), strings.ToLower(want)) {
			t.Errorf("GET %s: %d, %d bytes without %q (is the image's novnc package installed?)", path, resp.StatusCode, len(body), want)
		}
	}

	// Unwatched: the listener alone, no X connection for the live view.
	if n := xClients(t, display); n != before {
		t.Fatalf("an unwatched live view: %d X clients, %d before it", n, before)
	}
	idleGoroutines := runtime.NumGoroutine()

	c, ws := lv.viewer(t)
	if n := xClients(t, display); n != before+1 {
		t.Errorf("watched: %d X clients, want %d (one for the live view)", n, before+1)
	}
	if c.FB.Rect != image.Rect(0, 0, 640, 480) {
		t.Fatalf("ServerInit says the screen is %v", c.FB.Rect)
	}
	c.Request(false)
	start := time.Now()
	u, err := c.ReadUpdate()
	if err != nil || len(u.Rects) != 1 || u.Rects[0] != c.FB.Rect {
		t.Fatalf("first update %+v %v", u, err)
	}
	t.Logf("first frame: %d bytes in %v", u.Bytes, time.Since(start))

	// An action changes the screen; the viewer sees it.
	green := [3]uint8{0, 255, 0}
	if n := countNear(c.FB, green); n > 0 {
		t.Fatalf("%d green pixels before the action", n)
	}
	c.Request(true)
	status, body := dt.postJSON("/execute", map[string]any{"command": "xsetroot -solid '#00ff00'", "shell": true})
	if status != 200 {
		t.Fatalf("/execute: %d %s", status, body)
	}
	start = time.Now()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for countNear(c.FB, green) < 640*480/2 {
		if time.Now().After(deadline) {
			t.Fatalf("the viewer never saw the green root: %d green pixels", countNear(c.FB, green))
		}
		u, err := c.ReadUpdate()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("update after /execute: %d rectangles, %d bytes, %v after the action", len(u.Rects), u.Bytes, time.Since(start))
		c.Request(true)
	}

	// The pointer, moved by an action, is drawn where it is.
	if err := dt.disp.MoveTo(context.Background(), 300, 200); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	for {
		u, err := c.ReadUpdate()
		if err != nil {
			t.Fatal(err)
		}
		moved := false
		for _, r := range u.Rects {
			if image.Pt(300, 200).In(r) {
				moved = true
			}
		}
		if moved {
			t.Logf("pointer motion: %d rectangles, %d bytes, %v after the motion", len(u.Rects), u.Bytes, time.Since(start))
			break
		}
		if time.Since(start) > testutil.ReadyTimeout {
			t.Fatal("the viewer never saw the pointer move")
		}
		c.Request(true)
	}

	// The last viewer gone, the X connection and the goroutines go too.
	ws.Close()
	deadline = time.Now().Add(testutil.ReadyTimeout)
	for xClients(t, display) != before || runtime.NumGoroutine() > idleGoroutines {
		if time.Now().After(deadline) {
			t.Fatalf("after the viewer left: %d X clients (%d before), %d goroutines (%d unwatched)",
				xClients(t, display), before, runtime.NumGoroutine(), idleGoroutines)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := lv.viewers.Viewers(); n != 0 {
		t.Errorf("%d viewers after the last left", n)
	}
}

// View-only drops the viewer's pointer; takeover moves it, through XTEST.
func TestLiveTakeover(t *testing.T) {
	dt := startDesktop(t, testutil.DesktopOptions{Width: 640, Height: 480})
	ctx := context.Background()
	if err := dt.disp.MoveTo(ctx, 10, 10); err != nil {
		t.Fatal(err)
	}
	for _, takeover := range []bool{false, true} {
		c, _ := startLiveView(t, dt, takeover).viewer(t)
		c.Pointer(0, 200, 150)
		// The server reads messages in order: once this update arrives,
		// it has handled the pointer event.
		c.Request(false)
		if _, err := c.ReadUpdate(); err != nil {
			t.Fatal(err)
		}
		x, y, err := dt.disp.CursorPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if moved := x == 200 && y == 150; moved != takeover {
			t.Errorf("takeover %v: the pointer is at %d,%d", takeover, x, y)
		}
	}
}
