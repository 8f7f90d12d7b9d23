package scripts

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeBin is a directory for PATH holding a fake id (uid from $FAKE_UID),
// the tools as-root uses, and optionally a fake sudo that logs its
// arguments to $SUDO_LOG and runs them in an emptied environment, as real
// sudo resets it.
func fakeBin(t *testing.T, withSudo bool) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("id", `case "$1" in -u) echo "$FAKE_UID" ;; -un) echo someone ;; *) exit 9 ;; esac`+"\n")
	if withSudo {
		write("sudo", `printf '%s\n' "$@" >"$SUDO_LOG"; [ "$1" = -- ] && shift; exec /usr/bin/env -i "$@"`+"\n")
	}
	// Only these real tools: a sudo installed on the machine must not be
	// found.
	for _, tool := range []string{"env", "sed", "sort", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// show is the command as-root runs: it writes its arguments, then the
// variables it was given, one per line, to $SHOW_OUT (by absolute path:
// sudo's emptied environment has no SHOW_OUT), and exits 3.
func show(t *testing.T) (script, out string) {
	t.Helper()
	dir := t.TempDir()
	out = filepath.Join(dir, "out")
	script = filepath.Join(dir, "show")
	body := "#!/bin/sh\n{ printf 'arg:%s\\n' \"$@\"; for v in PATH GOFLAGS DRUMS_A DRUMS_B OTHER GOCACHE; do eval \"printf '%s=%s\\\\n' $v \\\"\\${$v-unset}\\\"\"; done; } >" + out + "\nexit 3\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, out
}

type run struct {
	status   int
	stderr   string
	sudoArgs []string // nil when sudo was not called
}

func asRoot(t *testing.T, path, uid string, env []string, args ...string) run {
	t.Helper()
	sudoLog := filepath.Join(t.TempDir(), "sudo.log")
	cmd := exec.Command("./as-root", args...)
	cmd.Env = append([]string{"PATH=" + path, "FAKE_UID=" + uid, "SUDO_LOG=" + sudoLog}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var r run
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run as-root: %v", err)
	}
	r.stderr = stderr.String()
	if b, err := os.ReadFile(sudoLog); err == nil {
		r.sudoArgs = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	return r
}

func readOut(t *testing.T, out string) string {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
	return string(b)
}

var odd = []string{"two words", "it's", `$HOME`, "*", ""}

const oddArgs = "arg:two words\narg:it's\narg:$HOME\narg:*\narg:\n"

func TestAsRootAsRoot(t *testing.T) {
	bin := fakeBin(t, true)
	script, out := show(t)
	r := asRoot(t, bin, "0", []string{"DRUMS_A=a", "OTHER=kept", "GOCACHE=/c"}, append([]string{script}, odd...)...)
	if r.status != 3 || r.sudoArgs != nil || r.stderr != "" {
		t.Fatalf("as root: status %d, sudo %q, stderr %q; want the command's 3, no sudo, nothing said", r.status, r.sudoArgs, r.stderr)
	}
	// Root runs the command as it is, with the whole environment.
	want := oddArgs + "PATH=" + bin + "\nGOFLAGS=unset\nDRUMS_A=a\nDRUMS_B=unset\nOTHER=kept\nGOCACHE=/c\n"
	if got := readOut(t, out); got != want {
		t.Errorf("as root the command saw:\n%s\nwant:\n%s", got, want)
	}
}

func TestAsRootThroughSudo(t *testing.T) {
	bin := fakeBin(t, true)
	script, out := show(t)
	r := asRoot(t, bin, "1000", []string{"DRUMS_A=a", "DRUMS_B=b c", "GOFLAGS=-mod=mod", "OTHER=dropped", "GOCACHE=/home/u/.cache"},
		append([]string{script}, odd...)...)
	if r.status != 3 || r.stderr != "" {
		t.Fatalf("through sudo: status %d, stderr %q; want the command's 3", r.status, r.stderr)
	}
	if len(r.sudoArgs) < 2 || r.sudoArgs[0] != "--" || r.sudoArgs[1] != "env" {
		t.Fatalf("sudo called with %q, want -- env ...", r.sudoArgs)
	}
	// PATH, GOFLAGS and DRUMS_* reach root; the rest of the caller's
	// environment does not (sudo's reset).
	want := oddArgs + "PATH=" + bin + "\nGOFLAGS=-mod=mod\nDRUMS_A=a\nDRUMS_B=b c\nOTHER=unset\nGOCACHE=unset\n"
	if got := readOut(t, out); got != want {
		t.Errorf("through sudo the command saw:\n%s\nwant:\n%s", got, want)
	}
}

func TestAsRootNoSudo(t *testing.T) {
	script, out := show(t)
	r := asRoot(t, fakeBin(t, false), "1000", nil, script)
	if r.status != 1 || !strings.Contains(r.stderr, "'"+script+"' needs root") || !strings.Contains(r.stderr, "has no sudo") {
		t.Errorf("without sudo: status %d, stderr %q; want 1 and a message naming the command", r.status, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran without root")
	}
}

func TestAsRootNoCommand(t *testing.T) {
	r := asRoot(t, fakeBin(t, true), "1000", nil)
	if r.status != 2 || r.sudoArgs != nil || !strings.Contains(r.stderr, "usage") {
		t.Errorf("no command: status %d, sudo %q, stderr %q", r.status, r.sudoArgs, r.stderr)
	}
}

// TestAsRootReal runs the script with the real id, as root (CI runs as
// root): the command runs directly.
func TestAsRootReal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the real root path is TestAsRootAsRoot's with a fake id")
	}
	script, out := show(t)
	cmd := exec.Command("./as-root", script, "x")
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DRUMS_A=a"}
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Fatalf("as-root as real root: %v, want the command's exit status 3", err)
	}
	if got := readOut(t, out); !strings.HasPrefix(got, "arg:x\nPATH=/usr/sbin:/usr/bin:/sbin:/bin\n") || !strings.Contains(got, "DRUMS_A=a\n") {
		t.Errorf("the command saw:\n%s", got)
	}
}

// TestMakefileRootSteps: in the README's commands (and the other targets
// that need root), every step that needs root goes through as-root, and
// nothing else does. make -n prints the recipes without running them.
func TestMakefileRootSteps(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make: %v", err)
	}
	cmd := exec.Command("make", "-n", "-C", "..", "run", "test", "bench", "soak", "compat", "images", "deps")
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n: %v\n%s", err, outb)
	}
	needsRoot := []string{"DRUMS_TIER1=1 ", "drums image build ", "drums run"}
	var rooted int
	for _, line := range strings.Split(string(outb), "\n") {
		line = strings.TrimSpace(line)
		through := strings.HasPrefix(line, "scripts/as-root ")
		needs := false
		for _, n := range needsRoot {
			needs = needs || strings.Contains(line, n)
		}
		switch {
		case needs && !through:
			t.Errorf("a step that needs root does not go through scripts/as-root: %s", line)
		case through && !needs:
			t.Errorf("a step goes through scripts/as-root that this test does not know needs root: %s", line)
		case through:
			rooted++
		}
	}
	// test: images (2) and the tests; run: drums run; bench: 6 packages;
	// soak, compat: 1 each (make -n prints a step once per make).
	if rooted < 10 {
		t.Errorf("only %d steps through scripts/as-root in:\n%s", rooted, outb)
	}
}

// TestDepsInstallsThroughAsRoot: scripts/deps, run by a sudoer, asks dpkg
// what is missing as the caller and runs apt-get through sudo, with the
// missing packages only and DEBIAN_FRONTEND set.
func TestDepsInstallsThroughAsRoot(t *testing.T) {
	bin := fakeBin(t, true)
	for _, tool := range []string{"bash", "dirname", "sh"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	aptLog := filepath.Join(t.TempDir(), "apt.log")
	fakes := map[string]string{
		// Every package is installed but gcc.
		"dpkg-query": `for a; do p=$a; done; [ "$p" = gcc ] && exit 1; printf installed` + "\n",
		"apt-get":    `echo "$DEBIAN_FRONTEND $*" >>` + aptLog + "\n",
	}
	for name, body := range fakes {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sudoLog := filepath.Join(t.TempDir(), "sudo.log")
	cmd := exec.Command("./deps")
	cmd.Env = []string{"PATH=" + bin, "FAKE_UID=1000", "SUDO_LOG=" + sudoLog}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deps: %v\n%s", err, out)
	}
	apt, err := os.ReadFile(aptLog)
	if err != nil {
		t.Fatalf("apt-get did not run: %v\n%s", err, out)
	}
	if want := "noninteractive update -qq\nnoninteractive install -y -qq --no-install-recommends gcc\n"; string(apt) != want {
		t.Errorf("apt-get ran as:\n%s\nwant:\n%s", apt, want)
	}
	if _, err := os.Stat(sudoLog); err != nil {
		t.Errorf("apt-get did not go through sudo: %v", err)
	}
}
