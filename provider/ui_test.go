package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/provider/client"
)

// fakeClock is a time the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// get is a GET through h, answered in memory.
func get(h http.Handler, path string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Thumbnails are the desktop's screen scaled to thumbWidth, fetched once
// per thumbTTL however many viewers ask, and fetched again after it.
func TestThumbnails(t *testing.T) {
	cfg := testConfig(t.TempDir())
	m, _ := contractManager(t, cfg)
	g := newFakeGuest(t)
	g.install(m)
	clock := &fakeClock{t: time.Now()}
	m.thumbs.now = clock.now
	h := newAPI(m, "", "")
	d, err := m.Lease(context.Background(), client.LeaseRequest{Width: 1280, Height: 720})
	if err != nil {
		t.Fatal(err)
	}
	path := "/ui/api/desktops/" + d.ID + "/thumbnail"
	colorOf := func(rec *httptest.ResponseRecorder) color.RGBA {
		t.Helper()
		if rec.Code != 200 || rec.Header().Get("Content-Type") != "image/png" {
			t.Fatalf("GET %s: %d %s %q", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
		img, err := png.Decode(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		if b := img.Bounds(); b.Dx() != thumbWidth || b.Dy() != thumbWidth*720/1280 {
			t.Errorf("thumbnail %v, want %dx%d", b, thumbWidth, thumbWidth*720/1280)
		}
		r, gr, b, _ := img.At(10, 10).RGBA()
		return color.RGBA{uint8(r >> 8), uint8(gr >> 8), uint8(b >> 8), 255}
	}
	var wg sync.WaitGroup
	recs := make([]*httptest.ResponseRecorder, 20)
	for i := range recs {
		wg.Add(1)
		go func() { defer wg.Done(); recs[i] = get(h, path) }()
	}
	wg.Wait()
	for _, rec := range recs {
		if c := colorOf(rec); c != (color.RGBA{0, 0, 255, 255}) {
			t.Errorf("thumbnail colour %v, want the screen's blue", c)
		}
	}
	if n := g.screenshots(); n != 1 {
		t.Errorf("20 viewers took %d screenshots, want 1", n)
	}
	g.setColor(color.RGBA{255, 0, 0, 255})
	if c := colorOf(get(h, path)); c.B != 255 || g.screenshots() != 1 {
		t.Errorf("within thumbTTL: colour %v after %d screenshots, want the cached blue", c, g.screenshots())
	}
	clock.add(thumbTTL + time.Millisecond)
	if c := colorOf(get(h, path)); c != (color.RGBA{255, 0, 0, 255}) || g.screenshots() != 2 {
		t.Errorf("after thumbTTL: colour %v after %d screenshots, want a new red one", c, g.screenshots())
	}
	if host := g.Requests("/screenshot")[0].Host; host != d.Address+":5000" {
		t.Errorf("the screenshot was asked of %q, want the desktop's guestd %s:5000", host, d.Address)
	}

	if rec := get(h, "/ui/api/desktops/no-such/thumbnail"); rec.Code != 404 {
		t.Errorf("unknown desktop: %d %s", rec.Code, rec.Body)
	}
	if err := m.Release(d.ID); err != nil {
		t.Fatal(err)
	}
	if rec := get(h, path); rec.Code != 404 {
		t.Errorf("released desktop: %d %s", rec.Code, rec.Body)
	}
}

func TestScaleDown(t *testing.T) {
	src := image.NewRGBA(image.Rect(0, 0, 4, 2))
	for x := range 4 {
		for y := range 2 {
			v := uint8(40 * (x + 4*y)) // 0 40 80 120 / 160 200 240 280%256
			src.Set(x, y, color.RGBA{v, 0, 0, 255})
		}
	}
	got := scaleDown(src, 2).(*image.RGBA)
	// Each output pixel averages a 2x2 block.
	want := []uint8{uint8((0 + 40 + 160 + 200) / 4), uint8((80 + 120 + 240 + 24) / 4)}
	for x, w := range want {
		if r := got.RGBAAt(x, 0).R; r != w {
			t.Errorf("pixel %d: %d, want %d", x, r, w)
		}
	}
	if b := got.Bounds(); b.Dx() != 2 || b.Dy() != 1 {
		t.Errorf("bounds %v", b)
	}
	if scaleDown(src, 8) != image.Image(src) {
		t.Error("an image narrower than the thumbnail was scaled")
	}
}

// GET /ui/api/metrics is the drums_* series as JSON for the charts.
func TestMetricsSummary(t *testing.T) {
	cfg := testConfig(t.TempDir())
	m, _ := contractManager(t, cfg)
	if _, err := m.Lease(context.Background(), client.LeaseRequest{}); err != nil {
		t.Fatal(err)
	}
	rec := get(newAPI(m, "", ""), "/ui/api/metrics")
	var series []Series
	if err := json.Unmarshal(rec.Body.Bytes(), &series); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s %v", rec.Code, rec.Body, err)
	}
	found := map[string]string{}
	for _, s := range series {
		if !strings.HasPrefix(s.Name, "drums_") {
			t.Errorf("series %s is not drums'", s.Name)
		}
		switch {
		case s.Value != nil:
			found[s.Name+" "+fmt.Sprint(s.Labels)] = fmt.Sprint(*s.Value)
		case s.Count != nil && s.Sum != nil:
			found[s.Name+" "+fmt.Sprint(s.Labels)] = fmt.Sprint(*s.Count)
		}
	}
	for k, v := range map[string]string{
		"drums_capacity map[]":                 fmt.Sprint(cfg.Capacity),
		"drums_desktops map[state:leased]":     "1",
		"drums_lease_seconds map[source:cold]": "1",
		"drums_create_seconds map[]":           "1",
		"drums_leases_expired_total map[]":     "0",
		"drums_desktops map[state:recycling]":  "0",
	} {
		if found[k] != v {
			t.Errorf("%s: %q, want %q (all: %v)", k, found[k], v, found)
		}
	}
}

// On the TCP listener the page and its data need the token: as a bearer
// header, or for reads the cookie that the login form hands out for it.
func TestPageAuthOnTCP(t *testing.T) {
	m, _ := contractManager(t, testConfig(t.TempDir()))
	const token = "s3cret"
	h := newAPI(m, token, "7070")
	if rec := get(h, "/ui/"); rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != uiLoginPath {
		t.Errorf("GET /ui/ without the token: %d %v", rec.Code, rec.Header())
	}
	for _, p := range []string{"/ui/ui.js", "/ui/api/metrics", "/v1/desktops", "/metrics"} {
		if rec := get(h, p); rec.Code != http.StatusUnauthorized && rec.Code != http.StatusSeeOther {
			t.Errorf("GET %s without the token: %d", p, rec.Code)
		}
	}
	if rec := get(h, uiLoginPath); rec.Code != 200 || !strings.Contains(rec.Body.String(), `name="token"`) {
		t.Errorf("the login form: %d %s", rec.Code, rec.Body)
	}
	login := func(tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, uiLoginPath, strings.NewReader("token="+tok))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := login("wrong"); rec.Code != http.StatusUnauthorized || len(rec.Result().Cookies()) != 0 {
		t.Errorf("a wrong token: %d %v", rec.Code, rec.Result().Cookies())
	}
	rec := login(token)
	cookies := rec.Result().Cookies()
	if rec.Code != http.StatusSeeOther || len(cookies) != 1 {
		t.Fatalf("the token: %d %v", rec.Code, cookies)
	}
	ck := cookies[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Value == token || ck.Name != "drums-ui-7070" {
		t.Errorf("the cookie %+v: want HttpOnly, SameSite=Strict, named by the port, not the token", ck)
	}
	if rec := get(h, "/ui/", ck); rec.Code != 200 || !strings.Contains(rec.Body.String(), "ui.js") ||
		!strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Errorf("GET /ui/ with the cookie: %d %v", rec.Code, rec.Header())
	}
	for _, p := range []string{"/ui/ui.js", "/ui/api/metrics", "/v1/desktops", "/v1/health"} {
		if rec := get(h, p, ck); rec.Code != 200 {
			t.Errorf("GET %s with the cookie: %d %s", p, rec.Code, rec.Body)
		}
	}
	// The cookie only reads: a lease with it is refused.
	req := httptest.NewRequest(http.MethodPost, "/v1/desktops", strings.NewReader(`{}`))
	req.AddCookie(ck)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnauthorized || len(m.List()) != 0 {
		t.Errorf("POST /v1/desktops with the cookie: %d, %d desktops", rec.Code, len(m.List()))
	}
	forged := *ck
	forged.Value = "guess"
	if rec := get(h, "/v1/desktops", &forged); rec.Code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", rec.Code)
	}
	// The unix socket's API (no token) serves the page at once.
	if rec := get(newAPI(m, "", ""), "/ui/"); rec.Code != 200 {
		t.Errorf("GET /ui/ on the socket: %d", rec.Code)
	}
}

// drums ui's proxy: nothing without its cookie, the cookie for the
// one-time code (once), then the daemon's reads, never a write.
func TestUIProxy(t *testing.T) {
	m, _ := contractManager(t, testConfig(t.TempDir()))
	const token = "s3cret"
	daemon := httptest.NewServer(newAPI(m, token, "7070"))
	t.Cleanup(daemon.Close)
	c, err := client.New(daemon.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	p := NewUIProxy(c, "8123")
	ps := httptest.NewServer(p)
	t.Cleanup(ps.Close)
	do := func(hc *http.Client, method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, ps.URL+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	anon := &http.Client{}
	if st, _ := do(anon, "GET", "/ui/"); st != http.StatusUnauthorized {
		t.Errorf("GET /ui/ without the cookie: %d", st)
	}
	if st, _ := do(anon, "GET", uiLoginPath+"?code=wrong"); st != http.StatusUnauthorized {
		t.Errorf("a wrong code: %d", st)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	login := p.LoginPath()
	if st, body := do(browser, "GET", login); st != 200 || !strings.Contains(body, "ui.js") {
		t.Fatalf("the login URL: %d %q", st, body)
	}
	if st, _ := do(anon, "GET", login); st != http.StatusUnauthorized {
		t.Errorf("the login URL a second time: %d", st)
	}
	st, body := do(browser, "GET", "/v1/health")
	var hl client.Health
	if err := json.Unmarshal([]byte(body), &hl); st != 200 || err != nil || hl.Status != "ok" {
		t.Errorf("GET /v1/health through the proxy: %d %q", st, body)
	}
	if st, _ := do(browser, "POST", "/v1/desktops"); st != http.StatusUnauthorized || len(m.List()) != 0 {
		t.Errorf("POST through the proxy: %d, %d desktops", st, len(m.List()))
	}
}

// A lease records its holder: the one it names, else the process on the
// other end of the unix socket; it ends with the lease.
func TestLeaseHolder(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	comm, _ := os.ReadFile("/proc/self/comm")
	want := fmt.Sprintf("pid %d (%s) uid %d", os.Getpid(), bytes.TrimSpace(comm), os.Getuid())
	if d.Holder != want {
		t.Errorf("holder %q, want %q", d.Holder, want)
	}
	named, err := h.c.Lease(h.ctx, client.LeaseRequest{Holder: "run 7 on host-a"})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := h.c.Revert(h.ctx, named.ID, "")
	if err != nil || rv.Holder != "run 7 on host-a" {
		t.Errorf("after a revert: holder %q, %v", rv.Holder, err)
	}
	if err := h.c.Release(h.ctx, rv.ID); err != nil {
		t.Fatal(err)
	}
	for _, x := range h.srv.Manager().List() {
		if x.Holder != "" && x.ID != d.ID {
			t.Errorf("desktop %s (%s) keeps holder %q after its release", x.ID, x.State, x.Holder)
		}
	}
}

// Takeover goes to the desktop's guestd, is reported on the desktop, is
// kept by a renew and ends with a reset; only a leased desktop takes it.
func TestTakeover(t *testing.T) {
	m, _ := contractManager(t, testConfig(t.TempDir()))
	g := newFakeGuest(t)
	g.install(m)
	ctx := context.Background()
	d, err := m.Lease(ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Takeover {
		t.Error("a new lease has takeover on")
	}
	if d, err = m.Takeover(ctx, d.ID, true); err != nil || !d.Takeover || !g.takeoverOn() {
		t.Fatalf("takeover on: %+v %v, guest %v", d, err, g.takeoverOn())
	}
	if d, err = m.Renew(d.ID, 0); err != nil || !d.Takeover {
		t.Errorf("after a renew: %+v %v", d, err)
	}
	if d, err = m.Revert(ctx, d.ID, ""); err != nil || d.Takeover {
		t.Errorf("after a revert (guestd started again): %+v %v", d, err)
	}
	if d, err = m.Takeover(ctx, d.ID, true); err != nil || !d.Takeover {
		t.Fatal(d, err)
	}
	if d, err = m.Takeover(ctx, d.ID, false); err != nil || d.Takeover || g.takeoverOn() {
		t.Errorf("takeover off: %+v %v, guest %v", d, err, g.takeoverOn())
	}
	if err := m.Release(d.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Takeover(ctx, d.ID, true); err == nil {
		t.Error("takeover of a released desktop succeeded")
	}
}

func TestCheckHolder(t *testing.T) {
	for h, ok := range map[string]bool{"": true, "run 7 on host-a": true, "é" + strings.Repeat("x", maxHolder-1): true,
		strings.Repeat("x", maxHolder+1): false, "a\nb": false, "a\x7f": false} {
		if err := checkHolder(h); (err == nil) != ok {
			t.Errorf("checkHolder(%q): %v", h, err)
		}
	}
}
