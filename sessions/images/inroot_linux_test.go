package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

// A command of the image runs though the host has no program of that
// name (dconf, on a host without desktop packages, failed image builds).
func TestInRootRunsWhatOnlyTheImageHas(t *testing.T) {
	testutil.RequireRoot(t, "busybox")
	const name = "ash" // a busybox applet: a static program that runs in a bare root
	if _, err := exec.LookPath(name); err == nil {
		t.Skipf("the host has %s: the test needs a name only the image has", name)
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bb)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "usr/bin", name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := inRoot(root, name, "-c", "echo ran > /ran"); err != nil {
		t.Fatal(err)
	}
	if out, err := os.ReadFile(filepath.Join(root, "ran")); err != nil || string(out) != "ran\n" {
		t.Fatalf("the command did not run in the root: %q, %v", out, err)
	}
	if err := inRoot(root, "no-such-program"); err == nil {
		t.Fatal("a program the image lacks ran")
	}
}
