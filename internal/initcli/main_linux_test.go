package initcli

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestMain: the subcommand tests run this test binary as drums-init.
func TestMain(m *testing.M) {
	if os.Getenv("DRUMS_INITCLI_TEST_CHILD") == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// Each subcommand fails in its own words outside a session, which shows
// that it ran; anything else is refused with a word on what the binary is.
func TestSubcommands(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"init", "x"}, 1, "init: not PID 1 of a new PID namespace"},
		{[]string{"a11y-ready"}, 2, "usage: drums-init a11y-ready BUS"},
		{[]string{"system-manager"}, 1, "usage: drums-init system-manager HOSTUID"},
		{nil, 2, "drums-init: the session engine runs this for each desktop"},
		{[]string{"serve"}, 2, "make one with drums session create"},
	} {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.Env = append(os.Environ(), "DRUMS_INITCLI_TEST_CHILD=1")
		// init reads its plan and sync socket from fds 3 and 4.
		cmd.ExtraFiles = []*os.File{null, null}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err = cmd.Run()
		null.Close()
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != c.status || !strings.Contains(stderr.String(), c.stderr) {
			t.Errorf("drums-init %v: status %d, stderr %q; want %d and %q", c.args, status, stderr.String(), c.status, c.stderr)
		}
	}
}
