package provider

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/provider/client"
)

// A leased desktop that dies is noticed at once: its state is failed, the
// health counts it so, renew and snapshot say it died, revert replaces it
// and release ends the lease.
func TestDeadLeasedDesktopNoticed(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	h.eng.fail(d.ID)
	deadline := time.Now().Add(testDeadline)
	for {
		g, err := h.c.Get(h.ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if g.State == client.StateFailed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a dead leased desktop still reads %s", g.State)
		}
		time.Sleep(5 * time.Millisecond) // the watch is an event; its handling is not awaitable from here
	}
	hl, err := h.c.Health(h.ctx)
	if err != nil || hl.Desktops[client.StateFailed] != 1 || hl.Desktops[client.StateLeased] != 0 {
		t.Fatalf("health: %+v %v", hl, err)
	}
	var ce *client.Error
	if _, err := h.c.Renew(h.ctx, d.ID, 60); !errors.As(err, &ce) || ce.Status != http.StatusConflict || !strings.Contains(ce.Message, "died (Xvfb killed by SIGKILL)") {
		t.Fatalf("renew of a dead desktop: %v", err)
	}
	if _, err := h.c.SaveSnapshot(h.ctx, d.ID, "s"); !errors.As(err, &ce) || ce.Status != http.StatusConflict {
		t.Fatalf("snapshot of a dead desktop: %v", err)
	}
	if !strings.Contains(metricsText(t, h), `drums_failures_total{op="leased-desktop-died"} 1`) {
		t.Error("dead leased desktop not counted in /metrics")
	}
	r, err := h.c.Revert(h.ctx, d.ID, "")
	if err != nil || r.State != client.StateLeased {
		t.Fatalf("revert of a dead desktop: %+v %v", r, err)
	}
	h.eng.fail(r.ID)
	waitState(t, h, r.ID, client.StateFailed)
	if err := h.c.Release(h.ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, h.c, r.ID)
}

func waitState(t *testing.T, h *harness, id, state string) {
	t.Helper()
	deadline := time.Now().Add(testDeadline)
	for {
		g, err := h.c.Get(h.ctx, id)
		if err == nil && g.State == state {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("desktop %s never became %s: %+v %v", id, state, g, err)
		}
		time.Sleep(5 * time.Millisecond) // as waitReady: nothing to await
	}
}

// A released desktop goes back to the pool under a new id: a retried
// release of the old id, or any request with it, never touches the next
// holder's lease.
func TestReleasedIDNeverReused(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize, cfg.Capacity = 1, 1 // one session: the released one is the next lease's
	h := start(t, cfg, newFakeEngine())
	a, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.c.Release(h.ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if code, body := raw(t, h, "GET", "/v1/desktops/"+a.ID, ""); code != http.StatusNotFound {
		t.Errorf("GET of a released id: %d %s", code, body)
	}
	h.waitEvent("reset " + sessionOf(a.ID)) // back into the pool
	h.waitReady(1)
	b, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil || sessionOf(b.ID) != sessionOf(a.ID) {
		t.Fatalf("second lease: %+v %v (want session %s again)", b, err, sessionOf(a.ID))
	}
	if b.ID == a.ID {
		t.Fatalf("the released id %s was handed out again", a.ID)
	}
	if err := h.c.Release(h.ctx, a.ID); err != nil { // the first client retries
		t.Fatal(err)
	}
	if _, err := h.c.Renew(h.ctx, a.ID, 60); err == nil {
		t.Error("renew with the released id succeeded")
	}
	if g, err := h.c.Get(h.ctx, b.ID); err != nil || g.State != client.StateLeased {
		t.Fatalf("the new holder's lease after a stale release: %+v %v", g, err)
	}
}

// Every numeric input is range-checked before arithmetic, and names are
// checked where images are named.
func TestLeaseInputRanges(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/desktops", `{"lease_seconds": 18446744074}`},
		{"POST", "/v1/desktops", `{"lease_seconds": 9223372037}`},
		{"POST", "/v1/desktops", `{"lease_seconds": 86401}`},
		{"POST", "/v1/desktops", `{"lease_seconds": -5}`},
		{"POST", "/v1/desktops/" + d.ID + "/renew", `{"lease_seconds": 18446744074}`},
		{"POST", "/v1/desktops/" + d.ID + "/renew", `{"lease_seconds": 9223372037}`},
		{"POST", "/v1/desktops", `{"limits": {"cpus": 1e9}}`},
		{"POST", "/v1/desktops", `{"limits": {"cpus": -1}}`},
		{"POST", "/v1/desktops", `{"limits": {"pids": 99999999}}`},
		{"POST", "/v1/desktops", `{"limits": {"memory_bytes": 9000000000000000000}}`},
		{"POST", "/v1/desktops", `{"image": "../templates/default"}`},
		{"POST", "/v1/desktops", `{"image": "a..b"}`},
		{"POST", "/v1/desktops", `{"template": "../templates/default"}`},
	} {
		code, body := raw(t, h, c.method, c.path, c.body)
		if code != http.StatusBadRequest || !strings.Contains(body, `"bad_request"`) {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, code, body)
		}
	}
	g, err := h.c.Get(h.ctx, d.ID)
	if err != nil || time.Until(g.LeaseExpires) < time.Minute {
		t.Errorf("the lease after refused renews: %+v %v", g, err)
	}
}

// A daemon killed in the middle of a record's write leaves its temporary
// file; the next one removes it.
func TestRestartRemovesHalfWrittenRecords(t *testing.T) {
	cfg := testConfig(t.TempDir())
	for _, d := range []string{"desktops", "snapshots"} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cfg.StateDir, d, ".tmp-123"), []byte(`{"id":`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	start(t, cfg, newFakeEngine())
	for _, d := range []string{"desktops", "snapshots"} {
		if left, _ := filepath.Glob(filepath.Join(cfg.StateDir, d, ".tmp-*")); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	}
}

// The first cold lease of a new shape starts its pool filling at once,
// not at the next maintenance tick (stretched here to an hour).
func TestColdLeaseFillsThePool(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize = 1
	eng := newFakeEngine()
	eng.delay = 200 * time.Millisecond // a start takes a while, as a real one
	srv, err := NewServer(cfg, eng, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	srv.m.maintenance = time.Hour
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cfg: cfg, eng: eng, srv: srv, ctx: context.Background()}
	t.Cleanup(func() { h.stop(true) })
	if h.c, err = client.New(cfg.Socket, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.c.Close)
	if _, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 640, Height: 480}); err != nil {
		t.Fatal(err)
	}
	h.waitReady(1)
}
