//go:build linux

package drumscli

import (
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/bench"
	"github.com/drums-dev/drums/internal/mainjob"
	"github.com/drums-dev/drums/provider"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
	"github.com/drums-dev/drums/tasks/osworld"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// parsed checks that parse read args into want.
func parsed[C any](t *testing.T, parse func([]string, io.Writer) (C, error), args []string, want C) {
	t.Helper()
	got, err := parse(args, io.Discard)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	// The image commands' configs embed imageConfig.
	opts := []cmp.Option{cmpopts.EquateComparable(netip.Prefix{}, netip.Addr{}), cmp.AllowUnexported(imageBuildConfig{}, imageImportConfig{}, imageRunConfig{})}
	if d := cmp.Diff(want, got, opts...); d != "" {
		t.Errorf("%q (-want +got):\n%s", args, d)
	}
}

// defaultEngine is the engine's configuration without flags.
var defaultEngine = sessions.Config{Prefix: "drums", StateDir: "/var/lib/drums", ImageDir: images.DefaultDir, Image: "osworld"}

// engineArgs set every engine flag but -v; engineSet is what they say.
var (
	engineArgs = []string{"--prefix", "zz", "--state-dir", "/sd", "--image-dir", "/id", "--image", "core", "--guestd", "/g",
		"--network", "10.9.0.0/21", "--upper-on-disk", "--memory-merge", "--id-base", "1610612736"}
	engineSet = sessions.Config{Prefix: "zz", StateDir: "/sd", ImageDir: "/id", Image: "core", Guestd: "/g",
		Network: netip.MustParsePrefix("10.9.0.0/21"), UpperOnDisk: true, MemoryMerge: true, IDBase: 1610612736}
)

func TestParseServe(t *testing.T) {
	stableEnv(t)
	def := provider.DefaultConfig()
	def.StateDir, def.Image = "/var/lib/drums/provider-drums", "osworld"
	engine := defaultEngine
	engine.MaxSessions = def.Capacity
	parsed(t, parseServe, nil, serveConfig{Provider: def, Engine: engine, LogLevel: slog.LevelInfo})

	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte(" s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := provider.Config{Socket: "/s.sock", Listen: "127.0.0.1:7070", Token: "s3cret", AdvertiseURL: "http://192.0.2.1:7070", StateDir: "/pd", Capacity: 4, PoolSize: 0,
		Warm:     []provider.Shape{{Width: 800, Height: 600}, {Width: 1280, Height: 720, Snapshot: "snap", Image: "core"}},
		PoolIdle: time.Minute, LeaseTime: 2 * time.Minute, MaxLease: time.Hour, CreateTimeout: 30 * time.Second,
		MaxParallelCreates: 3, Width: 1024, Height: 768, DrainOnExit: true, Image: "core"}
	engine = engineSet
	engine.MaxSessions = 4
	engine.Publish = sessions.Publish{Address: netip.MustParseAddr("192.0.2.1"), FirstPort: 30000, Ports: 16}
	parsed(t, parseServe, append([]string{"--socket", "/s.sock", "--listen", "127.0.0.1:7070", "--token-file", token, "--provider-dir", "/pd",
		"--publish-address", "192.0.2.1", "--publish-ports", "30000-30015", "--advertise-url", "http://192.0.2.1:7070", "--capacity", "4", "--pool-size", "0", "--warm", "800x600", "--warm", "1280x720:snap@core", "--pool-idle", "1m", "--lease", "2m",
		"--max-lease", "1h", "--create-timeout", "30s", "--parallel-creates", "3", "--width", "1024", "--height", "768", "--drain-on-exit",
		"--log-level", "debug"}, engineArgs...), serveConfig{Provider: p, Engine: engine, LogLevel: slog.LevelDebug})

	// Spares hold slots beyond the capacity, published as the others.
	p = def
	engine = defaultEngine
	engine.MaxSessions, engine.Spares, engine.Standby = def.Capacity+2, 2, true
	parsed(t, parseServe, []string{"--spares", "2", "--standby"}, serveConfig{Provider: p, Engine: engine, LogLevel: slog.LevelInfo})
	for _, args := range [][]string{
		{"--spares", "-1"},
		{"--spares", "1", "--width", "1024", "--height", "768"},
		{"--spares", "1", "--capacity", "4", "--publish-address", "192.0.2.1", "--publish-ports", "30000-30015"},
	} {
		if _, err := parseServe(args, io.Discard); err == nil {
			t.Errorf("parseServe %q: no error", args)
		}
	}

	// $DRUMS_SOCKET is the socket's default; -v gives the engine a logger.
	t.Setenv("DRUMS_SOCKET", "/env.sock")
	cfg, err := parseServe([]string{"-v"}, io.Discard)
	if err != nil || cfg.Provider.Socket != "/env.sock" || cfg.Engine.Logger == nil {
		t.Errorf("$DRUMS_SOCKET and -v: %+v %v", cfg, err)
	}
}

func TestParseSweep(t *testing.T) {
	parsed(t, parseSweep, nil, sweepConfig{Engine: defaultEngine, ProviderDir: "/var/lib/drums/provider-drums"})
	parsed(t, parseSweep, append([]string{"--json"}, engineArgs...), sweepConfig{Engine: engineSet, JSON: true, ProviderDir: "/sd/provider-zz"})
	parsed(t, parseSweep, []string{"--provider-dir", "/pd"}, sweepConfig{Engine: defaultEngine, ProviderDir: "/pd"})
}

func TestParseSession(t *testing.T) {
	defaultRequest := sessions.Request{Width: 1920, Height: 1080, Depth: 24, GuestPort: 5000}
	parsed(t, parseSessionCreate, nil, sessionCreateConfig{Engine: defaultEngine, Request: defaultRequest})
	request := sessions.Request{Width: 800, Height: 600, Depth: 16, Snapshot: "/snap", GuestPort: 5001, NoEgress: true, GLX: true,
		Limits: sessions.Limits{MemoryBytes: 1 << 30, Pids: 100, CPUs: 1.5}}
	requestArgs := []string{"--width", "800", "--height", "600", "--depth", "16", "--snapshot", "/snap", "--guest-port", "5001",
		"--memory", "1073741824", "--pids", "100", "--cpus", "1.5", "--no-egress", "--glx"}
	parsed(t, parseSessionCreate, append(append([]string{"--json"}, requestArgs...), engineArgs...),
		sessionCreateConfig{Engine: engineSet, Request: request, JSON: true})
	parsed(t, parseSessionPlan, append([]string{"--slot", "7"}, requestArgs...), sessionCreateConfig{Engine: defaultEngine, Request: request, Slot: 7})

	parsed(t, parseSessionList, []string{"--json"}, sessionConfig{Engine: defaultEngine, Args: []string{}, JSON: true})
	parsed(t, parseSessionRemove, append(engineArgs, "a", "b"), sessionConfig{Engine: engineSet, Args: []string{"a", "b"}})
	parsed(t, parseSessionReset, []string{"--json", "a"}, sessionConfig{Engine: defaultEngine, Args: []string{"a"}, JSON: true})
	parsed(t, parseSessionScreenshot, []string{"a", "shot.png"}, sessionConfig{Engine: defaultEngine, Args: []string{"a", "shot.png"}})

	parsed(t, parseSessionExec, []string{"--root", "--env", "A=1", "--env", "B=2=3", "ID", "--", "sh", "-c", "exit 3"},
		sessionExecConfig{Engine: defaultEngine, ID: "ID", Argv: []string{"sh", "-c", "exit 3"}, Root: true, Env: []string{"A=1", "B=2=3"}})
	// Without --, the command is what follows the id.
	parsed(t, parseSessionExec, []string{"ID", "ls", "-l"}, sessionExecConfig{Engine: defaultEngine, ID: "ID", Argv: []string{"ls", "-l"}})
	// A shell is a login bash, whatever follows the id.
	parsed(t, parseSessionShell, []string{"--root", "ID", "--", "zsh"},
		sessionExecConfig{Engine: defaultEngine, ID: "ID", Argv: []string{"/bin/bash", "-l"}, Root: true, Shell: true})
}

func TestParseImage(t *testing.T) {
	// Flags may follow the name.
	parsed(t, parseImageBuild, []string{"mine", "--recipe", "core", "--suite", "jammy", "--mirror", "http://m/ubuntu", "--arch", "arm64",
		"--packages", "vim, jq", "--packages", "git", "--packages-file", "/pk", "--rebuild", "--json", "--image-dir", "/id"},
		imageBuildConfig{imageConfig: imageConfig{Dir: "/id", Args: []string{"mine"}, JSON: true}, PackagesFile: "/pk",
			Build: images.BuildOptions{Name: "mine", Recipe: "core", Suite: "jammy", Mirrors: []string{"http://m/ubuntu"}, Arch: "arm64",
				Packages: []string{"vim", "jq", "git"}, Rebuild: true}})
	parsed(t, parseImageBuild, []string{"core"}, imageBuildConfig{imageConfig: imageConfig{Dir: images.DefaultDir, Args: []string{"core"}},
		Build: images.BuildOptions{Name: "core", Suite: images.DefaultSuite}})
	parsed(t, parseImageImport, []string{"--format", "disk", "vm", "Ubuntu.qcow2", "--json"},
		imageImportConfig{imageConfig: imageConfig{Dir: images.DefaultDir, Args: []string{"vm", "Ubuntu.qcow2"}, JSON: true}, Format: "disk"})
	parsed(t, parseImageList, []string{"--json"}, imageConfig{Dir: images.DefaultDir, Args: []string{}, JSON: true})
	parsed(t, parseImageInspect, []string{"core", "--json"}, imageConfig{Dir: images.DefaultDir, Args: []string{"core"}, JSON: true})
	parsed(t, parseImageCheck, []string{"core"}, imageConfig{Dir: images.DefaultDir, Args: []string{"core"}})
	parsed(t, parseImageRemove, []string{"--image-dir", "/id", "core"}, imageConfig{Dir: "/id", Args: []string{"core"}})
	// After --, everything is the command's, flags included.
	parsed(t, parseImageRun, []string{"--bind", "/a", "core", "--bind", "/b", "--", "go", "test", "--bind", "x"},
		imageRunConfig{imageConfig: imageConfig{Dir: images.DefaultDir, Args: []string{"core"}}, Binds: []string{"/a", "/b"},
			Argv: []string{"go", "test", "--bind", "x"}})
}

func TestParseTasks(t *testing.T) {
	stableEnv(t)
	args := []string{"--builtin"}
	parsed(t, parseTasksRun, args, tasksRunConfig{Suite: suiteFlags{Builtin: true}, Out: "tasks-report", Parallel: 2,
		Socket: "/run/drums/drums.sock", StartDaemon: true, Width: 1920, Height: 1080, Settle: 10 * time.Second,
		TaskTimeout: 10 * time.Minute, OpenTimeout: osworld.DefaultTimeouts.Open,
		Python:   osworld.PythonConfig{ProviderPath: "provider/python", Python: "/usr/bin/python3"},
		ImageDir: images.DefaultDir, Image: "osworld", Args: args})

	t.Setenv("DRUMS_OSWORLD", "/osw")
	t.Setenv("DRUMS_OSWORLD_CACHE", "/cache")
	t.Setenv("DRUMS_HF_MIRROR", "/mirror")
	t.Setenv("DRUMS_OSWORLD_PYTHONPATH", "/pp")
	t.Setenv("DRUMS_PROVIDER_PYTHON", "/prov")
	args = []string{"--domain", "os,chrome", "--domain", "gimp", "--id", "94d95f96", "--examples", "/ex", "--out", "/o", "--files", "/f",
		"--parallel", "3", "--socket", "/s.sock", "--start-daemon=false", "--image-dir", "/id", "--image", "core", "--width", "800",
		"--height", "600", "--settle", "1s", "--task-timeout", "1m", "--open-timeout", "2m", "--live-web", "--via-python",
		"--python", "/py"}
	parsed(t, parseTasksRun, args, tasksRunConfig{
		Suite: suiteFlags{Suite: "/osw/evaluation_examples/test_nogdrive.json", Examples: "/ex", Domains: commaList{"os", "chrome", "gimp"},
			IDs: commaList{"94d95f96"}, Cache: "/cache", HFMirror: "/mirror"},
		Out: "/o", Files: "/f", Parallel: 3, Socket: "/s.sock", Width: 800, Height: 600, Settle: time.Second,
		TaskTimeout: time.Minute, OpenTimeout: 2 * time.Minute, LiveWeb: true, ViaPython: true,
		Python:   osworld.PythonConfig{OSWorld: "/osw", PythonPath: "/pp", ProviderPath: "/prov", Python: "/py"},
		ImageDir: "/id", Image: "core", Args: args})

	parsed(t, parseTasksList, []string{"--json", "--suite", "/s.json"},
		tasksListConfig{Suite: suiteFlags{Suite: "/s.json", Cache: "/cache", HFMirror: "/mirror"}, JSON: true})
	parsed(t, parseTasksList, []string{"--suite", "/s.json", "--hf-mirror", "/m2"},
		tasksListConfig{Suite: suiteFlags{Suite: "/s.json", Cache: "/cache", HFMirror: "/m2"}})
	// --native needs no suite.
	t.Setenv("DRUMS_OSWORLD", "")
	parsed(t, parseTasksList, []string{"--native"}, tasksListConfig{Suite: suiteFlags{Cache: "/cache", HFMirror: "/mirror"}, Native: true})
}

func TestParseRun(t *testing.T) {
	stableEnv(t)
	cfg, err := parseRun(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if dir, base := filepath.Split(cfg.Job.Out); dir != "/tmp/" || len(base) != len("drums-run-20060102-150405") {
		t.Errorf("default --out %q", cfg.Job.Out)
	}
	cfg.Job.Out = ""
	if d := cmp.Diff(runConfig{ImageDir: images.DefaultDir, Job: mainjob.Config{Desktops: 3, Socket: "/run/drums/drums.sock",
		Width: 1280, Height: 800, Image: "osworld", Timeout: 15 * time.Minute}}, cfg); d != "" {
		t.Errorf("defaults (-want +got):\n%s", d)
	}
	parsed(t, parseRun, []string{"--desktops", "5", "--out", "o", "--socket", "/s.sock", "--width", "800", "--height", "600",
		"--image-dir", "/id", "--image", "core", "--timeout", "1m"},
		runConfig{ImageDir: "/id", Job: mainjob.Config{Desktops: 5, Out: "o", Socket: "/s.sock", Width: 800, Height: 600,
			Image: "core", Timeout: time.Minute}})
}

func TestParseCompat(t *testing.T) {
	parsed(t, parseCompat, nil, compatConfig{Out: "compat-report", BenchN: 30, BenchWarmup: 3, ImageDir: images.DefaultDir, Image: "osworld"})
	args := []string{"--cases", "c.json", "--known", "k.json", "--out", "o", "--include-slow", "--run", "execute/*",
		"--upstream-url", "http://u", "--guestd-url", "http://g", "--exec", "ip netns exec ns", "--image-dir", "/id", "--image", "core"}
	parsed(t, parseCompat, args, compatConfig{Cases: "c.json", Known: "k.json", Out: "o", IncludeSlow: true, Only: "execute/*",
		UpstreamURL: "http://u", GuestdURL: "http://g", Exec: "ip netns exec ns", BenchN: 30, BenchWarmup: 3,
		ImageDir: "/id", Image: "core", Args: args})
	args = []string{"--bench", "--bench-file", "b.json", "--bench-n", "5", "--bench-warmup", "0", "--bench-out", "b.md"}
	parsed(t, parseCompat, args, compatConfig{Out: "compat-report", Bench: true, BenchFile: "b.json", BenchN: 5, BenchWarmup: 0,
		BenchOut: "b.md", ImageDir: images.DefaultDir, Image: "osworld", Args: args})
}

func TestParseBench(t *testing.T) {
	bs, err := compat.BuiltinBenchmarks()
	if err != nil {
		t.Fatal(err)
	}
	setup := func(name string) *compat.Benchmark {
		i := slices.IndexFunc(bs, func(b compat.Benchmark) bool { return b.Name == name })
		return &bs[i]
	}
	// The benchmark's compiled expectations are its own business.
	opts := cmpopts.IgnoreUnexported(compat.Benchmark{})
	check := func(args []string, want benchConfig) {
		t.Helper()
		got, err := parseBench(args, io.Discard)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		if d := cmp.Diff(want, got, opts); d != "" {
			t.Errorf("%q (-want +got):\n%s", args, d)
		}
	}
	check(nil, benchConfig{StepSetup: "accessibility/gnome-terminal", ImageDir: images.DefaultDir, Image: "osworld",
		Run: bench.Config{Parts: bench.Parts, Sessions: 5, Idle: 65 * time.Second, LightImage: "core", LatencyN: 10, LatencyWarmup: 2,
			StepDesktops: []int{1, 4}, StepDuration: 5 * time.Second, Rounds: 1, StepSetup: setup("accessibility/gnome-terminal"),
			Density:      []bench.DensitySpec{{Workload: "chromium", Max: 4, Step: 2}, {Workload: "calc", Max: 4, Step: 2}, {Workload: "idle", Max: 20, Step: 10}},
			DensityLimit: time.Second, DensityFloor: 2 << 20, DensitySettle: 10 * time.Second, Image: "osworld",
			KSMPagesToScan: 1000, KSMSleep: 20 * time.Millisecond, KSMTime: 5 * time.Minute,
			Out: "bench/results", Name: "bench", Command: "drums bench"}})
	args := []string{"--parts", "steps, latency,steps", "--out", "o", "--name", "n", "--sessions", "2", "--idle", "1s", "--light-image", "l",
		"--latency-n", "3", "--latency-warmup", "0", "--latency-run", "screenshot", "--latency-file", "f.json", "--step-desktops", "1,10,50",
		"--step-duration", "2s", "--rounds", "3", "--step-upstream-max", "10", "--step-setup", "none", "--image", "i", "--image-dir", "/id", "--guestd", "/g",
		"--prefix", "bnctest", "--state-dir", "/sd", "--density", "idle=300,chromium=80:5", "--density-limit", "2s", "--density-floor-mib", "3072",
		"--density-settle", "1s", "--ksm", "--ksm-pages-to-scan", "5000", "--ksm-sleep", "10ms", "--ksm-time", "1m"}
	check(args, benchConfig{LatencyFile: "f.json", LatencyOnly: "screenshot", StepSetup: "none", Prefix: "bnctest", StateDir: "/sd",
		ImageDir: "/id", Image: "i", Guestd: "/g",
		Run: bench.Config{Parts: []string{"steps", "latency"}, Sessions: 2, Idle: time.Second, LightImage: "l", LatencyN: 3,
			StepDesktops: []int{1, 10, 50}, StepDuration: 2 * time.Second, Rounds: 3, StepUpstreamMax: 10, Out: "o", Name: "n",
			Density:      []bench.DensitySpec{{Workload: "idle", Max: 300, Step: 19}, {Workload: "chromium", Max: 80, Step: 5}},
			DensityLimit: 2 * time.Second, DensityFloor: 3 << 20, DensitySettle: time.Second, Image: "i",
			KSM: true, KSMPagesToScan: 5000, KSMSleep: 10 * time.Millisecond, KSMTime: time.Minute,
			Command: "drums bench " + strings.Join(args, " ")}})
	for _, bad := range []string{"idle", "idle=0", "nope=3", "idle=3:4", "idle=3:x", "idle=9999"} {
		if _, err := parseBench([]string{"--density", bad}, io.Discard); err == nil {
			t.Errorf("--density %s parsed", bad)
		}
	}
}
