package compat

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
)

// EnvReportDir names where TestSuite keeps its report (make compat points
// it at compat/report); unset, the report goes to a temporary directory.
const EnvReportDir = "DRUMS_COMPAT_REPORT"

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBins()
	os.Exit(code)
}

// suiteTimeout bounds the whole run: about 300 fast cases, a few dozen of
// which wait for applications or timeouts of a few seconds, on a loaded
// 2-core machine.
const suiteTimeout = 45 * time.Minute

// TestSuite runs every built-in case (slow ones excepted) through
// `drums compat` against upstream main.py and guestd in one drums session,
// and fails on any difference that is not on the known-differences list.
func TestSuite(t *testing.T) {
	// Both servers run in a drums session from the osworld image: the
	// host needs none of the desktop's programs.
	testutil.RequireRoot(t, "ip")
	testimage.NeedImages(t, "osworld")
	if _, err := UpstreamFromEnv(); err != nil {
		t.Skipf("compat suite did not run: %v", err)
	}
	bin := testutil.Bins(t)
	out := os.Getenv(EnvReportDir)
	if out == "" {
		out = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), suiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "drums"), "compat", "--out", out)
	cmd.Env = append(os.Environ(), "DRUMS_BIN="+bin)
	cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
	runErr := cmd.Run()

	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatalf("drums compat wrote no report (%v): %v", runErr, err)
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("decode report: %v", err)
	}
	for _, c := range rep.Cases {
		switch c.Verdict {
		case Different:
			for _, d := range c.Differences {
				if d.Intended == "" {
					t.Errorf("%s: step %d field %s: upstream %s, guestd %s", c.Name, d.Step+1, d.Field, d.Upstream, d.Guestd)
				}
			}
		case Error:
			t.Errorf("%s could not run: %s", c.Name, c.Reason)
		case Skipped:
			// CI installs every program the built-in cases need
			// (scripts/deps); only slow cases may be skipped.
			if !strings.HasPrefix(c.Reason, "slow") {
				t.Errorf("%s skipped: %s", c.Name, c.Reason)
			}
		}
	}
	// An entry that explains nothing in a case that ran would silently
	// allow the difference if it came back: the list must be pruned.
	for _, p := range rep.StaleAllowed {
		t.Errorf("stale known difference (the case ran without it): %s", p)
	}
	if runErr != nil && !t.Failed() {
		t.Fatalf("drums compat: %v", runErr)
	}
	t.Logf("report in %s: %v", out, rep.Totals)
}

// testWriter sends a child's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
