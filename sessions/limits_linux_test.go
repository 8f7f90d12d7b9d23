package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// cgroupCounter reads "key N" from a cgroup file of the session.
func cgroupCounter(t testing.TB, s *Session, controller, file, key string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Plan.Cgroup.Dirs[controller], file))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return 0
}

func TestLimits(t *testing.T) {
	needWorld(t)
	other := newSession(t, Request{})
	s := newSession(t, Request{Limits: Limits{MemoryBytes: 256 << 20, Pids: 256, CPUs: 0.5}})
	memCtl, memFile, memKey := "memory", "memory.oom_control", "oom_kill"
	pidsCtl := "pids"
	if s.Plan.Cgroup.Version == 2 {
		memCtl, memFile, pidsCtl = "", "memory.events", ""
	}

	// A memory hog is killed by the session's OOM killer. The shell that
	// reports it is in the same cgroup and may go with it before its
	// echo, so bash's own "Killed" line counts as well; the cgroup's
	// oom_kill counter below is the proof.
	out, _ := run(t, s, "", `/usr/bin/python3 -c "b = b'x' * (700 << 20); print('surv' + 'ived')"; echo status=$?`)
	if strings.Contains(out, "survived") || !strings.Contains(out, "status=137") && !strings.Contains(out, "Killed") {
		t.Errorf("memory hog: %s", out)
	}
	if n := cgroupCounter(t, s, memCtl, memFile, memKey); n < 1 {
		t.Errorf("%s %s = %d", memFile, memKey, n)
	}
	if err := answers(other); err != nil {
		t.Errorf("another session during the hog: %v", err)
	}
	if err := answers(s); err != nil {
		t.Errorf("the session itself after its hog: %v", err)
	}

	// A fork bomb stops at pids.max (it counts threads) while the other
	// session keeps answering.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go world.eng.Exec(ctx, s.ID, []string{"/bin/bash", "-c", ":(){ :|:& };:"}, ExecOptions{})
	waitFor(t, func() bool {
		if s.Plan.Cgroup.Version == 2 {
			return cgroupCounter(t, s, pidsCtl, "pids.events", "max") > 0
		}
		b, _ := os.ReadFile(filepath.Join(s.Plan.Cgroup.Dirs[pidsCtl], "pids.events"))
		f := strings.Fields(string(b))
		return len(f) == 2 && f[1] != "0"
	})
	for range 3 {
		if err := answers(other); err != nil {
			t.Errorf("another session during the fork bomb: %v", err)
		}
	}
	cancel()
	// Removing the bombed session ends every process of it.
	if err := world.eng.Remove(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if l := sessionLeftovers(world, s); len(l) > 0 {
		t.Errorf("left after removing the bombed session: %v", l)
	}
	if err := answers(other); err != nil {
		t.Error(err)
	}
}
