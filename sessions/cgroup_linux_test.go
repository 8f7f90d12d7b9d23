package sessions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// A create's cgroup setup and another session's remove can run at once (a
// daemon's revert does both): the remove takes the prefix's directories
// away only when no create is setting up in them, so a setup never fails
// for a prefix directory removed under it (ENOENT, or ENODEV reading a
// removed cpuset's cpus).
func TestCgroupSetupRacesPrefixRemoval(t *testing.T) {
	eng, p := cgroupEngine(t, "race")
	ctx := context.Background()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the remove of the prefix's last session, again and again
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				eng.removeBases()
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := range 200 {
		if err := eng.setupCgroup(ctx, p); err != nil {
			t.Fatalf("setup %d: %v", i, err)
		}
		if err := removeCgroup(ctx, p); err != nil {
			t.Fatalf("remove %d: %v", i, err)
		}
	}
}

// Removing a cgroup2 directory kills what runs in the cgroups under it,
// a process still forking children included (cgroup.kill), and removes
// them, deepest first.
func TestRemoveCgroupKillsSubtree(t *testing.T) {
	eng, p := cgroupEngine(t, "kill")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := eng.setupCgroup(ctx, p); err != nil {
		t.Fatal(err)
	}
	dir := p.unified()
	if dir == "" {
		t.Fatalf("the host has no cgroup2 hierarchy: %+v", eng.facts.cgroups)
	}
	leaf := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(leaf, 0o755); err != nil {
		t.Fatal(err)
	}
	cg, err := os.Open(leaf)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	cmd := exec.Command("/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do sleep 1000 & done; exec sleep 1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := removeCgroupDir(ctx, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after its removal: %v", dir, err)
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("the cgroup's process: %v", err)
	}
}

// cgroupEngine makes an engine of its own prefix (of the test family, so a
// crashed run's directories are swept: the world's sessions keep the
// world prefix's directories busy) and the cgroup plan of a session name
// of it, removed with the prefix's directories when the test ends.
func cgroupEngine(t *testing.T, name string) (*Engine, CgroupPlan) {
	t.Helper()
	cfg := needWorld(t).config()
	cfg.Prefix = "zt" + randomName(5)
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := eng.facts.cgroups.plan(name, Limits{MemoryBytes: 1 << 30, Pids: 100, CPUs: 1})
	t.Cleanup(func() {
		removeCgroup(ctx, p)
		eng.removeBases()
		os.RemoveAll(eng.dir)
	})
	// The prefix's state directory, which holds the cgroup lock, as a
	// create's allocation makes it before the setup.
	pl, err := eng.prefixLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pl.unlock()
	return eng, p
}
