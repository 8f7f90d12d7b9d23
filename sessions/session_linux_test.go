package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLifecycle(t *testing.T) {
	w := needWorld(t)
	s := newSession(t, Request{Width: 1280, Height: 800})
	if s.State != StateReady || s.Width != 1280 || s.InitPID <= 0 || !strings.HasPrefix(s.ID, w.prefix+"-") {
		t.Fatalf("created %+v", s)
	}
	if err := answers(s); err != nil {
		t.Fatal(err)
	}
	got, err := w.eng.Get(s.ID)
	if err != nil || got.Address != s.Address || got.State != StateReady {
		t.Fatalf("Get: %+v %v", got, err)
	}
	// Another engine of the prefix (another process, in effect) sees it.
	other, err := New(w.config())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range other.List() {
		found = found || l.ID == s.ID
	}
	if !found {
		t.Errorf("another engine does not list %s", s.ID)
	}
	out := mustRun(t, s, "", `id -un; echo $DISPLAY $DBUS_SESSION_BUS_ADDRESS $XDG_RUNTIME_DIR $HOME $PWD; hostname`)
	if want := "user\n:0 unix:path=/run/user/1000/bus /run/user/1000 /home/user /home/user\ndrums\n"; out != want {
		t.Errorf("session environment:\n%s\nwant\n%s", out, want)
	}
	out = mustRun(t, s, "", `echo password | sudo -S -p "" id -u`)
	if out != "0\n" {
		t.Errorf("sudo with the password: %q", out)
	}
	// The guest tools OSWorld tasks call.
	mustRun(t, s, "", `command -v python python3 sudo wmctrl xdg-open socat google-chrome && test "$(readlink -f $(command -v python))" = "$(readlink -f /usr/bin/python3)" && wmctrl -m | grep -q Openbox`)
	// Accessibility is on, and the session bus activates only what the
	// desktop needs (no portals, no gvfs).
	out = mustRun(t, s, "", `dbus-send --session --print-reply=literal --dest=org.a11y.Bus /org/a11y/bus org.freedesktop.DBus.Properties.Get string:org.a11y.Status string:IsEnabled; gsettings get org.gnome.desktop.interface toolkit-accessibility; dbus-send --session --print-reply=literal --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListActivatableNames`)
	if !strings.Contains(out, "boolean true") || !strings.Contains(out, "\ntrue\n") || strings.Contains(out, "portal") || strings.Contains(out, "gvfs") {
		t.Errorf("accessibility and services:\n%s", out)
	}
	// gsettings persists through dconf on the session bus.
	if out := mustRun(t, s, "", `gsettings set org.gnome.desktop.interface font-name 'Drums 11' && gsettings get org.gnome.desktop.interface font-name`); out != "'Drums 11'\n" {
		t.Errorf("gsettings: %q", out)
	}
	if err := w.eng.Remove(context.Background(), s.ID); err != nil {
		t.Fatal(err)
	}
	if err := w.eng.Remove(context.Background(), s.ID); err != nil {
		t.Errorf("second remove: %v", err)
	}
	if _, err := w.eng.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after remove: %v", err)
	}
	if l := sessionLeftovers(w, s); len(l) > 0 {
		t.Errorf("left after remove: %v", l)
	}
}

// treeDigest hashes every entry under root (names, modes, owners, sizes,
// link targets, contents, xattrs-free) for byte-for-byte comparisons.
func treeDigest(t testing.TB, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", path, info.Mode(), info.Size())
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h.Write(b)
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(path)
			fmt.Fprintln(h, l)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("digest %s: %v", root, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func fileDigest(t testing.TB, path string) string {
	t.Helper()
	st, err := os.Lstat(path)
	if err != nil {
		return "absent"
	}
	b, _ := os.ReadFile(path)
	return fmt.Sprintf("%v %x", st.Mode(), sha256.Sum256(b))
}

func TestFilesIsolated(t *testing.T) {
	w := needWorld(t)
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	marker := "drums-test-" + randomName(8)
	// Host files of the same paths as those the session changes, deletes
	// or shadows; and the image, as a whole.
	existing := []string{"/etc/hosts", "/etc/os-release", "/etc/passwd", "/usr/local/bin", "/etc/skel/.bashrc"}
	before := map[string]string{}
	for _, p := range existing {
		before[p] = fileDigest(t, p)
	}
	im, err := w.eng.images.Get(coreImage)
	if err != nil {
		t.Fatal(err)
	}
	image := treeDigest(t, im.Dir())
	script := fmt.Sprintf(`set -e
for d in /etc /usr/local /opt /home/user /tmp /var/tmp; do echo %[1]s > $d/%[1]s; done
echo changed >> /etc/hosts
rm /etc/os-release
chmod 700 /usr/local/bin
echo changed >> /home/user/.bashrc
echo changed >> /etc/passwd
mkdir -p /usr/local/%[1]s.d && echo x > /usr/local/%[1]s.d/f`, marker)
	mustRun(t, a, "root", script)

	for _, d := range []string{"/etc", "/usr/local", "/opt", "/home/user", "/tmp", "/var/tmp", "/usr/local/" + marker + ".d"} {
		if _, err := os.Lstat(filepath.Join(d, marker)); err == nil {
			t.Errorf("the session's %s/%s reached the host", d, marker)
		}
	}
	for _, p := range existing {
		if got := fileDigest(t, p); got != before[p] {
			t.Errorf("host %s changed: %s -> %s", p, before[p], got)
		}
	}
	if got := treeDigest(t, im.Dir()); got != image {
		t.Error("the image changed")
	}
	// The other session sees none of it.
	out, _ := run(t, b, "root", fmt.Sprintf(`ls /etc/%[1]s /usr/local/%[1]s /opt/%[1]s /home/user/%[1]s /tmp/%[1]s 2>&1; test -e /etc/os-release && echo os-release-present; grep -c changed /etc/hosts`, marker))
	if strings.Count(out, "No such file") != 5 || !strings.Contains(out, "os-release-present") || !strings.HasSuffix(out, "0\n") {
		t.Errorf("session B sees A's files:\n%s", out)
	}
	// And the writer sees its own.
	mustRun(t, a, "", fmt.Sprintf(`test -e /tmp/%[1]s && test ! -e /etc/os-release && grep -q changed /etc/hosts`, marker))
}

func TestProcessesIsolated(t *testing.T) {
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		world.eng.Exec(ctx, b.ID, []string{"sleep", "7777"}, ExecOptions{})
	}()
	// Wait until B runs it (seen from inside B).
	deadline := time.Now().Add(opTimeout)
	for {
		if out, _ := run(t, b, "", "pgrep -x sleep"); strings.TrimSpace(out) != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sleep never started in B")
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := mustRun(t, a, "", "ps -eo pid=,args=")
	if strings.Contains(out, "sleep 7777") {
		t.Errorf("A sees B's process:\n%s", out)
	}
	first := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[0])
	if first[0] != "1" || !strings.Contains(out, "drums init "+a.ID) {
		t.Errorf("A's PID 1 is not its init:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if pid, _ := strconv.Atoi(f[0]); pid > 1000 {
				t.Errorf("A sees a host-sized pid: %s", line)
			}
		}
	}
	cancel()
	<-done
}

func TestXIsolated(t *testing.T) {
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	mark := randomName(10)
	mustRun(t, a, "", "xprop -root -f DRUMS_MARK 8s -set DRUMS_MARK "+mark)
	if out := mustRun(t, a, "", "xprop -root DRUMS_MARK"); !strings.Contains(out, mark) {
		t.Fatalf("A cannot read its own mark: %s", out)
	}
	// :0 in B (abstract socket first, as libxcb does, then the file) is B's
	// own server.
	if out, _ := run(t, b, "", "xprop -root DRUMS_MARK"); strings.Contains(out, mark) {
		t.Errorf("B reached A's X server: %s", out)
	}
	// The filesystem sockets are different files on different tmpfs.
	sa, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/.X11-unix/X0", a.InitPID))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := os.Stat(fmt.Sprintf("/proc/%d/root/tmp/.X11-unix/X0", b.InitPID))
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(sa, sb) {
		t.Error("A and B share an X socket file")
	}
	if _, err := os.Stat("/tmp/.X11-unix/X0"); err == nil {
		if st, _ := os.Stat("/tmp/.X11-unix/X0"); os.SameFile(st, sa) {
			t.Error("the host sees A's X socket")
		}
	}
	// Each network namespace has its own abstract socket namespace: B's
	// has exactly one X0 listening (flags __SO_ACCEPTCON), its own, which
	// the previous check showed is not A's server.
	out := mustRun(t, b, "", `awk '$4 == "00010000" && $8 == "@/tmp/.X11-unix/X0"' /proc/net/unix | wc -l`)
	if strings.TrimSpace(out) != "1" {
		t.Errorf("B's abstract X sockets: %q", out)
	}
	// A socket A listens on in its abstract namespace is unreachable from B.
	name := "drums-" + randomName(8)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go world.eng.Exec(ctx, a.ID, []string{"socat", "ABSTRACT-LISTEN:" + name + ",fork", "EXEC:echo hello"}, ExecOptions{})
	waitFor(t, func() bool {
		out, _ := run(t, a, "", "echo | socat - ABSTRACT-CONNECT:"+name)
		return strings.Contains(out, "hello")
	})
	if out, code := run(t, b, "", "echo | socat - ABSTRACT-CONNECT:"+name); code == 0 || strings.Contains(out, "hello") {
		t.Errorf("B reached A's abstract socket: %d %s", code, out)
	}
}

// waitFor polls cond every 20 ms (tests only: for states nothing announces)
// until it holds, failing after opTimeout.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(opTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestKillOneLeavesOther(t *testing.T) {
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	c := newSession(t, Request{})
	// Everything in A but its init, from inside, as root. The shell dies
	// too, and so may the session before it reports: the result is moot.
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	world.eng.Exec(ctx, a.ID, []string{"/bin/bash", "-c", "kill -9 -1"}, ExecOptions{User: "root"})
	// init ends a session whose essential processes died; then A is failed.
	waitFor(t, func() bool {
		s, err := world.eng.Get(a.ID)
		return err == nil && s.State == StateFailed
	})
	s, _ := world.eng.Get(a.ID)
	if !strings.Contains(s.Reason, "killed") {
		t.Errorf("A failed with reason %q", s.Reason)
	}
	// And C's init from the host.
	killSessionInit(t, c)
	waitFor(t, func() bool {
		s, err := world.eng.Get(c.ID)
		return err == nil && s.State == StateFailed
	})
	if err := answers(b); err != nil {
		t.Errorf("B stopped answering: %v", err)
	}
	if out := mustRun(t, b, "", "echo alive"); out != "alive\n" {
		t.Errorf("B: %q", out)
	}
}

func TestReset(t *testing.T) {
	w := needWorld(t)
	s := newSession(t, Request{})
	if r := resetClean(t, w.eng, s); r.Standby {
		t.Errorf("a reset of an engine without standbys says it took one: %+v", r)
	}
}

// resetClean resets s through eng and checks that the new desktop is
// clean: files and processes of before are gone, the address is the same,
// and a connection made before can never reach it.
func resetClean(t *testing.T, eng *Engine, s *Session) *Session {
	t.Helper()
	mustRunOn(t, eng, s, "root", "echo x > /etc/episode; echo x > /home/user/Desktop/episode; echo x > /tmp/episode; rm /home/user/.profile")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go eng.Exec(ctx, s.ID, []string{"sleep", "8888"}, ExecOptions{})
	waitFor(t, func() bool { out, _ := runOn(t, eng, s, "", "pgrep -x sleep"); return out != "" })

	// A request begun before the reset: connected, half sent.
	conn, err := net.Dial("tcp", net.JoinHostPort(s.Address, strconv.Itoa(s.GuestPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /screenshot HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}

	rctx, rcancel := context.WithTimeout(context.Background(), opTimeout)
	defer rcancel()
	r, err := eng.Reset(rctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != s.ID || r.Address != s.Address || r.Resets != s.Resets+1 || r.InitPID == s.InitPID || r.State != StateReady {
		t.Errorf("after reset %+v (before %+v)", r, s)
	}
	out, _ := runOn(t, eng, r, "root", "ls /etc/episode /home/user/Desktop/episode /tmp/episode 2>&1 | grep -c 'No such'; test -e /home/user/.profile && echo profile; pgrep -x sleep || echo no-sleep")
	if out != "3\nprofile\nno-sleep\n" {
		t.Errorf("after reset the last episode shows:\n%s", out)
	}
	// The old request can never reach the new desktop.
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	conn.Write([]byte("\r\n"))
	buf := make([]byte, 64)
	if n, err := conn.Read(buf); err == nil {
		t.Errorf("a request from before the reset got an answer: %q", buf[:n])
	}
	if err := answers(r); err != nil {
		t.Error(err)
	}
	return r
}

func TestSaveUpperAndSnapshot(t *testing.T) {
	w := needWorld(t)
	a := newSession(t, Request{})
	mustRun(t, a, "root", "echo saved > /etc/drums-saved; mkdir -p /home/user/Documents/d && echo doc > /home/user/Documents/d/f; rm /home/user/.bash_logout; chown -R user /home/user/Documents/d")
	dir := filepath.Join(t.TempDir(), "snap")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := w.eng.SaveUpper(ctx, a.ID, dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "etc/drums-saved")); err != nil || string(b) != "saved\n" {
		t.Errorf("saved upper: %q %v", b, err)
	}
	if st, err := os.Lstat(filepath.Join(dir, "home/user/.bash_logout")); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("the deletion is not a whiteout in the saved layer: %v %v", st, err)
	}
	if err := answers(a); err != nil {
		t.Errorf("A after the save (thawed?): %v", err)
	}
	b := newSession(t, Request{Snapshot: dir})
	out := mustRun(t, b, "", "cat /etc/drums-saved /home/user/Documents/d/f; test -e /home/user/.bash_logout && echo logout-back || echo logout-gone; stat -c %U /home/user/Documents/d/f")
	if out != "saved\ndoc\nlogout-gone\nuser\n" {
		t.Errorf("session from the snapshot:\n%s", out)
	}
	// A reset returns to the snapshot, not to the bare template.
	mustRun(t, b, "", "rm /home/user/Documents/d/f")
	r, err := w.eng.Reset(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if out := mustRun(t, r, "", "cat /home/user/Documents/d/f"); out != "doc\n" {
		t.Errorf("reset of a snapshot session: %q", out)
	}
}

func TestExecTTY(t *testing.T) {
	w := needWorld(t)
	s := newSession(t, Request{})
	resize := make(chan TermSize, 1)
	resize <- TermSize{Rows: 33, Cols: 111}
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	res, err := w.eng.Exec(ctx, s.ID, []string{"/bin/bash", "-c", "sleep 0.2; tty; stty size; exit 3"},
		ExecOptions{TTY: true, Stdout: &out, Resize: resize})
	close(resize)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.Contains(out.String(), "/dev/pts/") || !strings.Contains(out.String(), "33 111") {
		t.Errorf("tty exec: %+v %q", res, out.String())
	}
	// Cancelling an exec kills it.
	cctx, ccancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer ccancel()
	if _, err := w.eng.Exec(cctx, s.ID, []string{"sleep", "9999"}, ExecOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled exec: %v", err)
	}
	waitFor(t, func() bool { out, _ := run(t, s, "", "pgrep -x sleep || true"); return out == "" })
}

func TestAdoptAndCLI(t *testing.T) {
	w := needWorld(t)
	// The CLI creates a session and exits; the session outlives it.
	cmd := exec.Command(w.drums, append([]string{"session", "create", "--json"}, w.cliArgs()...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("drums session create: %v\n%s", err, out)
	}
	var s Session
	if err := json.Unmarshal(out, &s); err != nil || s.ID == "" || s.Address == "" {
		t.Fatalf("create --json printed %q: %v", out, err)
	}
	t.Cleanup(func() { w.eng.Remove(context.Background(), s.ID) })
	if err := answers(&s); err != nil {
		t.Fatalf("after its creator exited: %v", err)
	}
	ls, err := exec.Command(w.drums, append([]string{"session", "ls", "--json"}, w.cliArgs()...)...).Output()
	if err != nil || !strings.Contains(string(ls), s.ID) {
		t.Errorf("drums session ls --json: %s %v", ls, err)
	}
	// A new engine (a restarted daemon) adopts it.
	eng, err := New(w.config())
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	adopted, err := eng.Adopt(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine *Session
	for _, a := range adopted {
		if a.ID == s.ID {
			mine = a
		}
	}
	if mine == nil {
		t.Fatalf("Adopt returned %v, not %s", adopted, s.ID)
	}
	if out, err := exec.Command(w.drums, append(append([]string{"session", "exec"}, w.cliArgs()...), s.ID, "--", "sh", "-c", "exit 7")...).CombinedOutput(); err == nil {
		t.Errorf("exec exit status lost: %s", out)
	} else if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
		t.Errorf("exec: %v %s", err, out)
	}
	if out, err := exec.Command(w.drums, append(append([]string{"session", "rm"}, w.cliArgs()...), s.ID)...).CombinedOutput(); err != nil {
		t.Errorf("drums session rm: %v %s", err, out)
	}
	if _, err := eng.Get(s.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after rm: %v", err)
	}
	// The adopter, like a daemon whose client still holds the lease, keeps
	// the session's address and ids claimed until it removes the session
	// too: then the claims go.
	if err := eng.Remove(ctx, s.ID); err != nil {
		t.Errorf("remove by the adopter after rm: %v", err)
	}
	for _, c := range []string{claimPath(AddrClaimDir, addrKey(mine.Plan.Net.Address)), claimPath(IDClaimDir, idKey(mine.Plan.IDs.Host))} {
		if _, err := os.Stat(c); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("claim %s after both removes: %v", c, err)
		}
	}
}

func TestUpperOnDisk(t *testing.T) {
	w := needWorld(t)
	cfg := w.config()
	cfg.UpperOnDisk = true
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := newSessionOf(t, eng, Request{})
	upper := s.Plan.Root.UpperDir
	if upper == "" || !strings.HasPrefix(upper, w.dir) {
		t.Fatalf("upper dir %q", upper)
	}
	mustRun(t, s, "", "echo on-disk > /home/user/Desktop/f")
	if b, err := os.ReadFile(filepath.Join(upper, "home/user/Desktop/f")); err != nil || string(b) != "on-disk\n" {
		t.Errorf("upper layer on disk: %q %v", b, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := eng.Reset(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(upper, "home/user/Desktop/f")); err == nil {
		t.Error("reset kept the upper layer")
	}
	if err := eng.Remove(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(upper); err == nil {
		t.Error("remove kept the upper layer")
	}
}
