package provider

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden from the current output")

// TestMetricsExposition scrapes /metrics of a daemon in which every drums_
// series has a sample and compares what a Prometheus server would read of
// it (each family's name, type, help and label names, and every sample's
// labels and value) with testdata/metrics.golden. The golden file was
// written from the hand-written exposition text the daemon served before
// it used client_golang, so the switch kept every name, type, label and
// help text, and the values. Families outside drums_ (the Go runtime's
// and the process's) are not in it.
func TestMetricsExposition(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	met := h.srv.m.met
	// Durations on bucket bounds and between them: a bound is inclusive.
	for i, source := range []string{"warm", "cold"} {
		met.lease.observe(source, time.Millisecond)
		met.lease.observe(source, time.Duration(i+3)*time.Second)
	}
	for i, mode := range []string{"swap", "reset", "create"} {
		met.revert.observe(mode, time.Duration(i+1)*70*time.Millisecond)
	}
	met.create.observe("", 120*time.Second) // above the last bound: +Inf only
	met.reset.observe("", 250*time.Millisecond)
	met.expired.Add(1)
	met.expired.Add(1)
	for _, op := range []string{"lease", "revert", "revert", "warm-desktop-died"} {
		met.failure(op)
	}
	families := parseMetrics(t, metricsText(t, h))
	got := renderFamilies(families, "drums_")
	golden := filepath.Join("testdata", "metrics.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read %s (go test -run TestMetricsExposition -update writes it): %v", golden, err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("/metrics differs from %s (-want +got):\n%s", golden, d)
	}
	// Beside drums' own series: the Go runtime's and the process's.
	for _, name := range []string{"go_goroutines", "go_memstats_heap_alloc_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if families[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
}

// TestMetricsLabelEscaping: a label value with the characters the text
// format escapes, and a tab, which it does not (Go's %q, which the
// hand-written text used, wrote it as \t: a line Prometheus rejects),
// reads back unchanged.
func TestMetricsLabelEscaping(t *testing.T) {
	h := start(t, testConfig(t.TempDir()), newFakeEngine())
	op := "quote\" backslash\\ newline\n tab\t é"
	h.srv.m.met.failure(op)
	f := parseMetrics(t, metricsText(t, h))["drums_failures_total"]
	if f == nil || len(f.GetMetric()) != 1 {
		t.Fatalf("drums_failures_total: %v", f)
	}
	if l := f.GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetValue() != op || f.GetMetric()[0].GetCounter().GetValue() != 1 {
		t.Errorf("failure %q read back as %v", op, f.GetMetric()[0])
	}
}

// parseMetrics reads the text exposition format as Prometheus does; a
// malformed line, a sample without its family or a repeated family fails.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("parse /metrics: %v\n%s", err, text)
	}
	return families
}

// renderFamilies writes the families whose names start with prefix, one
// block each in name order: "# name type [label,names] help", then one line
// per sample (a histogram's buckets in order, its sum and count), the
// samples ordered by their labels.
func renderFamilies(families map[string]*dto.MetricFamily, prefix string) string {
	var names []string
	for name := range families {
		if strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	for _, name := range names {
		f := families[name]
		labels := map[string]bool{}
		var series [][]string // per sample: its lines, buckets in order
		for _, m := range f.GetMetric() {
			var lines []string
			var pairs []string
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
				pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(pairs)
			ls := strings.Join(pairs, ",")
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				lines = append(lines, fmt.Sprintf("%s{%s} %g", name, ls, m.GetCounter().GetValue()))
			case dto.MetricType_GAUGE:
				lines = append(lines, fmt.Sprintf("%s{%s} %g", name, ls, m.GetGauge().GetValue()))
			case dto.MetricType_HISTOGRAM:
				hist := m.GetHistogram()
				for _, bk := range hist.GetBucket() {
					lines = append(lines, fmt.Sprintf("%s_bucket{%s} le=%g %d", name, ls, bk.GetUpperBound(), bk.GetCumulativeCount()))
				}
				lines = append(lines, fmt.Sprintf("%s_sum{%s} %g", name, ls, hist.GetSampleSum()),
					fmt.Sprintf("%s_count{%s} %d", name, ls, hist.GetSampleCount()))
			default:
				lines = append(lines, fmt.Sprintf("%s{%s} unexpected type %s", name, ls, f.GetType()))
			}
			series = append(series, lines)
		}
		slices.SortFunc(series, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		var ln []string
		for l := range labels {
			ln = append(ln, l)
		}
		slices.Sort(ln)
		fmt.Fprintf(&b, "# %s %s [%s] %s\n", name, strings.ToLower(f.GetType().String()), strings.Join(ln, ","), f.GetHelp())
		for _, lines := range series {
			for _, l := range lines {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}
