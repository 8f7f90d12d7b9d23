package sessions

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// spareEngine is an engine of the world's prefix that keeps n spares, its
// steps logged to steps (if not nil), closed at cleanup (its spares
// removed), after the cleanups of the sessions made through it; what of
// its spares is left then fails the test.
func spareEngine(t *testing.T, n int, steps *StepLog) *Engine {
	t.Helper()
	w := needWorld(t)
	cfg := w.config()
	cfg.Spares = n
	if steps != nil {
		cfg.Logger = slog.New(steps)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		var seen []*Session
		eng.mu.Lock()
		for _, sp := range eng.spares {
			seen = append(seen, sp.rec.session())
		}
		eng.mu.Unlock()
		eng.Close()
		for _, s := range seen {
			if left := sessionLeftovers(w, s); len(left) > 0 {
				t.Errorf("left of spare %s after Close: %v", s.ID, left)
			}
		}
	})
	return eng
}

// upSpares waits until eng's spares are up and returns them.
func upSpares(t *testing.T, eng *Engine) []*spare {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := eng.WaitSpares(ctx); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	return slices.Clone(eng.spares)
}

// checkSpare checks that sp is a spare as it should be: up, reachable by
// nothing (no interface but loopback, no host veth, no host route to its
// address), at the least CPU weight, and no session of anyone's.
func checkSpare(t *testing.T, eng *Engine, sp *spare) {
	t.Helper()
	id := sp.rec.Session.ID
	if l := links(t, sp.pid); len(l) != 1 || l[0] != "lo" {
		t.Errorf("spare %s: interfaces %v, want loopback alone", id, l)
	}
	if l, err := hostLinks(); err != nil {
		t.Fatal(err)
	} else if slices.Contains(l, sp.plan.Net.HostVeth) {
		t.Errorf("spare %s: the host has its veth %s", id, sp.plan.Net.HostVeth)
	}
	routes, err := netlink.RouteList(nil, unix.AF_INET)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if r.Dst == nil {
			continue
		}
		if ones, _ := r.Dst.Mask.Size(); ones > 0 && r.Dst.Contains(sp.plan.Net.Address.Addr().AsSlice()) {
			t.Errorf("spare %s: the host routes its address: %v", id, r)
		}
	}
	if wt := cpuWeight(t, sp.plan.Cgroup); wt != "2" && wt != "1" {
		t.Errorf("spare %s: CPU weight %s, want the least", id, wt)
	}
	if _, err := eng.Get(id); !errors.Is(err, ErrNotFound) {
		t.Errorf("spare %s: Get: %v, want not found", id, err)
	}
	for _, s := range eng.List() {
		if s.ID == id {
			t.Errorf("spare %s is listed: %+v", id, s)
		}
	}
}

func TestCreateTakesSpare(t *testing.T) {
	w := needWorld(t)
	steps := &StepLog{}
	eng := spareEngine(t, 1, steps)
	sp := upSpares(t, eng)[0]
	checkSpare(t, eng, sp)
	steps.Take()
	s := newSessionOf(t, eng, Request{})
	// The spare's init is the session's: no init started, none of the
	// steps a new one reports.
	if s.ID != sp.rec.Session.ID || s.InitPID != sp.pid || !s.Spare {
		t.Errorf("created %s (init %d, spare %v), want the spare %s (init %d)", s.ID, s.InitPID, s.Spare, sp.rec.Session.ID, sp.pid)
	}
	if st := steps.Take(); len(st) > 0 {
		t.Errorf("an init reported steps during the create: %v", st)
	}
	if pids := findInits(w.prefix)[s.ID]; !slices.Equal(pids, []int{sp.pid}) {
		t.Errorf("inits of %s: %v, want the spare's %d", s.ID, pids, sp.pid)
	}
	if err := answers(s); err != nil {
		t.Errorf("the session from the spare: %v", err)
	}
	if wt := cpuWeight(t, s.Plan.Cgroup); wt != "1024" && wt != "100" {
		t.Errorf("the CPU weight of the session from the spare %s, want the default", wt)
	}
	if got, err := eng.Get(s.ID); err != nil || got.State != StateReady || !got.Spare {
		t.Errorf("Get %s: %+v %v", s.ID, got, err)
	}
	// Its replacement comes up as the first did.
	next := upSpares(t, eng)
	if len(next) != 1 || next[0] == sp || next[0].rec.Session.ID == s.ID {
		t.Fatalf("spares after the take: %v", next)
	}
	checkSpare(t, eng, next[0])
	removeClean(t, w, s, eng)
}

func TestCreateOtherThanSpare(t *testing.T) {
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	s := newSessionOf(t, eng, Request{Width: 1280, Height: 720})
	if s.Spare || s.ID == sp.rec.Session.ID || s.InitPID == sp.pid {
		t.Errorf("a create of another screen took the spare: %+v", s)
	}
	if err := answers(s); err != nil {
		t.Error(err)
	}
	if left := upSpares(t, eng); !slices.Equal(left, []*spare{sp}) {
		t.Errorf("spares after a create of another desktop: %v, want the same one", left)
	}
	checkSpare(t, eng, sp)
}

// A spare whose X server dies ends itself (its init watches the essential
// processes while it waits); it is never handed out, and another one
// replaces it.
func TestSpareDied(t *testing.T) {
	w := needWorld(t)
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	dead := sp.rec.session()
	if err := unix.Kill(procOf(t, sp.plan.Cgroup, "Xvfb"), unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sp.done
	s := newSessionOf(t, eng, Request{})
	if s.InitPID == sp.pid || s.ID == dead.ID {
		t.Errorf("a create took the dead spare: %+v", s)
	}
	if err := answers(s); err != nil {
		t.Error(err)
	}
	next := upSpares(t, eng)
	if len(next) != 1 || next[0] == sp {
		t.Fatalf("spares after the death: %v", next)
	}
	if left := sessionLeftovers(w, dead); len(left) > 0 {
		t.Errorf("left of the dead spare: %v", left)
	}
	eng.mu.Lock()
	fails := eng.spareFails
	eng.mu.Unlock()
	// Counted as failed, unless the create took its replacement (a
	// spare handed out starts the count again).
	if fails != 1 && !s.Spare {
		t.Errorf("%d spares failed in a row, want the one", fails)
	}
}

// Close removes spares up and starting alike.
func TestSpareClose(t *testing.T) {
	w := needWorld(t)
	for _, up := range []bool{false, true} {
		eng, err := New(func() Config { c := w.config(); c.Spares = 2; return c }())
		if err != nil {
			t.Fatal(err)
		}
		if up {
			upSpares(t, eng)
		}
		eng.mu.Lock()
		var spares []*Session
		for _, sp := range eng.spares {
			spares = append(spares, sp.rec.session())
		}
		eng.mu.Unlock()
		eng.Close()
		if up && len(spares) != 2 {
			t.Errorf("%d spares up, want 2", len(spares))
		}
		for _, s := range spares {
			if left := sessionLeftovers(w, s); len(left) > 0 {
				t.Errorf("up %v: left of spare %s after Close: %v", up, s.ID, left)
			}
		}
		if left := leftovers(w.prefix, ""); len(left) > 0 {
			t.Errorf("up %v: left of the prefix after Close: %v", up, left)
		}
	}
}

// A spare's init ends when its engine goes away, and what is left of it
// is removed by the next Sweep, or by the Adopt of the next daemon, as a
// create that never finished.
func TestSpareOfDeadEngine(t *testing.T) {
	w := needWorld(t)
	for _, by := range []string{"sweep", "adopt"} {
		t.Run(by, func(t *testing.T) {
			eng := spareEngine(t, 1, nil)
			sp := upSpares(t, eng)[0]
			s := sp.rec.session()
			// What the engine's process takes with it when it dies: the
			// engine's end of the sync socket, the session's lock, its
			// copies of the claims. The engine forgets the spare, so
			// that its Close leaves it alone.
			eng.mu.Lock()
			eng.unlistLocked(sp, true)
			eng.mu.Unlock()
			t.Cleanup(func() { eng.dropSpare(sp) }) // if the test fails before the sweep
			sp.syncF.Close()
			sp.lk.unlock()
			eng.letGo(s.ID)
			select {
			case <-sp.done:
			case <-time.After(opTimeout):
				t.Fatal("the spare's init outlived its engine")
			}
			if left := sessionLeftovers(w, s); len(left) == 0 {
				t.Fatal("nothing left of the spare to remove")
			}
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			other, err := New(w.config())
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if by == "sweep" {
				rep, err := other.Sweep(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Contains(rep.Sessions, s.ID) {
					t.Errorf("sweep report %+v: want the spare %s", rep, s.ID)
				}
			} else {
				live, err := other.Adopt(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, a := range live {
					if a.ID == s.ID {
						t.Errorf("adopted the spare %s", s.ID)
					}
				}
			}
			if left := sessionLeftovers(w, s); len(left) > 0 {
				t.Errorf("left after the %s: %v", by, left)
			}
		})
	}
}

// A session made from a spare gets its standby, as any created one.
func TestSpareWithStandby(t *testing.T) {
	w := needWorld(t)
	cfg := w.config()
	cfg.Spares, cfg.Standby = 1, true
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	sp := upSpares(t, eng)[0]
	s := newSessionOf(t, eng, Request{})
	if s.InitPID != sp.pid {
		t.Fatalf("created %+v, want the spare's init %d", s, sp.pid)
	}
	sb := upStandby(t, eng, s.ID)
	r := resetClean(t, eng, s)
	if !r.Standby || r.InitPID != sb.pid {
		t.Errorf("reset to init %d (standby %v), want the standby %d", r.InitPID, r.Standby, sb.pid)
	}
	removeClean(t, w, r, eng)
}

// Spares that keep failing stop being started: spareRetries of them, and
// the engine says why.
func TestSpareKeepsFailing(t *testing.T) {
	w := needWorld(t)
	cfg := w.config()
	cfg.Spares, cfg.Guestd = 1, "/bin/false" // guestd, essential, exits at once
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err = eng.WaitSpares(ctx)
	if err == nil || !errors.Is(err, ErrStack) && !errors.Is(err, ErrInit) {
		t.Fatalf("WaitSpares: %v, want the spares stopped by their failure", err)
	}
	// Once stopped, none starts again: the count stays.
	eng.mu.Lock()
	fails, spares := eng.spareFails, len(eng.spares)
	eng.mu.Unlock()
	if fails != spareRetries || spares != 0 {
		t.Errorf("%d failed, %d spares: want %d failed, none", fails, spares, spareRetries)
	}
	if left := leftovers(w.prefix, filepath.Join(w.dir, "state")); len(left) > 0 {
		t.Errorf("left of the failed spares: %v", left)
	}
}
