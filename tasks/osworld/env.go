package osworld

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drums-dev/drums/guestd/client"
)

// Env is one task on one desktop: what OSWorld's SetupController, getters
// and metrics see of DesktopEnv (controller, cache_dir, ports, screen).
type Env struct {
	Guest   *client.Client
	TaskID  string
	Screen  Screen
	Cache   FileCache
	WorkDir string // OSWorld's per-task cache_dir: execute stdout files, fetched VM files
	// Chromium and VLC are the desktop's DevTools and VLC HTTP ports.
	Chromium, VLC int
	Timeouts      Timeouts
	// Now is the evaluation's clock (rule_relativeTime, browse history).
	Now func() time.Time
	// Judge, when set, is OSWorld's Python scoring each metric: the score
	// of record, drums' own metrics computed beside it.
	Judge Judge
}

// Timeouts bound the steps OSWorld lets run long. OSWorld's values are for
// VMs reached over a network; these are for a desktop on the same host.
type Timeouts struct {
	// Open bounds /setup/open_file (OSWorld: 1810 s). It must stay above
	// a cold LibreOffice or GIMP start on a loaded machine (~30 s).
	Open time.Duration
	// Until bounds an execute step's `until` loop, which OSWorld repeats
	// for ever when it never matches.
	Until time.Duration
	// Launch bounds one /setup/launch request (OSWorld: 300 s read).
	Launch time.Duration
	// CDPConnect is how long chrome steps wait for DevTools to answer
	// (OSWorld: 15 attempts 5 s apart). It must stay above Chromium's
	// cold start on a loaded machine (~10 s).
	CDPConnect time.Duration
	// PageLoad bounds one page load in chrome_open_tabs (OSWorld: 60 s).
	PageLoad time.Duration
	// Ready bounds the wait for GET /terminal before a setup (OSWorld: 20
	// probes 5 s apart).
	Ready time.Duration
	// Pause is the wait between retries of a failed guest call.
	Pause time.Duration
}

// DefaultTimeouts are used where a field is zero.
var DefaultTimeouts = Timeouts{
	Open:       180 * time.Second,
	Until:      120 * time.Second,
	Launch:     60 * time.Second,
	CDPConnect: 60 * time.Second,
	PageLoad:   60 * time.Second,
	Ready:      60 * time.Second,
	Pause:      time.Second,
}

func (t Timeouts) withDefaults() Timeouts {
	d := DefaultTimeouts
	pick := func(v, def time.Duration) time.Duration {
		if v > 0 {
			return v
		}
		return def
	}
	return Timeouts{
		Open: pick(t.Open, d.Open), Until: pick(t.Until, d.Until), Launch: pick(t.Launch, d.Launch),
		CDPConnect: pick(t.CDPConnect, d.CDPConnect), PageLoad: pick(t.PageLoad, d.PageLoad),
		Ready: pick(t.Ready, d.Ready), Pause: pick(t.Pause, d.Pause),
	}
}

func (e *Env) timeouts() Timeouts { return e.Timeouts.withDefaults() }

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Env) chromiumPort() int {
	if e.Chromium == 0 {
		return 9222
	}
	return e.Chromium
}

func (e *Env) vlcPort() int {
	if e.VLC == 0 {
		return 8080
	}
	return e.VLC
}

// workFile is a file in the task's work dir (created on first use).
func (e *Env) workFile(name string) (string, error) {
	if e.WorkDir == "" {
		return "", fmt.Errorf("task %s has no work dir", e.TaskID)
	}
	if err := os.MkdirAll(e.WorkDir, 0o755); err != nil {
		return "", fmt.Errorf("create work dir: %w", err)
	}
	return filepath.Join(e.WorkDir, name), nil
}

// saveWork writes data into the work dir as name (a getter's dest) and
// returns its path.
func (e *Env) saveWork(name string, data []byte) (string, error) {
	local, err := e.workFile(name)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(local, data, 0o644); err != nil {
		return "", fmt.Errorf("save %s: %w", name, err)
	}
	return local, nil
}
