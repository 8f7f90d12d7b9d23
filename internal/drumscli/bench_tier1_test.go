//go:build linux

package drumscli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/bench"
	"github.com/drums-dev/drums/internal/testimage"
)

// Tier 1: drums bench, tiny (one light desktop, one step desktop for 2 s,
// one latency benchmark), writes its Markdown, chart and JSON with real
// numbers, and leaves no desktop behind. Against upstream main.py when
// DRUMS_UPSTREAM and DRUMS_UPSTREAM_PYTHONPATH are set, drums alone
// otherwise (the report says which). No timing is asserted.
func TestTier1Bench(t *testing.T) {
	bin := needDesktops(t)
	// Upstream's /accessibility asks LibreOffice its version, which the
	// osworld image has.
	image := "core"
	_, noUpstream := compat.UpstreamFromEnv()
	if noUpstream == nil {
		image = "osworld"
		testimage.NeedImages(t, image)
	}
	engine := benchEngine(t)
	out := t.TempDir()
	r := mainIn(t, append([]string{"bench", "--out", out, "--name", "tiny", "--image", image, "--light-image", "core",
		"--guestd", filepath.Join(bin, "guestd"), "--sessions", "1", "--idle", "0s", "--latency-run", "cursor_position",
		"--latency-n", "2", "--latency-warmup", "1", "--step-desktops", "1", "--step-duration", "2s", "--step-setup", "none"}, engine...)...)
	if r.status != 0 {
		t.Fatalf("drums bench: %+v", r)
	}
	for _, line := range []string{"create-to-ready  n=1 ", "cursor_position", "steps 1 desktop    guestd", "wrote " + filepath.Join(out, "tiny.svg")} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("the table lacks %q:\n%s", line, r.stdout)
		}
	}

	data, err := os.ReadFile(filepath.Join(out, "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	s := rep.Sessions
	if s == nil || s.Create.Median <= 0 || s.Reset.Median <= 0 || s.Remove.Median <= 0 || len(s.PSS) != 1 || s.PSS[0] <= 0 || len(s.InitSteps) == 0 {
		t.Errorf("sessions: %+v", s)
	}
	if l := rep.Latency; l == nil || len(l.Results) != 1 || l.Results[0].Guestd.N != 2 || l.Results[0].Guestd.Median <= 0 {
		t.Errorf("latency: %+v", l)
	}
	servers := 2
	if noUpstream != nil {
		servers = 1
	}
	if len(rep.Steps) != servers {
		t.Fatalf("%d step rows, want %d (upstream: %v)", len(rep.Steps), servers, noUpstream)
	}
	for _, row := range rep.Steps {
		if row.Steps == 0 || row.StepsPerSecond <= 0 || row.Step.Median <= 0 || !row.CPUMeasured || row.CPUPerStep <= 0 || len(row.Procs) == 0 {
			t.Errorf("step row %+v", row)
		}
	}

	md, err := os.ReadFile(filepath.Join(out, "tiny.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- machine: ", "- load average (1, 5, 15 min): ", "- command: `drums bench --out " + out, "![drums bench](tiny.svg)",
		"| create-to-ready (guestd answers `GET /screenshot` with a PNG) | **", "| drums (guestd) | 1 | **"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("tiny.md lacks %q:\n%s", want, md)
		}
	}
	if noUpstream != nil && !strings.Contains(string(md), "drums alone") {
		t.Errorf("tiny.md does not say drums ran alone:\n%s", md)
	}
	svg, err := os.ReadFile(filepath.Join(out, "tiny.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(svg), "<svg ") || !strings.Contains(string(svg), "RL step loop: steps per second per desktop") ||
		!strings.Contains(string(svg), "Machine: ") {
		t.Errorf("tiny.svg: %.300s", svg)
	}
}

// benchEngine is the engine flags of a drums bench run under a prefix of
// its own, checked for leftovers at cleanup.
func benchEngine(t *testing.T) []string {
	prefix, dir, lock := startRun(t, "zb")
	engine := []string{"--prefix", prefix, "--state-dir", filepath.Join(dir, "state"), "--image-dir", testimage.ImageDir()}
	t.Cleanup(func() {
		// drums bench removes its desktops and sweeps; this is for a run
		// that failed before it could.
		var ids []struct{ ID string }
		if r := mainIn(t, append([]string{"session", "ls", "--json"}, engine...)...); r.status == 0 && json.Unmarshal([]byte(r.stdout), &ids) == nil {
			for _, s := range ids {
				t.Errorf("drums bench left session %s", s.ID)
				mainIn(t, append(append([]string{"session", "rm"}, engine...), s.ID)...)
			}
		}
		if r := mainIn(t, append([]string{"sweep"}, engine...)...); r.status != 0 || r.stdout != "nothing to sweep\n" {
			t.Errorf("sweep after drums bench: %+v", r)
		}
		lock.Close()
		os.RemoveAll(dir)
	})
	return engine
}

// Tier 1: the density part at two desktops of Chromium and two light ones,
// with same-page merging: every figure is measured, the report has them,
// and the host's KSM settings are as they were after the run.
func TestTier1BenchDensity(t *testing.T) {
	bin := needDesktops(t)
	testimage.NeedImages(t, "osworld")
	const ksmDir = "/sys/kernel/mm/ksm"
	ksmSettings := func() string {
		var b strings.Builder
		for _, f := range []string{"run", "pages_to_scan", "sleep_millisecs"} {
			v, err := os.ReadFile(filepath.Join(ksmDir, f))
			if err != nil {
				t.Fatalf("this kernel's KSM: %v", err)
			}
			fmt.Fprintf(&b, "%s=%s ", f, strings.TrimSpace(string(v)))
		}
		return b.String()
	}
	before := ksmSettings()
	engine := benchEngine(t)
	out := t.TempDir()
	r := mainIn(t, append([]string{"bench", "--parts", "density", "--out", out, "--name", "density", "--guestd", filepath.Join(bin, "guestd"),
		"--density", "chromium=2:2,idle=2:2", "--density-settle", "0s", "--ksm", "--ksm-time", "20s", "--ksm-pages-to-scan", "5000"}, engine...)...)
	if r.status != 0 {
		t.Fatalf("drums bench: %+v", r)
	}
	if after := ksmSettings(); after != before {
		t.Errorf("KSM settings %s after the run, %s before", after, before)
	}
	for _, line := range []string{"density chromium    2 desktops: screenshot p50", "density idle      2 desktops fit: reached", "ksm     chromium  2 desktops: "} {
		if !strings.Contains(r.stdout, line) {
			t.Errorf("the table lacks %q:\n%s", line, r.stdout)
		}
	}
	data, err := os.ReadFile(filepath.Join(out, "density.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Density) != 2 {
		t.Fatalf("%d density ramps, want 2", len(rep.Density))
	}
	for _, d := range rep.Density {
		if d.Stop.Kind != bench.StopMax || d.Stop.Fit != 2 || len(d.Steps) != 1 {
			t.Errorf("%s: stop %+v after %d steps", d.Workload, d.Stop, len(d.Steps))
			continue
		}
		s := d.Steps[0]
		m := s.Memory.PerDesktop
		if s.Screenshot.N != 2 || s.Screenshot.Median <= 0 || m.Pss <= 0 || m.Rss < m.Pss || m.PssAnon <= 0 || m.PssFile <= 0 || len(s.Memory.ByProcess) < 5 {
			t.Errorf("%s: step %+v", d.Workload, s)
		}
		if d.Workload == bench.WorkloadChromium && !slices.ContainsFunc(s.Memory.ByProcess, func(p bench.MemProcRow) bool { return p.Name == "chrome" }) {
			t.Errorf("chromium desktops without chrome: %+v", s.Memory.ByProcess)
		}
		k := d.KSM
		if k == nil || k.Desktops != 2 || k.After.FullScans <= k.Before.FullScans || k.KsmdCPU <= 0 || k.Screenshot.N != 2 || k.Memory.PerDesktop.Pss <= 0 {
			t.Errorf("%s: ksm %+v", d.Workload, k)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "density.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Density: desktops with applications that fit", "### chromium", "- **2 desktops fit**: ", "What shares and what does not",
		"Same-page merging over the 2 desktops up", "- machine: "} {
		if !strings.Contains(string(md), want) {
			t.Errorf("density.md lacks %q:\n%s", want, md)
		}
	}
	if svg, err := os.ReadFile(filepath.Join(out, "density.svg")); err != nil || !strings.Contains(string(svg), "Density: desktops that fit") {
		t.Errorf("density.svg: %v %.300s", err, svg)
	}
}
