package provider

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// worldRoot holds one directory per tier-1 run of this package, locked
// while the run lives: its binaries and the engines' state directories
// (one per prefix). TestMain sweeps the runs that crashed. Desktops run
// from the core image of the host's store (make images).
const worldRoot = "/tmp/drums-provider-test"

// testImage is the image the tests' desktops run from.
const testImage = "core"

// testPrefixRE is the family of prefixes these tests use.
var testPrefixRE = regexp.MustCompile(`^pv[a-z0-9]{5}$`)

// tier1Env is what the tier-1 tests share: the drums and guestd binaries,
// found once per test binary.
var tier1Env struct {
	once          sync.Once
	err           error
	dir           string // worldRoot/run-*, removed by TestMain
	lock          *os.File
	drums, guestd string
}

func TestMain(m *testing.M) {
	if testutil.Tier1Enabled() && os.Geteuid() == 0 {
		if err := sweepCrashedRuns(); err != nil {
			fmt.Fprintln(os.Stderr, "sweep of crashed test runs:", err)
		}
	}
	code := m.Run()
	testutil.RemoveBins()
	if tier1Env.dir != "" {
		os.RemoveAll(tier1Env.dir)
		tier1Env.lock.Close()
		os.Remove(worldRoot) // only when no other run is in it
	}
	os.Exit(code)
}

// sweepCrashedRuns removes the sessions and files of runs whose process is
// gone (their lock is free).
func sweepCrashedRuns() error {
	runs, err := os.ReadDir(worldRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range runs {
		dir := filepath.Join(worldRoot, r.Name())
		lf, err := os.Open(filepath.Join(dir, "lock"))
		if err == nil {
			if syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
				lf.Close()
				continue // a live run
			}
			lf.Close()
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !testPrefixRE.MatchString(e.Name()) {
				continue
			}
			errs = append(errs, sweepPrefix(sessions.Config{Prefix: e.Name(), StateDir: filepath.Join(dir, e.Name())}))
		}
		errs = append(errs, os.RemoveAll(dir))
	}
	return errors.Join(errs...)
}

// sweepPrefix removes every session and leftover of one prefix.
func sweepPrefix(cfg sessions.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	eng, err := sessions.New(cfg)
	if err != nil {
		return err
	}
	defer eng.Close()
	live, err := eng.Adopt(ctx)
	errs := []error{err}
	for _, s := range live {
		errs = append(errs, eng.Remove(ctx, s.ID))
	}
	_, err = eng.Sweep(ctx)
	return errors.Join(append(errs, err)...)
}

// tier1Setup makes the run's directory and finds the binaries
// (testutil.Bins).
func tier1Setup(t testing.TB) {
	t.Helper()
	testutil.RequireRoot(t)
	testimage.NeedImages(t, testImage)
	bin := testutil.Bins(t)
	tier1Env.once.Do(func() {
		// Another run that ends removes worldRoot when it is empty: try
		// again if it went between the two calls.
		var dir string
		var err error
		for range 3 {
			if err = os.MkdirAll(worldRoot, 0o700); err != nil {
				break
			}
			if dir, err = os.MkdirTemp(worldRoot, "run-"); !errors.Is(err, os.ErrNotExist) {
				break
			}
		}
		if err != nil {
			tier1Env.err = err
			return
		}
		tier1Env.dir = dir
		lf, err := os.Create(filepath.Join(dir, "lock"))
		if err == nil {
			err = syscall.Flock(int(lf.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			tier1Env.err = fmt.Errorf("lock run directory: %w", err)
			return
		}
		tier1Env.lock = lf
		tier1Env.drums, tier1Env.guestd = filepath.Join(bin, "drums"), filepath.Join(bin, "guestd")
	})
	if tier1Env.err != nil {
		t.Fatal(tier1Env.err)
	}
}

// randomPrefix is a host prefix for one test: sessions of different
// prefixes never touch each other.
func randomPrefix() string {
	const alpha = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 5)
	rand.Read(b)
	out := []byte("pv")
	for _, c := range b {
		out = append(out, alpha[int(c)%len(alpha)])
	}
	return string(out)
}

// randomNetwork is a /24 of 100.64.0.0/10 for one test. Engines of
// different prefixes that share a range hand out the same addresses, and a
// test would then talk to another engine's desktop.
func randomNetwork() netip.Prefix {
	b := make([]byte, 2)
	rand.Read(b)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{100, 64 + b[0]%64, b[1], 0}), 24)
}

// engineConfig is an engine config of its own prefix, address range and
// state directory.
func engineConfig(t testing.TB, capacity int) sessions.Config {
	tier1Setup(t)
	prefix := randomPrefix()
	return sessions.Config{
		Prefix:      prefix,
		Network:     randomNetwork(),
		StateDir:    filepath.Join(tier1Env.dir, prefix),
		ImageDir:    testimage.ImageDir(),
		Image:       testImage,
		MaxSessions: capacity,
		Binary:      filepath.Join(filepath.Dir(tier1Env.drums), sessions.InitBinary),
		Guestd:      tier1Env.guestd,
	}
}

// realEngine is a real session engine; every session of its prefix is
// removed when the test ends.
func realEngine(t testing.TB, capacity int) *sessions.Engine {
	return engineFor(t, engineConfig(t, capacity))
}

func engineFor(t testing.TB, cfg sessions.Config) *sessions.Engine {
	t.Helper()
	eng, err := sessions.New(cfg)
	if err != nil {
		t.Fatalf("session engine: %v", err)
	}
	t.Cleanup(func() {
		eng.Close()
		// A fresh engine of the prefix adopts and sweeps whatever is left,
		// also what another process (a daemon under test) made.
		if err := sweepPrefix(cfg); err != nil {
			t.Errorf("cleanup of prefix %s: %v", cfg.Prefix, err)
		}
	})
	return eng
}

// guestClient talks to guestd as OSWorld's controllers do (requests without
// a session): a new connection per request. A kept-alive connection would
// not survive a reset, which destroys every socket to the desktop so that
// no request of an episode reaches the next one.
var guestClient = &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}

// guestExec runs a shell command in a desktop through its guestd, as
// OSWorld's controllers do, and returns its output.
func guestExec(t *testing.T, d client.Desktop, script string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"command": script, "shell": true})
	hc := guestClient
	resp, err := hc.Post(d.GuestURL+"/execute", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("execute on %s: %v", d.ID, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out struct {
		Output     string `json:"output"`
		ReturnCode int    `json:"returncode"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &out) != nil || out.ReturnCode != 0 {
		t.Fatalf("execute %q on %s: %s %s", script, d.ID, resp.Status, raw)
	}
	return strings.TrimSpace(out.Output)
}

func hasFile(t *testing.T, d client.Desktop, path string) bool {
	return guestExec(t, d, "test -e "+path+" && echo yes || echo no") == "yes"
}

func screenshotOK(d client.Desktop) error {
	resp, err := guestClient.Get(d.GuestURL + "/screenshot")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		return fmt.Errorf("screenshot of %s: %s, %d bytes", d.ID, resp.Status, len(b))
	}
	return nil
}

func startReal(t *testing.T, cfg Config) (*harness, *sessions.Engine) {
	t.Helper()
	eng := realEngine(t, cfg.Capacity)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	srv, err := NewServer(cfg, eng, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cfg: cfg, srv: srv, ctx: ctx}
	t.Cleanup(func() { h.stop(true) })
	h.c, err = client.New(cfg.Socket, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.c.Close)
	return h, eng
}

// TestTier1SnapshotRevert: a file written before save_state is there after a
// revert to that snapshot and absent after a plain revert; release removes
// the desktop.
func TestTier1SnapshotRevert(t *testing.T) {
	cfg := testConfig(t.TempDir())
	h, _ := startReal(t, cfg)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1280, Height: 800})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if err := screenshotOK(d); err != nil {
		t.Fatal(err)
	}
	guestExec(t, d, "echo kept > /home/user/before.txt")
	if _, err := h.c.SaveSnapshot(h.ctx, d.ID, "t1"); err != nil {
		t.Fatalf("save snapshot: %v", err)
	}
	guestExec(t, d, "echo later > /home/user/after.txt")

	r, err := h.c.Revert(h.ctx, d.ID, "t1")
	if err != nil {
		t.Fatalf("revert to snapshot: %v", err)
	}
	if b, a := hasFile(t, r, "/home/user/before.txt"), hasFile(t, r, "/home/user/after.txt"); !b || a {
		t.Fatalf("after a revert to the snapshot: before.txt %v, after.txt %v; want only before.txt", b, a)
	}
	if got := guestExec(t, r, "cat /home/user/before.txt"); got != "kept" {
		t.Fatalf("before.txt = %q", got)
	}
	r, err = h.c.Revert(h.ctx, r.ID, "")
	if err != nil {
		t.Fatalf("plain revert: %v", err)
	}
	if hasFile(t, r, "/home/user/before.txt") || hasFile(t, r, "/home/user/after.txt") {
		t.Fatalf("after a plain revert: files of the episode remain")
	}
	if err := screenshotOK(r); err != nil {
		t.Fatal(err)
	}
	if err := h.c.Release(h.ctx, r.ID); err != nil {
		t.Fatalf("release: %v", err)
	}
	waitGone(t, h.c, r.ID)
}

// TestTier1ExpiryAndCapacity: a full daemon refuses a lease with a capacity
// error until a lease expires.
func TestTier1ExpiryAndCapacity(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 2
	h, _ := startReal(t, cfg)
	short, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 3})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	if _, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768}); err != nil {
		t.Fatalf("lease: %v", err)
	}
	_, err = h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768})
	wantCode(t, err, client.ErrCapacity, http.StatusServiceUnavailable)
	waitGone(t, h.c, short.ID)
	d, err := h.c.Lease(h.ctx, client.LeaseRequest{Width: 1024, Height: 768})
	if err != nil {
		t.Fatalf("lease after the expiry: %v", err)
	}
	if err := screenshotOK(d); err != nil {
		t.Fatal(err)
	}
}

// serveProc is `drums serve` as a separate process, so it can be killed -9.
type serveProc struct {
	p    *testutil.Proc
	sock string
}

func startServe(t testing.TB, ecfg sessions.Config, state, sock string, extra ...string) *serveProc {
	t.Helper()
	args := append([]string{"serve", "--socket", sock, "--provider-dir", state, "--prefix", ecfg.Prefix,
		"--state-dir", ecfg.StateDir, "--network", ecfg.Network.String(), "--image-dir", ecfg.ImageDir, "--image", ecfg.Image, "--guestd", ecfg.Guestd,
		"--capacity", "4", "--log-level", "debug"}, extra...)
	cmd := testutil.Command(nil, tier1Env.drums, args...)
	// The daemon's desktops must outlive it (that is what is tested), so
	// no Pdeathsig: the test's cleanup sweeps the prefix instead.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := testutil.StartCmd(t, cmd)
	line := make(chan string, 1)
	go func() {
		b := make([]byte, 256)
		n, _ := stdout.Read(b)
		line <- string(b[:n])
		io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-line:
		if !strings.Contains(l, "ready on unix:"+sock) {
			t.Fatalf("drums serve said %q", l)
		}
	case <-p.Done():
		t.Fatalf("drums serve exited: %v", p.Err())
	case <-time.After(5 * time.Minute):
		t.Fatalf("drums serve never said ready")
	}
	return &serveProc{p: p, sock: sock}
}

// TestTier1KillRestart kills the daemon with SIGKILL and starts another on
// the same state: the leased desktop keeps its id, lease and files, the warm
// one returns to the pool, a session no record knows is removed.
func TestTier1KillRestart(t *testing.T) {
	ecfg := engineConfig(t, 4)
	eng := engineFor(t, ecfg)
	dir := t.TempDir()
	state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "d.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	s1 := startServe(t, ecfg, state, sock, "--pool-size", "1", "--warm", "1024x768")
	c, err := client.New(sock, "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leased, err := c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 900})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	guestExec(t, leased, "echo survived > /home/user/mark.txt")
	h := &harness{t: t, c: c, ctx: ctx}
	h.waitReady(1)
	// A session of the prefix that no daemon recorded: a crash mid-create.
	stray, err := eng.Create(ctx, sessions.Request{Width: 800, Height: 600})
	if err != nil {
		t.Fatalf("create stray session: %v", err)
	}
	if err := syscall.Kill(-s1.p.Cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s1.p.Done()

	startServe(t, ecfg, state, sock, "--pool-size", "1", "--warm", "1024x768", "--drain-on-exit")
	got, err := c.Get(ctx, leased.ID)
	if err != nil || got.State != client.StateLeased || !got.LeaseExpires.Equal(leased.LeaseExpires) || got.Address != leased.Address {
		t.Fatalf("leased desktop after kill -9: %+v, %v (was %+v)", got, err, leased)
	}
	if s := guestExec(t, got, "cat /home/user/mark.txt"); s != "survived" {
		t.Fatalf("adopted desktop lost its file: %q", s)
	}
	h.waitReady(1)
	if err := syscall.Kill(stray.InitPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("unrecorded session %s (init %d) still runs after the restart: %v", stray.ID, stray.InitPID, err)
	}
	if r, err := c.Revert(ctx, leased.ID, ""); err != nil || hasFile(t, r, "/home/user/mark.txt") {
		t.Fatalf("revert of an adopted desktop: %+v, %v", r, err)
	}
}

// TestPythonTier1 runs the Python package's tests (python_test.go) with
// real desktops: the tests start `drums serve` (from DRUMS_BIN, else built)
// and, with DRUMS_OSWORLD set, drive OSWorld's own DesktopEnv.
func TestPythonTier1(t *testing.T) {
	testutil.RequireRoot(t, "/usr/bin/python3")
	tier1Setup(t) // the binaries this run built or found, so pytest need not build them
	runPytest(t, pythonEnv("DRUMS_TIER1=1", "DRUMS_BIN="+filepath.Dir(tier1Env.drums)))
}
