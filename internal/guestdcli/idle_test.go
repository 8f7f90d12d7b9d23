package guestdcli

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeTimers records what idleRelease schedules; the test fires it.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	after   time.Duration
	fire    func()
	stopped bool
}

func (f *fakeTimer) Stop() bool { f.stopped = true; return true }

func (ft *fakeTimers) afterFunc(d time.Duration, fire func()) stopper {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t := &fakeTimer{after: d, fire: fire}
	ft.timers = append(ft.timers, t)
	return t
}

// last is the latest timer, and how many there are.
func (ft *fakeTimers) last() (*fakeTimer, int) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if len(ft.timers) == 0 {
		return nil, 0
	}
	return ft.timers[len(ft.timers)-1], len(ft.timers)
}

type idleFixture struct {
	h      *idleRelease
	timers *fakeTimers
	ran    []string
	// A request for /block is held in the handler until release is
	// closed; entered is closed once it is inside.
	entered, release chan struct{}
}

func newIdleFixture() *idleFixture {
	f := &idleFixture{timers: &fakeTimers{}, entered: make(chan struct{}), release: make(chan struct{})}
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			close(f.entered)
			<-f.release
		}
	})
	f.h = newIdleRelease(next,
		idleStage{2 * time.Second, func() { f.ran = append(f.ran, "heap") }},
		idleStage{time.Minute, func() { f.ran = append(f.ran, "frame") }})
	f.h.afterFunc = f.timers.afterFunc
	return f
}

func (f *idleFixture) request(path string) {
	f.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
}

func TestIdleReleaseRunsStagesInOrder(t *testing.T) {
	f := newIdleFixture()
	if _, n := f.timers.last(); n != 0 {
		t.Fatal("a stage was armed before any request")
	}
	f.request("/screenshot")
	first, n := f.timers.last()
	if n != 1 || first.after != 2*time.Second {
		t.Fatalf("after a request: %d timers, the last after %v; want 1 after 2s", n, first.after)
	}
	first.fire()
	second, n := f.timers.last()
	// The second stage counts from the end of the request, not from the
	// first stage.
	if n != 2 || second.after != time.Minute-2*time.Second {
		t.Fatalf("after the first stage: %d timers, the last after %v", n, second.after)
	}
	second.fire()
	if _, n := f.timers.last(); n != 2 || !slices.Equal(f.ran, []string{"heap", "frame"}) {
		t.Fatalf("ran %v with %d timers armed", f.ran, n)
	}
	// The next idle period runs them again.
	f.request("/screenshot")
	t3, _ := f.timers.last()
	t3.fire()
	if !slices.Equal(f.ran, []string{"heap", "frame", "heap"}) {
		t.Fatalf("ran %v", f.ran)
	}
}

// A request that starts stops the countdown; a timer that fires anyway
// (Stop came too late) does nothing.
func TestIdleReleaseRequestRestartsCount(t *testing.T) {
	f := newIdleFixture()
	f.request("/screenshot")
	stale, _ := f.timers.last()
	done := make(chan struct{})
	go func() { f.request("/block"); close(done) }()
	<-f.entered
	if !stale.stopped {
		t.Error("the timer of the last idle period was not stopped")
	}
	stale.fire()
	// Another request ends while the blocked one is still in flight:
	// nothing is armed.
	f.request("/screenshot")
	if _, n := f.timers.last(); n != 1 || len(f.ran) != 0 {
		t.Fatalf("ran %v with %d timers while a request was in flight", f.ran, n)
	}
	close(f.release)
	<-done
	fresh, n := f.timers.last()
	if n != 2 || fresh.after != 2*time.Second {
		t.Fatalf("after the last request ended: %d timers", n)
	}
	fresh.fire()
	if !slices.Equal(f.ran, []string{"heap"}) {
		t.Fatalf("ran %v", f.ran)
	}
}

func TestIdleReleaseStop(t *testing.T) {
	f := newIdleFixture()
	f.request("/screenshot")
	armed, _ := f.timers.last()
	f.h.stop()
	if !armed.stopped {
		t.Error("stop left the timer running")
	}
	armed.fire()
	f.request("/screenshot")
	if _, n := f.timers.last(); n != 1 || len(f.ran) != 0 {
		t.Fatalf("after stop: ran %v, %d timers", f.ran, n)
	}
}
