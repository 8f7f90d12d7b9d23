package mainjob

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/tasks"
)

func score(v float64) *float64 { return &v }

// printTables: a row is ok only for a score from 0 to 1 without an error;
// every other row is counted and says why on one line.
func TestPrintTables(t *testing.T) {
	yes := true
	rows := []episodeRow{
		{id: "d1", ready: 3 * time.Millisecond, res: tasks.EpisodeResult{Setup: 120 * time.Millisecond, Observe: 40 * time.Millisecond,
			Steps: []time.Duration{30 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}, ScoreBefore: score(0), ScoreAfter: score(1)}},
		{id: "d2", res: tasks.EpisodeResult{ScoreBefore: score(0), ScoreAfter: score(0)}},
		{err: errors.New("lease:\n  no desktop\tfree")},
	}
	results := []tasks.Result{
		{ID: "files", Desktop: "d1", Status: tasks.StatusRan, SetupOK: &yes, ScoreBefore: score(0), ScoreAfter: score(1), Seconds: 2.25},
		{ID: "gtk", Desktop: "d3", Status: tasks.StatusRan, ScoreBefore: score(1), ScoreAfter: score(1), Reason: "already\nsolved"},
	}
	var out bytes.Buffer
	if bad := printTables(&out, rows, results); bad != 3 {
		t.Errorf("%d bad, want 3", bad)
	}
	want := `
DESKTOP  READY  RESET   OBSERVE  STEPS  STEP MEDIAN  STEP MAX  SCORE  NOTE
d1       3 ms   120 ms  40 ms    3      20 ms        30 ms     0 → 1  ok
d2       0 ms   0 ms    0 ms     0      0 ms         0 ms      0 → 0  FAILED
(none)   0 ms   0 ms    0 ms     0      0 ms         0 ms      - → -  FAILED: lease: no desktop free

BUILT-IN TASK  DESKTOP  SETUP  BEFORE  AFTER  TIME   NOTE
files          d1       ok     0       1      2.2 s  ok
gtk            d3       no     1       1      0.0 s  FAILED ran: already solved
`
	if out.String() != want {
		t.Errorf("tables:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine(" a\n\tb  c "); got != "a b c" {
		t.Errorf("oneLine: %q", got)
	}
	if got := oneLine(strings.Repeat("x", 200)); got != strings.Repeat("x", 160)+"…" {
		t.Errorf("oneLine of 200: %q", got)
	}
}

// An image that cannot be had stops the job before any daemon.
func TestRunImageFails(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	err := Run(context.Background(), Config{Desktops: 2, Out: out, Socket: "/nowhere.sock", Image: "core", Timeout: time.Minute}, Host{
		EnsureImage: func(context.Context) error { return errors.New("no such image") },
		ConnectDaemon: func(context.Context, string) (*tasks.Daemon, error) {
			t.Error("daemon connected without its image")
			return nil, errors.New("unreachable")
		},
		Stdout: &stdout, Stderr: &stderr,
	})
	if err == nil || err.Error() != "image core: no such image" {
		t.Errorf("error %v", err)
	}
	if want := "drums run: preparing the desktops' image core (drums image build core)\n"; stderr.String() != want || stdout.Len() > 0 {
		t.Errorf("stderr %q, stdout %q", stderr.String(), stdout.String())
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("out dir: %v", err)
	}
}

// With a daemon that has no desktop to give, every episode's lease is
// tried, then the built-in tasks' lease fails the job; the daemon, not
// started by the job, is left running.
func TestRunNoDesktops(t *testing.T) {
	var leases atomic.Int32
	daemon := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/desktops" {
			leases.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error": "capacity reached"}`))
	}))
	defer daemon.Close()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	var logDir string
	err := Run(context.Background(), Config{Desktops: 3, Out: out, Socket: "/run/x.sock", Image: "osworld", Timeout: time.Minute}, Host{
		EnsureImage: func(context.Context) error { return nil },
		ConnectDaemon: func(_ context.Context, dir string) (*tasks.Daemon, error) {
			logDir = dir
			c, err := client.New(daemon.URL, "")
			return &tasks.Daemon{Client: c, Socket: daemon.URL}, err
		},
		Stdout: &stdout, Stderr: &stderr,
	})
	if err == nil || !strings.Contains(err.Error(), "lease a desktop") || !strings.Contains(err.Error(), "capacity reached") {
		t.Errorf("error %v", err)
	}
	if n := leases.Load(); n != 4 {
		t.Errorf("%d leases asked, want 3 episodes and the built-in tasks' first", n)
	}
	if logDir != out {
		t.Errorf("daemon log in %q, want %q", logDir, out)
	}
	want := `drums run: preparing the desktops' image osworld (drums image build osworld)
drums run: starting the daemon unless one answers on /run/x.sock
drums run: bringing up 3 desktops in parallel and driving one episode on each
drums run: running the built-in tasks (score before and after their scripted solutions)
`
	if stderr.String() != want || stdout.Len() > 0 {
		t.Errorf("stderr:\n%s\nwant:\n%s\nstdout %q", stderr.String(), want, stdout.String())
	}
}
