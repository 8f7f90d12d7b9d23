package compat

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// BenchFile is a latency benchmark file: requests timed against both
// servers on one desktop.
//
//	{"benchmarks": [{"name": "screenshot", "request": {...}, "expect": {"status": "200"}}]}
type BenchFile struct {
	Benchmarks []Benchmark `json:"benchmarks"`
}

// Benchmark is one request timed N times against each server, with the
// desktop prepared by Setup (as in a Case) and restored by Cleanup. Every
// answer of both servers must satisfy Expect, so that a fast failure is
// never timed as a fast answer.
type Benchmark struct {
	Name  string   `json:"name"`
	Doc   string   `json:"doc"`
	Needs []string `json:"needs,omitempty"`
	Setup []Action `json:"setup,omitempty"`
	// Each runs before every request, warm-up and timed, to either
	// server, outside the timed span: it changes the desktop so that no
	// request sees what the one before it saw (a new frame on the screen,
	// for a screenshot whose server would otherwise answer from a cache).
	Each    []Action `json:"each,omitempty"`
	Request Request  `json:"request"`
	// Expect maps a field of the normalised answer (see Normalize) to a
	// regular expression its whole value must match, e.g.
	// {"status": "200", "json.returncode": "0"}.
	Expect  map[string]string `json:"expect"`
	Cleanup []Action          `json:"cleanup,omitempty"`

	expect map[string]*regexp.Regexp
}

//go:embed latency.json
var builtinBench []byte

// BuiltinBenchmarks parses the embedded latency benchmarks (latency.json).
func BuiltinBenchmarks() ([]Benchmark, error) {
	return ParseBenchmarks(builtinBench, "latency.json")
}

// LoadBenchmarks reads a user's benchmark file.
func LoadBenchmarks(file string) ([]Benchmark, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read benchmark file: %w", err)
	}
	return ParseBenchmarks(data, file)
}

// ParseBenchmarks decodes and validates a benchmark file; unknown keys
// are errors, as in case files.
func ParseBenchmarks(data []byte, source string) ([]Benchmark, error) {
	var f BenchFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("parse %s: %w: %w", source, ErrBadCase, err)
	}
	if len(f.Benchmarks) == 0 {
		return nil, fmt.Errorf("parse %s: %w: no benchmarks", source, ErrBadCase)
	}
	seen := map[string]bool{}
	for i := range f.Benchmarks {
		b := &f.Benchmarks[i]
		if err := b.validate(); err != nil {
			return nil, fmt.Errorf("parse %s: benchmark %d (%s): %w", source, i, b.Name, err)
		}
		if seen[b.Name] {
			return nil, fmt.Errorf("parse %s: %w: benchmark name %q used twice", source, ErrBadCase, b.Name)
		}
		seen[b.Name] = true
	}
	return f.Benchmarks, nil
}

// Prepare readies d as b's setup does, after checking that d has what b
// needs: how another harness puts a desktop in the state a benchmark
// times (drums bench's step loop opens its application so).
func (b *Benchmark) Prepare(ctx context.Context, d Desktop) error {
	r := &runner{d: d}
	if err := r.needs(ctx, b.Needs); err != nil {
		return fmt.Errorf("prepare %s: %w", b.Name, err)
	}
	if err := r.actions(ctx, b.Setup, "setup"); err != nil {
		return fmt.Errorf("prepare %s: %w", b.Name, err)
	}
	return nil
}

// needs fails when d lacks one of the programs named.
func (r *runner) needs(ctx context.Context, programs []string) error {
	missing, err := r.missing(ctx, programs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("the desktop lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

// SelectBenchmarks keeps the benchmarks whose names match one of the globs.
func SelectBenchmarks(bs []Benchmark, globs []string) []Benchmark {
	var out []Benchmark
	for _, b := range bs {
		if matchAny(globs, b.Name) {
			out = append(out, b)
		}
	}
	return out
}

func (b *Benchmark) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadCase, fmt.Sprintf(format, a...))
	}
	if !caseName.MatchString(b.Name) {
		return bad("name %q must be lower-case letters, digits and ._/-", b.Name)
	}
	for i := range b.Setup {
		if err := b.Setup[i].validate(); err != nil {
			return bad("setup %d: %v", i, err)
		}
	}
	for i := range b.Each {
		if err := b.Each[i].validate(); err != nil {
			return bad("each %d: %v", i, err)
		}
	}
	for i := range b.Cleanup {
		if err := b.Cleanup[i].validate(); err != nil {
			return bad("cleanup %d: %v", i, err)
		}
	}
	st := Step{Request: b.Request}
	if err := st.validate(); err != nil {
		return bad("request: %v", err)
	}
	if b.Expect["status"] == "" {
		return bad("expect must at least name the status")
	}
	b.expect = map[string]*regexp.Regexp{}
	for field, pat := range b.Expect {
		re, err := regexp.Compile(`^(?s:` + pat + `)$`)
		if err != nil {
			return bad("expect %s: %v", field, err)
		}
		b.expect[field] = re
	}
	return nil
}

// check returns why an answer does not satisfy Expect, or "".
func (b *Benchmark) check(r Response) string {
	v := Normalize(Observation{Response: r}, Compare{})
	got := map[string]string{}
	for _, f := range v {
		got[f.Name] = f.Value
	}
	for _, field := range sortedKeys(b.expect) {
		val, ok := got[field]
		if !ok {
			return fmt.Sprintf("%s is absent (answer: %s)", field, clip(summary(v), 300))
		}
		if !b.expect[field].MatchString(val) {
			return fmt.Sprintf("%s is %s, expected %s (answer: %s)", field, clip(val, 200), b.Expect[field], clip(summary(v), 300))
		}
	}
	return ""
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// BenchOptions steer a latency run.
type BenchOptions struct {
	// N is the number of timed requests per server and benchmark.
	N int
	// Warmup requests per server are sent first and not timed (a first
	// AT-SPI walk dials every application; a first screenshot maps the
	// shared memory).
	Warmup int
	// Progress receives one line per benchmark (nil: silent).
	Progress io.Writer

	// now is the clock requests are timed by (nil: time.Now); a test's
	// clock shows what falls inside the timed span.
	now func() time.Time
}

// Stats summarises the latencies of one server on one benchmark.
type Stats struct {
	N      int           `json:"n"`
	Median time.Duration `json:"median_ns"`
	P95    time.Duration `json:"p95_ns"`
	Min    time.Duration `json:"min_ns"`
	Max    time.Duration `json:"max_ns"`
}

// NewStats computes the median and the 95th percentile (nearest rank:
// the smallest sample at or above 95% of the samples) of d.
func NewStats(d []time.Duration) Stats {
	if len(d) == 0 {
		return Stats{}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	median := s[n/2]
	if n%2 == 0 {
		median = (s[n/2-1] + s[n/2]) / 2
	}
	rank := int(math.Ceil(0.95*float64(n))) - 1
	return Stats{N: n, Median: median, P95: s[rank], Min: s[0], Max: s[n-1]}
}

// BenchResult is one benchmark's outcome.
type BenchResult struct {
	Name     string `json:"name"`
	Doc      string `json:"doc"`
	Method   string `json:"method"`
	Path     string `json:"path"`
	Request  string `json:"request"`
	Upstream Stats  `json:"upstream"`
	Guestd   Stats  `json:"guestd"`
	// LoadBefore and LoadAfter are the host's 1-minute load averages.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// MedianRatio is upstream's median over guestd's: how many times faster
// guestd answers.
func (b BenchResult) MedianRatio() float64 { return ratio(b.Upstream.Median, b.Guestd.Median) }

// P95Ratio is the same for the 95th percentile.
func (b BenchResult) P95Ratio() float64 { return ratio(b.Upstream.P95, b.Guestd.P95) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// BenchReport is a latency run: the machine it ran on and every result.
type BenchReport struct {
	Started  time.Time     `json:"started"`
	Command  string        `json:"command,omitempty"`
	Desktop  string        `json:"desktop,omitempty"`
	Machine  string        `json:"machine"`
	N        int           `json:"n"`
	Warmup   int           `json:"warmup"`
	Results  []BenchResult `json:"results"`
	Upstream string        `json:"upstream"`
	Guestd   string        `json:"guestd"`
}

// Bench times every benchmark on d: setup, Warmup untimed requests per
// server, then N rounds of one request to each server, alternating which
// goes first so that both share the desktop's and the host's noise, then
// cleanup. The benchmark's Each actions run before every request, untimed. A desktop whose URL(Upstream) is "" has guestd alone (no
// upstream tree on this host): guestd is timed and the upstream figures
// stay zero. Each request opens a new connection, as OSWorld's clients do
// (requests.post without a session), and is timed from the dial to the
// last byte of the body. A failed setup or an answer that does not match
// Expect fails the run: numbers of a broken request mean nothing.
func Bench(ctx context.Context, d Desktop, bs []Benchmark, opts BenchOptions) (*BenchReport, error) {
	if opts.N < 1 {
		return nil, fmt.Errorf("bench: %w: N must be at least 1", ErrBadCase)
	}
	for i := range bs {
		// Expectations are compiled here too: a Benchmark made in Go
		// rather than parsed would otherwise accept every answer.
		if err := bs[i].validate(); err != nil {
			return nil, fmt.Errorf("bench %s: %w", bs[i].Name, err)
		}
	}
	r := &runner{d: d, client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	rep := &BenchReport{Started: time.Now().UTC(), Machine: MachineInfo(), N: opts.N, Warmup: opts.Warmup,
		Upstream: d.URL(Upstream), Guestd: d.URL(Guestd)}
	for i := range bs {
		b := &bs[i]
		res, err := r.bench(ctx, b, opts)
		if err != nil {
			return nil, fmt.Errorf("bench %s: %w", b.Name, err)
		}
		rep.Results = append(rep.Results, res)
		if opts.Progress != nil {
			if res.Upstream.N == 0 {
				fmt.Fprintf(opts.Progress, "[%d/%d] %-32s guestd %s / %s (median / p95)\n",
					i+1, len(bs), b.Name, Millis(res.Guestd.Median), Millis(res.Guestd.P95))
				continue
			}
			fmt.Fprintf(opts.Progress, "[%d/%d] %-32s upstream %s / %s, guestd %s / %s (median / p95), %.1fx faster\n",
				i+1, len(bs), b.Name, Millis(res.Upstream.Median), Millis(res.Upstream.P95), Millis(res.Guestd.Median), Millis(res.Guestd.P95), res.MedianRatio())
		}
	}
	return rep, nil
}

func (r *runner) bench(ctx context.Context, b *Benchmark, opts BenchOptions) (res BenchResult, err error) {
	res = BenchResult{Name: b.Name, Doc: b.Doc, Method: b.Request.Method, Path: b.Request.Path, Request: describeRequest(&b.Request)}
	if err := r.needs(ctx, b.Needs); err != nil {
		return res, err
	}
	defer func() {
		if cerr := r.actions(ctx, b.Cleanup, "cleanup"); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := r.actions(ctx, b.Setup, "setup"); err != nil {
		return res, err
	}
	servers := []Server{Upstream, Guestd}
	if r.d.URL(Upstream) == "" {
		servers = []Server{Guestd}
	}
	now := opts.now
	if now == nil {
		now = time.Now
	}
	timed := map[Server][]time.Duration{}
	res.LoadBefore = LoadAverages(1)
	for round := 0; round < opts.Warmup+opts.N; round++ {
		for k := range servers {
			s := servers[(round+k)%len(servers)] // upstream first in even rounds, guestd in odd ones
			if err := r.actions(ctx, b.Each, "each"); err != nil {
				return res, fmt.Errorf("%s, round %d: %w", s, round+1, err)
			}
			start := now()
			resp := send(ctx, r.client, r.d.URL(s), &b.Request)
			took := now().Sub(start)
			if why := b.check(resp); why != "" {
				return res, fmt.Errorf("%s, round %d: %s", s, round+1, why)
			}
			if round >= opts.Warmup {
				timed[s] = append(timed[s], took)
			}
		}
	}
	res.LoadAfter = LoadAverages(1)
	res.Upstream, res.Guestd = NewStats(timed[Upstream]), NewStats(timed[Guestd])
	return res, nil
}

// Markdown renders the report: what was run where, then the table.
func (rep *BenchReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- command: `%s`\n", rep.Command)
	fmt.Fprintf(&b, "- date: %s\n", rep.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s\n", rep.Machine)
	if rep.Desktop != "" {
		fmt.Fprintf(&b, "- desktop: %s\n", rep.Desktop)
	}
	if rep.Upstream == "" {
		fmt.Fprintf(&b, "- guestd alone (no upstream tree: %s and %s unset): %d timed requests per row after %d untimed, a new connection per request\n\n", EnvUpstream, EnvUpstreamPythonPath, rep.N, rep.Warmup)
	} else {
		fmt.Fprintf(&b, "- %d timed requests per server and row after %d untimed, interleaved (upstream first in even rounds, guestd first in odd ones), a new connection per request\n\n", rep.N, rep.Warmup)
	}
	b.WriteString("| request | upstream median | upstream p95 | guestd median | guestd p95 | ratio median | ratio p95 | load 1 min (before → after) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Results {
		label := "`" + r.Method + " " + r.Path + "`"
		if r.Doc != "" {
			label += ", " + r.Doc
		}
		up, upP95, ratio, ratioP95 := "—", "—", "—", "—"
		if r.Upstream.N > 0 {
			up, upP95 = Millis(r.Upstream.Median), Millis(r.Upstream.P95)
			ratio, ratioP95 = fmt.Sprintf("**%.1fx**", r.MedianRatio()), fmt.Sprintf("%.1fx", r.P95Ratio())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s → %s |\n",
			label, up, upP95, Millis(r.Guestd.Median), Millis(r.Guestd.P95), ratio, ratioP95, r.LoadBefore, r.LoadAfter)
	}
	b.WriteString("\nratio = upstream / guestd (how many times faster guestd answers). The requests as sent:\n\n")
	for _, r := range rep.Results {
		fmt.Fprintf(&b, "- %s: `%s`\n", r.Name, r.Request)
	}
	return b.String()
}

// Millis renders a duration in milliseconds with a precision that suits it.
func Millis(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 1:
		return fmt.Sprintf("%.2f ms", v)
	case v < 100:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// LoadAverages are the host's load averages over 1, 5 and 15 minutes
// joined by spaces (only the first n), or "?" where /proc lacks them.
func LoadAverages(n int) string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= n {
		return strings.Join(f[:n], " ")
	}
	return "?"
}

// MachineInfo describes the host for a benchmark record: Machine and the
// load averages now.
func MachineInfo() string {
	return fmt.Sprintf("%s, load average %s at the start", Machine(), LoadAverages(3))
}

// Machine describes the host: CPU model and count, memory, kernel and Go
// version.
func Machine() string {
	cpu := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := "?"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(data), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	kernel := "?"
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("%d × %s, %s RAM, kernel %s, %s", runtime.NumCPU(), cpu, mem, kernel, runtime.Version())
}
