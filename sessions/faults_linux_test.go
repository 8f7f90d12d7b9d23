package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A SaveUpper whose process died leaves the session frozen: the next engine
// thaws and adopts it, and removing a frozen session does not hang.
func TestFrozenOrphanThawed(t *testing.T) {
	w := needWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, adopt := range []bool{true, false} {
		s := newSession(t, Request{})
		rec, err := w.eng.readRecord(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		// What a daemon killed during SaveUpper leaves: frozen, unlocked.
		if err := freeze(ctx, rec.Plan.Cgroup, true); err != nil {
			t.Fatal(err)
		}
		eng, err := New(w.config()) // a restarted daemon
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		if adopt {
			got, err := eng.Adopt(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(got, func(a *Session) bool { return a.ID == s.ID }) {
				t.Fatalf("Adopt did not adopt the frozen session %s: %v", s.ID, got)
			}
			if frozen, err := isFrozen(rec.Plan.Cgroup); err != nil || frozen {
				t.Fatalf("after Adopt: frozen %v %v", frozen, err)
			}
			if err := answers(s); err != nil {
				t.Fatalf("after Adopt: %v", err)
			}
			continue
		}
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		err = eng.Remove(rctx, s.ID)
		rcancel()
		if err != nil {
			t.Fatalf("remove a frozen session: %v", err)
		}
		// Its creator still holds its claims (a session is claimed until
		// the engine that holds it removes it too).
		if err := w.eng.Remove(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if left := sessionLeftovers(w, s); len(left) > 0 {
			t.Errorf("left %v", left)
		}
	}
}

// A freeze has a deadline: a copy that outlasts FreezeLimit is abandoned
// and the session thawed.
func TestFreezeLimit(t *testing.T) {
	w := needWorld(t)
	cfg := w.config()
	cfg.FreezeLimit = time.Millisecond
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, Request{})
	mustRun(t, s, "user", "head -c 200000000 /dev/zero > ~/big")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err = eng.SaveUpper(ctx, s.ID, t.TempDir()+"/snap")
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("SaveUpper with a 1 ms freeze limit: %v", err)
	}
	rec, _ := w.eng.readRecord(s.ID)
	if frozen, err := isFrozen(rec.Plan.Cgroup); err != nil || frozen {
		t.Fatalf("after an abandoned copy: frozen %v %v", frozen, err)
	}
	if err := answers(s); err != nil {
		t.Fatal(err)
	}
}

// A session whose init died stays claimed, its address dark, until it is
// removed: no other engine gets its address, and no packet to it leaves
// the host. Ended says it died.
func TestDeadSessionStaysClaimed(t *testing.T) {
	w := needWorld(t)
	s := newSession(t, Request{})
	ended, err := w.eng.Ended(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
		t.Fatal("Ended closed while the session runs")
	default:
	}
	killSessionInit(t, s)
	select {
	case <-ended:
	case <-time.After(opTimeout):
		t.Fatal("Ended not closed after init was killed")
	}
	if got, _ := w.eng.Get(s.ID); got == nil || got.State == StateReady {
		t.Fatalf("Get after init died: %+v", got)
	}
	addr := netip.MustParseAddr(s.Address)
	// Any engine claims an address block before it uses it: the dead
	// session's is not free.
	key := addrKey(netip.PrefixFrom(addr, 32))
	if f, ok, err := tryClaim(AddrClaimDir, key, "zz-0-claimer"); err != nil || ok {
		if f != nil {
			f.Close()
		}
		t.Fatalf("the dead session's address block %s was free to claim (%v)", key, err)
	}
	// The host's packets to the address are dropped, not routed out, once
	// the kernel has torn down the session's network namespace and with it
	// the veth (until then a packet goes into the dying namespace).
	rec, _ := w.eng.readRecord(s.ID)
	waitFor(t, func() bool { _, err := net.InterfaceByName(rec.Plan.Net.HostVeth); return err != nil })
	before := dropCount(t, rec.Plan.Net.Table, "output")
	c, err := net.Dial("udp", netip.AddrPortFrom(addr, 9).String())
	if err == nil {
		c.Write([]byte("x"))
		c.Close()
	}
	if after := dropCount(t, rec.Plan.Net.Table, "output"); after <= before {
		t.Errorf("a packet to the dead session's address was not dropped (counter %d -> %d)", before, after)
	}
}

// dropCount reads the packets counter of a chain's drop rules.
func dropCount(t testing.TB, table, chain string) int {
	t.Helper()
	out, err := exec.Command("nft", "list", "chain", "inet", table, chain).Output()
	if err != nil {
		t.Fatalf("nft list chain %s %s: %v", table, chain, err)
	}
	n := 0
	for _, f := range strings.Split(string(out), "\n") {
		if i := strings.Index(f, "counter packets "); i >= 0 && strings.HasSuffix(strings.TrimSpace(f), "drop") {
			var c int
			if _, err := fmt.Sscan(f[i+len("counter packets "):], &c); err == nil {
				n += c
			}
		}
	}
	return n
}

// drums sweep removes a dead session a crashed daemon left, with the
// daemon's record of it; a dead session a live engine holds (a lease a
// client still has) is left to that engine.
func TestSweepDeadSessions(t *testing.T) {
	w := needWorld(t)
	out, err := exec.Command(w.drums, append([]string{"session", "create", "--json"}, w.cliArgs()...)...).Output()
	if err != nil {
		t.Fatalf("drums session create: %v\n%s", err, out)
	}
	var orphan Session
	if err := json.Unmarshal(out, &orphan); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.eng.Remove(context.Background(), orphan.ID) })
	held := newSession(t, Request{})
	providerDir := t.TempDir()
	record := filepath.Join(providerDir, "desktops", orphan.ID+".json")
	os.MkdirAll(filepath.Dir(record), 0o700)
	if err := os.WriteFile(record, []byte(`{"id":"`+orphan.ID+`.X","session":"`+orphan.ID+`","state":"leased"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	killSessionInit(t, &orphan)
	killSessionInit(t, held)
	waitFor(t, func() bool { r, _ := w.eng.readRecord(orphan.ID); return r != nil && !r.initAlive() })
	sweep := exec.Command(w.drums, append(append([]string{"sweep", "--json"}, w.cliArgs()...), "--provider-dir", providerDir)...)
	out, err = sweep.Output()
	if err != nil {
		t.Fatalf("drums sweep: %v\n%s", err, out)
	}
	var rep struct {
		SweepReport
		Records []string `json:"records"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("sweep printed %q: %v", out, err)
	}
	if !slices.Contains(rep.Sessions, orphan.ID) || !slices.Equal(rep.Records, []string{record}) {
		t.Errorf("sweep removed %v and records %v, want %s and %s", rep.Sessions, rep.Records, orphan.ID, record)
	}
	if _, err := os.Stat(record); err == nil {
		t.Error("the daemon's record of the swept session is still there")
	}
	if slices.Contains(rep.Sessions, held.ID) {
		t.Errorf("sweep removed %s, which a live engine keeps claimed", held.ID)
	}
	if _, err := os.Stat(w.eng.sessionDir(held.ID)); err != nil {
		t.Errorf("the held dead session's directory: %v", err)
	}
}
