package sessions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// standbyEngine is an engine of the world's prefix that keeps standbys,
// of the world's config changed by conf (if not nil), closed (its
// standbys killed) at cleanup, after the cleanups of the sessions made
// through it.
func standbyEngine(t *testing.T, conf func(*Config)) *Engine {
	t.Helper()
	w := needWorld(t)
	cfg := w.config()
	cfg.Standby = true
	if conf != nil {
		conf(&cfg)
	}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng
}

// upStandby waits until the standby eng starts for session id after a
// create or reset is up, and returns it.
func upStandby(t *testing.T, eng *Engine, id string) *standby {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := eng.WaitStandby(ctx, id); err != nil {
		t.Fatal(err)
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	return eng.standbys[id]
}

// links lists the network interfaces of a process's network namespace.
func links(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n")[2:] {
		if name, _, ok := strings.Cut(line, ":"); ok {
			out = append(out, strings.TrimSpace(name))
		}
	}
	return out
}

func TestResetStandby(t *testing.T) {
	for _, onDisk := range []bool{false, true} {
		t.Run(map[bool]string{false: "upper on tmpfs", true: "upper on disk"}[onDisk], func(t *testing.T) { testResetStandby(t, onDisk) })
	}
}

func testResetStandby(t *testing.T, upperOnDisk bool) {
	w := needWorld(t)
	eng := standbyEngine(t, func(c *Config) { c.UpperOnDisk = upperOnDisk })
	s := newSessionOf(t, eng, Request{})
	for round := range 2 { // the second reset takes the first's names back
		sb := upStandby(t, eng, s.ID)
		// Up, with guestd listening, and reachable by nothing: its
		// namespace has no interface but loopback.
		if l := links(t, sb.pid); len(l) != 1 || l[0] != "lo" {
			t.Errorf("round %d: the standby's interfaces before the reset: %v", round, l)
		}
		if rec, err := eng.readRecord(s.ID); err != nil || rec.Standby == nil || rec.Standby.PID != sb.pid {
			t.Errorf("round %d: the record names standby %+v, want pid %d (%v)", round, rec.Standby, sb.pid, err)
		}
		// An exec that read the record before a reset, and dials the
		// control socket a later standby binds under the same path, is
		// refused: the socket is not the session's init's.
		if c, err := dialControl(sb.plan.Root.Control, s.InitPID); !errors.Is(err, ErrNotReady) {
			t.Errorf("round %d: dial the standby's control socket as the session's: %v", round, err)
			if c != nil {
				c.close()
			}
		}
		if c, err := dialControl(sb.plan.Root.Control, sb.pid); err != nil {
			t.Errorf("round %d: dial the standby's control socket as its own: %v", round, err)
		} else {
			c.close()
		}
		if wt := cpuWeight(t, sb.plan.Cgroup); wt != "2" && wt != "1" {
			t.Errorf("round %d: the standby's CPU weight %s, want the least", round, wt)
		}
		if round == 1 {
			// Gone as after the host's `nft flush ruleset`: a warm reset
			// puts it back, as a cold start does.
			dropTable(t, s.Plan)
		}
		r := resetClean(t, eng, s)
		if nft, err := nftables.New(); err != nil {
			t.Fatal(err)
		} else if _, err := nft.ListTableOfFamily(r.Plan.Net.Table, nftables.TableFamilyINet); err != nil {
			t.Errorf("round %d: the session's table after the reset: %v", round, err)
		}
		if !r.Standby || r.InitPID != sb.pid {
			t.Errorf("round %d: reset to init %d (standby %v), want the standby %d", round, r.InitPID, r.Standby, sb.pid)
		}
		if wt := cpuWeight(t, r.Plan.Cgroup); wt != "1024" && wt != "100" {
			t.Errorf("round %d: the CPU weight after the reset %s, want the default", round, wt)
		}
		s = r
	}
	upStandby(t, eng, s.ID)
	removeClean(t, w, s, eng)
}

// dropTable deletes the session's nftables table.
func dropTable(t *testing.T, p *Plan) {
	t.Helper()
	nft, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	nft.DelTable(&nftables.Table{Name: p.Net.Table, Family: nftables.TableFamilyINet})
	if err := nft.Flush(); err != nil {
		t.Fatal(err)
	}
}

// removeClean removes s through each of engines in turn and checks that
// nothing of it is left.
func removeClean(t *testing.T, w *testWorld, s *Session, engines ...*Engine) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, eng := range engines {
		if err := eng.Remove(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if left := sessionLeftovers(w, s); len(left) > 0 {
		t.Errorf("left after remove: %v", left)
	}
}

func TestResetStandbyStarting(t *testing.T) {
	w := needWorld(t)
	eng := standbyEngine(t, nil)
	s := newSessionOf(t, eng, Request{})
	// Started, and held still (frozen) until the reset waits for it.
	eng.launching.Wait()
	eng.mu.Lock()
	sb := eng.standbys[s.ID]
	eng.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := freeze(ctx, sb.plan.Cgroup, true); err != nil {
		t.Fatal(err)
	}
	// Whatever fails, it is thawed before the engine's cleanup kills it
	// (a frozen process dies only once thawed); by then it may be gone.
	t.Cleanup(func() { freeze(context.Background(), sb.plan.Cgroup, false) })
	thaw := func() {
		if err := freeze(ctx, sb.plan.Cgroup, false); err != nil {
			t.Error(err)
		}
	}
	select {
	case <-sb.up:
		thaw()
		t.Fatal("the standby was up before it was frozen")
	default:
	}
	type result struct {
		s   *Session
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := eng.Reset(ctx, s.ID)
		done <- result{r, err}
	}()
	// The reset took it: its start gets the session's CPU weight at once.
	waitFor(t, func() bool { wt := cpuWeight(t, sb.plan.Cgroup); return wt == "1024" || wt == "100" })
	thaw()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	if !res.s.Standby || res.s.InitPID != sb.pid {
		t.Errorf("a reset while the standby started did not take it: %+v", res.s)
	}
	if err := answers(res.s); err != nil {
		t.Error(err)
	}
	upStandby(t, eng, s.ID)
	removeClean(t, w, res.s, eng)
}

func TestResetStandbyDied(t *testing.T) {
	w := needWorld(t)
	eng := standbyEngine(t, nil)
	s := newSessionOf(t, eng, Request{})
	sb := upStandby(t, eng, s.ID)
	if err := unix.Kill(sb.pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sb.done
	r := resetClean(t, eng, s)
	if r.Standby {
		t.Errorf("reset took a dead standby: %+v", r)
	}
	// The cold reset starts the next standby, which a remove by another
	// engine (another process: the CLI) kills, found in the record.
	// The standby's engine still holds the session's claims, as any
	// engine does until it sees the session gone: it removes it too.
	next := upStandby(t, eng, s.ID)
	removeClean(t, w, s, w.eng, eng)
	select {
	case <-next.done:
	default:
		t.Error("the standby outlived the remove")
	}
}

// procOf is the pid of the process named comm in cgroup c.
func procOf(t *testing.T, c CgroupPlan, comm string) int {
	t.Helper()
	pids, err := cgroupProcs(c.dir("pids"))
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		if strings.TrimSpace(string(b)) == comm {
			return pid
		}
	}
	t.Fatalf("no %s in %v", comm, pids)
	return 0
}

// A standby broken while it waits for a reset costs the reset at most
// half of its time: the reset goes cold and is ready. One whose guestd
// hangs is given up; one whose X server died ends itself, with nobody
// serving it yet, before the reset kills the old desktop.
func TestResetStandbyBroken(t *testing.T) {
	for _, c := range []struct {
		name, comm string
		sig        unix.Signal
	}{
		{"guestd hangs", "guestd", unix.SIGSTOP},
		{"X died", "Xvfb", unix.SIGKILL},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := needWorld(t)
			eng := standbyEngine(t, nil)
			s := newSessionOf(t, eng, Request{})
			sb := upStandby(t, eng, s.ID)
			if err := unix.Kill(procOf(t, sb.plan.Cgroup, c.comm), c.sig); err != nil {
				t.Fatal(err)
			}
			if c.sig == unix.SIGKILL {
				select {
				case <-sb.done:
				case <-time.After(opTimeout):
					t.Fatalf("the standby outlived its %s", c.comm)
				}
			}
			r := resetClean(t, eng, s)
			if r.Standby {
				t.Errorf("reset took the broken standby: %+v", r)
			}
			removeClean(t, w, r, eng)
		})
	}
}

func TestSweepStandbyOfDeadEngine(t *testing.T) {
	w := needWorld(t)
	eng := standbyEngine(t, nil)
	s := newSessionOf(t, eng, Request{})
	sb := upStandby(t, eng, s.ID)
	// The engine's end of the sync socket is all that ties a standby to
	// its engine: closed, as when the engine's process dies, the standby
	// ends itself.
	sb.syncF.Close()
	<-sb.done
	if left := standbyCgroups(w, s); len(left) == 0 {
		t.Fatalf("no cgroup of the dead standby: %v", sessionLeftovers(w, s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	rep, err := w.eng.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Cgroups {
		if !strings.HasSuffix(c, filepath.Base(s.ID)+standbySuffix) {
			t.Errorf("swept cgroup %s, want the dead standby's only", c)
		}
	}
	if len(rep.Cgroups) == 0 || len(rep.Sessions) > 0 {
		t.Errorf("sweep report %+v: want the dead standby's cgroups and no session", rep)
	}
	if left := standbyCgroups(w, s); len(left) > 0 {
		t.Errorf("left after the sweep: %v", left)
	}
	if err := answers(s); err != nil {
		t.Errorf("the sweep hurt the session: %v", err)
	}
}

// standbyCgroups lists the cgroup directories of s's standby names.
func standbyCgroups(w *testWorld, s *Session) []string {
	var out []string
	for _, l := range sessionLeftovers(w, s) {
		if strings.HasPrefix(l, "cgroup ") && strings.HasSuffix(l, standbySuffix) {
			out = append(out, l)
		}
	}
	return out
}

// cpuWeight reads a cgroup's CPU weight (v1 cpu.shares, v2 cpu.weight).
func cpuWeight(t *testing.T, c CgroupPlan) string {
	t.Helper()
	file := "cpu.shares"
	if c.Version == 2 {
		file = "cpu.weight"
	}
	b, err := os.ReadFile(filepath.Join(c.dir("cpu"), file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// standbyEvents is what an engine's standbys did (Engine.onStandby), by
// session id, how many start now (spawned, not yet up or failed) and the
// most it saw starting at once.
type standbyEvents struct {
	mu          sync.Mutex
	events      map[string][]string
	starting    int
	maxStarting int
}

// watchStandbys records what eng's standbys do from now on; set before
// eng starts any.
func watchStandbys(eng *Engine) *standbyEvents {
	ev := &standbyEvents{events: map[string][]string{}}
	eng.onStandby = func(id, what string) {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.events[id] = append(ev.events[id], what)
		switch what {
		case "starting":
			ev.starting++
		case "up", "failed":
			ev.starting--
		}
		ev.maxStarting = max(ev.maxStarting, ev.starting)
	}
	return ev
}

// count is how many times session id's standbys did what.
func (ev *standbyEvents) count(id, what string) int {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	n := 0
	for _, x := range ev.events[id] {
		if x == what {
			n++
		}
	}
	return n
}

// standbySlotsFree says that no standby of eng starts, or holds a slot to
// (a starting one holds its slot until it is up or failed).
func standbySlotsFree(eng *Engine) bool {
	return len(eng.standbySlots) == 0
}

// resetOf resets s through eng.
func resetOf(t *testing.T, eng *Engine, s *Session) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := eng.Reset(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// More standbys asked for than may start at once queue: all come up, never
// more than standbyStarts starting at a time, and a Close while some
// queue leaves none of them.
func TestStandbyStartsBounded(t *testing.T) {
	w := needWorld(t)
	eng := standbyEngine(t, nil)
	ev := watchStandbys(eng)
	var ss []*Session
	for range standbyStarts + 2 {
		ss = append(ss, newSessionOf(t, eng, Request{}))
	}
	for _, s := range ss {
		upStandby(t, eng, s.ID)
	}
	ev.mu.Lock()
	most := ev.maxStarting
	ev.mu.Unlock()
	if most < 1 || most > standbyStarts {
		t.Errorf("%d standbys started at once, want 1 to %d", most, standbyStarts)
	}
	// Warm resets of all queue the next standbys at once; the engine
	// closes while they start or wait to.
	for i, s := range ss {
		if ss[i] = resetOf(t, eng, s); !ss[i].Standby {
			t.Errorf("reset %s cold, want it to take its standby", s.ID)
		}
	}
	ev.mu.Lock()
	starting := ev.starting
	ev.mu.Unlock()
	eng.mu.Lock() // after ev.mu, not within: the engine calls onStandby under eng.mu
	t.Logf("at Close: %d standbys starting, %d waiting to start or being made", starting, len(eng.starting))
	eng.mu.Unlock()
	eng.Close()
	eng.mu.Lock()
	if len(eng.starting) > 0 || len(eng.standbys) > 0 {
		t.Errorf("after Close: standbys %v still to start, %v kept", eng.starting, eng.standbys)
	}
	eng.mu.Unlock()
	for _, s := range ss {
		c := StandbyCgroup(s.Plan)
		if pids, err := cgroupProcs(c.dir("pids")); err == nil && len(pids) > 0 {
			t.Errorf("after Close: processes %v in the standby cgroup of %s", pids, s.ID)
		}
	}
	waitFor(t, func() bool { return standbySlotsFree(eng) })
	for _, s := range ss {
		removeClean(t, w, s, w.eng)
	}
}

// A standby that fails as it starts frees its slot and is started again,
// standbyRetries times at most; then none starts until the next reset,
// which goes cold and starts one again.
func TestStandbyRetried(t *testing.T) {
	w := needWorld(t)
	dir := t.TempDir()
	copyExe := func(from, to string) {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(to, b, 0o755)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// The session's guestd is bound from guestd at each start: a file
	// renamed over it is what the next start binds, while the running
	// desktop's guestd runs on.
	guestd, good, broken := filepath.Join(dir, "guestd"), filepath.Join(dir, "good"), filepath.Join(dir, "broken")
	copyExe(w.guestd, guestd)
	copyExe(w.guestd, good)
	copyExe("/bin/false", broken) // guestd, essential, exits at once
	eng := standbyEngine(t, func(c *Config) { c.Guestd = guestd })
	ev := watchStandbys(eng)
	s := newSessionOf(t, eng, Request{})
	upStandby(t, eng, s.ID)
	if err := os.Rename(broken, guestd); err != nil {
		t.Fatal(err)
	}
	if r := resetOf(t, eng, s); !r.Standby {
		t.Fatalf("reset %+v cold, want it to take its standby", r)
	}
	waitFor(t, func() bool { return ev.count(s.ID, "given up") > 0 })
	if n, f := ev.count(s.ID, "starting"), ev.count(s.ID, "failed"); n != 2+standbyRetries || f != 1+standbyRetries {
		t.Errorf("%d standbys started, %d failed: want 1 up and %d failed", n, f, 1+standbyRetries)
	}
	if !standbySlotsFree(eng) {
		t.Error("a standby slot is still held once the standbys failed")
	}
	if err := os.Rename(good, guestd); err != nil {
		t.Fatal(err)
	}
	r := resetOf(t, eng, s)
	if r.Standby {
		t.Errorf("reset %+v took a standby, want none after they failed", r)
	}
	upStandby(t, eng, s.ID)
	if n := ev.count(s.ID, "given up"); n != 1 {
		t.Errorf("given up %d times, want once", n)
	}
	removeClean(t, w, r, eng)
}
