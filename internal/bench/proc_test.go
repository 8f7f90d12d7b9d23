package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/sessions"
)

// fakeHost lays out a /proc and a session's cgroups (v1, cpuacct on its
// own as on this project's machine) under a temporary directory.
type fakeHost struct {
	t      *testing.T
	proc   string
	cgroup sessions.CgroupPlan
}

func newFakeHost(t *testing.T) *fakeHost {
	dir := t.TempDir()
	h := &fakeHost{t: t, proc: filepath.Join(dir, "proc"), cgroup: sessions.CgroupPlan{Version: 1, Dirs: map[string]string{
		"pids": filepath.Join(dir, "pids", "s"), "cpuacct": filepath.Join(dir, "cpuacct", "s"), "memory": filepath.Join(dir, "memory", "s")}}}
	h.write(filepath.Join(h.proc, "meminfo"), "MemTotal:       24000000 kB\nMemAvailable:   20000000 kB\n")
	h.write(filepath.Join(h.proc, "stat"), "cpu  100 10 50 1000 30 5 5 20 0 0\n")
	return h
}

func (h *fakeHost) write(path, content string) {
	h.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// addProc makes a process: its stat line (utime and stime in ticks, its start
// time) and its memory.
func (h *fakeHost) addProc(pid, comm string, utime, stime, start string, pssKB string) {
	// 52 fields as the kernel writes them; the name may hold spaces and
	// parentheses.
	rest := []string{"S", "1", "1", "1", "0", "-1", "4194560", "100", "0", "0", "0", utime, stime, "0", "0", "20", "0", "1", "0", start, "1000", "100"}
	h.write(filepath.Join(h.proc, pid, "stat"), pid+" ("+comm+") "+strings.Join(rest, " ")+"\n")
	h.write(filepath.Join(h.proc, pid, "comm"), comm+"\n")
	h.write(filepath.Join(h.proc, pid, "smaps_rollup"), "00400000-7ffc0000 ---p 00000000 00:00 0 [rollup]\nRss:  9000 kB\nPss:  "+pssKB+
		" kB\nPss_Dirty:  100 kB\nPss_Anon: 100 kB\nPss_File:  300 kB\nPss_Shmem:   20 kB\nShared_Clean:  8000 kB\nKSM:  8 kB\nSwapPss:  0 kB\n")
}

func (h *fakeHost) members(dir string, pids ...string) {
	h.write(filepath.Join(dir, "cgroup.procs"), strings.Join(pids, "\n")+"\n")
}

func TestProcStatName(t *testing.T) {
	h := newFakeHost(t)
	h.addProc("42", "a (b) c", "150", "50", "777", "10")
	got, err := procfs{h.proc}.stat(42)
	if err != nil {
		t.Fatal(err)
	}
	if want := (ProcCPU{Comm: "a (b) c", Start: 777, CPU: 2 * time.Second}); got != want {
		t.Errorf("stat: %+v, want %+v", got, want)
	}
	h.write(filepath.Join(h.proc, "43", "stat"), "43 (short) S 1\n")
	if _, err := (procfs{h.proc}).stat(43); err == nil {
		t.Error("a truncated stat parsed")
	}
}

// The sample takes the cgroup's total and every process of the cgroup and
// the cgroups below it; the split gives a process alive at both ends its
// difference, a new one all its time, and the rest to the ended ones.
func TestCPUSampleAndSplit(t *testing.T) {
	h := newFakeHost(t)
	p := procfs{h.proc}
	h.write(filepath.Join(h.cgroup.Dirs["cpuacct"], "cpuacct.usage"), "1000000000\n")
	h.members(h.cgroup.Dirs["pids"], "10", "11")
	h.members(filepath.Join(h.cgroup.Dirs["pids"], "nested"), "12")
	h.addProc("10", "guestd", "10", "0", "100", "1")
	h.addProc("11", "Xvfb", "20", "0", "100", "1")
	h.addProc("12", "old", "5", "0", "100", "1")
	before, err := p.cpu(h.cgroup)
	if err != nil {
		t.Fatal(err)
	}
	if before.Total != time.Second || len(before.Procs) != 3 || before.Procs[12].Comm != "old" {
		t.Fatalf("before: %+v", before)
	}

	// guestd used 300 ms, Xvfb 100 ms; 12 ended and its PID went to a new
	// process that used 50 ms; a python that came and went used the rest.
	h.write(filepath.Join(h.cgroup.Dirs["cpuacct"], "cpuacct.usage"), "2000000000\n")
	h.addProc("10", "guestd", "35", "5", "100", "1")
	h.addProc("11", "Xvfb", "30", "0", "100", "1")
	h.addProc("12", "new", "5", "0", "900", "1")
	after, err := p.cpu(h.cgroup)
	if err != nil {
		t.Fatal(err)
	}
	got := cpuByProcess(before, after)
	want := map[string]time.Duration{"guestd": 300 * time.Millisecond, "Xvfb": 100 * time.Millisecond, "new": 50 * time.Millisecond,
		endedProcs: 550 * time.Millisecond}
	if len(got) != len(want) {
		t.Errorf("split %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("split %s = %v, want %v", k, got[k], v)
		}
	}
}

func TestCgroupV2AndErrors(t *testing.T) {
	dir := t.TempDir()
	c := sessions.CgroupPlan{Version: 2, Dirs: map[string]string{"": dir}}
	if err := os.WriteFile(filepath.Join(dir, "cpu.stat"), []byte("usage_usec 1500\nuser_usec 1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := cgroupCPU(c); err != nil || got != 1500*time.Microsecond {
		t.Errorf("v2 cpu: %v %v", got, err)
	}
	// A v1 plan with cpu and cpuacct mounted together names them both.
	both := sessions.CgroupPlan{Version: 1, Dirs: map[string]string{"cpu,cpuacct": dir}}
	if d, err := cgroupDir(both, "cpuacct"); err != nil || d != dir {
		t.Errorf("cpu,cpuacct: %q %v", d, err)
	}
	if _, err := cgroupDir(sessions.CgroupPlan{Version: 1, Dirs: map[string]string{"memory": dir}}, "cpuacct"); err == nil ||
		!strings.Contains(err.Error(), "no cgroup of the cpuacct controller") {
		t.Errorf("no cpuacct: %v", err)
	}
}

func TestHostCPU(t *testing.T) {
	h := newFakeHost(t)
	h.write(filepath.Join(h.proc, "stat"), "cpu  100 10 50 1000 30 5 5 20 0 0\ncpu0 50 5 25 500 15 2 3 10 0 0\nintr 1\n")
	got, err := procfs{h.proc}.hostCPU()
	if err != nil {
		t.Fatal(err)
	}
	if want := (HostCPU{Busy: 1700 * time.Millisecond, IOWait: 300 * time.Millisecond, Steal: 200 * time.Millisecond, Total: 12200 * time.Millisecond}); got != want {
		t.Errorf("host cpu %+v, want %+v", got, want)
	}
	h.write(filepath.Join(h.proc, "stat"), "intr 1\n")
	if _, err := (procfs{h.proc}).hostCPU(); err == nil {
		t.Error("a stat without the cpu line parsed")
	}
}

func TestMemoryAndMemAvailable(t *testing.T) {
	h := newFakeHost(t)
	p := procfs{h.proc}
	h.members(h.cgroup.Dirs["pids"], "10", "11", "12", "99") // 99 has exited
	h.addProc("10", "Xvfb", "0", "0", "1", "12000")
	h.addProc("11", "dbus-daemon", "0", "0", "1", "500")
	h.addProc("12", "dbus-daemon", "0", "0", "1", "400")
	got, err := p.memory(h.cgroup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ProcMem{
		"Xvfb":        {Procs: 1, Rss: 9000, Pss: 12000, PssAnon: 100, PssFile: 300, PssShmem: 20, KSM: 8},
		"dbus-daemon": {Procs: 2, Rss: 18000, Pss: 900, PssAnon: 200, PssFile: 600, PssShmem: 40, KSM: 16},
	}
	if len(got) != len(want) || got["Xvfb"] != want["Xvfb"] || got["dbus-daemon"] != want["dbus-daemon"] {
		t.Errorf("memory: %+v, want %+v", got, want)
	}
	if kb, err := p.memAvailable(); err != nil || kb != 20000000 {
		t.Errorf("MemAvailable: %d %v", kb, err)
	}
	// Before 6.6 smaps_rollup has no KSM line; without Pss it is broken.
	if m, err := parseRollup("Rss: 5 kB\nPss: 4 kB\nPss_Anon: 1 kB\nPss_File: 2 kB\nPss_Shmem: 1 kB\n"); err != nil || m.KSM != 0 || m.Pss != 4 {
		t.Errorf("a rollup without KSM: %+v %v", m, err)
	}
	if _, err := parseRollup("Rss: 5 kB\n"); err == nil {
		t.Error("a rollup without Pss parsed")
	}
}
