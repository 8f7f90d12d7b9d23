package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// faultSeed is DRUMS_FAULT_SEED, or the time: printed, so a failing run
// can be repeated.
func faultSeed(t testing.TB) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DRUMS_FAULT_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("DRUMS_FAULT_SEED %q: %v", s, err)
		}
	}
	t.Logf("fault seed %d (DRUMS_FAULT_SEED=%d repeats this run)", seed, seed)
	return seed
}

// envCount is the positive number in the environment variable name, or def.
func envCount(t testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s %q: want a positive number", name, s)
	}
	return n
}

// faultWorld is what a fault run needs: a seeded source, an engine of its
// own prefix for capacity desktops, and the daemon's state and socket.
func faultWorld(t testing.TB, capacity int) (rng *rand.Rand, ecfg sessions.Config, eng *sessions.Engine, state, sock string) {
	rng = rand.New(rand.NewPCG(faultSeed(t), 0))
	ecfg = engineConfig(t, capacity)
	eng = engineFor(t, ecfg)
	dir := t.TempDir()
	return rng, ecfg, eng, filepath.Join(dir, "state"), filepath.Join(dir, "d.sock")
}

// faultOps are what a daemon is killed in the middle of.
var faultOps = []string{"lease-cold", "lease-warm", "revert", "snapshot", "lease-snapshot", "release"}

// runFaultOp starts op on the daemon behind c; its error is the kill's
// business, not the test's.
func runFaultOp(ctx context.Context, c *client.Client, op string, leased []client.Desktop) {
	var target string
	if len(leased) > 0 {
		target = leased[0].ID
	}
	switch op {
	case "lease-cold":
		c.Lease(ctx, client.LeaseRequest{Width: 800, Height: 600, LeaseSeconds: 900})
	case "lease-warm":
		c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 900})
	case "revert":
		c.Revert(ctx, target, "")
	case "snapshot":
		c.SaveSnapshot(ctx, target, "fault")
	case "lease-snapshot":
		c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, Snapshot: "fault", LeaseSeconds: 900})
	case "release":
		c.Release(ctx, target)
	}
}

// TestTier1DaemonKilledAnywhere kills the daemon with SIGKILL at random
// points inside lease, revert, snapshot save and restore, create and reset,
// and starts another on the same state each time: it adopts what is
// healthy, removes the rest, nothing stays frozen, and every leased
// desktop answers. After a drain the host holds nothing of the prefix.
func TestTier1DaemonKilledAnywhere(t *testing.T) {
	rounds := envCount(t, "DRUMS_FAULT_ROUNDS", 2*len(faultOps))
	rng, ecfg, eng, state, sock := faultWorld(t, 4)
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	args := []string{"--pool-size", "1", "--warm", "1024x768", "--drain-on-exit"}
	s := startServe(t, ecfg, state, sock, args...)
	c, err := client.New(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 900}); err != nil {
		t.Fatal(err)
	}
	var order []int // every op at least once, in a seeded order
	for len(order) < rounds {
		order = append(order, rng.Perm(len(faultOps))...)
	}
	for round := range rounds {
		leased := leasedOf(t, ctx, c)
		if len(leased) == 0 {
			d, err := c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 900})
			if err != nil {
				t.Fatal(err)
			}
			leased = []client.Desktop{d}
		}
		// Enough written that a snapshot's copy (the desktop frozen) takes
		// a while: the kill can land inside the freeze.
		guestExec(t, leased[0], "test -e /tmp/big || head -c 300000000 /dev/zero > /tmp/big")
		op := faultOps[order[round]]
		delay := time.Duration(rng.IntN(150)) * time.Millisecond
		t.Logf("round %d: kill -9 %v into %s (%d leased)", round, delay, op, len(leased))
		opCtx, opCancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); runFaultOp(opCtx, c, op, leased) }()
		time.Sleep(delay) // the fault's timing, chosen by the seed
		if err := syscall.Kill(-s.p.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-s.p.Done()
		opCancel()
		<-done
		s = startServe(t, ecfg, state, sock, args...)
		checkAfterRestart(t, ctx, c, ecfg, leased)
	}
	// A drain leaves nothing of the prefix: desktops, records, claims,
	// cgroups, tables, links.
	if err := s.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-s.p.Done()
	if l := eng.List(); len(l) > 0 {
		t.Errorf("sessions after the drain: %v", l)
	}
	if recs, _ := os.ReadDir(filepath.Join(state, "desktops")); len(recs) > 0 {
		t.Errorf("records after the drain: %v", recs)
	}
	if rep, err := eng.Sweep(ctx); err != nil || !rep.Empty() {
		t.Errorf("leftovers after the drain: %+v %v", rep, err)
	}
	if f := frozenCgroups(ecfg.Prefix); len(f) > 0 {
		t.Errorf("frozen cgroups after the drain: %v", f)
	}
}

func leasedOf(t testing.TB, ctx context.Context, c *client.Client) []client.Desktop {
	t.Helper()
	l, err := c.List(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var out []client.Desktop
	for _, d := range l {
		if d.State == client.StateLeased {
			out = append(out, d)
		}
	}
	return out
}

// checkAfterRestart: the leases from before the kill are still there
// (reverted or released ones excepted), every leased desktop answers,
// nothing is frozen, and every session of the prefix is a desktop of the
// daemon (once its background work, a recycle say, is done).
func checkAfterRestart(t *testing.T, ctx context.Context, c *client.Client, ecfg sessions.Config, before []client.Desktop) {
	t.Helper()
	for _, d := range before {
		if g, err := c.Get(ctx, d.ID); err == nil && g.State == client.StateLeased {
			if err := screenshotOK(g); err != nil {
				t.Errorf("adopted lease %s does not answer: %v", d.ID, err)
			}
		}
	}
	if f := frozenCgroups(ecfg.Prefix); len(f) > 0 {
		t.Errorf("frozen after the restart: %v", f)
	}
	fresh, err := sessions.New(ecfg)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := c.List(ctx)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		var known []string
		busy := false
		for _, d := range l {
			known = append(known, strings.SplitN(d.ID, ".", 2)[0])
			busy = busy || d.State == client.StateRecycling
		}
		var stray []string
		for _, s := range fresh.List() {
			if !slices.Contains(known, s.ID) {
				stray = append(stray, s.ID)
			}
		}
		h, herr := c.Health(ctx)
		if len(stray) == 0 && !busy && herr == nil && h.Desktops[client.StateCreating] == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: sessions the daemon does not know %v, desktops %+v", stray, l)
		}
		time.Sleep(50 * time.Millisecond) // the daemon's background work has no event to wait on from here
	}
}

// frozenCgroups lists the prefix's cgroups that are frozen, in v1's freezer
// hierarchy and in v2's.
func frozenCgroups(prefix string) []string {
	var out []string
	for _, root := range []string{"/sys/fs/cgroup/freezer", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if path != root && !strings.Contains(path, prefix) && strings.Count(strings.TrimPrefix(path, root), "/") > 1 {
				return filepath.SkipDir
			}
			for _, f := range []string{"freezer.state", "cgroup.freeze"} {
				b, err := os.ReadFile(filepath.Join(path, f))
				if err == nil && strings.Contains(path, prefix) {
					if s := strings.TrimSpace(string(b)); s == "FROZEN" || s == "FREEZING" || s == "1" {
						out = append(out, path)
					}
				}
			}
			return nil
		})
	}
	return out
}

// TestTier1DesktopProcessKilled kills each essential process of a leased
// desktop (and its init) from the host: the lease turns failed at once,
// renew says why, revert gives a working desktop, and a release ends it.
func TestTier1DesktopProcessKilled(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Image = testImage
	h, _ := startReal(t, cfg)
	for _, victim := range []string{"Xvfb", "guestd", "dbus-daemon", "init"} {
		d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 800, Height: 600})
		if err != nil {
			t.Fatal(err)
		}
		pid := desktopProcess(t, d, victim)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill %s %d: %v", victim, pid, err)
		}
		waitState(t, h, d.ID, client.StateFailed)
		if hl, err := h.c.Health(h.ctx); err != nil || hl.Desktops[client.StateFailed] != 1 {
			t.Errorf("%s killed: health %+v %v", victim, hl, err)
		}
		var ce *client.Error
		if _, err := h.c.Renew(h.ctx, d.ID, 60); !errors.As(err, &ce) || ce.Code != client.CodeConflict {
			t.Errorf("%s killed: renew %v", victim, err)
		}
		r, err := h.c.Revert(h.ctx, d.ID, "")
		if err != nil {
			t.Fatalf("%s killed: revert: %v", victim, err)
		}
		if err := screenshotOK(r); err != nil {
			t.Fatalf("%s killed: the reverted desktop: %v", victim, err)
		}
		if err := h.c.Release(h.ctx, r.ID); err != nil {
			t.Fatal(err)
		}
		waitGone(t, h.c, r.ID)
	}
}

// desktopProcess finds a process of a leased desktop by command name
// ("init": the session's init).
func desktopProcess(t testing.TB, d client.Desktop, comm string) int {
	t.Helper()
	pid, err := findDesktopProcess(d, comm)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func findDesktopProcess(d client.Desktop, comm string) (int, error) {
	initPID := 0
	for _, p := range procs() {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p)); strings.HasSuffix(strings.TrimRight(string(b), "\x00"), "\x00init\x00"+strings.SplitN(d.ID, ".", 2)[0]) {
			initPID = p
		}
	}
	if initPID == 0 {
		return 0, fmt.Errorf("no init for %s", d.ID)
	}
	if comm == "init" {
		return initPID, nil
	}
	var walk func(pid int) int
	walk = func(pid int) int {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			for _, f := range strings.Fields(string(b)) {
				c, _ := strconv.Atoi(f)
				if name, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c)); strings.TrimSpace(string(name)) == comm {
					return c
				}
				if got := walk(c); got != 0 {
					return got
				}
			}
		}
		return 0
	}
	if pid := walk(initPID); pid != 0 {
		return pid, nil
	}
	return 0, fmt.Errorf("no %s in %s", comm, d.ID)
}

func procs() []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, n)
		}
	}
	return out
}
