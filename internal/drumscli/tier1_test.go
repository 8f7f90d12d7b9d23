//go:build linux

package drumscli

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/sessions"
	"golang.org/x/sys/unix"
)

// Tier 1: the session commands on real desktops, in process. The engine
// runs each desktop's init as $DRUMS_BIN/drums-init.

// runDirPrefix and the run's prefix name a directory per tier-1 run in
// os.TempDir(), with its sessions' state and a lock the run holds;
// sweepCrashedRuns removes what a run that died left.
const runDirPrefix = "drums-drumscli-t1-"

// lockRun takes dir's lock, held until the returned file is closed.
func lockRun(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// sweepCrashedRuns removes the desktops and leftovers of each run whose
// lock is free, then its directory.
func sweepCrashedRuns(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), runDirPrefix+"*"))
	for _, dir := range dirs {
		lock, err := lockRun(dir)
		if err != nil {
			continue // its run is still going
		}
		prefix := strings.TrimPrefix(filepath.Base(dir), runDirPrefix)
		args := []string{"--prefix", prefix, "--state-dir", filepath.Join(dir, "state"), "--image-dir", testimage.ImageDir()}
		var ids []struct{ ID string }
		if r := mainIn(t, append([]string{"session", "ls", "--json"}, args...)...); r.status != 0 || json.Unmarshal([]byte(r.stdout), &ids) != nil {
			t.Fatalf("sessions of the crashed run %s: %+v", prefix, r)
		}
		for _, s := range ids {
			mainIn(t, append(append([]string{"session", "rm"}, args...), s.ID)...)
		}
		if r := mainIn(t, append([]string{"sweep"}, args...)...); r.status != 0 {
			t.Fatalf("sweep the crashed run %s: %+v", prefix, r)
		}
		lock.Close()
		os.RemoveAll(dir)
	}
}

// needDesktops is the start of a tier-1 test of real desktops from the
// core image: root, the image, and DRUMS_BIN, whose guestd they run; it
// returns DRUMS_BIN.
func needDesktops(t *testing.T) string {
	testutil.RequireRoot(t)
	testimage.NeedImages(t, "core")
	bin := os.Getenv("DRUMS_BIN")
	if bin == "" {
		t.Fatal("the desktops run guestd from DRUMS_BIN: set it (make test does)")
	}
	return bin
}

// startRun sweeps what crashed runs left, then makes this run's prefix
// (head and 5 random characters) and directory, and takes its lock: the
// caller's cleanup closes the lock and removes the directory.
func startRun(t *testing.T, head string) (prefix, dir string, lock *os.File) {
	sweepCrashedRuns(t)
	prefix = head + strings.ToLower(rand.Text()[:5])
	dir = filepath.Join(os.TempDir(), runDirPrefix+prefix)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lock, err := lockRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	return prefix, dir, lock
}

func TestTier1Sessions(t *testing.T) {
	bin := needDesktops(t)
	prefix, dir, lock := startRun(t, "zd")
	engine := []string{"--prefix", prefix, "--state-dir", filepath.Join(dir, "state"), "--image-dir", testimage.ImageDir(),
		"--image", "core", "--guestd", filepath.Join(bin, "guestd")}
	session := func(sub string, args ...string) result {
		return mainIn(t, append(append([]string{"session", sub}, engine...), args...)...)
	}
	t.Cleanup(func() {
		if r := mainIn(t, append([]string{"sweep"}, engine...)...); r.status != 0 {
			t.Errorf("sweep: %+v", r)
		}
		lock.Close()
		os.RemoveAll(dir)
	})

	r := session("create", "--json", "--width", "800", "--height", "600")
	var s sessions.Session
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil || s.ID == "" || s.Width != 800 {
		t.Fatalf("create: %+v", r)
	}
	t.Cleanup(func() { session("rm", s.ID) })

	if r := session("ls"); r.status != 0 || !strings.HasPrefix(r.stdout, "ID ") || !strings.Contains(r.stdout, s.ID+"  ready  ") {
		t.Errorf("ls: %+v", r)
	}
	if r := session("exec", s.ID, "--", "sh", "-c", "id -un; exit 3"); r != (result{3, "user\n", ""}) {
		t.Errorf("exec as the user, exiting 3: %+v", r)
	}
	if r := session("exec", "--root", "--env", "K=V", s.ID, "--", "sh", "-c", "echo $(id -u) $K"); r != (result{0, "0 V\n", ""}) {
		t.Errorf("exec as root: %+v", r)
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	if r := session("screenshot", s.ID, shot); r != (result{}) {
		t.Errorf("screenshot: %+v", r)
	} else if b, err := os.ReadFile(shot); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("screenshot file: %.8q %v", b, err)
	}
	if r := session("shell", s.ID); r != (result{1, "", "drums session: shell: stdin is not a terminal\n"}) {
		t.Errorf("shell without a terminal: %+v", r)
	}
	shell(t, engine, s.ID)
	r = session("reset", "--json", s.ID)
	var after sessions.Session
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &after) != nil || after.ID != s.ID || after.Resets != 1 {
		t.Errorf("reset: %+v", r)
	}
	if r := session("rm", s.ID); r != (result{}) {
		t.Errorf("rm: %+v", r)
	}
	if r := session("ls", "--json"); r != (result{0, "[]\n", ""}) {
		t.Errorf("ls after rm: %+v", r)
	}
	if r := mainIn(t, append([]string{"sweep"}, engine...)...); r != (result{0, "nothing to sweep\n", ""}) {
		t.Errorf("sweep: %+v", r)
	}
}

// shell runs `drums session shell` on a terminal of its own, 30 rows by 100
// columns: the desktop's shell gets that size and what is typed.
func shell(t *testing.T, engine []string, id string) {
	ptm, pts := openPTY(t)
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 30, Col: 100}); err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderr.Close()
	done := make(chan int, 1)
	go func() { done <- Main(append(append([]string{"session", "shell"}, engine...), id), pts, pts, stderr) }()
	if _, err := ptm.WriteString("echo size=$(stty size)=; exit 0\r"); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	go func() {
		var out []byte
		buf := make([]byte, 4096)
		for {
			n, err := ptm.Read(buf)
			out = append(out, buf[:n]...)
			if bytes.Contains(out, []byte("size=30 100=")) || err != nil {
				seen <- string(out)
				return
			}
		}
	}()
	timeout := time.After(testutil.ReadyTimeout)
	select {
	case out := <-seen:
		if !strings.Contains(out, "size=30 100=") {
			t.Errorf("shell printed %q", out)
		}
	case <-timeout:
		t.Fatal("the shell did not answer")
	}
	select {
	case status := <-done:
		if b, _ := os.ReadFile(stderr.Name()); status != 0 || len(b) > 0 {
			t.Errorf("shell: status %d, stderr %q", status, b)
		}
	case <-timeout:
		t.Fatal("drums session shell did not end with its shell")
	}
}

// openPTY returns a new pseudo-terminal's two sides, closed when the test
// ends.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptm.Close() })
	n, err := unix.IoctlGetUint32(int(ptm.Fd()), unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0)
	}
	if err == nil {
		pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	}
	if err != nil {
		t.Fatalf("open a pty: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}

// Listing reads: `drums session ls` of a prefix that has no state makes
// neither its state directory nor the image store.
func TestTier1ListCreatesNothing(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	state, images := filepath.Join(dir, "state"), filepath.Join(dir, "images")
	engine := []string{"--prefix", "zl" + strings.ToLower(rand.Text()[:5]), "--state-dir", state, "--image-dir", images}
	if r := mainIn(t, append([]string{"session", "ls", "--json"}, engine...)...); r != (result{0, "[]\n", ""}) {
		t.Errorf("ls --json: %+v", r)
	}
	if r := mainIn(t, append([]string{"session", "ls"}, engine...)...); r.status != 0 || !strings.HasPrefix(r.stdout, "ID ") {
		t.Errorf("ls: %+v", r)
	}
	for _, d := range []string{state, images} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("ls made %s: %v", d, err)
		}
	}
}
