package osworld

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/cdp"
	"github.com/drums-dev/drums/internal/ctxtime"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// StepResult is what one setup or postconfig step did.
type StepResult struct {
	Type    string  `json:"type"`
	Seconds float64 `json:"seconds"`
	// Error is set when the step failed the way OSWorld's setup() raises.
	Error string `json:"error,omitempty"`
	// Warning is set when OSWorld would only log (a launch answered 500,
	// a page did not load) and go on.
	Warning string `json:"warning,omitempty"`
}

// stepParams lists the keyword arguments each SetupController method takes;
// Python raises TypeError on any other. A nil entry takes any (**config).
var stepParams = map[string][]string{
	"download":                  {"files"},
	"upload_file":               {"files"},
	"change_wallpaper":          {"path"},
	"open":                      {"path"},
	"launch":                    {"command", "shell"},
	"execute":                   {"command", "stdout", "stderr", "shell", "until"},
	"command":                   {"command", "stdout", "stderr", "shell", "until"},
	"execute_with_verification": {"command", "verification", "max_wait_time", "check_interval", "shell"},
	"sleep":                     {"seconds"},
	"activate_window":           {"window_name", "strict", "by_class"},
	"close_window":              {"window_name", "strict", "by_class"},
	"chrome_open_tabs":          {"urls_to_open"},
	"chrome_close_tabs":         {"urls_to_close"},
	"update_browse_history":     nil,
}

// notNativeSteps are SetupController methods drums does not perform: they
// need a Google account, are unimplemented upstream too (act, replay,
// tidy_desktop), or configure OSWorld's commercial proxy pool.
var notNativeSteps = map[string]string{
	"googledrive":  "needs a Google Drive account",
	"login":        "needs a website account",
	"act":          "not implemented by OSWorld either",
	"replay":       "not implemented by OSWorld either",
	"tidy_desktop": "not implemented by OSWorld either",
	"proxy":        "needs OSWorld's proxy pool",
}

// CheckStep reports whether a step is one drums can run, with the
// arguments OSWorld's method accepts.
func CheckStep(s Step) error {
	if why, ok := notNativeSteps[s.Type]; ok {
		return fmt.Errorf("setup step %s: %w: %s", s.Type, ErrUnsupported, why)
	}
	allowed, ok := stepParams[s.Type]
	if !ok {
		return fmt.Errorf("%w: setup controller has no _%s_setup", ErrBadTask, s.Type)
	}
	if allowed == nil {
		return nil
	}
	for k := range s.Parameters {
		found := false
		for _, a := range allowed {
			found = found || a == k
		}
		if !found {
			return fmt.Errorf("%w: _%s_setup() got an unexpected keyword argument %q", ErrBadTask, s.Type, k)
		}
	}
	return nil
}

// WaitReady is SetupController.setup()'s readiness loop: GET /terminal until
// it answers below 500.
func (e *Env) WaitReady(ctx context.Context) error {
	t := e.timeouts()
	deadline := time.Now().Add(t.Ready)
	for {
		err := e.Guest.Ready(ctx)
		if err == nil {
			return nil
		}
		if time.Now().Add(t.Pause).After(deadline) {
			return fmt.Errorf("guest not ready within %s: %w", t.Ready, err)
		}
		if serr := ctxtime.Sleep(ctx, t.Pause); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// Setup is SetupController.setup(steps): the readiness probe, then each
// step in order; the first step that fails stops the setup, as OSWorld's
// raise does. The results cover every step tried.
func (e *Env) Setup(ctx context.Context, steps []Step) ([]StepResult, error) {
	if err := e.WaitReady(ctx); err != nil {
		return nil, err
	}
	var out []StepResult
	for i, s := range steps {
		start := time.Now()
		warn, err := e.RunStep(ctx, s)
		r := StepResult{Type: s.Type, Seconds: time.Since(start).Seconds(), Warning: warn}
		if err != nil {
			r.Error = err.Error()
			out = append(out, r)
			return out, fmt.Errorf("setup step %d (%s): %w", i+1, s.Type, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (e *Env) RunStep(ctx context.Context, s Step) (warning string, err error) {
	if err := CheckStep(s); err != nil {
		return "", err
	}
	p := s.Parameters
	switch s.Type {
	case "download":
		return "", e.download(ctx, p["files"])
	case "upload_file":
		return "", e.uploadFile(ctx, p["files"])
	case "change_wallpaper":
		path, _ := p["path"].(string)
		if path == "" {
			return "", fmt.Errorf("invalid wallpaper path %v", p["path"])
		}
		if err := e.Guest.ChangeWallpaper(ctx, path); err != nil {
			return err.Error(), nil
		}
		return "", nil
	case "open":
		path, _ := p["path"].(string)
		if path == "" {
			return "", fmt.Errorf("invalid open path %v", p["path"])
		}
		return "", e.Guest.OpenFile(ctx, path, e.timeouts().Open)
	case "launch":
		return e.launch(ctx, p["command"], p["shell"])
	case "execute", "command":
		return e.execute(ctx, p)
	case "execute_with_verification":
		return "", e.executeWithVerification(ctx, p)
	case "sleep":
		secs, ok := p["seconds"].(float64)
		if !ok {
			return "", fmt.Errorf("sleep seconds %v is not a number", p["seconds"])
		}
		return "", ctxtime.Sleep(ctx, time.Duration(secs*float64(time.Second)))
	case "activate_window", "close_window":
		name, _ := p["window_name"].(string)
		if name == "" {
			return "", fmt.Errorf("invalid window name %v", p["window_name"])
		}
		endpoint := "/setup/" + s.Type
		if err := e.Guest.Window(ctx, endpoint, name, pyvalue.Truthy(p["strict"]), pyvalue.Truthy(p["by_class"])); err != nil {
			return err.Error(), nil
		}
		return "", nil
	case "chrome_open_tabs":
		urls, err := stringList(p["urls_to_open"])
		if err != nil {
			return "", fmt.Errorf("urls_to_open: %w", err)
		}
		return e.chromeOpenTabs(ctx, urls)
	case "chrome_close_tabs":
		urls, err := stringList(p["urls_to_close"])
		if err != nil {
			return "", fmt.Errorf("urls_to_close: %w", err)
		}
		return "", e.chromeCloseTabs(ctx, urls)
	case "update_browse_history":
		return e.updateBrowseHistory(ctx, p)
	}
	return "", fmt.Errorf("%w: step %s", ErrNotNative, s.Type)
}

func stringList(v any) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%v is not a list", v)
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("element %d (%v) is not a string", i, x)
		}
		out[i] = s
	}
	return out, nil
}

// FileSpec is one entry of a download or upload_file step.
type FileSpec struct {
	URL       string `json:"url"`
	LocalPath string `json:"local_path"`
	Path      string `json:"path"`
}

func FileSpecs(v any) ([]FileSpec, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out []FileSpec
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("files is not a list of {url|local_path, path}: %w", err)
	}
	return out, nil
}

// Upload retries, as _download_setup has them: 5 attempts on 502/503/504
// and transport errors only, the pause doubling from Timeouts.Pause up to
// backoffCap times it (OSWorld: from 5 s up to 30 s).
const (
	uploadAttempts = 5
	backoffCap     = 6
)

func transient(err error) bool {
	var ge *client.Error
	if errors.As(err, &ge) {
		return ge.Status == http.StatusBadGateway || ge.Status == http.StatusServiceUnavailable || ge.Status == http.StatusGatewayTimeout
	}
	return err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// download is _download_setup: every file comes from the file cache (never
// the network) and is uploaded to the guest.
func (e *Env) download(ctx context.Context, v any) error {
	files, err := FileSpecs(v)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.URL == "" || f.Path == "" {
			return fmt.Errorf("invalid download url %q or path %q", f.URL, f.Path)
		}
		data, err := e.Cache.Read(e.TaskID, DownloadName(f.URL, f.Path), f.URL)
		if err != nil {
			return err
		}
		if err := e.uploadRetried(ctx, f.Path, data, uploadAttempts, transient); err != nil {
			return err
		}
	}
	return nil
}

// uploadFile is _upload_file_setup: a host file, 3 attempts 1 s then 2 s
// apart on any failure.
func (e *Env) uploadFile(ctx context.Context, v any) error {
	files, err := FileSpecs(v)
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f.LocalPath)
		if err != nil {
			return fmt.Errorf("invalid local path %q: %w", f.LocalPath, err)
		}
		if err := e.uploadRetried(ctx, f.Path, data, 3, func(error) bool { return true }); err != nil {
			return err
		}
	}
	return nil
}

func (e *Env) uploadRetried(ctx context.Context, vmPath string, data []byte, attempts int, retry func(error) bool) error {
	pause := e.timeouts().Pause
	backoff := pause
	var err error
	for i := 0; i < attempts; i++ {
		if err = e.Guest.Upload(ctx, vmPath, data); err == nil {
			return nil
		}
		if !retry(err) || i == attempts-1 {
			break
		}
		if serr := ctxtime.Sleep(ctx, backoff); serr != nil {
			return errors.Join(err, serr)
		}
		backoff = min(backoff*2, backoffCap*pause)
	}
	return fmt.Errorf("upload %s: %w", vmPath, err)
}

// launch is _launch_setup: a multi-word string without shell is split on
// whitespace; 5 attempts on 502/503/504 and transport errors; any other
// error status is only logged.
func (e *Env) launch(ctx context.Context, command, shell any) (string, error) {
	if !pyvalue.Truthy(command) {
		return "", errors.New("empty command to launch")
	}
	if s, ok := command.(string); ok && !pyvalue.Truthy(shell) && len(strings.Fields(s)) > 1 {
		command = strings.Fields(s)
	}
	pause := e.timeouts().Pause
	backoff := pause
	var err error
	for i := 0; i < 5; i++ {
		err = e.Guest.Launch(ctx, command, shell, e.timeouts().Launch)
		if err == nil {
			return "", nil
		}
		if !transient(err) {
			return err.Error(), nil
		}
		if i < 4 {
			if serr := ctxtime.Sleep(ctx, backoff); serr != nil {
				return "", errors.Join(err, serr)
			}
			backoff = min(backoff*2, backoffCap*pause)
		}
	}
	return fmt.Sprintf("all 5 launch attempts failed: %v", err), nil
}

// untilPause is _execute_setup's pause between repeats of an `until` step.
const untilPause = 300 * time.Millisecond

// execute is _execute_setup: placeholders replaced, then POST /setup/execute
// once, or until the `until` condition holds (or 5 requests failed).
// stdout/stderr name files in the work dir that receive the output.
func (e *Env) execute(ctx context.Context, p map[string]any) (string, error) {
	if !pyvalue.Truthy(p["command"]) {
		return "", errors.New("empty command to launch")
	}
	command, err := Substitute(p["command"], e.Screen)
	if err != nil {
		return "", err
	}
	until, _ := p["until"].(map[string]any)
	stdoutFile, _ := p["stdout"].(string)
	stderrFile, _ := p["stderr"].(string)
	deadline := time.Now().Add(e.timeouts().Until)
	failures := 0
	var lastErr error
	for {
		r, err := e.Guest.Execute(ctx, "/setup/execute", command, p["shell"])
		if err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			failures++
			lastErr = err
		} else {
			lastErr = nil
			if stdoutFile != "" {
				if err := e.writeWork(stdoutFile, r.Output); err != nil {
					return "", err
				}
			}
			if stderrFile != "" {
				if err := e.writeWork(stderrFile, r.Error); err != nil {
					return "", err
				}
			}
		}
		if len(until) == 0 {
			break
		}
		if err == nil && untilHolds(until, r) {
			break
		}
		if failures >= 5 {
			break
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("until %v did not hold within %s", until, e.timeouts().Until)
		}
		if serr := ctxtime.Sleep(ctx, untilPause); serr != nil {
			return "", serr
		}
	}
	if lastErr != nil {
		// OSWorld logs a failed execute and goes on.
		return lastErr.Error(), nil
	}
	return "", nil
}

func untilHolds(until map[string]any, r client.ExecResult) bool {
	if rc, ok := until["returncode"].(float64); ok && int(rc) == r.ReturnCode && float64(int(rc)) == rc {
		return true
	}
	if s, ok := until["stdout"].(string); ok && strings.Contains(r.Output, s) {
		return true
	}
	if s, ok := until["stderr"].(string); ok && strings.Contains(r.Error, s) {
		return true
	}
	return false
}

func (e *Env) writeWork(name, content string) error {
	p, err := e.workFile(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(p), err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

// executeWithVerification is _execute_with_verification_setup.
func (e *Env) executeWithVerification(ctx context.Context, p map[string]any) error {
	if !pyvalue.Truthy(p["command"]) {
		return errors.New("empty command to launch")
	}
	maxWait := 10.0
	if v, ok := p["max_wait_time"].(float64); ok {
		maxWait = v
	}
	interval := 1.0
	if v, ok := p["check_interval"].(float64); ok {
		interval = v
	}
	verification, _ := p["verification"].(map[string]any)
	if verification == nil {
		verification = map[string]any{}
	}
	shell := p["shell"]
	if shell == nil {
		shell = false
	}
	_, err := e.Guest.ExecuteWithVerification(ctx, map[string]any{
		"command": p["command"], "shell": shell, "verification": verification,
		"max_wait_time": maxWait, "check_interval": interval,
	}, time.Duration((maxWait+10)*float64(time.Second)))
	return err
}

// chromeOpenTabs is _chrome_open_tabs_setup: each URL in a new tab of the
// default context; after the first, the tab Chromium started with is
// closed. A page that does not load is logged, not fatal.
func (e *Env) chromeOpenTabs(ctx context.Context, urls []string) (string, error) {
	t := e.timeouts()
	c, err := connectCDP(ctx, e.Guest.Host(), e.chromiumPort(), t.CDPConnect, t.Pause)
	if err != nil {
		return "", err
	}
	defer c.Close()
	before, err := startupPages(ctx, c, t.CDPConnect)
	if err != nil {
		return "", err
	}
	var warnings []string
	for i, u := range urls {
		_, session, err := c.NewPage(ctx)
		if err != nil {
			return "", fmt.Errorf("open tab for %s: %w", u, err)
		}
		if err := c.Navigate(ctx, session, u, t.PageLoad); err != nil {
			var nav *cdp.NavigationError
			if !errors.As(err, &nav) {
				return "", fmt.Errorf("open %s: %w", u, err)
			}
			warnings = append(warnings, err.Error())
		}
		c.Detach(ctx, session)
		if i == 0 && len(before) > 0 {
			if err := c.CloseTarget(ctx, before[0].TargetID); err != nil {
				return "", fmt.Errorf("close the first tab: %w", err)
			}
		}
	}
	return strings.Join(warnings, "; "), nil
}

// chromeCloseTabs is _chrome_close_tabs_setup: for each URL, the first tab
// whose URL compare_urls() equal is closed.
func (e *Env) chromeCloseTabs(ctx context.Context, urls []string) error {
	t := e.timeouts()
	c, err := connectCDP(ctx, e.Guest.Host(), e.chromiumPort(), t.CDPConnect, t.Pause)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, u := range urls {
		pages, err := c.Pages(ctx)
		if err != nil {
			return err
		}
		for _, p := range pages {
			if compareURLs(p.URL, u, true) {
				if err := c.CloseTarget(ctx, p.TargetID); err != nil {
					return fmt.Errorf("close tab %s: %w", p.URL, err)
				}
				break
			}
		}
	}
	return nil
}

// chromeHistoryPath is where OSWorld's x86 Ubuntu VM keeps Chrome's History.
const chromeHistoryPath = "/home/user/.config/google-chrome/Default/History"

// historyInsertPy inserts visits into a Chrome History database with the
// same rows _update_browse_history_setup writes. It runs in the guest with
// the guest's python3 (which has sqlite3), so the host needs no SQLite.
// argv[1] is the database, argv[2] a JSON list of [url, title, chrome time].
const historyInsertPy = `import json, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
cur = conn.cursor()
for url, title, ts in json.loads(sys.argv[2]):
    cur.execute("INSERT INTO urls (url, title, visit_count, typed_count, last_visit_time, hidden) VALUES (?, ?, ?, ?, ?, ?)", (url, title, 1, 0, ts, 0))
    cur.execute("INSERT INTO visits (url, visit_time, from_visit, transition, segment_id, visit_duration) VALUES (?, ?, ?, ?, ?, ?)", (cur.lastrowid, ts, 0, 805306368, 0, 0))
conn.commit()
conn.close()
`

// chromeEpoch is 1601-01-01, where Chrome's timestamps (µs) start.
var chromeEpoch = time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)

// updateBrowseHistory is _update_browse_history_setup: OSWorld's empty
// History database from the file cache, filled with the given visits, as
// the guest's Chrome History.
func (e *Env) updateBrowseHistory(ctx context.Context, p map[string]any) (string, error) {
	const url = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite?download=true"
	data, err := e.Cache.Read(e.TaskID, HistoryName, url)
	if err != nil {
		return "", err
	}
	items, ok := p["history"].([]any)
	if !ok {
		return "", fmt.Errorf("history %v is not a list", p["history"])
	}
	now := e.now()
	var rows [][]any
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return "", fmt.Errorf("history item %d is not an object", i)
		}
		secs, _ := m["visit_time_from_now_in_seconds"].(float64)
		visit := now.Add(-time.Duration(secs * float64(time.Second)))
		// OSWorld uses naive local time; Chrome's column is UTC-based,
		// both count microseconds from 1601.
		_, off := visit.Zone()
		ts := visit.Sub(chromeEpoch).Microseconds() + int64(off)*1e6
		rows = append(rows, []any{m["url"], m["title"], ts})
	}
	if err := e.uploadRetried(ctx, chromeHistoryPath, data, 1, func(error) bool { return false }); err != nil {
		return "", err
	}
	js, err := json.Marshal(rows)
	if err != nil {
		return "", fmt.Errorf("encode history: %w", err)
	}
	r, err := e.Guest.Execute(ctx, "/setup/execute", []string{"python3", "-c", historyInsertPy, chromeHistoryPath, string(js)}, false)
	if err != nil {
		return "", fmt.Errorf("fill history: %w", err)
	}
	if r.ReturnCode != 0 {
		return "", fmt.Errorf("fill history: python3 exited %d: %s", r.ReturnCode, r.Error)
	}
	if _, err := e.execute(ctx, map[string]any{"command": []any{"sudo chown -R user:user " + chromeHistoryPath}, "shell": true}); err != nil {
		return "", err
	}
	return "", nil
}
