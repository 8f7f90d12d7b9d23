package osworld

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

// fakePython is a test double of the metrics worker's interpreter: it
// says it is ready, then scores every metric call 1.
func fakePython(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "python3")
	script := "#!/bin/sh\necho '{\"ready\": true}'\nwhile read -r line; do echo '{\"metric_score\": 1}'; done\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// PythonJudge logs each call and OSWorld's answer; a log it cannot write
// costs no score and is said once.
func TestPythonJudge(t *testing.T) {
	for _, c := range []struct {
		name   string
		broken bool // the call log's path is a directory
	}{{"log", false}, {"log unwritable", true}} {
		t.Run(c.name, func(t *testing.T) {
			logs := t.TempDir()
			if c.broken {
				if err := os.Mkdir(filepath.Join(logs, MetricCallsLog), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var warn bytes.Buffer
			j := &PythonJudge{Config: &PythonConfig{Python: fakePython(t), OSWorld: t.TempDir(), LogDir: logs}, Warn: &warn}
			t.Cleanup(j.Close)
			for i := range 2 {
				a, err := j.Metric(context.Background(), "exact_match", []any{"a", "a"}, nil)
				if err != nil || a.Score == nil || *a.Score != 1 {
					t.Fatalf("call %d: %+v, %v; want score 1", i, a, err)
				}
			}
			if c.broken {
				if n := strings.Count(warn.String(), "\n"); n != 1 || !strings.Contains(warn.String(), "metric call log") {
					t.Errorf("warnings %q, want one about the call log", warn.String())
				}
				return
			}
			if warn.Len() != 0 {
				t.Errorf("warnings %q, want none", warn.String())
			}
			j.Close()
			b, err := os.ReadFile(filepath.Join(logs, MetricCallsLog))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
			for _, l := range lines {
				var call metricCall
				if err := json.Unmarshal([]byte(l), &call); err != nil || call.Func != "exact_match" || call.OSWorld.Score == nil {
					t.Errorf("logged %q: %+v %v", l, call, err)
				}
			}
			if len(lines) != 2 {
				t.Errorf("logged %d calls, want 2:\n%s", len(lines), b)
			}
		})
	}
}

// TestWorkerClickCode: --via-python resolves a click in the worker
// (click_code), the native runner in ClickCode; both give the same code.
func TestWorkerClickCode(t *testing.T) {
	_, err := os.Stat("/usr/bin/python3")
	testutil.Need(t, "Debian's /usr/bin/python3", err)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "osworld_worker.py"), []byte(workerPy), 0o644); err != nil {
		t.Fatal(err)
	}
	clicks := make([]ElementClick, len(clickCases))
	for i, c := range clickCases {
		clicks[i] = c.click
	}
	in, err := json.Marshal(map[string]any{"tree": shellTree, "clicks": clicks})
	if err != nil {
		t.Fatal(err)
	}
	// The worker answers on the stdout it started with (reply); its own
	// printing goes to stderr.
	script := `import json, sys
import osworld_worker as w
req = json.loads(sys.stdin.read())
out = []
for c in req["clicks"]:
    try:
        out.append(w.click_code(req["tree"], c))
    except ValueError:
        out.append("")
w.reply(out)
`
	cmd := exec.Command("/usr/bin/python3", "-c", script)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader(string(in))
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	var got []string
	if err := json.Unmarshal(b, &got); err != nil || len(got) != len(clickCases) {
		t.Fatalf("worker answered %q: %v", b, err)
	}
	for i, c := range clickCases {
		if got[i] != c.want {
			t.Errorf("%+v: click_code = %q, want %q", c.click, got[i], c.want)
		}
	}
}
