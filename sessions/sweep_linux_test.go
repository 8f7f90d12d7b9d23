package sessions

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// creatingInit returns the init of a session of prefix that a creator is
// still bringing up, once the desktop has at least n processes (init's
// children).
func creatingInit(w *testWorld, n int) (int, bool) {
	for id, pids := range findInits(w.prefix) {
		b, err := os.ReadFile(filepath.Join(w.eng.sessionDir(id), "session.json"))
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(b, &r) != nil || r.Session.State != StateCreating {
			continue
		}
		if len(children(pids[0])) >= n {
			return pids[0], true
		}
	}
	return 0, false
}

// children lists a process's children. They are listed by the thread
// that forked them (init's forking thread), so over all threads.
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func TestSweepAfterCreatorKilled(t *testing.T) {
	w := needWorld(t)
	live := newSession(t, Request{})
	// A guestd that never listens keeps every create in progress, so the
	// creator is killed mid-create for sure.
	hang := filepath.Join(t.TempDir(), "hang")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nexec sleep 100000\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		children int // how far the create got: init started, or the stack up
	}{{"init started", 0}, {"stack up", 5}} {
		t.Run(c.name, func(t *testing.T) {
			args := slices.Clone(w.cliArgs())
			args[slices.Index(args, "--guestd")+1] = hang
			cmd := exec.Command(w.drums, append([]string{"session", "create"}, args...)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			waitFor(t, func() bool { _, ok := creatingInit(w, c.children); return ok })
			cmd.Process.Kill()
			<-done

			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			rep, err := w.eng.Sweep(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Sessions) != 1 {
				t.Errorf("sweep report %+v: want the one interrupted session", rep)
			}
			var left []string
			for _, l := range leftovers(w.prefix, filepath.Join(w.dir, "state")) {
				mine := strings.Contains(l, live.ID) || strings.HasSuffix(l, hostVeth(w.prefix, live.Slot)) ||
					strings.HasSuffix(l, tableName(w.prefix, live.Slot)) || strings.HasSuffix(l, "/"+w.prefix)
				if !mine {
					left = append(left, l)
				}
			}
			if len(left) > 0 {
				t.Errorf("left after the sweep: %v", left)
			}
			if ids, _ := w.eng.ids(); !slices.Equal(ids, []string{live.ID}) {
				t.Errorf("session directories after the sweep: %v", ids)
			}
			if err := answers(live); err != nil {
				t.Errorf("the sweep hurt a live session: %v", err)
			}
		})
	}
}
