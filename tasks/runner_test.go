package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/tasks/osworld"
)

// fakeDesktops hands out fake guests; every desktop has the programs in
// have.
type fakeDesktops struct {
	t        *testing.T
	have     []string
	mu       sync.Mutex
	leased   map[string]bool
	n        int
	reverts  int
	failNext bool
}

var _ Desktops = (*fakeDesktops)(nil)

func (d *fakeDesktops) newGuest() *testutil.FakeGuest {
	f := testutil.NewFakeGuest(d.t)
	f.Handle("/execute", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Command []any }
		_ = json.NewDecoder(r.Body).Decode(&req)
		words := osworld.CommandWords(req.Command)
		switch {
		case strings.Contains(words, "command -v"):
			testutil.WriteJSON(w, 200, client.ExecResult{Output: strings.Join(d.have, "\n") + "\n"})
		case strings.Contains(words, "panic-now"):
			panic(http.ErrAbortHandler)
		default:
			testutil.WriteJSON(w, 200, client.ExecResult{Output: "uint32 300\n"})
		}
	})
	return f
}

func (d *fakeDesktops) Lease(ctx context.Context, w, h int) (Desktop, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leased == nil {
		d.leased = map[string]bool{}
	}
	d.n++
	id := fmt.Sprintf("d%d", d.n)
	d.leased[id] = true
	return Desktop{ID: id, GuestURL: d.newGuest().URL(), Width: w, Height: h}, nil
}

func (d *fakeDesktops) Revert(ctx context.Context, id string) (Desktop, error) {
	d.mu.Lock()
	d.reverts++
	fail := d.failNext
	d.failNext = false
	d.mu.Unlock()
	if fail {
		return Desktop{}, fmt.Errorf("revert %s: boom", id)
	}
	if err := d.Release(ctx, id); err != nil {
		return Desktop{}, err
	}
	return d.Lease(ctx, 1920, 1080)
}

func (d *fakeDesktops) Release(ctx context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.leased, id)
	return nil
}

// writeExamples lays task JSON out as examples/DOMAIN/ID.json.
func writeExamples(t *testing.T, tasks map[string]string) (string, []osworld.Entry) {
	dir := t.TempDir()
	var entries []osworld.Entry
	for key, doc := range tasks {
		domain, id, _ := strings.Cut(key, "/")
		if err := os.MkdirAll(filepath.Join(dir, domain), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, domain, id+".json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, osworld.Entry{Domain: domain, ID: id})
	}
	return dir, entries
}

func TestRunnerClassifiesAndRuns(t *testing.T) {
	dir, entries := writeExamples(t, map[string]string{
		"os/ran": `{"id": "ran", "related_apps": ["os"], "config": [{"type": "execute", "parameters": {"command": ["gsettings", "set", "a", "b", "300"]}}],
			"evaluator": {"func": "exact_match", "result": {"type": "vm_command_line", "command": ["gsettings", "get", "a", "b"]}, "expected": {"type": "rule", "rules": {"expected": "uint32 0\n"}}}}`,
		"os/infeasible": `{"id": "infeasible", "related_apps": ["os"], "evaluator": {"func": "infeasible"}}`,
		"calc/cache": `{"id": "cache", "related_apps": ["libreoffice_calc"], "config": [{"type": "download", "parameters": {"files": [{"url": "https://huggingface.co/a.xlsx", "path": "/home/user/a.xlsx"}]}}, {"type": "open", "parameters": {"path": "/home/user/a.xlsx"}}],
			"evaluator": {"func": "compare_table", "result": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"}}}`,
		"gimp/app":      `{"id": "app", "related_apps": ["gimp"], "evaluator": {"func": "infeasible"}}`,
		"chrome/web":    `{"id": "web", "related_apps": ["chrome"], "config": [{"type": "execute", "parameters": {"command": "true", "shell": true}}], "evaluator": {"func": "is_expected_active_tab", "result": {"type": "active_url_from_accessTree"}, "expected": {"type": "rule", "rules": {"type": "url", "url": "https://www.example.com/"}}}}`,
		"os/drive":      `{"id": "drive", "config": [{"type": "googledrive", "parameters": {}}], "evaluator": {"func": "infeasible"}}`,
		"os/panics":     `{"id": "panics", "config": [{"type": "execute", "parameters": {"command": ["panic-now"]}}], "evaluator": {"func": "infeasible"}}`,
		"os/badsetup":   `{"id": "badsetup", "config": [{"type": "open", "parameters": {"path": ""}}], "evaluator": {"func": "infeasible"}}`,
		"os/brokenjson": `{"id": "nope"`,
	})
	desks := &fakeDesktops{t: t, have: []string{"gsettings", "google-chrome", "libreoffice"}}
	files := t.TempDir()
	r := NewRunner(Config{Examples: dir, Files: files, Parallel: 2, TaskTimeout: time.Minute,
		Timeouts: osworld.Timeouts{Ready: time.Second, Pause: time.Millisecond}}, desks, nil)
	results, err := r.Run(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, res := range results {
		got[res.Domain+"/"+res.ID] = res
	}
	want := map[string]string{
		"os/ran": StatusRan, "os/infeasible": StatusRan, "calc/cache": StatusNeedsFileCache,
		"gimp/app": StatusMissingApp, "chrome/web": StatusNeedsLiveWeb, "os/drive": StatusUnsupported,
		"os/panics": StatusRan, "os/badsetup": StatusFailed, "os/brokenjson": StatusFailed,
	}
	for k, w := range want {
		if got[k].Status != w {
			t.Errorf("%s: status %s (%s), want %s", k, got[k].Status, got[k].Reason, w)
		}
	}
	if s := got["os/ran"].ScoreBefore; s == nil || *s != 0 || got["os/ran"].SetupOK == nil || !*got["os/ran"].SetupOK || !*got["os/ran"].ObservationOK {
		t.Errorf("os/ran = %+v", got["os/ran"])
	}
	// What the report shows of os/ran: the screen after setup and after
	// the evaluation, and the accessibility tree, as the guest gave them.
	ran := got["os/ran"]
	for path, want := range map[string]string{ran.Observation.Screenshot: "\x89PNG\r\n\x1a\nfake",
		ran.Evaluation.Screenshot: "\x89PNG\r\n\x1a\nfake", ran.Observation.Accessibility: "<desktop-frame/>"} {
		if b, err := os.ReadFile(filepath.Join(files, path)); path == "" || err != nil || string(b) != want {
			t.Errorf("os/ran kept %q: %q, %v; want %q", path, b, err, want)
		}
	}
	if got["os/infeasible"].Feasible {
		t.Errorf("infeasible task marked feasible")
	}
	if !strings.Contains(got["chrome/web"].Reason, "www.example.com") {
		t.Errorf("live web reason = %q", got["chrome/web"].Reason)
	}
	if got["chrome/web"].SetupOK == nil || !*got["chrome/web"].SetupOK {
		t.Errorf("a live-web task is still run offline: %+v", got["chrome/web"])
	}
	if len(desks.leased) != 0 {
		t.Errorf("desktops left leased: %v", desks.leased)
	}

	rep := Report{Results: results, Mode: "native", Files: files}
	out := t.TempDir()
	if err := rep.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "report.json"))
	if err := json.Unmarshal(b, &rows); err != nil || len(rows) != len(entries) {
		t.Fatalf("report.json: %d rows, %v", len(rows), err)
	}
	for _, k := range []string{"domain", "id", "status", "setup_ok", "score_before", "reason"} {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("report.json rows lack %q", k)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "| **all** | 9 |") {
		t.Errorf("report.md totals missing:\n%s", md)
	}
	html, _ := os.ReadFile(filepath.Join(out, ReportHTML))
	page := parseXHTML(t, html)
	if page.count["article"] != len(entries) || len(page.attrs["img src"]) == 0 {
		t.Errorf("report.html: %d articles, screenshots %q", page.count["article"], page.attrs["img src"])
	}
	for _, src := range page.attrs["img src"] {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(src))); err != nil {
			t.Errorf("report.html links a screenshot that is not there: %s", src)
		}
	}
}

func TestRunnerRevertFailureLeasesAnew(t *testing.T) {
	dir, entries := writeExamples(t, map[string]string{
		"os/a": `{"id": "a", "evaluator": {"func": "infeasible"}}`,
		"os/b": `{"id": "b", "evaluator": {"func": "infeasible"}}`,
	})
	desks := &fakeDesktops{t: t, failNext: true}
	r := NewRunner(Config{Examples: dir, Files: t.TempDir(), Timeouts: osworld.Timeouts{Pause: time.Millisecond}}, desks, nil)
	results, err := r.Run(context.Background(), entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if res.Status != StatusRan {
			t.Errorf("%s: %s %s", res.ID, res.Status, res.Reason)
		}
	}
	if len(desks.leased) != 0 {
		t.Errorf("left leased: %v", desks.leased)
	}
}
