package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeMachine is a host whose desktops each take cost KiB of memory and
// answer a screenshot in latency(n) with n desktops up; failAt makes the
// failAt-th desktop fail to come up.
type fakeMachine struct {
	mu      sync.Mutex
	avail   int64
	cost    int64
	n       int
	failAt  int
	latency func(n int) time.Duration
	waits   []time.Duration
}

func (m *fakeMachine) env() rampEnv {
	return rampEnv{
		add: func(context.Context) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.failAt > 0 && m.n+1 == m.failAt {
				return errors.New("no ready")
			}
			m.n++
			m.avail -= m.cost
			return nil
		},
		probe: func(context.Context) ([]time.Duration, error) {
			var ts []time.Duration
			for i := range m.n {
				ts = append(ts, m.latency(m.n)+time.Duration(i)*time.Millisecond)
			}
			return ts, nil
		},
		avail: func() (int64, error) { m.mu.Lock(); defer m.mu.Unlock(); return m.avail, nil },
		measure: func() (DensityMemory, error) {
			return DensityMemory{PerDesktop: ProcMem{Pss: m.cost / 2}}, nil
		},
		wait: func(_ context.Context, d time.Duration) error { m.waits = append(m.waits, d); return nil },
	}
}

func fast(int) time.Duration { return 10 * time.Millisecond }

func runRampOn(t *testing.T, m *fakeMachine, cfg rampConfig) ([]RampStep, RampStop) {
	t.Helper()
	var shown int
	steps, stop, err := ramp(context.Background(), cfg, m.env(), 0, m.avail, false, time.Now(), func(RampStep) { shown++ })
	if err != nil {
		t.Fatal(err)
	}
	if shown != len(steps) {
		t.Errorf("%d steps shown of %d", shown, len(steps))
	}
	return steps, stop
}

func TestRampStops(t *testing.T) {
	cfg := rampConfig{Max: 10, Step: 3, Limit: time.Second, Floor: 1000, Guess: 150, Settle: time.Second, Parallel: 2}

	// The maximum: 3, 6, 9, then a last step of 1.
	m := &fakeMachine{avail: 100000, cost: 100, latency: fast}
	steps, stop := runRampOn(t, m, cfg)
	if stop.Kind != StopMax || stop.Fit != 10 || len(steps) != 4 || steps[3].Desktops != 10 || m.n != 10 {
		t.Errorf("max: %+v after %d steps, %d desktops", stop, len(steps), m.n)
	}
	if s := steps[1]; s.HostPerDesktop != 100 || s.MemAvailable != 100000-600 || s.Memory.PerDesktop.Pss != 50 || s.Slowest != 5 {
		t.Errorf("step 2: %+v", s)
	}
	if len(m.waits) != 4 || m.waits[0] != time.Second {
		t.Errorf("settles %v", m.waits)
	}

	// The floor: 1000 + 5 desktops of 100 leave 1500 - 500 = 1000; the
	// sixth would cross it. The guess (150) lets only 3 into the first
	// step's room of 1500-1000: a step of 3 at most 500/150 = 3.
	m = &fakeMachine{avail: 1500, cost: 100, latency: fast}
	steps, stop = runRampOn(t, m, cfg)
	if stop.Kind != StopMemory || stop.Fit != 5 || m.n != 5 || steps[len(steps)-1].Desktops != 5 {
		t.Errorf("floor: %+v, %d desktops, steps %+v", stop, m.n, steps)
	}
	if !strings.Contains(stop.Reason, "below the floor of") {
		t.Errorf("floor reason %q", stop.Reason)
	}
	if m.avail < cfg.Floor {
		t.Errorf("the ramp took MemAvailable to %d, below the floor %d", m.avail, cfg.Floor)
	}

	// Latency: from 7 desktops on, screenshots take 2 s: the step of 9
	// fails, 6 fit.
	m = &fakeMachine{avail: 100000, cost: 100, latency: func(n int) time.Duration {
		if n >= 7 {
			return 2 * time.Second
		}
		return fast(n)
	}}
	steps, stop = runRampOn(t, m, cfg)
	if stop.Kind != StopLatency || stop.Fit != 6 || len(steps) != 3 || !strings.Contains(stop.Reason, "9th answered GET /screenshot in") {
		t.Errorf("latency: %+v after %d steps", stop, len(steps))
	}

	// A desktop that does not come up stops the ramp at the last step.
	m = &fakeMachine{avail: 100000, cost: 100, latency: fast, failAt: 5}
	steps, stop = runRampOn(t, m, cfg)
	if stop.Kind != StopFailed || stop.Fit != 3 || len(steps) != 1 || !strings.Contains(stop.Reason, "no ready") {
		t.Errorf("failure: %+v after %d steps", stop, len(steps))
	}

	// An ended context is the run's error, not a stop.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	m = &fakeMachine{avail: 100000, cost: 100, latency: fast}
	if _, _, err := ramp(ctx, cfg, m.env(), 0, m.avail, false, time.Now(), func(RampStep) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ramp: %v", err)
	}
}

// A ramp that goes on from desktops already up (with merging) counts from
// them and keeps the first baseline.
func TestRampGoesOn(t *testing.T) {
	m := &fakeMachine{avail: 10000, cost: 100, latency: fast, n: 4}
	cfg := rampConfig{Max: 8, Step: 2, Limit: time.Second, Floor: 0, Guess: 100, Parallel: 1}
	steps, stop, err := ramp(context.Background(), cfg, m.env(), 4, 10400, true, time.Now(), func(RampStep) {})
	if err != nil {
		t.Fatal(err)
	}
	if stop.Kind != StopMax || stop.Fit != 8 || len(steps) != 2 || !steps[0].KSM || steps[0].Desktops != 6 || steps[1].HostPerDesktop != 100 {
		t.Errorf("%+v %+v", stop, steps)
	}
}

func writeKSM(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readKSM(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestKSMStartRestore(t *testing.T) {
	dir := t.TempDir()
	writeKSM(t, dir, map[string]string{"run": "0", "pages_to_scan": "100", "sleep_millisecs": "20", "pages_shared": "12",
		"pages_sharing": "340", "pages_unshared": "5", "full_scans": "7", "general_profit": "1351680"})
	k := ksmfs{dir}
	c, err := k.counters()
	if err != nil || c != (KSMCounters{PagesShared: 12, PagesSharing: 340, PagesUnshared: 5, FullScans: 7, GeneralProfit: 1351680}) {
		t.Errorf("counters %+v %v", c, err)
	}
	was, err := k.start(2000, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"run": "1", "pages_to_scan": "2000", "sleep_millisecs": "10"} {
		if got := readKSM(t, dir, name); got != want {
			t.Errorf("started: %s = %s, want %s", name, got, want)
		}
	}
	if err := k.restore(was); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"run": "0", "pages_to_scan": "100", "sleep_millisecs": "20"} {
		if got := readKSM(t, dir, name); got != want {
			t.Errorf("restored: %s = %s, want %s", name, got, want)
		}
	}

	// A control that cannot be written puts back those written before it.
	if err := os.Remove(filepath.Join(dir, "run")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := k.start(2000, 10*time.Millisecond); err == nil {
		t.Error("start with an unreadable run")
	}
	if err := os.Remove(filepath.Join(dir, "run")); err != nil {
		t.Fatal(err)
	}
	writeKSM(t, dir, map[string]string{"run": "0"})
	// run is a file again but pages_to_scan a directory: the rate written
	// first (sleep_millisecs) is put back.
	if err := os.Remove(filepath.Join(dir, "pages_to_scan")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "pages_to_scan"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := k.start(2000, 10*time.Millisecond); err == nil {
		t.Error("start with an unreadable pages_to_scan")
	}
	if got := readKSM(t, dir, "sleep_millisecs"); got != "20" {
		t.Errorf("after a failed start sleep_millisecs = %s, want 20 again", got)
	}
	if got := readKSM(t, dir, "run"); got != "0" {
		t.Errorf("after a failed start run = %s", got)
	}
}

func TestKsmdCPU(t *testing.T) {
	h := newFakeHost(t)
	h.addProc("1", "init", "5", "5", "1", "10")
	h.addProc("57", "ksmd", "300", "1200", "3", "0")
	pid, err := procfs{h.proc}.ksmdPID()
	if err != nil || pid != 57 {
		t.Fatalf("ksmd pid %d %v, want 57", pid, err)
	}
	cpu, err := procfs{h.proc}.ksmdCPU(pid)
	if err != nil || cpu != 15*time.Second {
		t.Errorf("ksmd cpu %v %v", cpu, err)
	}
	if _, err := (procfs{t.TempDir()}).ksmdPID(); err == nil {
		t.Error("ksmd found in an empty /proc")
	}
}

// The report shows each ramp's steps, where it stopped and why, what
// shares, and merging's savings and cost; the chart has both panels.
func TestDensityReport(t *testing.T) {
	mem := DensityMemory{PerDesktop: ProcMem{Procs: 15, Rss: 1100 << 10, Pss: 250 << 10, PssAnon: 170 << 10, PssFile: 54 << 10, PssShmem: 26 << 10},
		ByProcess: []MemProcRow{{Name: "chrome", Mem: ProcMem{Procs: 9, Rss: 980 << 10, Pss: 206 << 10}}}}
	r := &Report{Name: "d", Command: "drums bench --parts density", Machine: "test machine", Density: []DensityResult{{
		Workload: WorkloadChromium, Doc: "Chromium", Image: "osworld", Max: 100, Step: 5, Limit: time.Second, Floor: 2 << 20,
		Steps: []RampStep{{Desktops: 5, MemAvailable: 3 << 20, HostPerDesktop: 300 << 10, Memory: mem},
			{Desktops: 10, MemAvailable: 2500 << 10, HostPerDesktop: 290 << 10, Memory: mem, KSM: true}},
		Stop:    RampStop{Kind: StopMemory, Reason: "MemAvailable 3072 MiB: one more desktop", Fit: 5},
		KSMStop: &RampStop{Kind: StopLatency, Reason: "the 9th answered late", Fit: 8},
		KSM: &KSMResult{Desktops: 5, PagesToScan: 1000, Settled: true, Seconds: 60, After: KSMCounters{PagesSharing: 25600, FullScans: 4},
			AvailBefore: 3 << 20, AvailAfter: 3200 << 10, KsmdCPU: 6 * time.Second, Memory: mem,
			Scans: []KSMScan{{FullScans: 3, Seconds: 40, PagesSharing: 25600}}},
	}}}
	md := r.Markdown()
	for _, want := range []string{"### chromium", "- **5 desktops fit**: MemAvailable 3072 MiB", "- **with same-page merging, 8 fit**: the 9th answered late",
		"would hold about 10 more", "| 10 | on |", "| chrome | 9 | 980.0 MiB | **206.0 MiB**", "- saved: **100.0 MiB** (pages_sharing 25600",
		"MemAvailable 3072 → 3200 MiB (+128 MiB)", "ksmd used 6.0 s until merging settled (10% of one CPU over 60 s)", "| 3 | 40 s | 25600 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	svg := r.SVG()
	for _, want := range []string{"Density: desktops that fit", "8 (latency)", "5 (memory)", "Memory per desktop where each ramp stopped", "100.0 MiB saved"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}
