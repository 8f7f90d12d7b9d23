package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/browsertest"
	"github.com/drums-dev/drums/provider/client"
)

// thumbGreen is, in the page's thumbnail of one desktop, the share of
// pixels of the root colour the test sets; -1 until the thumbnail has
// loaded. The thumbnail is the page's own (same-origin) image, so a
// canvas may read it.
const thumbGreen = `((id) => {
	const img = [...document.querySelectorAll('img.thumb')].find(i => i.dataset.id === id);
	if (!img || !img.complete || !img.naturalWidth) return -1;
	const c = document.createElement('canvas');
	c.width = img.naturalWidth; c.height = img.naturalHeight;
	const g = c.getContext('2d');
	g.drawImage(img, 0, 0);
	const d = g.getImageData(0, 0, c.width, c.height).data;
	let n = 0;
	for (let i = 0; i < d.length; i += 4) if (d[i] < 16 && d[i+1] > 239 && d[i+2] < 16) n++;
	return n / (c.width * c.height);
})(%q)`

// A person's view of a real daemon: drums ui, in the osworld image with
// Debian's Chromium, reaches the daemon's unix socket; the page lists the
// daemon's desktops (a leased one and the warm one the pool keeps) with
// their state, holder and live-view link, and the leased one's thumbnail
// turns green after an /execute turns its screen green.
func TestTier1PageInChromium(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity, cfg.PoolSize = 2, 1
	cfg.Width, cfg.Height = 640, 480
	h, _ := startReal(t, cfg)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Holder: "the page test"})
	if err != nil {
		t.Fatal(err)
	}
	h.waitReady(1)
	want, err := h.c.List(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, x := range want {
		ids = append(ids, x.ID)
	}
	slices.Sort(ids)

	b := browsertest.Start(t, browsertest.Options{
		Image: "osworld", Drums: tier1Env.drums,
		Binds:  []string{filepath.Dir(cfg.Socket), filepath.Dir(tier1Env.drums)},
		Before: fmt.Sprintf("%s ui --daemon %s --listen 127.0.0.1:8080", tier1Env.drums, cfg.Socket),
	})
	url := b.WaitLine(t, regexp.MustCompile(`^drums ui: open (http://127\.0\.0\.1:8080/\S+)$`))[1]
	p := b.OpenPage(t)
	p.Navigate(t, url)

	p.WaitEval(t, "the page to list the daemon's desktops", fmt.Sprintf(`(() => {
		const ids = [...document.querySelectorAll('article.desktop')].map(a => a.dataset.id).sort();
		return JSON.stringify(ids) === %q ? 1 : 0;
	})()`, mustJSON(ids)), func(n float64) bool { return n == 1 })
	card := func(field string) string {
		var s string
		p.Eval(t, fmt.Sprintf(`[...document.querySelectorAll('article.desktop')].find(a => a.dataset.id === %q).querySelector(%q).textContent`, d.ID, field), &s)
		return s
	}
	if got := card(".state"); got != client.StateLeased {
		t.Errorf("state %q, want leased", got)
	}
	if got := card(".holder"); got != "the page test" {
		t.Errorf("holder %q", got)
	}
	if got, want := card(".live-link"), "http://"+d.Address+":8006/"; got != want {
		t.Errorf("live view link %q, want %q", got, want)
	}
	if n := p.WaitEval(t, "the thumbnail", fmt.Sprintf(thumbGreen, d.ID), func(n float64) bool { return n >= 0 }); n > 0.01 {
		t.Fatalf("%.0f%% of the thumbnail green before the action", 100*n)
	}
	guestExec(t, d, "xsetroot -solid '#00ff00'")
	p.WaitEval(t, "the thumbnail to turn green", fmt.Sprintf(thumbGreen, d.ID), func(n float64) bool { return n > 0.5 })
	var charts float64
	p.Eval(t, `document.querySelectorAll('#charts polyline').length`, &charts)
	if charts < 9 {
		t.Errorf("%v chart lines, want the 9 series", charts)
	}

	// Takeover through the daemon reaches the desktop's guestd: its live
	// view's page stops opening view-only, and the daemon's page says so.
	if !liveViewOnly(t, d) {
		t.Fatal("a new lease's live view is not view-only")
	}
	if d, err = h.c.Takeover(h.ctx, d.ID, true); err != nil || !d.Takeover {
		t.Fatalf("takeover: %+v %v", d, err)
	}
	if liveViewOnly(t, d) {
		t.Error("with takeover on, the live view still opens view-only")
	}
	p.WaitEval(t, "the page to show takeover", fmt.Sprintf(`[...document.querySelectorAll('article.desktop')].find(a => a.dataset.id === %q).querySelector('.takeover').textContent === '(takeover on)' ? 1 : 0`, d.ID),
		func(n float64) bool { return n == 1 })
	if d, err = h.c.Takeover(h.ctx, d.ID, false); err != nil || d.Takeover || !liveViewOnly(t, d) {
		t.Errorf("takeover off: %+v %v", d, err)
	}
}

// liveViewOnly reports whether d's live view (port 8006) sends a browser
// to noVNC's page view-only.
func liveViewOnly(t *testing.T, d client.Desktop) bool {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get("http://" + d.Address + ":8006/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(loc, "/vnc.html?") {
		t.Fatalf("GET %s:8006/: %s, Location %q", d.Address, resp.Status, loc)
	}
	return strings.Contains(loc, "view_only=true")
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
