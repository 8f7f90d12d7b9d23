package osworld

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

func TestDatasetPath(t *testing.T) {
	for _, c := range []struct {
		url, want string
		ok        bool
	}{
		{testutil.DatasetURL + "gimp/045bf3ff/gate.jpeg", "gimp/045bf3ff/gate.jpeg", true},
		{testutil.DatasetURL + "gimp/045bf3ff/gate.jpeg?download=true", "gimp/045bf3ff/gate.jpeg", true},
		{testutil.DatasetURL + "libreoffice_calc/7efeb4b1/Order_Sales_Serial%23.xlsx", "libreoffice_calc/7efeb4b1/Order_Sales_Serial#.xlsx", true},
		{testutil.DatasetURL + "multi_apps/185f29bd/Alex%20Lee.pdf?download=true", "multi_apps/185f29bd/Alex Lee.pdf", true},
		{"http://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "os/a/eval.sh", true},
		// Not the dataset, or not a download of it.
		{"https://huggingface.co/datasets/xlangai/other/resolve/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/blob/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/abc123/os/a/eval.sh", "", false},
		{"https://example.com/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "", false},
		{"ftp://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/os/a/eval.sh", "", false},
		{"https://huggingface.co/", "", false},
		// Nothing outside the mirror's directory.
		{testutil.DatasetURL, "", false},
		{testutil.DatasetURL + "../../../etc/passwd", "", false},
		{testutil.DatasetURL + "os/%2e%2e/%2e%2e/secret", "", false},
		{testutil.DatasetURL + "/etc/passwd", "", false},
	} {
		got, ok := DatasetPath(c.url)
		if got != c.want || ok != c.ok {
			t.Errorf("DatasetPath(%q) = %q, %v; want %q, %v", c.url, got, ok, c.want, c.ok)
		}
	}
}

func TestMirrorRead(t *testing.T) {
	m := testMirror(t, map[string]testutil.MirrorFile{
		"os/t1/good.txt":         {Content: "good bytes", Sum: "good"},
		"os/t1/changed.txt":      {Content: "changed bytes", Sum: testutil.BadSum},
		"os/t1/unlisted sum.txt": {Content: "no sum", Sum: ""},
		"os/t1/absent.txt":       {Content: "", Sum: "good"},
	})
	b, err := m.Read(testutil.DatasetURL + "os/t1/good.txt?download=true")
	if err != nil || string(b) != "good bytes" {
		t.Errorf("good: %q, %v", b, err)
	}
	if b, err := m.Read(testutil.DatasetURL + "os/t1/unlisted%20sum.txt"); err != nil || string(b) != "no sum" {
		t.Errorf("no sha256 listed: %q, %v", b, err)
	}
	if _, err := m.Read(testutil.DatasetURL + "os/t1/changed.txt"); !errors.Is(err, ErrMirrorMismatch) || !strings.Contains(err.Error(), testutil.BadSum) {
		t.Errorf("sha256 mismatch: %v", err)
	}
	_, err = m.Read(testutil.DatasetURL + "os/t1/absent.txt")
	if !errors.Is(err, ErrNeedsFileCache) || !strings.Contains(err.Error(), "os/t1/absent.txt") {
		t.Errorf("absent: %v", err)
	}
	if _, err := m.Read("https://example.com/a.txt"); !errors.Is(err, ErrNeedsFileCache) {
		t.Errorf("not the dataset: %v", err)
	}
	if !m.Has(testutil.DatasetURL+"os/t1/changed.txt") || m.Has(testutil.DatasetURL+"os/t1/absent.txt") || m.Has(testutil.DatasetURL+"os/t1") {
		t.Error("Has answers by the file's presence")
	}
	var none *Mirror
	if none.Has(testutil.DatasetURL + "os/t1/good.txt") {
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
		"two sums":   "sha256\tstored_at\n" + testutil.BadSum + "\tos/a/b\n" + strings.Repeat("cd", 32) + "\tos/a/b\n",
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
	f := testutil.NewFakeGuest(t)
	f.Handle("/setup/upload", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("File Uploaded")) })
	e := testEnv(t, f)
	e.Cache = FileCache{Mirror: testMirror(t, map[string]testutil.MirrorFile{
		"libreoffice_calc/task-1/Sales #1.xlsx": {Content: "input", Sum: "good"},
		"libreoffice_calc/task-1/gold.xlsx":     {Content: "gold", Sum: "good"},
		"libreoffice_calc/task-1/changed.xlsx":  {Content: "changed", Sum: testutil.BadSum},
	})}
	download := func(file string) Step {
		return step("download", map[string]any{"files": []any{map[string]any{"url": testutil.DatasetURL + "libreoffice_calc/task-1/" + file + "?download=true", "path": "/home/user/s.xlsx"}}})
	}
	if _, err := e.Setup(context.Background(), []Step{download("Sales%20%231.xlsx")}); err != nil {
		t.Fatal(err)
	}
	ups := f.Requests("/setup/upload")
	if len(ups) != 1 || ups[0].Form["file_data"] != "input" || ups[0].Form["file_path"] != "/home/user/s.xlsx" {
		t.Errorf("uploads = %+v", ups)
	}
	if _, err := e.Setup(context.Background(), []Step{download("changed.xlsx")}); !errors.Is(err, ErrMirrorMismatch) {
		t.Errorf("changed file: %v", err)
	}
	if _, err := e.Setup(context.Background(), []Step{download("absent.xlsx")}); !errors.Is(err, ErrNeedsFileCache) || !strings.Contains(err.Error(), "libreoffice_calc/task-1/absent.xlsx") {
		t.Errorf("absent file: %v", err)
	}
	if n := len(f.Requests("/setup/upload")); n != 1 {
		t.Errorf("%d uploads, want only the good file's", n)
	}

	got, err := e.RunGetter(context.Background(), Getter{"type": "cloud_file", "path": testutil.DatasetURL + "libreoffice_calc/task-1/gold.xlsx", "dest": "gold_dest.xlsx"})
	if err != nil || got != filepath.Join(e.WorkDir, "gold_dest.xlsx") {
		t.Fatalf("cloud_file = %v, %v", got, err)
	}
	if b, _ := os.ReadFile(got.(string)); string(b) != "gold" {
		t.Errorf("cloud_file content %q", b)
	}
	task := mustTask(t, `{"id": "task-1", "evaluator": {"func": "compare_text_file",
		"result": {"type": "cloud_file", "path": "`+testutil.DatasetURL+`libreoffice_calc/task-1/gold.xlsx", "dest": "g.xlsx"},
		"expected": {"type": "cloud_file", "path": "`+testutil.DatasetURL+`libreoffice_calc/task-1/changed.xlsx", "dest": "c.xlsx"}}}`)
	ev := e.Evaluate(context.Background(), task, false)
	if ev.Score != nil || !strings.Contains(ev.Error, ErrMirrorMismatch.Error()) {
		t.Errorf("a changed gold file must leave no score: %+v", ev)
	}
}

func TestFileCache(t *testing.T) {
	dir := t.TempDir()
	c := FileCache{Dir: dir}
	if _, err := c.Read("t", "f", "http://x"); !errors.Is(err, ErrNeedsFileCache) {
		t.Errorf("missing: %v", err)
	}
	if _, err := (FileCache{}).Read("t", "f", "http://x"); !errors.Is(err, ErrNeedsFileCache) {
		t.Errorf("no cache: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "t"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t", "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Read("t", "f", "http://x"); err != nil || string(b) != "data" || !c.Has("t", "f") {
		t.Errorf("present: %q %v", b, err)
	}
	// The cache dir comes first, the mirror fills in what it lacks.
	c.Mirror = testMirror(t, map[string]testutil.MirrorFile{"os/t/f": {Content: "mirrored f", Sum: "good"}, "os/t/g": {Content: "mirrored g", Sum: "good"}})
	if b, err := c.Read("t", "f", testutil.DatasetURL+"os/t/f"); err != nil || string(b) != "data" {
		t.Errorf("in both: %q %v", b, err)
	}
	if b, err := c.Read("t", "g", testutil.DatasetURL+"os/t/g"); err != nil || string(b) != "mirrored g" || c.Has("t", "g") || !c.Holds("t", "g", testutil.DatasetURL+"os/t/g") {
		t.Errorf("in the mirror only: %q %v", b, err)
	}
}

// testMirror is testutil's mirror of files, opened.
func testMirror(t *testing.T, files map[string]testutil.MirrorFile) *Mirror {
	m, err := OpenMirror(testutil.MirrorDir(t, files))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
