package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd"
	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/internal/x11"
)

// greenPixels counts, in the canvas noVNC draws the screen on, the pixels
// of the root colour the test sets; -1 while there is no drawn canvas.
const greenPixels = `(() => {
	const c = document.querySelector('#noVNC_container canvas');
	if (!c || !c.width) return -1;
	const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	let n = 0;
	for (let i = 0; i < d.length; i += 4) if (d[i] < 8 && d[i+1] > 247 && d[i+2] < 8) n++;
	return n;
})()`

// A browser opens a desktop's live view as a person would (noVNC's page,
// from the desktop's own novnc package, over the WebSocket), and sees the
// desktop change after an /execute changes it.
func TestLiveViewInChromium(t *testing.T) {
	testutil.Tier1(t, "Xvfb", "openbox", "xsetroot")
	d := testutil.StartDesktop(t, testutil.DesktopOptions{Width: 640, Height: 480, WM: true})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	disp, err := x11.Open(d.X.Display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disp.Close() })
	viewers, err := rfb.NewServer(rfb.Options{
		Open: func() (rfb.Screen, error) { return x11.Watch(d.X.Display) },
		Name: "drums browser test", Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingViewers{Server: viewers}
	live, err := guestd.NewLive(guestd.Config{Logger: log}, guestd.LiveOptions{}, counted)
	if err != nil {
		t.Fatal(err)
	}
	liveSrv := httptest.NewServer(live)
	t.Cleanup(func() { live.Close(); viewers.Close(); liveSrv.Close() })
	api, err := guestd.New(guestd.Config{Display: d.X.Display, Home: d.Home, TempDir: t.TempDir(), Logger: log,
		Environ: append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, d.Env()...)},
		guestd.Deps{Display: disp, Accessibility: noA11y{}})
	if err != nil {
		t.Fatal(err)
	}
	apiSrv := httptest.NewServer(api)
	t.Cleanup(func() { apiSrv.Close(); api.Close() })

	b := Start(t, Options{})
	p := b.OpenPage(t)
	p.Navigate(t, liveSrv.URL+"/")
	// The page connects, and draws the first frame: no green yet.
	n := p.WaitEval(t, "noVNC to draw the screen", greenPixels, func(n float64) bool { return n >= 0 })
	if n != 0 {
		t.Fatalf("%v green pixels before the action", n)
	}
	var title string
	p.Eval(t, "document.title", &title)
	t.Logf("page title %q", title)
	if got := viewers.Viewers(); got != 1 {
		t.Errorf("%d viewers while the page is open", got)
	}

	execute := func(command string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"command": command, "shell": true})
		resp, err := http.Post(apiSrv.URL+"/execute", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("/execute: %d %s", resp.StatusCode, out)
		}
	}
	execute("xsetroot -solid '#00ff00'")
	start := time.Now()
	p.WaitEval(t, "the green root in the browser", greenPixels, func(n float64) bool { return n > 640*480/2 })
	t.Logf("the browser showed the change %v after /execute answered", time.Since(start))

	// noVNC asked for Tight (tight.go) and got it: a Raw frame alone would
	// be 640x480x4 bytes. What it draws from Tight's zlib stream is the
	// screen a Raw viewer (rfb.Client) sees, pixel for pixel: a plaid of
	// two colours does not fill, it compresses.
	if sent := counted.sent.Load(); sent >= 640*480*4 {
		t.Errorf("the page got %d bytes for two frames: not Tight", sent)
	}
	execute("xsetroot -mod 3 5 -fg '#00ff00' -bg '#3050a0'")
	raw := newRawViewer(t, viewers)
	var want float64
	p.WaitEval(t, "noVNC's canvas to be the Raw viewer's screen", canvasSum, func(n float64) bool {
		want = float64(raw.sum())
		return n == want
	})
	var green float64
	if p.Eval(t, greenPixels, &green); green < 640*480/100 || green > 640*480*9/10 {
		t.Errorf("%v green pixels of the plaid: not the two-colour screen the test drew", green)
	}
	t.Logf("checksum %v, %v green pixels; the page got %d bytes in all", want, green, counted.sent.Load())
	raw.close()

	// View-only: the page sends no input (and the server would drop it).
	var viewOnly *string
	if p.Eval(t, `new URLSearchParams(location.search).get('view_only')`, &viewOnly); viewOnly == nil || *viewOnly != "true" {
		t.Errorf("the page is not view-only: view_only=%v", viewOnly)
	}
	// The browser gone, so is its viewer.
	b.Kill()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for viewers.Viewers() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d viewers after the browser was gone", viewers.Viewers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// canvasSum is a checksum of the R, G, B bytes of noVNC's canvas;
// rgbSum is the same of an image.
const canvasSum = `(() => {
	const c = document.querySelector('#noVNC_container canvas');
	const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
	let h = 0;
	for (let i = 0; i < d.length; i += 4) h = (Math.imul(h, 31) + d[i] * 65536 + d[i+1] * 256 + d[i+2]) >>> 0;
	return h;
})()`

func rgbSum(img *image.RGBA) uint32 {
	var h uint32
	for i := 0; i < len(img.Pix); i += 4 {
		h = h*31 + uint32(img.Pix[i])<<16 + uint32(img.Pix[i+1])<<8 + uint32(img.Pix[i+2])
	}
	return h
}

// countingViewers counts the bytes the viewers are sent.
type countingViewers struct {
	*rfb.Server
	sent atomic.Int64
}

func (c *countingViewers) Serve(ctx context.Context, rw io.ReadWriteCloser) error {
	return c.Server.Serve(ctx, &countingConn{ReadWriteCloser: rw, sent: &c.sent})
}

// countingConn passes the deadlines on: the server cuts a stuck write
// with them.
type countingConn struct {
	io.ReadWriteCloser
	sent *atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.ReadWriteCloser.Write(b)
	c.sent.Add(int64(n))
	return n, err
}

func (c *countingConn) SetDeadline(t time.Time) error {
	return c.ReadWriteCloser.(interface{ SetDeadline(time.Time) error }).SetDeadline(t)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	return c.ReadWriteCloser.(interface{ SetWriteDeadline(time.Time) error }).SetWriteDeadline(t)
}

// rawViewer is an rfb.Client asking for Raw only, following the screen.
type rawViewer struct {
	conn net.Conn
	mu   sync.Mutex
	fb   *image.RGBA
	done chan struct{}
}

func newRawViewer(t *testing.T, srv *rfb.Server) *rawViewer {
	t.Helper()
	a, b := net.Pipe()
	go srv.Serve(context.Background(), a)
	c, err := rfb.NewClient(b)
	if err != nil {
		t.Fatal(err)
	}
	v := &rawViewer{conn: b, fb: image.NewRGBA(c.FB.Rect), done: make(chan struct{})}
	t.Cleanup(v.close)
	go func() {
		defer close(v.done)
		incremental := false
		for {
			if c.Request(incremental) != nil {
				return
			}
			if _, err := c.ReadUpdate(); err != nil {
				return
			}
			incremental = true
			fb := image.NewRGBA(c.FB.Rect)
			copy(fb.Pix, c.FB.Pix)
			v.mu.Lock()
			v.fb = fb
			v.mu.Unlock()
		}
	}()
	return v
}

// sum is rgbSum of the screen as the viewer last drew it.
func (v *rawViewer) sum() uint32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return rgbSum(v.fb)
}

func (v *rawViewer) close() {
	v.conn.Close()
	<-v.done
}

// noA11y is an accessibility source for a desktop without AT-SPI: this
// test asks for no tree.
type noA11y struct{}

func (noA11y) Tree(context.Context) (string, error)      { return "", fmt.Errorf("no accessibility") }
func (noA11y) Terminal(context.Context) (*string, error) { return nil, nil }
