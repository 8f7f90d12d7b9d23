package provider

import (
	"context"
	"testing"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// TestCloseStopsLeaseExpiry: a lease that expires while Close waits for
// background work (here a warm start in flight) must not retire its
// desktop. Shutting down without drain leaves leased desktops to the next
// daemon; a retire would drop the record and recycle the desktop on a
// canceled context while the daemon goes away. The test stands in for the
// lease timer: it moves the expiry into the past and calls expire, exactly
// what the timer runs, once Close has begun (the background context is
// canceled) and before the start in flight returns.
func TestCloseStopsLeaseExpiry(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.PoolSize = 1
	cfg.Warm = []Shape{{Width: 1024, Height: 768}}
	eng := newFakeEngine()
	held, release := make(chan struct{}), make(chan struct{})
	eng.hold = func(r sessions.Request) {
		if r.Width == 1024 {
			close(held)
			<-release
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	m, err := NewManager(cfg, eng, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	leased, err := m.Lease(ctx, client.LeaseRequest{Width: 800, Height: 600, LeaseSeconds: 600})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	<-held // the warm start is in flight: Close has background work to wait for

	closed := make(chan error, 1)
	go func() { closed <- m.Close(ctx, false) }()
	<-m.bgCtx.Done()
	m.mu.Lock()
	d := m.desktops[leased.ID]
	d.leaseExpires = time.Now().Add(-time.Second)
	m.mu.Unlock()
	m.expire(d)
	close(release)
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}

	if _, err := eng.Get(sessionOf(leased.ID)); err != nil {
		t.Errorf("leased desktop gone after a close without drain: %v", err)
	}
	recs, err := m.st.desktops()
	if err != nil {
		t.Fatal(err)
	}
	var kept bool
	for _, r := range recs {
		kept = kept || (r.ID == leased.ID && r.State == client.StateLeased)
	}
	if !kept {
		t.Errorf("leased desktop %s lost its record (%+v): the next daemon would remove it", leased.ID, recs)
	}
}
