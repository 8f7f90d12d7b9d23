package browsertest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
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
	live, err := guestd.NewLive(guestd.Config{Logger: log}, guestd.LiveOptions{}, viewers)
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
	title := strings.Trim(string(p.Eval(t, "document.title")), `"`)
	t.Logf("page title %q", title)
	if got := viewers.Viewers(); got != 1 {
		t.Errorf("%d viewers while the page is open", got)
	}

	resp, err := http.Post(apiSrv.URL+"/execute", "application/json",
		strings.NewReader(`{"command": "xsetroot -solid '#00ff00'", "shell": true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/execute: %d %s", resp.StatusCode, body)
	}
	start := time.Now()
	p.WaitEval(t, "the green root in the browser", greenPixels, func(n float64) bool { return n > 640*480/2 })
	t.Logf("the browser showed the change %v after /execute answered", time.Since(start))

	// View-only: the page sends no input (and the server would drop it).
	if v := string(p.Eval(t, `new URLSearchParams(location.search).get('view_only')`)); v != `"true"` {
		t.Errorf("the page is not view-only: view_only=%s", v)
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

// noA11y is an accessibility source for a desktop without AT-SPI: this
// test asks for no tree.
type noA11y struct{}

func (noA11y) Tree(context.Context) (string, error)      { return "", fmt.Errorf("no accessibility") }
func (noA11y) Terminal(context.Context) (*string, error) { return nil, nil }
