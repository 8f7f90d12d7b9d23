package sessions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/sessions/images"
)

// A GNOME desktop runs the image's systemd as its system manager: the
// system systemctl answers its user, its root and sudo alike, with no
// failed unit, and loginctl, hostnamectl, localectl and timedatectl work
// over the system bus it serves. It is PID 1 of a namespace of its own,
// the desktop's root under the desktop's seccomp filter (a host uid of
// its own, no host root), sees its own /proc with the desktop's masks, and
// runs its units in its delegated cgroup. A reset starts it afresh; a
// remove leaves nothing of it.
func TestSystemManager(t *testing.T) {
	testimage.NeedImages(t, gnomeImage)
	w := needWorld(t)
	s := newSession(t, Request{Image: gnomeImage})
	systemManagerUp(t, s)
	for _, c := range []string{"loginctl", "hostnamectl status", "localectl status"} {
		if out, code := run(t, s, "", c); code != 0 {
			t.Errorf("%s exited %d: %s", c, code, out)
		}
	}
	if out := mustRun(t, s, "", "hostnamectl hostname; timedatectl show -p Timezone --value"); out != images.Hostname+"\n"+images.OSWorldTimeZone+"\n" {
		t.Errorf("host name and time zone: %q", out)
	}
	// The manager's boot, which came after the stack's start, left what
	// the stack made in /tmp: the X server's socket, guestd's.
	if out, code := run(t, s, "root", "ls -d /tmp/.X11-unix/X0 /tmp/guestd-*/pyautogui.sock"); code != 0 {
		t.Errorf("the stack's files in /tmp: %s", out)
	}
	// The masked units are masked, and no generator ran (or it wrote out
	// what it generated).
	units := strings.ReplaceAll(strings.Join(systemUnitsMasked, " "), "@.", "@loop.")
	if out, _ := run(t, s, "", "systemctl is-enabled "+units+"; find /run/systemd/generator* -mindepth 1 2>/dev/null"); out != strings.Repeat("masked-runtime\n", len(systemUnitsMasked)) {
		t.Errorf("masked units and generators' output:\n%s", out)
	}

	pid := strings.TrimSpace(mustRun(t, s, "root", "pgrep -x -u root systemd"))
	status := mustRun(t, s, "root", "grep -E '^(NSpid|Seccomp):' /proc/"+pid+"/status; grep ^0:: /proc/"+pid+"/cgroup")
	if want := fmt.Sprintf("NSpid:\t%s\t1\nSeccomp:\t2\n0::/%s/init.scope\n", pid, systemManagerCgroup); status != want {
		t.Errorf("the system manager's status:\n%s\nwant:\n%s", status, want)
	}
	// Its own /proc, with the desktop's masks and read-only parts.
	view := mustRun(t, s, "root", "r=/proc/"+pid+"/root; tr '\\0' ' ' < $r/proc/1/cmdline; echo; stat -c %t:%T $r/proc/keys; awk '$5==\"/proc/sys\"{print substr($6,1,2)}' /proc/"+pid+"/mountinfo | sort -u")
	if want := systemdBinary + " --unit=basic.target \n1:3\nro\n"; view != want {
		t.Errorf("the system manager's /proc: %q, want %q", view, want)
	}
	// Nothing of the desktop enters its mount namespace or mounts there.
	if out, code := run(t, s, "root", "nsenter -t "+pid+" -m true"); code == 0 {
		t.Errorf("the desktop's root entered the system manager's mount namespace: %s", out)
	}

	// A unit the desktop's root starts runs in the manager's cgroup, as the
	// desktop's root: a host uid of the session's, not host root.
	mustRun(t, s, "root", `printf '[Service]\nExecStart=/bin/sleep infinity\n' > /etc/systemd/system/drums-test.service &&
		systemctl daemon-reload && systemctl start drums-test.service`)
	unit := filepath.Join(s.Plan.Cgroup.unified(), systemManagerCgroup, "system.slice", "drums-test.service")
	procs, err := cgroupProcs(unit)
	if err != nil || len(procs) != 1 {
		t.Fatalf("the unit's cgroup on the host %s: %v %v", unit, procs, err)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", procs[0]))
	if err != nil {
		t.Fatal(err)
	}
	host := strconv.Itoa(s.Plan.IDs.Host)
	if want := "Uid:\t" + strings.Repeat(host+"\t", 3) + host + "\n"; !strings.Contains(string(b), want) {
		t.Errorf("the unit's process on the host, want %q:\n%s", want, b)
	}
	gone := watchRemoval(t, unit)
	mustRun(t, s, "root", "systemctl stop drums-test.service")
	gone()

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := w.eng.Reset(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	systemManagerUp(t, r)
	if out, code := run(t, r, "", "systemctl cat drums-test.service"); code == 0 {
		t.Errorf("a unit of before the reset: %s", out)
	}
	if err := w.eng.Remove(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if left := sessionLeftovers(w, r); len(left) > 0 {
		t.Errorf("after remove: %v", left)
	}
}

// systemManagerUp checks that the desktop's system manager is running with
// no failed unit, as its user, its root and sudo see it.
func systemManagerUp(t *testing.T, s *Session) {
	t.Helper()
	for _, c := range []struct{ user, cmd string }{
		{"", "systemctl is-system-running --wait"},
		{"root", "systemctl is-system-running"},
		{"", "echo password | sudo -S -p '' systemctl is-system-running"},
		{"", "systemctl --user is-system-running"},
	} {
		if out, _ := run(t, s, c.user, c.cmd); out != "running\n" {
			t.Errorf("%s (as %q): %q%s", c.cmd, c.user, out, mustRun(t, s, "", "systemctl list-jobs; systemctl --failed"))
		}
	}
}
