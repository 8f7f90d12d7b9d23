package tasks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const datasetURL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"

func TestDatasetPath(t *testing.T) {
	for _, c := range []struct {
		url, want string
		ok        bool
	}{
		{datasetURL + "gimp/045bf3ff/gate.jpeg", "gimp/045bf3ff/gate.jpeg", true},
		{datasetURL + "gimp/045bf3ff/gate.jpeg?download=true", "gimp/045bf3ff/gate.jpeg", true},
		{datasetURL + "libreoffice_calc/7efeb4b1/Order_Sales_Serial%23.xlsx", "libreoffice_calc/7efeb4b1/Order_Sales_Serial#.xlsx", true},
		{datasetURL + "multi_apps/185f29bd/Alex%20Lee.pdf?download=true", "multi_apps/185f29bd/Alex Lee.pdf", true},
		{"http://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "os/a/eval.sh", true},
		// Not the dataset, or not a download of it.
		{"https://huggingface.co/datasets/xlangai/other/resolve/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/blob/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/abc123/os/a/eval.sh", "", false},
		{"https://example.com/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "", false},
		{"ftp://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/", "", false},
		// Nothing outside the mirror's directory.
		{datasetURL, "", false},
		{datasetURL + "../../../etc/passwd", "", false},
		{datasetURL + "os/%2e%2e/%2e%2e/secret", "", false},
		{datasetURL + "/etc/passwd", "", false},
	} {
		got, ok := DatasetPath(c.url)
		if got != c.want || ok != c.ok {
			t.Errorf("DatasetPath(%q) = %q, %v; want %q, %v", c.url, got, ok, c.want, c.ok)
		}
	}
}

// mirrorFile is one file of a test mirror: its content, and the sha256 its
// manifest lists ("" for none, "good" for the content's own).
type mirrorFile struct{ content, sum string }

// testMirror lays a mirror out in a temporary directory, with a manifest in
// the columns of the real one.
func testMirror(t *testing.T, files map[string]mirrorFile) *Mirror {
	t.Helper()
	dir := t.TempDir()
	manifest := "domain\ttask_id\tfile\trepo\tpath_in_repo\tsha256\tbytes\tmatch_kind\tverification\tgit_blob\tstored_at\n"
	for p, f := range files {
		if f.content != "" {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(f.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sum := f.sum
		if sum == "good" {
			s := sha256.Sum256([]byte(f.content))
			sum = hex.EncodeToString(s[:])
		}
		parts := strings.SplitN(p, "/", 3)
		manifest += strings.Join([]string{parts[0], parts[1], parts[2], "r", "x", sum, "1", "k", "v", "b", p}, "\t") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := OpenMirror(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var badSum = strings.Repeat("ab", sha256.Size)

func TestMirrorRead(t *testing.T) {
	m := testMirror(t, map[string]mirrorFile{
		"os/t1/good.txt":         {"good bytes", "good"},
		"os/t1/changed.txt":      {"changed bytes", badSum},
		"os/t1/unlisted sum.txt": {"no sum", ""},
		"os/t1/absent.txt":       {"", "good"},
	})
	b, err := m.Read(datasetURL + "os/t1/good.txt?download=true")
	if err != nil || string(b) != "good bytes" {
		t.Errorf("good: %q, %v", b, err)
	}
	if b, err := m.Read(datasetURL + "os/t1/unlisted%20sum.txt"); err != nil || string(b) != "no sum" {
		t.Errorf("no sha256 listed: %q, %v", b, err)
	}
	if _, err := m.Read(datasetURL + "os/t1/changed.txt"); !errors.Is(err, ErrMirrorMismatch) || !strings.Contains(err.Error(), badSum) {
		t.Errorf("sha256 mismatch: %v", err)
	}
	_, err = m.Read(datasetURL + "os/t1/absent.txt")
	if !errors.Is(err, ErrNeedsFileCache) || !strings.Contains(err.Error(), "os/t1/absent.txt") {
		t.Errorf("absent: %v", err)
	}
	if _, err := m.Read("https://example.com/a.txt"); !errors.Is(err, ErrNeedsFileCache) {
		t.Errorf("not the dataset: %v", err)
	}
	if !m.Has(datasetURL+"os/t1/changed.txt") || m.Has(datasetURL+"os/t1/absent.txt") || m.Has(datasetURL+"os/t1") {
		t.Error("Has answers by the file's presence")
	}
	var none *Mirror
	if none.Has(datasetURL + "os/t1/good.txt") {
		t.Error("no mirror has a file")
	}
}

func TestOpenMirror(t *testing.T) {
	if _, err := OpenMirror(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Error("a missing directory opened")
	}
	// No manifest: files are used unchecked.
	m, err := OpenMirror(t.TempDir())
	if err != nil || len(m.sums) != 0 {
		t.Errorf("without a manifest: %v, %v", m, err)
	}
	for name, manifest := range map[string]string{
		"no columns": "a\tb\nx\ty\n",
		"short row":  "sha256\tstored_at\nabc\n",
		"not hex":    "sha256\tstored_at\nxyz\tos/a/b\n",
		"two sums":   "sha256\tstored_at\n" + badSum + "\tos/a/b\n" + strings.Repeat("cd", 32) + "\tos/a/b\n",
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenMirror(dir); err == nil {
			t.Errorf("%s: manifest accepted", name)
		}
	}
}

// A download step and a cloud_file getter are served from the mirror; a
// changed file fails them, a missing one is needs-file-cache with its path.
func TestSetupAndCloudFileFromMirror(t *testing.T) {
	f := newFakeGuest(t)
	f.handle("/setup/upload", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("File Uploaded")) })
	e := testEnv(t, f)
	e.Cache = FileCache{Mirror: testMirror(t, map[string]mirrorFile{
		"libreoffice_calc/task-1/Sales #1.xlsx": {"input", "good"},
		"libreoffice_calc/task-1/gold.xlsx":     {"gold", "good"},
		"libreoffice_calc/task-1/changed.xlsx":  {"changed", badSum},
	})}
	download := func(file string) Step {
		return step("download", map[string]any{"files": []any{map[string]any{"url": datasetURL + "libreoffice_calc/task-1/" + file + "?download=true", "path": "/home/user/s.xlsx"}}})
	}
	if _, err := e.Setup(context.Background(), []Step{download("Sales%20%231.xlsx")}); err != nil {
		t.Fatal(err)
	}
	ups := f.requests("/setup/upload")
	if len(ups) != 1 || ups[0].Form["file_data"] != "input" || ups[0].Form["file_path"] != "/home/user/s.xlsx" {
		t.Errorf("uploads = %+v", ups)
	}
	if _, err := e.Setup(context.Background(), []Step{download("changed.xlsx")}); !errors.Is(err, ErrMirrorMismatch) {
		t.Errorf("changed file: %v", err)
	}
	if _, err := e.Setup(context.Background(), []Step{download("absent.xlsx")}); !errors.Is(err, ErrNeedsFileCache) || !strings.Contains(err.Error(), "libreoffice_calc/task-1/absent.xlsx") {
		t.Errorf("absent file: %v", err)
	}
	if n := len(f.requests("/setup/upload")); n != 1 {
		t.Errorf("%d uploads, want only the good file's", n)
	}

	got, err := e.RunGetter(context.Background(), Getter{"type": "cloud_file", "path": datasetURL + "libreoffice_calc/task-1/gold.xlsx", "dest": "gold_dest.xlsx"})
	if err != nil || got != filepath.Join(e.WorkDir, "gold_dest.xlsx") {
		t.Fatalf("cloud_file = %v, %v", got, err)
	}
	if b, _ := os.ReadFile(got.(string)); string(b) != "gold" {
		t.Errorf("cloud_file content %q", b)
	}
	task := mustTask(t, `{"id": "task-1", "evaluator": {"func": "compare_text_file",
		"result": {"type": "cloud_file", "path": "`+datasetURL+`libreoffice_calc/task-1/gold.xlsx", "dest": "g.xlsx"},
		"expected": {"type": "cloud_file", "path": "`+datasetURL+`libreoffice_calc/task-1/changed.xlsx", "dest": "c.xlsx"}}}`)
	ev := e.Evaluate(context.Background(), task, false)
	if ev.Score != nil || !strings.Contains(ev.Error, ErrMirrorMismatch.Error()) {
		t.Errorf("a changed gold file must leave no score: %+v", ev)
	}
}

// With the mirror, a task whose files it has runs, and one it lacks a file
// of stays needs-file-cache, the file named by its dataset path.
func TestRunnerWithMirror(t *testing.T) {
	dir, entries := writeExamples(t, map[string]string{
		"os/have": `{"id": "have", "config": [{"type": "download", "parameters": {"files": [{"url": "` + datasetURL + `os/have/eval.sh", "path": "/home/user/eval.sh"}]}}],
			"evaluator": {"func": "check_include_exclude", "result": {"type": "vm_command_line", "command": "true", "shell": true}, "expected": {"type": "rule", "rules": {"include": ["x"]}}}}`,
		"os/lack": `{"id": "lack", "config": [{"type": "download", "parameters": {"files": [{"url": "` + datasetURL + `os/lack/eval.sh", "path": "/home/user/eval.sh"}, {"url": "` + datasetURL + `os/lack/big%20one.mp4", "path": "/home/user/v.mp4"}]}}],
			"evaluator": {"func": "infeasible"}}`,
	})
	m := testMirror(t, map[string]mirrorFile{
		"os/have/eval.sh": {"echo have", "good"},
		"os/lack/eval.sh": {"echo lack", "good"},
	})
	r := NewRunner(Config{Examples: dir, Files: t.TempDir(), Cache: FileCache{Mirror: m}, TaskTimeout: time.Minute,
		Timeouts: Timeouts{Ready: time.Second, Pause: time.Millisecond}}, &fakeDesktops{t: t}, nil)
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
