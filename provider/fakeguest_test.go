package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeGuest is every fake desktop's guestd: one loopback server that the
// manager's guest client reaches whatever desktop address it dials. It
// answers /screenshot with a screen of one colour, and /live_view as
// guestd's takeover switch.
type fakeGuest struct {
	srv *httptest.Server

	mu       sync.Mutex
	color    color.RGBA
	shots    int      // screenshots served
	hosts    []string // the Host of each request: the desktops asked
	takeover bool
}

func newFakeGuest(t *testing.T) *fakeGuest {
	g := &fakeGuest{color: color.RGBA{0, 0, 255, 255}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

// install points m's guest client at g.
func (g *fakeGuest) install(m *Manager) {
	addr := g.srv.Listener.Addr().String()
	var d net.Dialer
	m.thumbs.http = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}}
}

func (g *fakeGuest) setColor(c color.RGBA) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.color = c
}

func (g *fakeGuest) screenshots() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shots
}

func (g *fakeGuest) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hosts = append(g.hosts, r.Host)
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/screenshot":
		g.shots++
		img := image.NewRGBA(image.Rect(0, 0, 1280, 720))
		for i := 0; i < len(img.Pix); i += 4 {
			img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = g.color.R, g.color.G, g.color.B, 255
		}
		var b bytes.Buffer
		_ = png.Encode(&b, img)
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(b.Bytes())
	case r.Method == http.MethodPost && r.URL.Path == "/live_view":
		var req struct{ Takeover *bool }
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if req.Takeover != nil {
			g.takeover = *req.Takeover
		}
		_ = json.NewEncoder(w).Encode(map[string]bool{"takeover": g.takeover})
	default:
		http.NotFound(w, r)
	}
}
