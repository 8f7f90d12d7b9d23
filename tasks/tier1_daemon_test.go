package tasks

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	guestclient "github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/tasks/osworld"
)

// Tier-1 tests through the daemon: `drums serve` of a random prefix, its own
// state directory and socket, leasing real namespace desktops.

// daemonDirPrefix names the state directories of this package's daemons; a
// directory left by a crashed run is swept by TestMain.
const daemonDirPrefix = "drums-tasks-t1-"

func randomPrefix() string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	out := []byte("tk")
	for _, c := range b {
		out = append(out, alpha[int(c)%len(alpha)])
	}
	return string(out)
}

func TestMain(m *testing.M) {
	if testutil.Tier1Enabled() && os.Geteuid() == 0 {
		sweepLeftovers()
	}
	code := m.Run()
	testutil.RemoveBins()
	os.Exit(code)
}

// sweepLeftovers removes what crashed runs of this package left: for each
// state directory whose owner is gone, the sessions of its prefix.
func sweepLeftovers() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), daemonDirPrefix+"*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "owner"))
		if err != nil {
			continue
		}
		var pid int
		var prefix, drums string
		if _, err := fmt.Sscan(string(b), &pid, &prefix, &drums); err != nil {
			continue
		}
		if syscall.Kill(pid, 0) == nil {
			continue // its test binary still runs
		}
		_ = exec.Command(drums, "sweep", "--prefix", prefix, "--state-dir", filepath.Join(d, "sessions")).Run()
		_ = os.RemoveAll(d)
	}
}

// startDaemon runs `drums serve` for one test, its desktops of image, and
// returns a client; at the end the daemon drains its desktops and anything
// left is swept.
func startDaemon(t *testing.T, image string) *client.Client {
	t.Helper()
	testutil.RequireRoot(t)
	bin := testutil.Bins(t)
	drums := filepath.Join(bin, "drums")
	dir, err := os.MkdirTemp("", daemonDirPrefix)
	if err != nil {
		t.Fatal(err)
	}
	prefix := randomPrefix()
	if err := os.WriteFile(filepath.Join(dir, "owner"), []byte(fmt.Sprintf("%d %s %s\n", os.Getpid(), prefix, drums)), 0o644); err != nil {
		t.Fatal(err)
	}
	testimage.NeedImages(t, image)
	sock := filepath.Join(dir, "drums.sock")
	cmd := exec.Command(drums, "serve", "--socket", sock, "--prefix", prefix, "--state-dir", filepath.Join(dir, "sessions"),
		"--image-dir", testimage.ImageDir(), "--image", image, "--guestd", filepath.Join(bin, "guestd"), "--drain-on-exit", "--pool-size", "1", "--capacity", "6")
	cmd.Env = append(os.Environ(), "DRUMS_BIN="+bin)
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.HasPrefix(sc.Text(), "drums serve: ready") {
				said = true
				close(ready)
			}
		}
	}()
	go func() { _ = cmd.Wait(); logf.Close(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Logf("drums serve log (tail):\n%s", tailString(string(b), 6000))
		}
		if out, err := exec.Command(drums, "sweep", "--prefix", prefix, "--state-dir", filepath.Join(dir, "sessions")).CombinedOutput(); err != nil {
			t.Errorf("drums sweep: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	select {
	case <-ready:
	case <-exited:
		b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		t.Fatalf("drums serve exited: %s", b)
	case <-time.After(2 * time.Minute):
		t.Fatal("drums serve not ready within 2 minutes")
	}
	c, err := client.New(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func tailString(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestTier1BuiltinTasksThroughDaemon runs every built-in task end to end
// on leased desktops: each must score 0 before its solution and 1 after.
func TestTier1BuiltinTasksThroughDaemon(t *testing.T) {
	c := startDaemon(t, "osworld")
	builtin, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	files := t.TempDir()
	r := NewRunner(Config{Files: files, Parallel: 2, Width: 1280, Height: 800, TaskTimeout: 5 * time.Minute, Settle: time.Second},
		&ProviderDesktops{Client: c, LeaseSeconds: 1200}, nil)
	results, err := r.RunTasks(ctx, builtin)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if res.Status != StatusRan || res.ScoreBefore == nil || *res.ScoreBefore != 0 || res.ScoreAfter == nil || *res.ScoreAfter != 1 {
			t.Errorf("%s: status %s, score %s → %s, reason %q", res.ID, res.Status, osworld.ScoreText(res.ScoreBefore), osworld.ScoreText(res.ScoreAfter), res.Reason)
			if res.After != nil {
				t.Logf("%s evaluation after: %+v", res.ID, *res.After)
			}
		}
	}
	checkKeptFiles(t, files, results)
}

// checkKeptFiles: every task that ran kept its three screenshots (after
// setup, after the evaluation, after the solution), PNGs of the desktop's
// size, and its accessibility tree; the report's page links each.
func checkKeptFiles(t *testing.T, files string, results []Result) {
	t.Helper()
	out := t.TempDir()
	if err := (Report{Results: results, Mode: "native", Files: files}).WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(out, ReportHTML))
	if err != nil {
		t.Fatal(err)
	}
	page := parseXHTML(t, html)
	linked := map[string]bool{}
	for _, src := range page.files() {
		linked[filepath.Join(out, filepath.FromSlash(src))] = true
	}
	for _, res := range results {
		if res.Observation == nil || res.Evaluation == nil || res.After == nil {
			t.Errorf("%s: no observation or evaluations", res.ID)
			continue
		}
		for _, shot := range []string{res.Observation.Screenshot, res.Evaluation.Screenshot, res.After.Screenshot} {
			p := filepath.Join(files, shot)
			f, err := os.Open(p)
			if shot == "" || err != nil {
				t.Errorf("%s: screenshot %q not kept: %v", res.ID, shot, err)
				continue
			}
			cfg, err := png.DecodeConfig(f)
			f.Close()
			if err != nil || cfg.Width != 1280 || cfg.Height != 800 {
				t.Errorf("%s: %s is %dx%d (%v), want a 1280x800 PNG", res.ID, shot, cfg.Width, cfg.Height, err)
			}
			if !linked[p] {
				t.Errorf("%s: report.html does not link %s", res.ID, shot)
			}
		}
		tree, err := os.ReadFile(filepath.Join(files, res.Observation.Accessibility))
		if res.Observation.Accessibility == "" || err != nil || len(tree) != res.Observation.AccessibilityBytes || !strings.Contains(string(tree), "<desktop-frame") {
			t.Errorf("%s: accessibility tree %q not kept whole (%d of %d bytes): %v", res.ID, res.Observation.Accessibility, len(tree), res.Observation.AccessibilityBytes, err)
		}
		if !linked[filepath.Join(files, res.Observation.Accessibility)] {
			t.Errorf("%s: report.html does not link its accessibility tree", res.ID)
		}
	}
}

// TestTier1EpisodeThroughDaemon drives the `drums run` episode on a leased
// desktop.
func TestTier1EpisodeThroughDaemon(t *testing.T) {
	c := startDaemon(t, "osworld")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, err := c.Lease(ctx, client.LeaseRequest{Width: 1280, Height: 800, LeaseSeconds: 600})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Release(context.Background(), d.ID) }()
	task, err := EpisodeTask()
	if err != nil {
		t.Fatal(err)
	}
	g := guestclient.New(d.GuestURL, nil)
	defer g.Close()
	env := &osworld.Env{Guest: g, TaskID: task.ID, Screen: osworld.Screen{Width: d.Width, Height: d.Height, Password: "password"}, WorkDir: t.TempDir()}
	res := RunEpisode(ctx, env, task, t.TempDir())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if *res.ScoreBefore != 0 || *res.ScoreAfter != 1 || len(res.Steps) != len(task.Solution) || len(res.Screenshots) != len(task.Solution)+1 {
		t.Errorf("episode = %+v", res)
	}
}

// TestTier1MirroredTasksThroughDaemon runs OSWorld tasks that download
// from the file-cache dataset, from a mirror of it (DRUMS_HF_MIRROR, with
// DRUMS_OSWORLD for the task files): a download and a trash, a file name
// that is URL-encoded opened in LibreOffice, a gold file of a cloud_file
// getter, and ten downloads with a gold file whose name is not ASCII. Each
// must set up, observe and score 0 before acting; every native getter
// must work, and OSWorld's own metrics (the evaluator of record) score.
func TestTier1MirroredTasksThroughDaemon(t *testing.T) {
	dir := osworldExamples(t)
	m := osworldMirror(t)
	c := startDaemon(t, "osworld")
	entries := []osworld.Entry{
		{Domain: "os", ID: "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57"},
		{Domain: "libreoffice_writer", ID: "bb8ccc78-479f-4a2f-a71e-d565e439436b"},
		{Domain: "multi_apps", ID: "acb0f96b-e27c-44d8-b55f-7cb76609dfcd"},
		{Domain: "multi_apps", ID: "788b3701-3ec9-4b67-b679-418bfa726c22"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	r := NewRunner(Config{Examples: filepath.Join(dir, "examples"), Cache: osworld.FileCache{Mirror: m}, Files: t.TempDir(), Parallel: 2,
		Width: 1280, Height: 800, TaskTimeout: 5 * time.Minute, Settle: time.Second, Judge: pythonJudge(t)},
		&ProviderDesktops{Client: c, LeaseSeconds: 1200}, nil)
	results, err := r.Run(ctx, entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		// An infeasible task has no getters (getters_ok –).
		// OSWorld's metrics scored; drums' agreed (no diverged).
		if res.Status != StatusRan || res.SetupOK == nil || !*res.SetupOK || res.GettersOK != nil && !*res.GettersOK ||
			res.ScoreBefore == nil || *res.ScoreBefore != 0 || res.Feasible && res.Evaluator != osworld.EvaluatorOSWorld {
			t.Errorf("%s/%s: status %s, setup %s, getters %s, score %s, reason %q", res.Domain, res.ID, res.Status,
				boolText3(res.SetupOK), boolText3(res.GettersOK), osworld.ScoreText(res.ScoreBefore), res.Reason)
		}
	}
}

// TestTier1GNOMETimeZoneTask: os/b6781586 ("set my time zone to UTC+0",
// scored by timedatectl) scores 0 before and 1 after its reference
// solution on the GNOME profile, as on the VM.
func TestTier1GNOMETimeZoneTask(t *testing.T) {
	dir := osworldExamples(t)
	c := startDaemon(t, "osworld-gnome")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := NewRunner(Config{Examples: filepath.Join(dir, "examples"), Files: t.TempDir(), Parallel: 1,
		Width: 1920, Height: 1080, TaskTimeout: 5 * time.Minute, Settle: time.Second, Judge: pythonJudge(t)},
		&ProviderDesktops{Client: c, LeaseSeconds: 1200}, nil)
	results, err := r.Run(ctx, []osworld.Entry{{Domain: "os", ID: "b6781586-6346-41cd-935a-a6b1487918fc"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if res.Status != StatusRan || res.ScoreBefore == nil || *res.ScoreBefore != 0 || res.ScoreAfter == nil || *res.ScoreAfter != 1 {
			t.Errorf("%s: status %s, score %s → %s, reason %q", res.ID, res.Status, osworld.ScoreText(res.ScoreBefore), osworld.ScoreText(res.ScoreAfter), res.Reason)
		}
	}
}

// pythonJudge is OSWorld's metrics from DRUMS_OSWORLD (its dependencies on
// DRUMS_OSWORLD_PYTHONPATH), stopped when t ends.
func pythonJudge(t *testing.T) *osworld.PythonJudge {
	t.Helper()
	prov, err := filepath.Abs(filepath.Join("..", "provider", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &osworld.PythonConfig{Python: testutil.DebianPython, OSWorld: os.Getenv("DRUMS_OSWORLD"), PythonPath: os.Getenv("DRUMS_OSWORLD_PYTHONPATH"), ProviderPath: prov, LogDir: t.TempDir()}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	j := &osworld.PythonJudge{Config: cfg}
	t.Cleanup(j.Close)
	return j
}
