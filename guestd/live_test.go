package guestd

import (
	"context"
	"image"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/drums-dev/drums/internal/rfb"
)

// echoViewers stands in for internal/rfb: it greets, then echoes.
type echoViewers struct{ served atomic.Int32 }

func (e *echoViewers) Serve(ctx context.Context, rw io.ReadWriteCloser) error {
	e.served.Add(1)
	defer rw.Close()
	if _, err := io.WriteString(rw, "RFB 003.008\n"); err != nil {
		return err
	}
	_, err := io.Copy(rw, rw)
	return err
}

var _ Viewers = (*echoViewers)(nil)

func startLive(t *testing.T, opts LiveOptions, cfg Config) (*httptest.Server, *echoViewers) {
	t.Helper()
	if opts.Web == "" {
		opts.Web = t.TempDir()
		os.WriteFile(filepath.Join(opts.Web, "vnc.html"), []byte("<title>noVNC</title>"), 0o644)
		os.MkdirAll(filepath.Join(opts.Web, "app"), 0o755)
		os.WriteFile(filepath.Join(opts.Web, "app", "ui.js"), []byte("export default {};"), 0o644)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ev := &echoViewers{}
	l, err := NewLive(cfg, opts, ev)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(l)
	t.Cleanup(func() { l.Close(); hs.Close() })
	return hs, ev
}

func liveGet(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return resp, "" // the body is the connection
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The page: / sends noVNC's vnc.html, told to connect, view-only unless
// takeover is on; noVNC's files are served as they are, scripts as
// JavaScript (browsers load ES modules only so).
func TestLivePage(t *testing.T) {
	hs, _ := startLive(t, LiveOptions{}, Config{})
	resp, _ := liveGet(t, hs.URL+"/")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/vnc.html?autoconnect=true&resize=scale&reconnect=true&view_only=true" {
		t.Errorf("GET /: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, body := liveGet(t, hs.URL+"/vnc.html")
	if resp.StatusCode != 200 || !strings.Contains(body, "noVNC") {
		t.Errorf("GET /vnc.html: %d %q", resp.StatusCode, body)
	}
	resp, _ = liveGet(t, hs.URL+"/app/ui.js")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("GET /app/ui.js: %d %s", resp.StatusCode, ct)
	}
	if resp, _ := liveGet(t, hs.URL+"/../../etc/passwd"); resp.StatusCode == 200 {
		t.Error("a path outside noVNC's directory was served")
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/vnc.html", nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}

	sw := NewTakeover(nil, true)
	hs, _ = startLive(t, LiveOptions{Takeover: sw}, Config{})
	if resp, _ := liveGet(t, hs.URL+"/"); strings.Contains(resp.Header.Get("Location"), "view_only") {
		t.Errorf("takeover: GET / sends to %s", resp.Header.Get("Location"))
	}
	sw.Set(false)
	if resp, _ := liveGet(t, hs.URL+"/"); !strings.Contains(resp.Header.Get("Location"), "view_only=true") {
		t.Errorf("takeover turned off: GET / sends to %s", resp.Header.Get("Location"))
	}

	hs, _ = startLive(t, LiveOptions{Web: filepath.Join(t.TempDir(), "none")}, Config{})
	if resp, body := liveGet(t, hs.URL+"/vnc.html"); resp.StatusCode != 404 || !strings.Contains(body, "noVNC is not installed") {
		t.Errorf("without noVNC: %d %q", resp.StatusCode, body)
	}
}

// The WebSocket carries the RFB stream in binary frames; it opens for
// clients without an Origin, for the page's own origin and for allowed
// ones, never for another page's, and no name may be the Host.
func TestLiveWebSocket(t *testing.T) {
	hs, ev := startLive(t, LiveOptions{}, Config{AllowOrigins: []string{"https://dash.example"}, AllowHosts: []string{"vm-1.lan"}})
	wsURL := "ws" + strings.TrimPrefix(hs.URL, "http") + "/websockify"
	host := strings.TrimPrefix(hs.URL, "http://")
	for _, origin := range []string{hs.URL, "https://dash.example"} {
		ws, err := websocket.Dial(wsURL, "", origin)
		if err != nil {
			t.Errorf("origin %q: %v", origin, err)
			continue
		}
		msg := make([]byte, 12)
		if _, err := io.ReadFull(ws, msg); err != nil || string(msg) != "RFB 003.008\n" {
			t.Errorf("origin %q: read %q %v", origin, msg, err)
		}
		ws.Close()
	}
	upgrade := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="}
	for _, h := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "null"},
		{"Origin", "http://" + host + ".evil.example"},
		{"Host", "evil.example"},
	} {
		hdr := append(append([]string{}, upgrade...), h...)
		if resp, _ := liveGet(t, hs.URL+"/websockify", hdr...); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%v: %d, want 403", h, resp.StatusCode)
		}
	}
	if resp, _ := liveGet(t, hs.URL+"/vnc.html", "Host", "vm-1.lan:8006"); resp.StatusCode != 200 {
		t.Errorf("an allowed host name: %d", resp.StatusCode)
	}
	if n := ev.served.Load(); n != 2 {
		t.Errorf("a refused request reached the RFB server (%d served, 2 before)", n)
	}
	// No Origin: not a page (x/net's client always sends one).
	if resp, _ := liveGet(t, hs.URL+"/websockify", upgrade...); resp.StatusCode != http.StatusSwitchingProtocols {
		t.Errorf("no Origin: %d, want 101", resp.StatusCode)
	}
}

// stillScreen is a screen that never changes.
type stillScreen struct{ started bool }

func (s *stillScreen) Wait(ctx context.Context) error {
	if !s.started {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *stillScreen) Update(_ context.Context, fb *image.RGBA) (*image.RGBA, []image.Rectangle, error) {
	if s.started {
		return fb, nil, nil
	}
	s.started = true
	fb = image.NewRGBA(image.Rect(0, 0, 1024, 1024))
	return fb, []image.Rectangle{fb.Rect}, nil
}

func (s *stillScreen) Close() error { return nil }

// A viewer whose browser stopped reading (a frozen tab) holds a write of
// its WebSocket; closing the live view still ends it. (x/net's Close
// writes a close frame under the lock that write holds.)
func TestLiveStuckViewer(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	viewers, err := rfb.NewServer(rfb.Options{Open: func() (rfb.Screen, error) { return &stillScreen{}, nil }, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLive(Config{Logger: log}, LiveOptions{Web: t.TempDir()}, viewers)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(l)
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(hs.URL, "http")+"/websockify", "", hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.PayloadType = websocket.BinaryFrame
	c, err := rfb.NewClient(ws)
	if err != nil {
		t.Fatal(err)
	}
	c.Request(false) // 4 MiB that nobody reads
	deadline := time.Now().Add(10 * time.Second)
	for viewers.Viewers() != 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the write fill the socket's buffers
	done := make(chan struct{})
	go func() {
		l.Close()
		viewers.Close()
		hs.Close() // waits for the WebSocket's handler
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the live view hangs on a viewer that reads nothing")
	}
}
