package osworld

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

func step(typ string, params map[string]any) Step { return Step{Type: typ, Parameters: params} }

func TestSetupExecuteSubstitutesAndSavesOutput(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/setup/execute", func(w http.ResponseWriter, r *http.Request) {
		testutil.WriteJSON(w, 200, client.ExecResult{Status: "success", Output: "out\n", Error: "err\n"})
	})
	e := testEnv(t, f)
	res, err := e.Setup(context.Background(), []Step{step("execute", map[string]any{
		"command": []any{"python", "-c", "click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}); '{CLIENT_PASSWORD}'"},
		"stdout":  "o.txt", "stderr": "e.txt",
	})})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Error != "" {
		t.Fatalf("results = %+v", res)
	}
	reqs := f.Requests("/setup/execute")
	if len(reqs) != 1 {
		t.Fatalf("%d execute requests", len(reqs))
	}
	if diff := cmp.Diff([]any{"python", "-c", "click(960, 540); 'password'"}, reqs[0].JSON["command"]); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	if reqs[0].JSON["shell"] != nil {
		t.Errorf("shell = %v, want absent→null passed through", reqs[0].JSON["shell"])
	}
	for name, want := range map[string]string{"o.txt": "out\n", "e.txt": "err\n"} {
		b, err := os.ReadFile(filepath.Join(e.WorkDir, name))
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v", name, b, err)
		}
	}
	if got := f.Requests("/terminal"); len(got) == 0 {
		t.Error("setup did not probe /terminal first")
	}
}

func TestSetupExecuteUntil(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	var n atomic.Int32
	f.Handle("/setup/execute", func(w http.ResponseWriter, r *http.Request) {
		out := ""
		if n.Add(1) >= 3 {
			out = "ready"
		}
		testutil.WriteJSON(w, 200, client.ExecResult{Status: "success", Output: out, ReturnCode: 1})
	})
	e := testEnv(t, f)
	_, err := e.Setup(context.Background(), []Step{step("execute", map[string]any{
		"command": []any{"check"}, "until": map[string]any{"stdout": "ready"}})})
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Errorf("%d requests, want 3", n.Load())
	}
	// An until that never holds ends at Timeouts.Until with an error.
	n.Store(-1000)
	_, err = e.Setup(context.Background(), []Step{step("command", map[string]any{
		"command": []any{"check"}, "until": map[string]any{"returncode": 0.0}})})
	if err == nil || !strings.Contains(err.Error(), "did not hold") {
		t.Errorf("err = %v", err)
	}
}

func TestSetupExecuteFailuresAreLogged(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/setup/execute", func(w http.ResponseWriter, r *http.Request) {
		testutil.WriteJSON(w, 500, map[string]any{"message": "boom", "status": "error"})
	})
	e := testEnv(t, f)
	res, err := e.Setup(context.Background(), []Step{step("execute", map[string]any{"command": []any{"x"}})})
	if err != nil {
		t.Fatalf("a failed execute must not fail the setup (OSWorld logs it): %v", err)
	}
	if res[0].Warning == "" {
		t.Error("no warning recorded")
	}
	// With until, 5 failures end the loop (before Until runs out).
	e.Timeouts.Until = time.Minute
	if _, err := e.Setup(context.Background(), []Step{step("execute", map[string]any{"command": []any{"x"}, "until": map[string]any{"returncode": 0.0}})}); err != nil {
		t.Fatal(err)
	}
	if got := len(f.Requests("/setup/execute")); got != 6 {
		t.Errorf("%d execute requests, want 1+5", got)
	}
}

func TestSetupLaunch(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	var calls atomic.Int32
	f.Handle("/setup/launch", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(503)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	e := testEnv(t, f)
	if _, err := e.Setup(context.Background(), []Step{step("launch", map[string]any{"command": "google-chrome --remote-debugging-port=1337"})}); err != nil {
		t.Fatal(err)
	}
	reqs := f.Requests("/setup/launch")
	if len(reqs) != 2 {
		t.Fatalf("%d launch requests, want a retry after 503", len(reqs))
	}
	if diff := cmp.Diff([]any{"google-chrome", "--remote-debugging-port=1337"}, reqs[1].JSON["command"]); diff != "" {
		t.Errorf("a multi-word string without shell is split (-want +got):\n%s", diff)
	}
	// A 500 is logged, not fatal; an empty command is fatal.
	f.Handle("/setup/launch", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	res, err := e.Setup(context.Background(), []Step{step("launch", map[string]any{"command": []any{"x"}})})
	if err != nil || res[0].Warning == "" {
		t.Errorf("500: res %+v err %v", res, err)
	}
	if _, err := e.Setup(context.Background(), []Step{step("launch", map[string]any{"command": ""})}); err == nil {
		t.Error("empty command accepted")
	}
}

func TestSetupOpenRaises(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/setup/open_file", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		_, _ = w.Write([]byte("Application/file not found: nope"))
	})
	e := testEnv(t, f)
	_, err := e.Setup(context.Background(), []Step{step("open", map[string]any{"path": "nope"}), step("sleep", map[string]any{"seconds": 0.0})})
	var ge *client.Error
	if !errors.As(err, &ge) || ge.Status != 404 {
		t.Fatalf("err = %v", err)
	}
}

func TestSetupDownloadFromCache(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	e := testEnv(t, f)
	url := "https://huggingface.co/x/file.xlsx"
	step := step("download", map[string]any{"files": []any{map[string]any{"url": url, "path": "/home/user/Desktop/file.xlsx"}}})
	_, err := e.Setup(context.Background(), []Step{step})
	if !errors.Is(err, ErrNeedsFileCache) {
		t.Fatalf("without the file: %v", err)
	}
	e.Cache = FileCache{Dir: t.TempDir()}
	p := e.Cache.Path(e.TaskID, DownloadName(url, "/home/user/Desktop/file.xlsx"))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("xlsx bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	f.Handle("/setup/upload", func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(502)
			return
		}
		_, _ = w.Write([]byte("File Uploaded"))
	})
	if _, err := e.Setup(context.Background(), []Step{step}); err != nil {
		t.Fatal(err)
	}
	ups := f.Requests("/setup/upload")
	last := ups[len(ups)-1]
	if last.Form["file_path"] != "/home/user/Desktop/file.xlsx" || last.Form["file_data"] != "xlsx bytes" || last.Form["file_name"] != "file.xlsx" {
		t.Errorf("upload form = %v", last.Form)
	}
	// A 400 is not retried and fails the setup.
	f.Handle("/setup/upload", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(400) })
	before := len(f.Requests("/setup/upload"))
	if _, err := e.Setup(context.Background(), []Step{step}); err == nil {
		t.Error("400 accepted")
	}
	if n := len(f.Requests("/setup/upload")) - before; n != 1 {
		t.Errorf("%d attempts after a 400, want 1", n)
	}
}

func TestSetupWindowStepsAndValidation(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	e := testEnv(t, f)
	_, err := e.Setup(context.Background(), []Step{
		step("activate_window", map[string]any{"window_name": "Terminal", "strict": true}),
		step("close_window", map[string]any{"window_name": "x", "by_class": true}),
	})
	if err != nil {
		t.Fatal(err)
	}
	a := f.Requests("/setup/activate_window")[0].JSON
	if a["window_name"] != "Terminal" || a["strict"] != true || a["by_class"] != false {
		t.Errorf("activate body = %v", a)
	}
	for _, s := range []Step{
		step("execute", map[string]any{"command": []any{"x"}, "bogus": 1.0}),
		step("nonesuch", map[string]any{}),
	} {
		if _, err := e.Setup(context.Background(), []Step{s}); !errors.Is(err, ErrBadTask) {
			t.Errorf("%s: err = %v, want ErrBadTask", s.Type, err)
		}
	}
	if _, err := e.Setup(context.Background(), []Step{step("googledrive", map[string]any{})}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("googledrive: %v", err)
	}
}

func TestSetupNotReady(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/terminal", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	e := testEnv(t, f)
	if _, err := e.Setup(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Errorf("err = %v", err)
	}
	// Any status below 500 is ready.
	f.Handle("/terminal", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(404) })
	if _, err := e.Setup(context.Background(), nil); err != nil {
		t.Error(err)
	}
}

func TestUploadFileStep(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	e := testEnv(t, f)
	local := file(t, "local.txt", "hello")
	if _, err := e.Setup(context.Background(), []Step{step("upload_file", map[string]any{"files": []any{map[string]any{"local_path": local, "path": "~/x.txt"}}})}); err != nil {
		t.Fatal(err)
	}
	if got := f.Requests("/setup/upload"); len(got) != 1 || got[0].Form["file_data"] != "hello" || got[0].Form["file_path"] != "~/x.txt" {
		t.Errorf("uploads = %+v", got)
	}
	if _, err := e.Setup(context.Background(), []Step{step("upload_file", map[string]any{"files": []any{map[string]any{"local_path": "/nonexistent", "path": "x"}}})}); err == nil {
		t.Error("missing local file accepted")
	}
}
