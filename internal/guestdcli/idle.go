package guestdcli

import (
	"net/http"
	"sync"
	"time"
)

// idleStage is one thing to give back once guestd has had no request in
// flight for after.
type idleStage struct {
	after   time.Duration
	release func()
}

// idleRelease is an http.Handler that runs its stages, in order of their
// delays, while no request is in flight: guestd gives memory back to the
// OS when its desktop is idle and keeps it while an agent is at work. Each
// stage runs at most once per idle period (on a timer goroutine); a request
// starts the count again.
type idleRelease struct {
	next   http.Handler
	stages []idleStage // ascending after
	// afterFunc is time.AfterFunc; tests fire the stages themselves.
	afterFunc func(time.Duration, func()) stopper

	mu       sync.Mutex // guards the fields below
	inFlight int
	// starts counts the requests begun; a timer armed before the latest
	// start finds it changed and does nothing, also when Stop came too
	// late to keep its function from running.
	starts  uint64
	timer   stopper
	stopped bool
}

// stopper is a timer as idleRelease uses it.
type stopper interface{ Stop() bool }

func newIdleRelease(next http.Handler, stages ...idleStage) *idleRelease {
	return &idleRelease{next: next, stages: stages,
		afterFunc: func(d time.Duration, f func()) stopper { return time.AfterFunc(d, f) }}
}

func (h *idleRelease) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.inFlight++
	h.starts++
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.mu.Unlock()
	defer h.done()
	h.next.ServeHTTP(w, r)
}

// done arms the first stage when the last request in flight ends.
func (h *idleRelease) done() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inFlight--
	if h.inFlight == 0 {
		h.arm(0, 0)
	}
}

// arm schedules stage i, idle having lasted since for already. Called with
// mu held.
func (h *idleRelease) arm(i int, since time.Duration) {
	if h.stopped || i >= len(h.stages) {
		return
	}
	starts, st := h.starts, h.stages[i]
	h.timer = h.afterFunc(max(st.after-since, 0), func() {
		h.mu.Lock()
		idle := h.inFlight == 0 && h.starts == starts && !h.stopped
		h.mu.Unlock()
		if !idle {
			return
		}
		st.release()
		h.mu.Lock()
		if h.inFlight == 0 && h.starts == starts {
			h.arm(i+1, st.after)
		}
		h.mu.Unlock()
	})
}

// stop disarms the stages for good (at shutdown, before what they release
// is closed). A stage already running may still finish.
func (h *idleRelease) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
}
