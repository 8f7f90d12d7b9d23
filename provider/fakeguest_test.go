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
	"strings"
	"sync"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

// fakeGuest is every fake desktop's guestd: testutil's FakeGuest, which the
// manager's guest client reaches whatever desktop address it dials,
// answering /screenshot with a screen of one colour and /live_view as
// guestd's takeover switch.
type fakeGuest struct {
	*testutil.FakeGuest

	mu       sync.Mutex
	color    color.RGBA
	takeover bool
}

func newFakeGuest(t *testing.T) *fakeGuest {
	g := &fakeGuest{FakeGuest: testutil.NewFakeGuest(t), color: color.RGBA{0, 0, 255, 255}}
	g.Handle("/screenshot", g.screenshot)
	g.Handle("/live_view", g.liveView)
	return g
}

// install points m's guest client at g.
func (g *fakeGuest) install(m *Manager) {
	addr := strings.TrimPrefix(g.URL(), "http://")
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

// screenshots are the screenshots served.
func (g *fakeGuest) screenshots() int { return len(g.Requests("/screenshot")) }

// takeoverOn is the takeover switch.
func (g *fakeGuest) takeoverOn() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.takeover
}

func (g *fakeGuest) screenshot(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	c := g.color
	g.mu.Unlock()
	img := image.NewRGBA(image.Rect(0, 0, 1280, 720))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, 255
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	w.Header().Set("Content-Type", "image/png")
	_, _ = w.Write(b.Bytes())
}

func (g *fakeGuest) liveView(w http.ResponseWriter, r *http.Request) {
	var req struct{ Takeover *bool }
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if req.Takeover != nil {
		g.takeover = *req.Takeover
	}
	testutil.WriteJSON(w, http.StatusOK, map[string]bool{"takeover": g.takeover})
}
