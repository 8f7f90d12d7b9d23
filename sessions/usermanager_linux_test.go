package sessions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/testimage"
)

// userService is the user manager's cgroup in the desktop, as in the VM.
const userService = "/user.slice/user-1000.slice/user@1000.service"

// A GNOME desktop runs the user's systemd as the VM's user@1000.service:
// `systemctl --user` says it is running with no failed unit, starts and
// stops a unit of the user's in a cgroup of its own, under the session's
// limits, and leaves drums' session bus alone. The desktop sees its own
// cgroup subtree only and cannot write above it; a reset starts it afresh
// and a remove leaves no cgroup of the session on the host.
func TestUserManager(t *testing.T) {
	testimage.NeedImages(t, gnomeImage)
	w := needWorld(t)
	s := newSession(t, Request{Image: gnomeImage})
	cg := s.Plan.Cgroup
	if cg.unified() == "" {
		t.Fatalf("the host has no cgroup2 hierarchy (layout %+v): the user manager needs one", w.eng.facts.cgroups)
	}
	userManagerUp(t, s)
	if out := mustRun(t, s, "", "cat /proc/$(pgrep -u user -x systemd)/cgroup | grep ^0::"); strings.TrimSpace(out) != "0::"+userService+"/init.scope" {
		t.Errorf("the user manager's cgroup: %s", out)
	}
	// drums' session bus is still the one at the desktop's address: the
	// image's dbus.socket is masked and down, and a call on the bus
	// (which would socket-activate the image's bus, were it listening)
	// leaves no bus daemon of systemd's.
	for _, c := range []struct{ cmd, want string }{
		{"is-enabled", "masked-runtime\n"}, {"is-active", "inactive\n"},
	} {
		if out, _ := run(t, s, "", "systemctl --user "+c.cmd+" dbus.socket"); out != c.want {
			t.Errorf("systemctl --user %s dbus.socket: %q, want %q", c.cmd, out, c.want)
		}
	}
	mustRun(t, s, "", "gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus --method org.freedesktop.DBus.GetId")
	if out := mustRun(t, s, "", "pgrep -u user -fa dbus-daemon"); strings.Contains(out, "--systemd-activation") {
		t.Errorf("the user manager started its own session bus: %s", out)
	}

	// A unit of the user's runs in its own cgroup, under the session's.
	mustRun(t, s, "", `mkdir -p ~/.config/systemd/user && printf '[Service]\nExecStart=/bin/sleep infinity\n' > ~/.config/systemd/user/drums-test.service &&
		systemctl --user daemon-reload && systemctl --user start drums-test.service`)
	unit := userService + "/app.slice/drums-test.service"
	if out := mustRun(t, s, "", "cat /proc/$(systemctl --user show -p MainPID --value drums-test.service)/cgroup | grep ^0::"); strings.TrimSpace(out) != "0::"+unit {
		t.Errorf("the unit's cgroup: %s, want 0::%s", out, unit)
	}
	hostUnit := filepath.Join(cg.unified(), unit)
	procs, err := cgroupProcs(hostUnit)
	if err != nil || len(procs) != 1 {
		t.Fatalf("the unit's cgroup on the host %s: %v %v", hostUnit, procs, err)
	}
	// Every hierarchy with the session's limits holds the unit's process:
	// on v1 the user manager moves it in the unified hierarchy only; on v2
	// its cgroup is under the session's.
	if cg.Version == 1 {
		for _, c := range []string{"memory", "pids", "cpu", "devices", "freezer"} {
			in, err := cgroupProcs(cg.dir(c))
			if err != nil || !slices.Contains(in, procs[0]) {
				t.Errorf("the unit's process %d is not in the session's %s cgroup %s: %v %v", procs[0], c, cg.dir(c), in, err)
			}
		}
	}
	gone := watchRemoval(t, hostUnit)
	mustRun(t, s, "", "systemctl --user stop drums-test.service")
	gone()

	// The desktop sees its own subtree, rooted at its root, and nothing of
	// the host's: not the prefix's directory, not another session's.
	if out := mustRun(t, s, "", "cat /proc/self/cgroup | grep ^0::; find /sys/fs/cgroup -mindepth 1 -maxdepth 1 -type d -printf '%f\\n' | sort; stat -c %U /sys/fs/cgroup"+userService); out != "0::/\n"+systemManagerCgroup+"\nuser.slice\nuser\n" {
		t.Errorf("the desktop's cgroups:\n%s", out)
	}
	if out := mustRun(t, s, "", "find /sys/fs/cgroup -name '"+w.prefix+"*'"); out != "" {
		t.Errorf("the desktop sees the host's names: %s", out)
	}
	// Neither its root nor its user can write outside what is delegated to
	// them: the desktop's cgroup root (where init is: its root could
	// otherwise freeze init in a cgroup of its own), the bounds on it,
	// another hierarchy (a new mount), the slices above the user's
	// manager.
	for _, c := range []struct{ user, script string }{
		{"root", "echo $$ > /sys/fs/cgroup/cgroup.procs"},
		{"root", "mkdir /sys/fs/cgroup/x"},
		{"root", "echo 1 > /sys/fs/cgroup/user.slice/cgroup.procs"},
		{"root", "echo +pids > /sys/fs/cgroup/cgroup.subtree_control"},
		{"root", "echo 100000 > /sys/fs/cgroup/cgroup.max.descendants"},
		{"root", "echo 1000 > /sys/fs/cgroup/cgroup.max.depth"},
		{"root", "mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg"},
		{"root", "mkdir -p /tmp/cg && mount -t cgroup -o memory none /tmp/cg"},
		{"", "echo $$ > /sys/fs/cgroup/cgroup.procs"},
		{"", "echo $$ > /sys/fs/cgroup/user.slice/cgroup.procs"},
		{"", "mkdir /sys/fs/cgroup/user.slice/user-1000.slice/x"},
	} {
		if out, code := run(t, s, c.user, c.script); code == 0 {
			t.Errorf("%s in the desktop: %q succeeded: %s", c.user, c.script, out)
		}
	}
	if cg.Version == 2 {
		if out, code := run(t, s, "root", "echo max > /sys/fs/cgroup/memory.max"); code == 0 {
			t.Errorf("the desktop lifted its memory limit: %s", out)
		}
	}

	// A reset starts the manager afresh: what the last one made is gone,
	// and what the last desktop's root did to its delegated cgroups (a
	// mode, an extended attribute) too.
	mustRun(t, s, "", "mkdir /sys/fs/cgroup"+userService+"/app.slice/leftover.slice")
	mustRun(t, s, "root", `chmod 0777 /sys/fs/cgroup/user.slice && python3 -c 'import os; os.setxattr("/sys/fs/cgroup/user.slice", "user.drums", b"1")'`)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := w.eng.Reset(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	userManagerUp(t, r)
	if _, err := os.Stat(filepath.Join(cg.unified(), userService, "app.slice", "leftover.slice")); !os.IsNotExist(err) {
		t.Errorf("a cgroup of before the reset: %v", err)
	}
	slice := filepath.Join(cg.unified(), "user.slice")
	if st, err := os.Stat(slice); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("%s after the reset: %v %v, want mode 0755", slice, st, err)
	}
	if n, err := unix.Getxattr(slice, "user.drums", nil); !errors.Is(err, unix.ENODATA) {
		t.Errorf("%s after the reset: the last desktop's user.drums: %d %v", slice, n, err)
	}

	if err := w.eng.Remove(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if left := sessionLeftovers(w, r); len(left) > 0 {
		t.Errorf("after remove: %v", left)
	}

	// A desktop whose init died leaves its manager's cgroups, empty, until
	// the sweep removes them with the rest.
	d := newSession(t, Request{Image: gnomeImage})
	userManagerUp(t, d)
	killSessionInit(t, d)
	waitFor(t, func() bool { r, _ := w.eng.readRecord(d.ID); return r != nil && !r.initAlive() })
	if _, err := os.Stat(filepath.Join(d.Plan.Cgroup.unified(), userService, "init.scope")); err != nil {
		t.Errorf("the dead desktop's manager left no cgroup to sweep: %v", err)
	}
	rep, err := w.eng.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if left := sessionLeftovers(w, d); len(left) > 0 {
		t.Errorf("after the sweep (%+v): %v", rep, left)
	}
}

// watchRemoval watches for the removal of dir; the function it returns
// waits for it (an inotify watch on its parent, which the kernel notifies
// whichever mount of the cgroup2 hierarchy the rmdir came through).
func watchRemoval(t *testing.T, dir string) func() {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "inotify")
	t.Cleanup(func() { f.Close() })
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(dir), unix.IN_DELETE|unix.IN_ONLYDIR); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		buf := make([]byte, 4096)
		for {
			if _, err := os.Stat(dir); os.IsNotExist(err) {
				return
			}
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(opTimeout.Milliseconds()))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				t.Fatalf("%s was not removed: %v", dir, err)
			}
			if _, err := f.Read(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// userManagerUp checks that the session's user manager is running with no
// failed unit.
func userManagerUp(t *testing.T, s *Session) {
	t.Helper()
	if out, _ := run(t, s, "", "systemctl --user is-system-running"); out != "running\n" {
		t.Errorf("systemctl --user is-system-running: %q%s", out, mustRun(t, s, "", "systemctl --user list-jobs; systemctl --user --failed"))
	}
	if out := mustRun(t, s, "", "systemctl --user --failed --no-legend"); out != "" {
		t.Errorf("failed user units: %s", out)
	}
}

// A warm reset (Config.Standby) hands over to a standby whose user manager
// came up under the session's other cgroup names; the next standby takes
// the first names back, with nothing of the manager that ran there.
func TestUserManagerStandby(t *testing.T) {
	testimage.NeedImages(t, gnomeImage)
	w := needWorld(t)
	eng := standbyEngine(t, nil)
	s := newSessionOf(t, eng, Request{Image: gnomeImage})
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for round := range 2 {
		sb := upStandby(t, eng, s.ID)
		mustRunOn(t, eng, s, "", "mkdir /sys/fs/cgroup"+userService+"/app.slice/leftover.slice")
		old := s.Plan.Cgroup.unified()
		r, err := eng.Reset(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Standby || r.InitPID != sb.pid {
			t.Fatalf("round %d: the reset did not take the standby: %+v", round, r)
		}
		if out, _ := runOn(t, eng, r, "", "systemctl --user is-system-running"); out != "running\n" {
			t.Errorf("round %d: after the warm reset, systemctl --user is-system-running: %q", round, out)
		}
		if out := mustRunOn(t, eng, r, "", "cat /proc/$(pgrep -u user -x systemd)/cgroup | grep ^0::"); strings.TrimSpace(out) != "0::"+userService+"/init.scope" {
			t.Errorf("round %d: the user manager's cgroup: %s", round, out)
		}
		if _, err := os.Stat(filepath.Join(sb.plan.Cgroup.unified(), userService, "init.scope")); err != nil {
			t.Errorf("round %d: the manager is not under the standby's cgroup %s: %v", round, sb.plan.Cgroup.unified(), err)
		}
		// The next standby starts in the names the old desktop had: what
		// its manager made there goes first.
		upStandby(t, eng, s.ID)
		if _, err := os.Stat(filepath.Join(old, userService, "app.slice", "leftover.slice")); !os.IsNotExist(err) {
			t.Errorf("round %d: a cgroup of the desktop before the reset under %s: %v", round, old, err)
		}
		s = r
	}
	if err := eng.Remove(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if left := sessionLeftovers(w, s); len(left) > 0 {
		t.Errorf("after remove: %v", left)
	}
}
