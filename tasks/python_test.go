package tasks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/tasks/osworld"
)

// fakeDesktopEnv stands in for OSWorld's desktop_env: it records nothing,
// prints to stdout (as OSWorld's getters do, which must not break the
// worker's protocol) and answers by task id. It looks for a task's files
// where SetupController._download_setup and get_cloud_file do, in
// cache_dir/<task id>, and raises where they would download.
const fakeDesktopEnv = `
import os, uuid

class DesktopEnv:
    def __init__(self, provider_name, cache_dir, **kw):
        assert provider_name == "drums"
        self.cache_dir_base = cache_dir
        self.is_environment_used = False
        print("noise on stdout")
    def reset(self, task_config=None):
        if task_config["id"] == "setupfails":
            raise Exception("Setup step 1 failed: _open_setup")
        if task_config["id"] == "dies":
            os._exit(3)
        self.task = task_config
        self.cache_dir = os.path.join(self.cache_dir_base, task_config["id"])
        for step in task_config.get("config", []):
            if step["type"] != "download":
                continue
            for f in step["parameters"]["files"]:
                p = os.path.join(self.cache_dir, "{:}_{:}".format(uuid.uuid5(uuid.NAMESPACE_URL, f["url"]), os.path.basename(f["path"])))
                if not os.path.exists(p):
                    raise Exception("Setup step 1 failed: _download_setup - would download %s to %s" % (f["url"], p))
        return {}
    def _get_obs(self):
        return {"screenshot": b"png", "accessibility_tree": "<desktop-frame/>"}
    def evaluate(self):
        print("evaluating")
        expected = self.task.get("evaluator", {}).get("expected")
        if expected and expected["type"] == "cloud_file":
            p = os.path.join(self.cache_dir, expected["dest"])
            if not os.path.exists(p):
                raise Exception("get_cloud_file would download %s to %s" % (expected["path"], p))
        return 0
    def close(self):
        pass
`

func TestViaPythonWorker(t *testing.T) {
	_, err := os.Stat("/usr/bin/python3")
	testutil.Need(t, "Debian's /usr/bin/python3", err)
	osw := t.TempDir()
	prov := t.TempDir()
	for path, content := range map[string]string{
		filepath.Join(osw, "desktop_env", "__init__.py"):    "",
		filepath.Join(osw, "desktop_env", "desktop_env.py"): fakeDesktopEnv,
		filepath.Join(prov, "drums_osworld", "__init__.py"): "",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir, entries := writeExamples(t, map[string]string{
		"os/good":       `{"id": "good", "evaluator": {"func": "infeasible"}}`,
		"os/setupfails": `{"id": "setupfails", "evaluator": {"func": "infeasible"}}`,
		"os/dies":       `{"id": "dies", "evaluator": {"func": "infeasible"}}`,
		"os/after":      `{"id": "after", "evaluator": {"func": "infeasible"}}`,
		"os/mirrored": `{"id": "mirrored", "config": [{"type": "download", "parameters": {"files": [{"url": "` + testutil.DatasetURL + `os/mirrored/in%20put.txt?download=true", "path": "/home/user/in put.txt"}]}}],
			"evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/in put.txt", "dest": "out.txt"},
			"expected": {"type": "cloud_file", "path": "` + testutil.DatasetURL + `os/mirrored/gold.txt", "dest": "gold.txt"}}}`,
		"os/changed": `{"id": "changed", "config": [{"type": "download", "parameters": {"files": [{"url": "` + testutil.DatasetURL + `os/changed/in.txt", "path": "/home/user/in.txt"}]}}],
			"evaluator": {"func": "infeasible"}}`,
	})
	mirror := testMirror(t, map[string]testutil.MirrorFile{
		"os/mirrored/in put.txt": {Content: "input", Sum: "good"},
		"os/mirrored/gold.txt":   {Content: "gold", Sum: "good"},
		"os/changed/in.txt":      {Content: "changed", Sum: testutil.BadSum},
	})
	files := t.TempDir()
	py := &osworld.PythonConfig{Python: "/usr/bin/python3", OSWorld: osw, ProviderPath: prov, CacheDir: t.TempDir(), LogDir: filepath.Join(files, "logs")}
	if err := py.Check(); err != nil {
		t.Fatal(err)
	}
	r := NewRunner(Config{Examples: dir, Files: files, TaskTimeout: time.Minute, Python: py, Cache: osworld.FileCache{Mirror: mirror},
		Timeouts: osworld.Timeouts{Pause: time.Millisecond}}, &fakeDesktops{t: t}, nil)
	// One worker, so "after" runs on the worker that replaced the dead one.
	sorted := []osworld.Entry{}
	for _, id := range []string{"good", "setupfails", "dies", "after", "mirrored", "changed"} {
		for _, e := range entries {
			if e.ID == id {
				sorted = append(sorted, e)
			}
		}
	}
	results, err := r.Run(context.Background(), sorted)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"good": StatusRan, "setupfails": StatusFailed, "dies": StatusFailed, "after": StatusRan,
		"mirrored": StatusRan, "changed": StatusFailed}
	for _, res := range results {
		if res.Status != want[res.ID] || res.Mode != "osworld" {
			t.Errorf("%s: %s (%s), mode %s", res.ID, res.Status, res.Reason, res.Mode)
		}
		if res.ID == "good" && (res.ScoreBefore == nil || *res.ScoreBefore != 0 || !*res.ObservationOK) {
			t.Errorf("good = %+v", res)
		}
		if res.ID == "setupfails" && !strings.Contains(res.Reason, "_open_setup") {
			t.Errorf("setupfails reason = %q", res.Reason)
		}
		// OSWorld found the mirrored files under its own names: no
		// download, no error from its getter.
		if res.ID == "mirrored" && (res.ScoreBefore == nil || res.GettersOK == nil || !*res.GettersOK || res.Reason != "") {
			t.Errorf("mirrored = %+v", res)
		}
		if res.ID == "changed" && !strings.Contains(res.Reason, osworld.ErrMirrorMismatch.Error()) {
			t.Errorf("changed reason = %q", res.Reason)
		}
	}
	if err := (&osworld.PythonConfig{Python: "/usr/bin/python3", OSWorld: t.TempDir(), ProviderPath: prov}).Check(); err == nil {
		t.Error("a directory without desktop_env passed the check")
	}
}

// The worker runs in the OSWorld checkout, so Check leaves no path
// relative to drums' own directory; a bare interpreter name stays for PATH.
func TestPythonConfigPathsAbsolute(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"osw/desktop_env", "prov/drums_osworld"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "prov/drums_osworld/__init__.py"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	c := osworld.PythonConfig{Python: "python3", OSWorld: "osw", ProviderPath: "prov", Socket: "d.sock",
		CacheDir: "cache", LogDir: "logs", PythonPath: "a" + string(filepath.ListSeparator) + "/b"}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	want := osworld.PythonConfig{Python: "python3", OSWorld: dir + "/osw", ProviderPath: dir + "/prov", Socket: dir + "/d.sock",
		CacheDir: dir + "/cache", LogDir: dir + "/logs", PythonPath: dir + "/a" + string(filepath.ListSeparator) + "/b"}
	if c != want {
		t.Errorf("after Check:\n%+v\nwant\n%+v", c, want)
	}
}
