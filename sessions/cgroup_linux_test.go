package sessions

import (
	"context"
	"os"
	"sync"
	"testing"
)

// A create's cgroup setup and another session's remove can run at once (a
// daemon's revert does both): the remove takes the prefix's directories
// away only when no create is setting up in them, so a setup never fails
// for a prefix directory removed under it (ENOENT, or ENODEV reading a
// removed cpuset's cpus).
func TestCgroupSetupRacesPrefixRemoval(t *testing.T) {
	w := needWorld(t)
	// An engine of its own prefix (of the test family, so a crashed run's
	// directories are swept): the world's sessions keep the world
	// prefix's directories busy.
	cfg := w.config()
	cfg.Prefix = "zt" + randomName(5)
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := eng.facts.cgroups.plan("race", Limits{MemoryBytes: 1 << 30, Pids: 100, CPUs: 1})
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
