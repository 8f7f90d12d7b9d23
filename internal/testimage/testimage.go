// Package testimage runs tier-1 tests against drums' images: in the image
// store's images, as a desktop's programs would (MainInImage, InImage), or
// with desktops started from them (NeedImages).
package testimage

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/sessions/images"
)

// The tier-1 tests of what runs inside a desktop (guestd, the AT-SPI
// client, X11 capture and input, pyautogui) need an X server, a session
// bus, AT-SPI, toolkits and Python: a desktop image has them, the host need
// not. Such a test binary re-runs itself, with the same arguments, inside
// the image (`drums image run`), so it tests against the image's programs
// and no package installed on the host by hand can make it pass.

// EnvInImage is set (to the image's name) in a test binary that runs
// inside an image.
const EnvInImage = "DRUMS_IN_IMAGE"

// MainInImage is a TestMain for packages whose tier-1 tests run inside
// image: with tier 1 on and outside the image, the binary runs again in it
// and its status is the result; otherwise the tests run here.
func MainInImage(m *testing.M, image string) {
	if testutil.Tier1Enabled() && os.Getenv(EnvInImage) == "" {
		os.Exit(runSelfInImage(image, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// InImage is for a single tier-1 test of a package whose other tests run
// on the host: outside the image it runs just this test in it, logs what
// it printed, fails if it failed, and returns false (the caller returns);
// inside it returns true. Without tier 1 it skips.
func InImage(t *testing.T, image string) bool {
	t.Helper()
	testutil.Tier1(t)
	if os.Getenv(EnvInImage) != "" {
		return true
	}
	NeedImages(t, image)
	var args []string
	for _, a := range os.Args[1:] {
		if !strings.HasPrefix(a, "-test.run=") && !strings.HasPrefix(a, "-test.skip=") {
			args = append(args, a)
		}
	}
	args = append(args, "-test.run=^"+t.Name()+"$", "-test.v")
	out, code, err := selfInImage(image, args)
	t.Logf("in image %s:\n%s", image, out)
	if err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("%s failed in image %s (status %d)", t.Name(), image, code)
	}
	return false
}

// runSelfInImage runs this test binary in image with args, output passed
// through, and returns its status.
func runSelfInImage(image string, args []string) int {
	cmd, err := selfCommand(image, args)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func selfInImage(image string, args []string) (string, int, error) {
	cmd, err := selfCommand(image, args)
	if err != nil {
		return "", 0, err
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode(), nil
	}
	return string(out), 0, err
}

// selfCommand is `drums image run` of this binary in image, with the
// module's checkout bound (tests read testdata and sibling packages).
func selfCommand(image string, args []string) (*exec.Cmd, error) {
	bin := os.Getenv("DRUMS_BIN")
	if bin == "" {
		return nil, fmt.Errorf("tier-1 tests of this package run in the %s image through drums image run: set DRUMS_BIN (make test does)", image)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	root, err := ModuleRoot()
	if err != nil {
		return nil, err
	}
	run := []string{"image", "run", "--image-dir", ImageDir(), "--bind", root, image, "--", self}
	cmd := exec.Command(filepath.Join(bin, "drums"), append(run, args...)...)
	cmd.Env = append(os.Environ(), EnvInImage+"="+image)
	return cmd, nil
}

// ModuleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if d == filepath.Dir(d) {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}

// EnvImageDir names the image store the tests' desktops run from; unset,
// it is drums' own (images.DefaultDir), where `make images` builds them.
const EnvImageDir = "DRUMS_IMAGE_DIR"

// ImageDir is the image store tier-1 tests use.
func ImageDir() string {
	if d := os.Getenv(EnvImageDir); d != "" {
		return d
	}
	return images.DefaultDir
}

// NeedImages fails a tier-1 test (skips it in tier 0) unless the image
// store has images of these names, which `make images` builds.
func NeedImages(t testing.TB, names ...string) {
	t.Helper()
	if !testutil.Tier1Enabled() {
		t.Skipf("tier-1 test: set %s=1 (make test does) to run it against real desktops", testutil.EnvTier1)
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(ImageDir(), "names", n)); err != nil {
			t.Fatalf("no image %q in %s: run make images (bin/drums image build %s): %v", n, ImageDir(), n, err)
		}
	}
}
