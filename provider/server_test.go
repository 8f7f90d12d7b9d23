package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/provider/client"
)

// testDeadline bounds every wait in these tests; generous for a loaded CI
// machine, and never a timing assertion.
const testDeadline = 30 * time.Second

type harness struct {
	t   *testing.T
	cfg Config
	eng *fakeEngine
	srv *Server
	c   *client.Client
	ctx context.Context
}

// testConfig is a daemon config whose socket and state live under dir.
func testConfig(dir string) Config {
	cfg := DefaultConfig()
	cfg.Socket = filepath.Join(dir, "d.sock")
	cfg.StateDir = filepath.Join(dir, "state")
	cfg.Capacity = 4
	cfg.PoolSize = 0
	return cfg
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// start runs a daemon over eng with cfg and returns a client on its socket;
// the daemon stops (draining its desktops) when the test ends.
func start(t *testing.T, cfg Config, eng *fakeEngine) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	t.Cleanup(cancel)
	srv, err := NewServer(cfg, eng, testLogger(t))
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start server: %v", err)
	}
	h := &harness{t: t, cfg: cfg, eng: eng, srv: srv, ctx: ctx}
	t.Cleanup(func() { h.stop(true) })
	c, err := client.New(cfg.Socket, "")
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(c.Close)
	h.c = c
	return h
}

// stop shuts the daemon down; idempotent.
func (h *harness) stop(drain bool) {
	if h.srv == nil {
		return
	}
	h.srv.cfg.DrainOnExit = drain
	if err := h.srv.Shutdown(context.Background()); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
	h.srv = nil
}

// waitReady waits until the daemon holds n warm desktops.
func (h *harness) waitReady(n int) {
	h.t.Helper()
	deadline := time.Now().Add(testDeadline)
	for {
		hl, err := h.c.Health(h.ctx)
		if err != nil {
			h.t.Fatalf("health: %v", err)
		}
		if hl.Desktops[client.StateReady] >= n && hl.Desktops[client.StateCreating] == 0 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("pool never reached %d ready desktops: %v", n, hl.Desktops)
		}
		time.Sleep(10 * time.Millisecond) // polling the pool: there is nothing to await
	}
}

// waitEvent waits for the fake engine to report one of want ("remove
// fake-3") and returns it.
func (h *harness) waitEvent(want ...string) string {
	h.t.Helper()
	timeout := time.After(testDeadline)
	for {
		select {
		case ev := <-h.eng.events:
			for _, w := range want {
				if ev == w {
					return ev
				}
			}
		case <-timeout:
			h.t.Fatalf("engine never saw any of %q", want)
		}
	}
}

// waitGone waits until the daemon no longer knows id (a released or expired
// desktop is removed in the background).
func waitGone(t *testing.T, c *client.Client, id string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, err := c.Get(context.Background(), id)
		if errors.Is(err, client.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("desktop %s still known: %v", id, err)
		}
		time.Sleep(50 * time.Millisecond) // background removal: nothing to await
	}
}

func wantCode(t *testing.T, err error, sentinel error, status int) {
	t.Helper()
	var e *client.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v: want a daemon error", err)
	}
	if !errors.Is(err, sentinel) || e.Status != status || e.Message == "" {
		t.Fatalf("error %+v: want %v with HTTP %d and a message", e, sentinel, status)
	}
}

func TestLeaseGetListRelease(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1280, Height: 720, LeaseSeconds: 60})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if d.State != client.StateLeased || d.Width != 1280 || d.Height != 720 || d.Address == "" ||
		d.GuestPort != 5000 || d.GuestURL != fmt.Sprintf("http://%s:5000", d.Address) || d.LeaseExpires.IsZero() {
		t.Fatalf("leased desktop %+v", d)
	}
	if left := time.Until(d.LeaseExpires); left <= 0 || left > 61*time.Second {
		t.Fatalf("lease expires in %s, want about 60s", left)
	}
	got, err := h.c.Get(h.ctx, d.ID)
	if err != nil || got.ID != d.ID || got.State != client.StateLeased {
		t.Fatalf("get %s: %+v, %v", d.ID, got, err)
	}
	list, err := h.c.List(h.ctx)
	if err != nil || len(list) != 1 || list[0].ID != d.ID {
		t.Fatalf("list: %+v, %v", list, err)
	}
	r, err := h.c.Renew(h.ctx, d.ID, 300)
	if err != nil || !r.LeaseExpires.After(d.LeaseExpires) {
		t.Fatalf("renew: %+v, %v", r, err)
	}
	if err := h.c.Release(h.ctx, d.ID); err != nil {
		t.Fatalf("release: %v", err)
	}
	h.waitEvent("remove " + sessionOf(d.ID)) // pool size 0: released desktops are removed
	waitGone(t, h.c, d.ID)                   // and then forgotten
	if err := h.c.Release(h.ctx, d.ID); err != nil {
		t.Fatalf("second release must succeed: %v", err)
	}
	_, err = h.c.Get(h.ctx, d.ID)
	wantCode(t, err, client.ErrNotFound, http.StatusNotFound)
}

func TestWarmPool(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize = 2
	cfg.Warm = []Shape{{Width: 1024, Height: 768}}
	h := start(t, cfg, newFakeEngine())
	h.waitReady(2)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if time.Until(d.LeaseExpires) > cfg.LeaseTime {
		t.Fatalf("default lease longer than %s: %+v", cfg.LeaseTime, d)
	}
	h.waitReady(2) // refilled in the background
	// A revert swaps in a warm desktop: a new id, and the old one goes back
	// to the pool through a reset.
	r, err := h.c.Revert(h.ctx, d.ID, "")
	if err != nil {
		t.Fatalf("revert: %v", err)
	}
	if r.ID == d.ID || r.State != client.StateLeased {
		t.Fatalf("revert with a warm pool kept %s: %+v", d.ID, r)
	}
	_, err = h.c.Renew(h.ctx, d.ID, 0)
	if err == nil {
		t.Fatalf("renew of the swapped-out desktop %s succeeded", d.ID)
	}
	for _, q := range []string{"drums_lease_seconds_bucket{source=\"warm\"", "drums_revert_seconds_count{mode=\"swap\"} 1", "drums_desktops{state=\"leased\"} 1"} {
		if !strings.Contains(metricsText(t, h), q) {
			t.Errorf("metrics lack %q:\n%s", q, metricsText(t, h))
		}
	}
}

func dialUnix(ctx context.Context, path string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "unix", path)
}

func metricsText(t *testing.T, h *harness) string {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, h.cfg.Socket)
	}}}
	resp, err := hc.Get("http://drums/metrics")
	if err != nil {
		t.Fatalf("get metrics: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	return string(b)
}

func TestRevertAndSnapshots(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if d.Width != 1920 || d.Height != 1080 {
		t.Fatalf("default size: %+v", d)
	}
	h.eng.write(d.ID, "before.txt", "hello")
	s, err := h.c.SaveSnapshot(h.ctx, d.ID, "with-file")
	if err != nil || s.Name != "with-file" || s.Source != d.ID {
		t.Fatalf("save snapshot: %+v, %v", s, err)
	}
	h.eng.write(d.ID, "after.txt", "later")

	// A plain revert (empty pool): same desktop, reset, no files.
	r, err := h.c.Revert(h.ctx, d.ID, "")
	if err != nil || r.ID != d.ID {
		t.Fatalf("plain revert: %+v, %v", r, err)
	}
	if h.eng.has(r.ID, "before.txt") || h.eng.has(r.ID, "after.txt") {
		t.Fatalf("plain revert kept files")
	}
	// Revert to the snapshot: the file written before save_state is back,
	// the one written after is not.
	r, err = h.c.Revert(h.ctx, r.ID, "with-file")
	if err != nil || r.Snapshot != "with-file" {
		t.Fatalf("revert to snapshot: %+v, %v", r, err)
	}
	if !h.eng.has(r.ID, "before.txt") || h.eng.has(r.ID, "after.txt") {
		t.Fatalf("revert to snapshot: files wrong")
	}
	// Resetting a snapshot desktop in place keeps the snapshot's files.
	r2, err := h.c.Revert(h.ctx, r.ID, "with-file")
	if err != nil || r2.ID != r.ID || !h.eng.has(r2.ID, "before.txt") {
		t.Fatalf("reset in place of a snapshot desktop: %+v, %v", r2, err)
	}
	// A lease from the snapshot starts with its files.
	l, err := h.c.Lease(h.ctx, client.LeaseRequest{Snapshot: "with-file"})
	if err != nil || !h.eng.has(l.ID, "before.txt") {
		t.Fatalf("lease from snapshot: %+v, %v", l, err)
	}
	ss, err := h.c.Snapshots(h.ctx)
	if err != nil || len(ss) != 1 || ss[0].Name != "with-file" {
		t.Fatalf("snapshots: %+v, %v", ss, err)
	}
	if err := h.c.DeleteSnapshot(h.ctx, "with-file"); err != nil {
		t.Fatalf("delete snapshot: %v", err)
	}
	if err := h.c.DeleteSnapshot(h.ctx, "with-file"); err != nil {
		t.Fatalf("second delete must succeed: %v", err)
	}
	_, err = h.c.Lease(h.ctx, client.LeaseRequest{Snapshot: "with-file"})
	wantCode(t, err, client.ErrNotFound, http.StatusNotFound)
	// The name is gone: a desktop started from it keeps running, but a
	// revert to it is an unknown snapshot.
	_, err = h.c.Revert(h.ctx, l.ID, "with-file")
	wantCode(t, err, client.ErrNotFound, http.StatusNotFound)
}

func TestErrors(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 2
	h := start(t, cfg, newFakeEngine())
	c := h.c
	_, err := c.Get(h.ctx, "nope")
	wantCode(t, err, client.ErrNotFound, 404)
	_, err = c.Revert(h.ctx, "nope", "")
	wantCode(t, err, client.ErrNotFound, 404)
	_, err = c.Renew(h.ctx, "nope", 10)
	wantCode(t, err, client.ErrNotFound, 404)
	_, err = c.SaveSnapshot(h.ctx, "nope", "x")
	wantCode(t, err, client.ErrNotFound, 404)
	for _, req := range []client.LeaseRequest{
		{Width: 10, Height: 10}, {Width: 100000, Height: 1080}, {Width: 1920}, {LeaseSeconds: -1},
		{LeaseSeconds: 1 << 30}, {Snapshot: "../etc"}, {Limits: client.Limits{Pids: -1}},
	} {
		_, err = c.Lease(h.ctx, req)
		wantCode(t, err, client.ErrBadRequest, 400)
	}
	_, err = c.Lease(h.ctx, client.LeaseRequest{Snapshot: "missing"})
	wantCode(t, err, client.ErrNotFound, 404)
	if !strings.Contains(err.Error(), "missing") {
		t.Fatalf("unknown snapshot error does not name it: %v", err)
	}
	a, err := c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if _, err := c.Lease(h.ctx, client.LeaseRequest{}); err != nil {
		t.Fatalf("lease: %v", err)
	}
	_, err = c.Lease(h.ctx, client.LeaseRequest{})
	wantCode(t, err, client.ErrCapacity, 503)
	_, err = c.Revert(h.ctx, a.ID, "missing")
	wantCode(t, err, client.ErrNotFound, 404)
	_, err = c.SaveSnapshot(h.ctx, a.ID, "bad/name")
	wantCode(t, err, client.ErrBadRequest, 400)

	// Raw requests: bad JSON, unknown fields, empty required body, unknown
	// route, wrong method. Every answer is the JSON error body.
	for _, rc := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/desktops", "{", 400},
		{"POST", "/v1/desktops", `{"widht": 5}`, 400},
		{"POST", "/v1/desktops", `{"width": "wide"}`, 400},
		{"POST", "/v1/desktops", `{} {}`, 400},
		{"POST", "/v1/desktops/" + a.ID + "/snapshots", ``, 400},
		{"GET", "/v2/desktops", ``, 404},
		{"PUT", "/v1/desktops", `{}`, 405},
	} {
		status, body := raw(t, h, rc.method, rc.path, rc.body)
		if status != rc.status || !strings.Contains(body, `"error":{"code":"`) {
			t.Errorf("%s %s %q: %d %s; want %d with an error body", rc.method, rc.path, rc.body, status, body, rc.status)
		}
	}
	// The daemon is still fine.
	if _, err := c.Health(h.ctx); err != nil {
		t.Fatalf("health after bad requests: %v", err)
	}
}

func raw(t *testing.T, h *harness, method, path, body string) (int, string) {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, h.cfg.Socket)
	}}}
	req, _ := http.NewRequest(method, "http://drums"+path, strings.NewReader(body))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestLeaseExpiry(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{LeaseSeconds: 1})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	kept, err := h.c.Lease(h.ctx, client.LeaseRequest{LeaseSeconds: 1})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if _, err := h.c.Renew(h.ctx, kept.ID, 600); err != nil {
		t.Fatalf("renew: %v", err)
	}
	h.waitEvent("remove " + sessionOf(d.ID))
	waitGone(t, h.c, d.ID)
	if g, err := h.c.Get(h.ctx, kept.ID); err != nil || g.State != client.StateLeased {
		t.Fatalf("renewed desktop: %+v, %v", g, err)
	}
	if !strings.Contains(metricsText(t, h), "drums_leases_expired_total 1") {
		t.Fatalf("expiry not counted")
	}
}

func TestSocketModeAndTCPToken(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Listen = "127.0.0.1:0"
	cfg.Token = "s3cret"
	h := start(t, cfg, newFakeEngine())
	fi, err := os.Stat(cfg.Socket)
	if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket %s: %v %v, want a 0600 socket", cfg.Socket, fi.Mode(), err)
	}
	addr := h.srv.TCPAddr()
	anon, _ := client.New("http://"+addr, "")
	_, err = anon.Health(h.ctx)
	wantCode(t, err, client.ErrUnauthorized, 401)
	wrong, _ := client.New("http://"+addr, "nope")
	_, err = wrong.Health(h.ctx)
	wantCode(t, err, client.ErrUnauthorized, 401)
	ok, _ := client.New("http://"+addr+"/", "s3cret")
	if hl, err := ok.Health(h.ctx); err != nil || hl.Status != "ok" {
		t.Fatalf("health over tcp: %+v, %v", hl, err)
	}
	// A second daemon on the same state directory or socket is refused.
	srv2, err := NewServer(cfg, newFakeEngine(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv2.Start(h.ctx); !errors.Is(err, ErrStateLocked) {
		t.Fatalf("second daemon on the same state: %v, want ErrStateLocked", err)
	}
	if _, err := NewServer(Config{Socket: "x", StateDir: "y", Listen: ":1"}, newFakeEngine(), testLogger(t)); err == nil {
		t.Fatalf("--listen without a token accepted")
	}
}

// TestRestartAdopts stops a daemon without draining, as a crash would leave
// things, adds a session no record knows and a record no session backs, and
// checks that the next daemon adopts, removes and forgets accordingly.
func TestRestartAdopts(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize = 1
	eng := newFakeEngine()
	h := start(t, cfg, eng)
	leased, err := h.c.Lease(h.ctx, client.LeaseRequest{LeaseSeconds: 600})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	eng.write(leased.ID, "kept.txt", "x")
	if _, err := h.c.SaveSnapshot(h.ctx, leased.ID, "snap"); err != nil {
		t.Fatalf("save: %v", err)
	}
	h.waitReady(1)
	h.stop(false)
	eng.forget()
	stray := eng.inject()
	ghost := desktopRecord{ID: "fake-ghost", State: client.StateLeased, Shape: Shape{Width: 1920, Height: 1080}, LeaseExpires: time.Now().Add(time.Hour)}
	if err := (&store{dir: cfg.StateDir}).putDesktop(ghost); err != nil {
		t.Fatal(err)
	}

	h2 := start(t, cfg, eng)
	got, err := h2.c.Get(h2.ctx, leased.ID)
	if err != nil || got.State != client.StateLeased || !got.LeaseExpires.Equal(leased.LeaseExpires) {
		t.Fatalf("leased desktop after restart: %+v, %v (was %+v)", got, err, leased)
	}
	if !eng.has(leased.ID, "kept.txt") {
		t.Fatalf("adopted desktop lost its files")
	}
	if _, err := eng.Get(stray); err == nil {
		t.Fatalf("unrecorded session %s survived the restart", stray)
	}
	_, err = h2.c.Get(h2.ctx, ghost.ID)
	wantCode(t, err, client.ErrNotFound, 404)
	if _, err := os.Stat((&store{dir: cfg.StateDir}).desktopPath(ghost.ID)); !os.IsNotExist(err) {
		t.Fatalf("record of a dead desktop kept: %v", err)
	}
	h2.waitReady(1)
	ss, err := h2.c.Snapshots(h2.ctx)
	if err != nil || len(ss) != 1 {
		t.Fatalf("snapshots after restart: %+v, %v", ss, err)
	}
	r, err := h2.c.Revert(h2.ctx, leased.ID, "snap")
	if err != nil || !eng.has(r.ID, "kept.txt") {
		t.Fatalf("revert to a snapshot after restart: %+v, %v", r, err)
	}
	h2.stop(true)
	if n := eng.liveCount(); n != 0 {
		t.Fatalf("%d sessions left after a draining stop", n)
	}
}

// TestConcurrentClients runs many clients at once against a small
// capacity: every call either works or fails with a capacity error, and the
// engine never holds more desktops than the capacity.
func TestConcurrentClients(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 4
	cfg.PoolSize = 1
	eng := newFakeEngine()
	eng.delay = time.Millisecond
	h := start(t, cfg, eng)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 800 + 100*(w%2), Height: 600})
				if errors.Is(err, client.ErrCapacity) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("lease: %w", err)
					return
				}
				if d, err = h.c.Revert(h.ctx, d.ID, ""); err != nil && !errors.Is(err, client.ErrCapacity) {
					errs <- fmt.Errorf("revert: %w", err)
					return
				}
				if err := h.c.Release(h.ctx, d.ID); err != nil {
					errs <- fmt.Errorf("release: %w", err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	eng.mu.Lock()
	maxLive := eng.maxLive
	eng.mu.Unlock()
	if maxLive > cfg.Capacity {
		t.Fatalf("engine held %d desktops at once, capacity %d", maxLive, cfg.Capacity)
	}
}

func TestCreateFailureIsAnError(t *testing.T) {
	eng := newFakeEngine()
	h := start(t, testConfig(t.TempDir()), eng)
	eng.mu.Lock()
	eng.failNext = errors.New("xvfb exploded")
	eng.mu.Unlock()
	_, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	wantCode(t, err, client.ErrInternal, 500)
	if !strings.Contains(err.Error(), "xvfb exploded") {
		t.Fatalf("error hides the cause: %v", err)
	}
	if !strings.Contains(metricsText(t, h), `drums_failures_total{op="create"} 1`) {
		t.Fatalf("failure not counted")
	}
	if _, err := h.c.Lease(h.ctx, client.LeaseRequest{}); err != nil {
		t.Fatalf("lease after a failure: %v", err)
	}
}

// TestDeadWarmDesktopIsNotHandedOut: a warm desktop that died in the pool
// (its X server crashed) is recycled, and the lease gets a working one.
func TestDeadWarmDesktopIsNotHandedOut(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize = 1
	cfg.Warm = []Shape{{Width: 1024, Height: 768}}
	h := start(t, cfg, newFakeEngine())
	h.waitReady(1)
	list, err := h.c.List(h.ctx)
	if err != nil || len(list) != 1 || list[0].State != client.StateReady {
		t.Fatalf("list: %+v, %v", list, err)
	}
	dead := list[0].ID
	h.eng.fail(dead)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if d.ID == dead {
		t.Fatalf("lease handed out the dead warm desktop %s", dead)
	}
	// Recycled: reset back into the pool, or removed when the filler
	// already started a new warm desktop.
	h.waitEvent("reset "+sessionOf(dead), "remove "+sessionOf(dead))
	if !strings.Contains(metricsText(t, h), `drums_failures_total{op="warm-desktop-died"} 1`) {
		t.Fatalf("dead warm desktop not counted")
	}
}

func TestPanicIsAnInternalError(t *testing.T) {
	m, err := NewManager(testConfig(t.TempDir()), newFakeEngine(), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	e := newAPI(m, "", "")
	e.GET("/v1/boom", func(echo.Context) error { panic("boom") })
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/boom", nil))
	if rec.Code != 500 || !strings.Contains(rec.Body.String(), `"code":"internal"`) || !strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("panic answered %d %s", rec.Code, rec.Body)
	}
}

// TestPoolWorkNeverFailsALease: every slot is taken by warm desktops still
// starting for other shapes; a lease waits for one, evicts it and starts
// its own instead of failing with a capacity error.
func TestPoolWorkNeverFailsALease(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 2
	cfg.PoolSize = 1
	cfg.Warm = []Shape{{Width: 1024, Height: 768}, {Width: 800, Height: 600}}
	eng := newFakeEngine()
	eng.delay = 100 * time.Millisecond
	h := start(t, cfg, eng)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1280, Height: 720})
	if err != nil {
		t.Fatalf("lease while the pool fills every slot: %v", err)
	}
	if d.Width != 1280 {
		t.Fatalf("leased %+v", d)
	}
	// With every slot leased, a lease fails at once.
	if _, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1280, Height: 720}); err != nil {
		t.Fatalf("second lease (evicts the other warm desktop): %v", err)
	}
	_, err = h.c.Lease(h.ctx, client.LeaseRequest{Width: 1280, Height: 720})
	wantCode(t, err, client.ErrCapacity, http.StatusServiceUnavailable)
}
