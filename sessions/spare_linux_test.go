package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// spareEngine is an engine of the world's prefix that keeps n spares,
// its config changed by conf (if not nil) and its spares started. It is
// closed at cleanup, after the cleanups of the sessions made through it
// (closeClean).
func spareEngine(t *testing.T, n int, conf func(*Config)) *Engine {
	t.Helper()
	w := needWorld(t)
	cfg := w.config()
	cfg.Spares = n
	if conf != nil {
		conf(&cfg)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeClean(t, w, eng) })
	eng.StartSpares()
	return eng
}

// closeClean closes eng and fails the test for what is left then of its
// spares (those it keeps and those ended but not yet removed) or of the
// prefix: an init, cgroup, veth, table, claim, mount, session directory
// and record.
func closeClean(t *testing.T, w *testWorld, eng *Engine) {
	t.Helper()
	var seen []*Session
	eng.mu.Lock()
	for _, sp := range eng.spares {
		seen = append(seen, sp.rec.session())
	}
	for _, x := range eng.endedSpares {
		seen = append(seen, x.sp.rec.session())
	}
	eng.mu.Unlock()
	eng.Close()
	for _, s := range seen {
		if left := sessionLeftovers(w, s); len(left) > 0 {
			t.Errorf("left of spare %s after Close: %v", s.ID, left)
		}
	}
	if left := leftovers(w.prefix, filepath.Join(w.dir, "state")); len(left) > 0 {
		t.Errorf("left of the prefix after Close: %v", left)
	}
	if ids, err := eng.ids(); err != nil || len(ids) > 0 {
		t.Errorf("session directories after Close: %v %v", ids, err)
	}
}

// closedWithin waits until ch is closed, failing the test after opTimeout.
func closedWithin(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(opTimeout):
		t.Fatalf("%s: not after %s", what, opTimeout)
	}
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
	c := newClientNetns(t, w)
	steps := &StepLog{}
	eng := spareEngine(t, 1, func(cfg *Config) {
		cfg.Logger = slog.New(steps)
		cfg.Publish = Publish{Address: c.host, FirstPort: 31200, Ports: 64}
	})
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
	// Isolated as a cold create: its table in, egress forwarded, its
	// guestd published, and another desktop reaches none of it.
	if nft, err := nftables.New(); err != nil {
		t.Fatal(err)
	} else if _, err := nft.ListTableOfFamily(s.Plan.Net.Table, nftables.TableFamilyINet); err != nil {
		t.Errorf("the table of the session from the spare: %v", err)
	}
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward"); s.Plan.Net.Egress && (err != nil || strings.TrimSpace(string(b)) != "1") {
		t.Errorf("IPv4 forwarding for the session from the spare: %q %v", b, err)
	}
	p := s.Published
	if p == nil || p.Address != c.host || p.Ports[0] != (PortMap{Host: 31200 + uint16(4*s.Slot), Guest: uint16(s.GuestPort)}) {
		t.Fatalf("published %+v, want guestd on %s:%d", p, c.host, 31200+4*s.Slot)
	}
	url := fmt.Sprintf("http://%s/screenshot", netip.AddrPortFrom(p.Address, p.Ports[0].Host))
	if body, err := c.get(url); err != nil || !bytes.HasPrefix(body, []byte("\x89PNG")) {
		t.Errorf("GET %s from the client namespace: %v, %d bytes", url, err, len(body))
	}
	other := newSession(t, Request{})
	for _, c := range []struct {
		from *Session
		to   string
		port int
	}{
		{other, s.Address, s.GuestPort},
		{s, other.Address, other.GuestPort},
		{other, p.Address.String(), int(p.Ports[0].Host)},
	} {
		if connects(t, c.from, c.to, c.port, false) {
			t.Errorf("%s reached %s:%d", c.from.ID, c.to, c.port)
		}
	}
	// Its replacement comes up as the first did.
	next := upSpares(t, eng)
	if len(next) != 1 || next[0] == sp || next[0].rec.Session.ID == s.ID {
		t.Fatalf("spares after the take: %v", next)
	}
	checkSpare(t, eng, next[0])
	removeClean(t, w, s, eng)
}

// A create of another desktop (another screen, another image) goes cold
// and leaves the spare alone.
func TestCreateOtherThanSpare(t *testing.T) {
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	for _, req := range []Request{{Width: 1280, Height: 720}, {Image: appsImage}} {
		s := newSessionOf(t, eng, req)
		if s.Spare || s.ID == sp.rec.Session.ID || s.InitPID == sp.pid {
			t.Errorf("a create of %+v took the spare: %+v", req, s)
		}
		if err := answers(s); err != nil {
			t.Error(err)
		}
		if left := upSpares(t, eng); !slices.Equal(left, []*spare{sp}) {
			t.Errorf("spares after a create of %+v: %v, want the same one", req, left)
		}
		checkSpare(t, eng, sp)
	}
}

// spareFails is how many spares eng counts failed in a row.
func spareFails(eng *Engine) int {
	eng.mu.Lock()
	defer eng.mu.Unlock()
	return eng.spareFails
}

// killSpare kills the X server of an up spare (its init then ends the
// desktop: it watches the essential processes while it waits) and waits
// until the engine no longer keeps it.
func killSpare(t *testing.T, sp *spare) {
	t.Helper()
	if err := unix.Kill(procOf(t, sp.plan.Cgroup, "Xvfb"), unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	closedWithin(t, sp.done, "the spare's init to exit")
	closedWithin(t, sp.gone, "the dead spare to leave the spares")
}

// A spare whose X server dies is never handed out; it is removed, counted
// failed, and another one replaces it.
func TestSpareDied(t *testing.T) {
	w := needWorld(t)
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	dead := sp.rec.session()
	killSpare(t, sp)
	next := upSpares(t, eng)
	if len(next) != 1 || next[0] == sp {
		t.Fatalf("spares after the death: %v", next)
	}
	// The filler removed the dead one before it started the next.
	if left := sessionLeftovers(w, dead); len(left) > 0 {
		t.Errorf("left of the dead spare: %v", left)
	}
	if n := spareFails(eng); n != 1 {
		t.Errorf("%d spares failed in a row, want the one", n)
	}
	s := newSessionOf(t, eng, Request{})
	if s.InitPID != next[0].pid || !s.Spare {
		t.Errorf("created %+v, want the replacement's init %d", s, next[0].pid)
	}
	if err := answers(s); err != nil {
		t.Error(err)
	}
	if n := spareFails(eng); n != 0 {
		t.Errorf("%d spares failed in a row after one was handed out, want none", n)
	}
}

// A spare that fails as a create takes it (its guestd stopped: it never
// answers from the host) is removed and counted, and the create goes cold.
func TestSpareTakeFails(t *testing.T) {
	w := needWorld(t)
	// The take waits for guestd half of what is left of ReadyTimeout.
	eng := spareEngine(t, 1, func(c *Config) { c.ReadyTimeout = 30 * time.Second })
	sp := upSpares(t, eng)[0]
	dead := sp.rec.session()
	if err := unix.Kill(procOf(t, sp.plan.Cgroup, "guestd"), unix.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := newSessionOf(t, eng, Request{})
	if s.Spare || s.ID == dead.ID || s.InitPID == sp.pid {
		t.Errorf("created %+v from the failed spare %s", s, dead.ID)
	}
	if err := answers(s); err != nil {
		t.Error(err)
	}
	closedWithin(t, sp.done, "the failed spare's init to exit")
	if n := spareFails(eng); n != 1 {
		t.Errorf("%d spares failed in a row, want the one", n)
	}
	// The cold session may have the failed spare's slot (and so its
	// veth's and table's names): it goes first.
	removeClean(t, w, s, eng)
	if left := sessionLeftovers(w, dead); len(left) > 0 {
		t.Errorf("left of the failed spare: %v", left)
	}
}

// Two creates at once and one spare: one takes it, the other starts
// cold; both are ready, distinct sessions.
func TestSpareTwoCreates(t *testing.T) {
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var got [2]*Session
	var errs [2]error
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { got[i], errs[i] = eng.Create(ctx, Request{}) })
	}
	wg.Wait()
	for i, s := range got {
		if errs[i] != nil {
			t.Fatalf("create %d: %v", i, errs[i])
		}
		removeAtCleanup(t, eng, s)
	}
	a, b := got[0], got[1]
	if a.ID == b.ID || a.Slot == b.Slot || a.Address == b.Address {
		t.Errorf("two creates made %s (slot %d, %s) and %s (slot %d, %s)", a.ID, a.Slot, a.Address, b.ID, b.Slot, b.Address)
	}
	if a.Spare == b.Spare || (a.Spare && a.InitPID != sp.pid) || (b.Spare && b.InitPID != sp.pid) {
		t.Errorf("spare %v (init %d) and %v (init %d), want one the spare's init %d", a.Spare, a.InitPID, b.Spare, b.InitPID, sp.pid)
	}
	for _, s := range got {
		if r, err := eng.Get(s.ID); err != nil || r.State != StateReady {
			t.Errorf("Get %s: %+v %v", s.ID, r, err)
		}
		if err := answers(s); err != nil {
			t.Error(err)
		}
	}
}

// Reset, Remove and Exec know no spare: its id is not found, at once.
func TestSpareNotASession(t *testing.T) {
	eng := spareEngine(t, 1, nil)
	sp := upSpares(t, eng)[0]
	id := sp.rec.Session.ID
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := eng.Reset(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reset of the spare %s: %v, want not found", id, err)
	}
	if err := eng.Remove(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove of the spare %s: %v, want not found", id, err)
	}
	if _, _, err := eng.ready(ctx, id); !errors.Is(err, ErrNotFound) {
		t.Errorf("the lock of a ready session for the spare %s: %v, want not found", id, err)
	}
	if left := upSpares(t, eng); !slices.Equal(left, []*spare{sp}) {
		t.Errorf("spares after: %v, want the same one", left)
	}
	checkSpare(t, eng, sp)
}

// startingSpare waits until eng keeps a spare that is not up yet.
func startingSpare(t *testing.T, eng *Engine) {
	t.Helper()
	timeout := time.After(opTimeout)
	for {
		eng.mu.Lock()
		starting := slices.ContainsFunc(eng.spares, func(sp *spare) bool { return !sp.isUp() })
		n, change := len(eng.spares), eng.spareChange
		eng.mu.Unlock()
		if starting {
			return
		}
		if n == eng.cfg.Spares {
			t.Fatalf("%d spares up before one was seen starting", n)
		}
		select {
		case <-change:
		case <-timeout:
			t.Fatalf("no spare starting after %s", opTimeout)
		}
	}
}

// Close removes spares up and starting alike.
func TestSpareClose(t *testing.T) {
	w := needWorld(t)
	for _, up := range []bool{false, true} {
		t.Run(map[bool]string{false: "starting", true: "up"}[up], func(t *testing.T) {
			eng := spareEngine(t, 2, nil)
			if up {
				if n := len(upSpares(t, eng)); n != 2 {
					t.Errorf("%d spares up, want 2", n)
				}
			} else {
				startingSpare(t, eng)
			}
			closeClean(t, w, eng)
		})
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
			eng.unlistLocked(sp)
			eng.mu.Unlock()
			swept := false
			t.Cleanup(func() { // if the test fails before the sweep
				if !swept {
					eng.dropSpare(sp)
				}
			})
			sp.syncF.Close()
			sp.lk.unlock()
			eng.letGo(s.ID)
			closedWithin(t, sp.done, "the spare's init to end with its engine")
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
			swept = true
			if left := sessionLeftovers(w, s); len(left) > 0 {
				t.Errorf("left after the %s: %v", by, left)
			}
		})
	}
}

// A session made from a spare gets its standby, as any created one.
func TestSpareWithStandby(t *testing.T) {
	w := needWorld(t)
	eng := spareEngine(t, 1, func(c *Config) { c.Standby = true })
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

// Spares that keep failing stop being started: spareRetries of them in a
// row, and the engine says why. Those whose guestd exits at once fail as
// they start; those whose X server dies once they are up fail as they
// wait, and a create of their request that succeeds cold turns the
// filler back on.
func TestSpareKeepsFailing(t *testing.T) {
	w := needWorld(t)
	stopped := func(t *testing.T, eng *Engine) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		err := eng.WaitSpares(ctx)
		if err == nil || !errors.Is(err, ErrStack) && !errors.Is(err, ErrInit) {
			t.Fatalf("WaitSpares: %v, want the spares stopped by their failure", err)
		}
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
	t.Run("starting", func(t *testing.T) {
		eng := spareEngine(t, 1, func(c *Config) { c.Guestd = "/bin/false" }) // guestd, essential, exits at once
		stopped(t, eng)
	})
	t.Run("up", func(t *testing.T) {
		eng := spareEngine(t, 1, nil)
		for range spareRetries {
			killSpare(t, upSpares(t, eng)[0])
		}
		stopped(t, eng)
		// None started since: the create finds none to take.
		s := newSessionOf(t, eng, Request{})
		if s.Spare {
			t.Errorf("created %+v from a spare, want none kept", s)
		}
		// ...and turned them back on: one comes up.
		if n := len(upSpares(t, eng)); n != 1 {
			t.Errorf("%d spares up after a cold create, want 1", n)
		}
		if n := spareFails(eng); n != 0 {
			t.Errorf("%d spares failed in a row after a cold create, want none", n)
		}
	})
}
