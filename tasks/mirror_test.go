package tasks

import (
	"context"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/tasks/osworld"
)

// With the mirror, a task whose files it has runs, and one it lacks a file
// of stays needs-file-cache, the file named by its dataset path.
func TestRunnerWithMirror(t *testing.T) {
	dir, entries := writeExamples(t, map[string]string{
		"os/have": `{"id": "have", "config": [{"type": "download", "parameters": {"files": [{"url": "` + testutil.DatasetURL + `os/have/eval.sh", "path": "/home/user/eval.sh"}]}}],
			"evaluator": {"func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "true", "shell": true}, "expected": {"type": "rule", "rules": {"include": ["x"]}}}}`,
		"os/lack": `{"id": "lack", "config": [{"type": "download", "parameters": {"files": [{"url": "` + testutil.DatasetURL + `os/lack/eval.sh", "path": "/home/user/eval.sh"}, {"url": "` + testutil.DatasetURL + `os/lack/big%20one.mp4", "path": "/home/user/v.mp4"}]}}],
			"evaluator": {"func": "infeasible"}}`,
	})
	m := testMirror(t, map[string]testutil.MirrorFile{
		"os/have/eval.sh": {Content: "echo have", Sum: "good"},
		"os/lack/eval.sh": {Content: "echo lack", Sum: "good"},
	})
	r := NewRunner(Config{Examples: dir, Files: t.TempDir(), Cache: osworld.FileCache{Mirror: m}, TaskTimeout: time.Minute,
		Timeouts: osworld.Timeouts{Ready: time.Second, Pause: time.Millisecond}}, &fakeDesktops{t: t}, nil)
	results, err := r.Run(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		switch res.ID {
		case "have":
			if res.Status != StatusRan || res.SetupOK == nil || !*res.SetupOK || res.Requirements.FileCache[0].Path != "os/have/eval.sh" {
				t.Errorf("have: %s (%s) %+v", res.Status, res.Reason, res.Requirements.FileCache)
			}
		case "lack":
			if res.Status != StatusNeedsFileCache || res.Reason != "1 of 2 file-cache files missing: os/lack/big one.mp4" {
				t.Errorf("lack: %s (%s)", res.Status, res.Reason)
			}
		}
	}
}

// testMirror is testutil's mirror of files, opened.
func testMirror(t *testing.T, files map[string]testutil.MirrorFile) *osworld.Mirror {
	m, err := osworld.OpenMirror(testutil.MirrorDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
