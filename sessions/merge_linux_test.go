package sessions

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// With Config.MemoryMerge every process of the desktop is marked for
// same-page merging: the stack init forked and exec'd through busybox, and
// what a shell in the desktop forks and execs in turn. Without it none is.
func TestMemoryMerge(t *testing.T) {
	w := needWorld(t)
	cfg := w.config()
	cfg.MemoryMerge = true
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	merged := newSessionOf(t, eng, Request{})
	plain := newSession(t, Request{})
	for _, c := range []struct {
		s    *Session
		want string
	}{{merged, "yes"}, {plain, "no"}} {
		pids, err := cgroupProcs(c.s.Plan.Cgroup.dir("pids"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, pid := range pids {
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "ksm_stat"))
			if err != nil {
				continue // exited meanwhile
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
			n++
			if got := mergeAny(string(stat)); got != c.want {
				t.Errorf("session %s: %s (pid %d) ksm_merge_any %q, want %q", c.s.ID, strings.TrimSpace(string(comm)), pid, got, c.want)
			}
		}
		if n < 5 {
			t.Errorf("session %s: %d processes read, want the whole stack", c.s.ID, n)
		}
		// The shell is init's child; the first cat is the shell's.
		if got := mergeAny(mustRun(t, c.s, "", "cat /proc/self/ksm_stat | cat")); got != c.want {
			t.Errorf("session %s: a command's ksm_merge_any %q, want %q", c.s.ID, got, c.want)
		}
	}
}

// mergeAny is the ksm_merge_any line's value of /proc/PID/ksm_stat.
func mergeAny(stat string) string {
	for _, line := range strings.Split(stat, "\n") {
		if v, ok := strings.CutPrefix(line, "ksm_merge_any: "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
