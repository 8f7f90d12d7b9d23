package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/drums-dev/drums/guestd"
	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/internal/x11"
)

// chromium starts headless Chromium and returns its DevTools address
// (host:port) once it prints it, and a function that kills it with its
// children (renderers, zygote), also run at cleanup.
func chromium(t *testing.T) (string, func()) {
	t.Helper()
	testutil.Tier1(t, "chromium")
	args := []string{"--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--password-store=basic",
		"--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "--remote-allow-origins=http://127.0.0.1", "--user-data-dir=" + t.TempDir(), "about:blank"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	cmd := exec.Command("chromium", args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Its children keep what it was given open: a file, so that no copy
	// waits for them, and a process group of its own, to end them all.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { devnull.Close() })
	cmd.Stdout = devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := testutil.StartCmd(t, cmd)
	kill := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Cleanup(kill)
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("chromium exited before it listened: %v", p.Err())
		}
		go io.Copy(io.Discard, stderr)
		return a, kill
	case <-testutil.WithTimeout(t).Done():
		t.Fatal("chromium did not say where DevTools listens")
	}
	return "", nil
}

// page is a DevTools connection to one tab: commands by id, events
// dropped.
type page struct {
	ws      *websocket.Conn
	mu      sync.Mutex
	id      int
	pending map[int]chan json.RawMessage
}

func openPage(t *testing.T, devtools string) *page {
	t.Helper()
	resp, err := http.Get("http://" + devtools + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	var targets []struct{ Type, WebSocketDebuggerURL string }
	err = json.NewDecoder(resp.Body).Decode(&targets)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		if tg.Type != "page" {
			continue
		}
		ws, err := websocket.Dial(tg.WebSocketDebuggerURL, "", "http://127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
		p := &page{ws: ws, pending: map[int]chan json.RawMessage{}}
		go p.read()
		return p
	}
	t.Fatalf("no page among %+v", targets)
	return nil
}

func (p *page) read() {
	for {
		var msg struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := websocket.JSON.Receive(p.ws, &msg); err != nil {
			p.mu.Lock()
			for _, ch := range p.pending {
				close(ch)
			}
			p.pending = nil
			p.mu.Unlock()
			return
		}
		if msg.ID == 0 {
			continue // an event
		}
		if msg.Error != nil {
			msg.Result, _ = json.Marshal(map[string]string{"error": msg.Error.Message})
		}
		p.mu.Lock()
		ch := p.pending[msg.ID]
		delete(p.pending, msg.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- msg.Result
		}
	}
}

func (p *page) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	p.mu.Lock()
	p.id++
	id := p.id
	ch := make(chan json.RawMessage, 1)
	p.pending[id] = ch
	p.mu.Unlock()
	if err := websocket.JSON.Send(p.ws, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		t.Fatal(err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			t.Fatalf("%s: DevTools connection lost", method)
		}
		return r
	case <-testutil.WithTimeout(t).Done():
		t.Fatalf("%s: no answer", method)
	}
	return nil
}

// eval evaluates a JavaScript expression and returns its value.
func (p *page) eval(t *testing.T, expr string) json.RawMessage {
	t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails json.RawMessage
		Error            string
	}
	raw := p.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err := json.Unmarshal(raw, &r); err != nil || r.Error != "" || r.ExceptionDetails != nil {
		t.Fatalf("evaluate %s: %s %v", expr, raw, err)
	}
	return r.Result.Value
}

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

	devtools, kill := chromium(t)
	p := openPage(t, devtools)
	p.call(t, "Page.navigate", map[string]any{"url": liveSrv.URL + "/"})
	// The page connects, and draws the first frame: no green yet.
	n := waitPixels(t, p, "noVNC to draw the screen", func(n int) bool { return n >= 0 })
	if n != 0 {
		t.Fatalf("%d green pixels before the action", n)
	}
	title := strings.Trim(string(p.eval(t, "document.title")), `"`)
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
	waitPixels(t, p, "the green root in the browser", func(n int) bool { return n > 640*480/2 })
	t.Logf("the browser showed the change %v after /execute answered", time.Since(start))

	// View-only: the page sends no input (and the server would drop it).
	if v := string(p.eval(t, `new URLSearchParams(location.search).get('view_only')`)); v != `"true"` {
		t.Errorf("the page is not view-only: view_only=%s", v)
	}
	// The browser gone, so is its viewer.
	kill()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for viewers.Viewers() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d viewers after the browser was gone", viewers.Viewers())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitPixels evaluates greenPixels until ok; nothing tells the test when
// the canvas was drawn, so it looks again every 50 ms.
func waitPixels(t *testing.T, p *page, what string, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for {
		var n int
		if err := json.Unmarshal(p.eval(t, greenPixels), &n); err != nil {
			t.Fatal(err)
		}
		if ok(n) {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%d green pixels)", what, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// noA11y is an accessibility source for a desktop without AT-SPI: this
// test asks for no tree.
type noA11y struct{}

func (noA11y) Tree(context.Context) (string, error)      { return "", fmt.Errorf("no accessibility") }
func (noA11y) Terminal(context.Context) (*string, error) { return nil, nil }
