package guestd

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

// tempDirEmpty fails when a run left files in the server's temp dir.
func tempDirEmpty(t *testing.T, te *testEnv) {
	t.Helper()
	entries, err := os.ReadDir(te.tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("left behind in the temp dir: %s", e.Name())
	}
}

func TestRunPython(t *testing.T) {
	// The interpreter is configurable; /bin/sh runs these "scripts" so
	// that the test does not depend on a python3.
	te := newTestEnv(t, func(c *Config) { c.Python = "/bin/sh" })
	cases := []struct {
		name   string
		body   string
		status int
		want   map[string]any
	}{
		{"stdout", `{"code": "echo hello"}`, 200, map[string]any{
			"status": "success", "message": "hello\n", "need_more": false, "output": "hello\n", "error": "", "return_code": 0.0}},
		{"stderr with success", `{"code": "echo out; echo warn >&2"}`, 200, map[string]any{
			"status": "success", "message": "out\n\nwarn\n", "need_more": false, "output": "out\n", "error": "warn\n", "return_code": 0.0}},
		{"only stderr", `{"code": "echo bad >&2; exit 1"}`, 200, map[string]any{
			"status": "error", "message": "bad\n", "need_more": false, "output": "", "error": "bad\n", "return_code": 1.0}},
		{"exit without stderr", `{"code": "echo partial; exit 3"}`, 200, map[string]any{
			"status": "error", "message": "partial\n\nProcess exited with code 3", "need_more": false, "output": "partial\n",
			"error": "Process exited with code 3", "return_code": 3.0}},
		{"silent exit", `{"code": "exit 4"}`, 200, map[string]any{
			"status": "error", "message": "Process exited with code 4", "need_more": false, "output": "",
			"error": "Process exited with code 4", "return_code": 4.0}},
		{"file name", `{"code": "case $0 in ` + te.tmp + `/python_exec_????????????????????????????????.py) echo ok;; esac"}`, 200, map[string]any{
			"status": "success", "message": "ok\n", "need_more": false, "output": "ok\n", "error": "", "return_code": 0.0}},
		{"no code", `{}`, 400, map[string]any{"status": "error", "message": "Code not supplied!"}},
		{"empty code", `{"code": ""}`, 400, map[string]any{"status": "error", "message": "Code not supplied!"}},
		{"code not a string", `{"code": 5}`, 500, map[string]any{"status": "error", "need_more": false, "output": nil,
			"message": "Execution error: write() argument must be str, not int",
			"error":   "TypeError: write() argument must be str, not int"}},
		{"undecodable", `{"code": "printf '\\377'"}`, 500, map[string]any{"status": "error", "need_more": false, "output": nil,
			"message": "Execution error: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
			"error":   "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"}},
	}
	for _, c := range cases {
		r := te.postJSON("/run_python", c.body)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		if diff := cmp.Diff(c.want, decodeBody(t, r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	tempDirEmpty(t, te)

	t.Run("timeout", func(t *testing.T) {
		te := newTestEnv(t, func(c *Config) { c.Python = "/bin/sh"; c.RunPythonTimeout = 300 * time.Millisecond })
		r := te.postJSON("/run_python", `{"code": "exec sleep 30"}`)
		want := map[string]any{"status": "error", "need_more": false, "output": nil,
			"message": "Execution timeout: Code took too long to execute", "error": "TimeoutExpired"}
		if diff := cmp.Diff(want, decodeBody(t, r)); r.status != 500 || diff != "" {
			t.Errorf("status %d (-want +got):\n%s", r.status, diff)
		}
		tempDirEmpty(t, te)
	})

	t.Run("python3", func(t *testing.T) {
		_, err := os.Stat(testutil.DebianPython)
		testutil.Need(t, testutil.DebianPython, err)
		te := newTestEnv(t)
		r := te.postJSON("/run_python", `{"code": "import sys\nprint(6*7)\nprint('é', file=sys.stderr)"}`)
		m := decodeBody(t, r)
		if r.status != 200 || m["output"] != "42\n" || m["error"] != "é\n" || m["return_code"] != 0.0 {
			t.Errorf("python3: %d %s", r.status, r.body)
		}
		tempDirEmpty(t, te)
	})
}

func TestRunBashScript(t *testing.T) {
	te := newTestEnv(t)
	if err := os.Mkdir(te.home+"/work", 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		body   string
		status int
		want   map[string]any
	}{
		{"merged output", `{"script": "echo out; echo err >&2", "timeout": 30, "working_dir": null}`, 200,
			map[string]any{"status": "success", "output": "out\nerr\n", "error": "", "returncode": 0.0}},
		{"failure is still 200", `{"script": "echo a; exit 7"}`, 200,
			map[string]any{"status": "error", "output": "a\n", "error": "", "returncode": 7.0}},
		{"working dir", `{"script": "pwd", "working_dir": "~/work"}`, 200,
			map[string]any{"status": "success", "output": te.home + "/work\n", "error": "", "returncode": 0.0}},
		{"default dir is home", `{"script": "pwd"}`, 200,
			map[string]any{"status": "success", "output": te.home + "\n", "error": "", "returncode": 0.0}},
		{"bash", `{"script": "echo ${BASH_VERSION:+bash}"}`, 200,
			map[string]any{"status": "success", "output": "bash\n", "error": "", "returncode": 0.0}},
		{"shebang kept", `{"script": "#!/bin/bash\necho $LINENO"}`, 200,
			map[string]any{"status": "success", "output": "2\n", "error": "", "returncode": 0.0}},
		{"shebang added", `{"script": "echo $LINENO"}`, 200,
			map[string]any{"status": "success", "output": "3\n", "error": "", "returncode": 0.0}},
		{"no script", `{"timeout": 5}`, 400,
			map[string]any{"status": "error", "output": "Script not supplied!", "error": "", "returncode": -1.0}},
		{"missing working dir", `{"script": "pwd", "working_dir": "/no/such/dir"}`, 400,
			map[string]any{"status": "error", "output": "Working directory does not exist: /no/such/dir", "error": "", "returncode": -1.0}},
		{"timeout int", `{"script": "exec sleep 30", "timeout": 0}`, 500,
			map[string]any{"status": "error", "output": "Script execution timed out after 0 seconds", "error": "", "returncode": -1.0}},
		{"timeout float", `{"script": "exec sleep 30", "timeout": 0.2}`, 500,
			map[string]any{"status": "error", "output": "Script execution timed out after 0.2 seconds", "error": "", "returncode": -1.0}},
		{"timeout bool", `{"script": "exec sleep 30", "timeout": false}`, 500,
			map[string]any{"status": "error", "output": "Script execution timed out after False seconds", "error": "", "returncode": -1.0}},
		{"timeout string", `{"script": "true", "timeout": "5"}`, 500,
			map[string]any{"status": "error", "output": "Failed to execute script: unsupported operand type(s) for +: 'float' and 'str'", "error": "", "returncode": -1.0}},
		{"script not a string", `{"script": ["echo"]}`, 400,
			map[string]any{"status": "error", "output": "'script' must be a string, not list", "error": "", "returncode": -1.0}},
	}
	for _, c := range cases {
		r := te.postJSON("/run_bash_script", c.body)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, r.status, c.status, r.body)
			continue
		}
		if diff := cmp.Diff(c.want, decodeBody(t, r)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
	// Error messages name the script file, and line numbers count the
	// two added lines.
	r := te.postJSON("/run_bash_script", `{"script": "nosuchcommand_zz"}`)
	out, _ := decodeBody(t, r)["output"].(string)
	if !strings.HasPrefix(out, te.tmp+"/tmp") || !strings.Contains(out, ".sh: line 3: nosuchcommand_zz: command not found") {
		t.Errorf("bash error: %q", out)
	}
	tempDirEmpty(t, te)
}
