package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// DebianPython is the interpreter the comparison tests run. Python there is
// an oracle: the expectations come from the very library upstream uses.
const DebianPython = "/usr/bin/python3"

// PythonOracle runs script with DebianPython, feeding it inputs as one JSON
// document on stdin, and decodes its JSON answer into out. Without Debian's
// python3 the comparison is skipped (Need), so callers keep hard-coded
// tables that run everywhere.
func PythonOracle(t testing.TB, script string, inputs any, out any) {
	t.Helper()
	_, err := os.Stat(DebianPython)
	Need(t, DebianPython+" for the comparison with CPython", err)
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(DebianPython, "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "PYTHONDONTWRITEBYTECODE=1", "HOME=/nonexistent-home"}
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("python oracle: %v\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("python oracle output: %v\n%s", err, b)
	}
}
