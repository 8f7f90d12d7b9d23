package sessions

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
	"golang.org/x/sys/unix"
)

// Every tier-1 run makes its own world: a random prefix "zt?????", a random
// /16 of 10.64.0.0/10, its own state directory under worldRoot/<prefix>,
// held by a lock while the run lives. TestMain removes what crashed runs
// left: prefixes of that family with no live run. Desktops run from the
// host's image store (make images builds the images the tests use: core,
// and osworld where applications are tested), read-only to the tests.
const worldRoot = "/tmp/drums-sessions-test"

var testPrefixRE = regexp.MustCompile(`^zt[a-z0-9]{5}$`)

// The images the tests' desktops run from: core for the stack, osworld
// for the applications.
const (
	coreImage = "core"
	appsImage = "osworld"
)

type testWorld struct {
	dir     string
	prefix  string
	network netip.Prefix
	drums   string
	guestd  string
	lock    *fileLock
	eng     *Engine
}

var (
	worldOnce sync.Once
	world     *testWorld
	worldErr  error
)

// opTimeout bounds one engine operation in tests: far above a create on a
// loaded 2-core machine (~1 s), below the test binary's timeout.
const opTimeout = 2 * time.Minute

func TestMain(m *testing.M) {
	flag.Parse()
	if testutil.Tier1Enabled() && os.Geteuid() == 0 {
		if err := sweepCrashedRuns(); err != nil {
			fmt.Fprintln(os.Stderr, "sweep of crashed test runs:", err)
		}
	}
	code := m.Run()
	testutil.RemoveBins()
	if world != nil {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		rep, err := world.eng.Sweep(ctx)
		cancel()
		if err != nil || !rep.Empty() {
			fmt.Fprintf(os.Stderr, "sessions left by the tests: %+v %v\n", rep, err)
			code = 1
		}
		world.lock.unlock()
		os.RemoveAll(world.dir)
		os.Remove(worldRoot) // only when no other run is in it
	}
	os.Exit(code)
}

// needWorld makes (once) the run's world, or fails the test.
func needWorld(t testing.TB) *testWorld {
	t.Helper()
	testutil.RequireRoot(t, "nft", "ip")
	testimage.NeedImages(t, coreImage, appsImage)
	bin := testutil.Bins(t)
	worldOnce.Do(func() { world, worldErr = makeWorld(bin) })
	if worldErr != nil {
		t.Fatal(worldErr)
	}
	return world
}

func randomName(n int) string { return testutil.RandomName(n) }

// makeWorld makes the run's world, its desktops run from the binaries in
// bin.
func makeWorld(bin string) (*testWorld, error) {
	w := &testWorld{prefix: "zt" + randomName(5)}
	v, _ := rand.Int(rand.Reader, big.NewInt(64))
	w.network = netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(64 + v.Int64()), 0, 0}), 16)
	w.dir = filepath.Join(worldRoot, w.prefix)
	// Another run that ends removes worldRoot when it is empty: try again
	// if it went while MkdirAll was between worldRoot and w.dir.
	var err error
	for range 3 {
		if err = os.MkdirAll(w.dir, 0o700); !errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	lk, ok, err := tryLock(filepath.Join(w.dir, "lock"))
	if err != nil || !ok {
		return nil, fmt.Errorf("lock test world: %v", err)
	}
	w.lock = lk
	w.drums, w.guestd = filepath.Join(bin, "drums"), filepath.Join(bin, "guestd")
	eng, err := New(w.config())
	if err != nil {
		return nil, err
	}
	w.eng = eng
	return w, nil
}

func (w *testWorld) config() Config {
	return Config{Prefix: w.prefix, StateDir: filepath.Join(w.dir, "state"), ImageDir: testimage.ImageDir(), Image: coreImage,
		Network: w.network, Binary: filepath.Join(filepath.Dir(w.drums), InitBinary), Guestd: w.guestd, ReadyTimeout: opTimeout}
}

// cliArgs are the engine flags that point drums at this world.
func (w *testWorld) cliArgs() []string {
	return []string{"--prefix", w.prefix, "--state-dir", filepath.Join(w.dir, "state"), "--image-dir", testimage.ImageDir(), "--image", coreImage,
		"--network", w.network.String(), "--guestd", w.guestd}
}

// sweepCrashedRuns removes the leftovers of test runs that died: every
// prefix of the test family found in links, nftables tables, cgroups,
// session inits or world directories, whose world lock is free.
func sweepCrashedRuns() error {
	prefixes := map[string]bool{}
	if entries, err := os.ReadDir(worldRoot); err == nil {
		for _, e := range entries {
			if testPrefixRE.MatchString(e.Name()) {
				prefixes[e.Name()] = true
			}
		}
	}
	// A name of the family starts with the 7-character prefix.
	family := func(name string, of func(prefix, name string) (int, bool)) {
		if len(name) > 8 && testPrefixRE.MatchString(name[:7]) {
			if _, ok := of(name[:7], name); ok {
				prefixes[name[:7]] = true
			}
		}
	}
	if links, err := hostLinks(); err == nil {
		for _, l := range links {
			family(l, vethSlot)
		}
	}
	if out, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(out)))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 {
				family(f[2], tableSlot)
			}
		}
	}
	for id := range findInitsAll() {
		family(id, parseID)
	}
	if entries, err := os.ReadDir(AddrClaimDir); err == nil {
		for _, e := range entries {
			family(claimOwner(filepath.Join(AddrClaimDir, e.Name())), parseID)
		}
	}
	var errs []error
	for p := range prefixes {
		dir := filepath.Join(worldRoot, p)
		if lk, free, err := tryLock(filepath.Join(dir, "lock")); err == nil {
			if !free {
				continue // a live run
			}
			lk.unlock()
		}
		eng, err := New(Config{Prefix: p, StateDir: filepath.Join(dir, "state"), Binary: "/bin/true"})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		rep, err := eng.Sweep(ctx)
		cancel()
		if !rep.Empty() {
			fmt.Fprintf(os.Stderr, "swept crashed test run %s: %+v\n", p, rep)
		}
		if err != nil {
			errs = append(errs, err)
		}
		os.RemoveAll(dir)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%v", errs)
	}
	return nil
}

// findInitsAll lists session inits of any prefix, by id.
func findInitsAll() map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) == 3 && argv[1] == InitCommand {
			out[argv[2]] = true
		}
	}
	return out
}

// newSession creates a session of the world's engine, removed at cleanup.
func newSession(t testing.TB, req Request) *Session {
	t.Helper()
	w := needWorld(t)
	return newSessionOf(t, w.eng, req)
}

func newSessionOf(t testing.TB, eng *Engine, req Request) *Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s, err := eng.Create(ctx, req)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	removeAtCleanup(t, eng, s)
	return s
}

// removeAtCleanup removes s through eng once the test ends.
func removeAtCleanup(t testing.TB, eng *Engine, s *Session) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if err := eng.Remove(ctx, s.ID); err != nil {
			t.Errorf("remove %s: %v", s.ID, err)
		}
	})
}

// otherEngine is an engine of a second test prefix on network, with its
// own world directory, locked while the test runs so that another run's
// TestMain leaves it alone. Its leftovers fail the test.
func otherEngine(t testing.TB, network netip.Prefix) *Engine {
	t.Helper()
	w := needWorld(t)
	prefix := "zt" + randomName(5)
	dir := filepath.Join(worldRoot, prefix)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	lk, ok, err := tryLock(filepath.Join(dir, "lock"))
	if err != nil || !ok {
		t.Fatalf("lock %s: %v", dir, err)
	}
	cfg := w.config()
	cfg.Prefix, cfg.StateDir, cfg.Network = prefix, filepath.Join(dir, "state"), network
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the cleanups of its sessions
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if rep, err := eng.Sweep(ctx); err != nil || !rep.Empty() {
			t.Errorf("prefix %s left %+v %v", prefix, rep, err)
		}
		lk.unlock()
		os.RemoveAll(dir)
	})
	return eng
}

// run runs a shell script in a session of the world's engine and returns
// its output and status.
func run(t testing.TB, s *Session, user, script string) (string, int) {
	t.Helper()
	return runOn(t, world.eng, s, user, script)
}

func runOn(t testing.TB, eng *Engine, s *Session, user, script string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	var out strings.Builder
	res, err := eng.Exec(ctx, s.ID, []string{"/bin/bash", "-c", script}, ExecOptions{User: user, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("exec in %s: %v", s.ID, err)
	}
	return out.String(), res.ExitCode
}

// mustRun runs a script that must succeed.
func mustRun(t testing.TB, s *Session, user, script string) string {
	t.Helper()
	return mustRunOn(t, world.eng, s, user, script)
}

func mustRunOn(t testing.TB, eng *Engine, s *Session, user, script string) string {
	t.Helper()
	out, code := runOn(t, eng, s, user, script)
	if code != 0 {
		t.Fatalf("%q in %s exited %d: %s", script, s.ID, code, out)
	}
	return out
}

// answers checks that the session's guestd answers GET /screenshot.
func answers(s *Session) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return screenshotOnce(ctx, netip.AddrPortFrom(netip.MustParseAddr(s.Address), uint16(s.GuestPort)))
}

// leftovers lists what of prefix exists on the host: veths, nftables
// tables, cgroup directories, session inits and mounts under dir.
func leftovers(prefix, dir string) []string {
	var out []string
	if links, err := hostLinks(); err == nil {
		for _, l := range links {
			if _, ok := vethSlot(prefix, l); ok {
				out = append(out, "veth "+l)
			}
		}
	}
	if b, err := exec.Command("nft", "list", "tables").Output(); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				if _, ok := tableSlot(prefix, f[2]); ok {
					out = append(out, "table "+f[2])
				}
			}
		}
	}
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && (d.Name() == prefix || strings.HasPrefix(d.Name(), prefix+"-")) {
			out = append(out, "cgroup "+path)
			return filepath.SkipDir
		}
		return nil
	})
	for id := range findInits(prefix) {
		out = append(out, "init "+id)
	}
	if entries, err := os.ReadDir(AddrClaimDir); err == nil {
		for _, e := range entries {
			path := filepath.Join(AddrClaimDir, e.Name())
			if _, ok := parseID(prefix, claimOwner(path)); ok {
				out = append(out, "claim "+path+" "+claimOwner(path))
			}
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && dir != "" {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, dir) {
				out = append(out, "mount "+line)
			}
		}
	}
	if b, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, f := range strings.Fields(string(b)) {
			if strings.HasPrefix(f, prefix) {
				out = append(out, "netns "+f)
			}
		}
	}
	return out
}

// sessionLeftovers lists what of one session exists on the host.
func sessionLeftovers(w *testWorld, s *Session) []string {
	var out []string
	for _, l := range leftovers(w.prefix, filepath.Join(w.dir, "state")) {
		if strings.Contains(l, s.ID) || strings.HasSuffix(l, hostVeth(w.prefix, s.Slot)) || strings.HasSuffix(l, tableName(w.prefix, s.Slot)) {
			out = append(out, l)
		}
	}
	if _, err := os.Stat(w.eng.sessionDir(s.ID)); err == nil {
		out = append(out, "dir "+w.eng.sessionDir(s.ID))
	}
	// leftovers names the prefix's cgroup directory only, which other
	// sessions keep: the session's own (both incarnations') are looked for.
	if s.Plan != nil {
		for _, p := range []*Plan{s.Plan, otherIncarnation(s.Plan)} {
			for _, dir := range p.Cgroup.Dirs {
				if _, err := os.Stat(dir); err == nil {
					out = append(out, "cgroup "+dir)
				}
			}
		}
	}
	return out
}

// killSessionInit kills a session's init from the host.
func killSessionInit(t testing.TB, s *Session) {
	t.Helper()
	if err := unix.Kill(s.InitPID, unix.SIGKILL); err != nil {
		t.Fatalf("kill init %d: %v", s.InitPID, err)
	}
}
