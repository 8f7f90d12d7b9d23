package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// fakeDaemon is a test double of one daemon behind a load balancer: at
// capacity it answers 503 "capacity"; else it leases a desktop that names
// the daemon's own URL. It counts the requests it got.
type fakeDaemon struct {
	srv  *httptest.Server
	full bool
	mu   sync.Mutex
	got  []string
}

func newFakeDaemon(t *testing.T, full bool) *fakeDaemon {
	f := &fakeDaemon{full: full}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.got = append(f.got, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/desktops" && f.full:
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: CodeCapacity, Message: "all 1 desktops are in use"}})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/desktops":
			w.WriteHeader(http.StatusCreated)
			json.NewEncoder(w).Encode(Desktop{ID: "d1.x", Address: "192.0.2.10", GuestPort: 30000, Daemon: f.srv.URL,
				Ports: Ports{Guest: 30000, Chromium: 30001, VNC: 30002, VLC: 30003}})
		case r.Method == http.MethodDelete && r.URL.Path == "/v1/desktops/d1.x":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(ErrorBody{Error: ErrorDetail{Code: CodeNotFound, Message: "unknown desktop"}})
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeDaemon) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.got...)
}

// balancer is a test double of a Service: each request goes to the next
// daemon in turn.
func balancer(t *testing.T, ds ...*fakeDaemon) string {
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		d := ds[next%len(ds)]
		next++
		mu.Unlock()
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, d.srv.URL+r.URL.Path, r.Body)
		req.Header = r.Header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		var v any
		if json.NewDecoder(resp.Body).Decode(&v) == nil {
			json.NewEncoder(w).Encode(v)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var fastRetry = Retry{Attempts: 4, Initial: time.Millisecond, Max: 4 * time.Millisecond}

// A lease that meets a daemon at capacity is tried again and lands on
// another daemon; the release goes to the daemon the desktop names, not
// through the balancer.
func TestLeaseRetriesAnotherDaemon(t *testing.T) {
	full, free := newFakeDaemon(t, true), newFakeDaemon(t, false)
	c, err := New(balancer(t, full, free), "tok")
	if err != nil {
		t.Fatal(err)
	}
	c.SetLeaseRetry(fastRetry)
	ctx := context.Background()
	d, err := c.Lease(ctx, LeaseRequest{})
	if err != nil || d.ID != "d1.x" || d.Daemon != free.srv.URL {
		t.Fatalf("lease: %+v %v", d, err)
	}
	if err := c.Release(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if got := full.requests(); len(got) != 1 || got[0] != "POST /v1/desktops" {
		t.Errorf("the full daemon got %q, want one lease", got)
	}
	if got := free.requests(); len(got) != 2 || got[1] != "DELETE /v1/desktops/d1.x" {
		t.Errorf("the free daemon got %q, want the lease and the release", got)
	}
}

// When every daemon is at capacity, the lease fails with ErrCapacity after
// the retry's attempts, no more.
func TestLeaseRetryIsBounded(t *testing.T) {
	a, b := newFakeDaemon(t, true), newFakeDaemon(t, true)
	c, err := New(balancer(t, a, b), "tok")
	if err != nil {
		t.Fatal(err)
	}
	c.SetLeaseRetry(fastRetry)
	_, err = c.Lease(context.Background(), LeaseRequest{})
	if !errors.Is(err, ErrCapacity) {
		t.Fatalf("lease with every daemon full: %v, want ErrCapacity", err)
	}
	if n := len(a.requests()) + len(b.requests()); n != fastRetry.Attempts {
		t.Errorf("%d lease attempts, want %d", n, fastRetry.Attempts)
	}
	// A client of a unix socket (one daemon) does not retry by default;
	// Attempts 1 turns it off for a URL too.
	c.SetLeaseRetry(Retry{Attempts: 1})
	before := len(a.requests()) + len(b.requests())
	if _, err := c.Lease(context.Background(), LeaseRequest{}); !errors.Is(err, ErrCapacity) {
		t.Fatal(err)
	}
	if n := len(a.requests()) + len(b.requests()) - before; n != 1 {
		t.Errorf("%d attempts without retry", n)
	}
}
