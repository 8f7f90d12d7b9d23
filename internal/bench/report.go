package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/drums-dev/drums/compat"
)

// Stamp is when a part ran and the host's 1-minute load average before
// and after it.
type Stamp struct {
	Date       time.Time `json:"date"`
	Seconds    float64   `json:"seconds"`
	LoadBefore string    `json:"load_before"`
	LoadAfter  string    `json:"load_after"`
}

func (s *Stamp) begin() { s.Date, s.LoadBefore = time.Now().UTC(), compat.LoadAverages(1) }
func (s *Stamp) end() {
	s.LoadAfter, s.Seconds = compat.LoadAverages(1), time.Since(s.Date).Seconds()
}

// Report is a run of drums bench: where and how it ran, and each part's
// figures (nil or empty: the part did not run).
type Report struct {
	Name      string    `json:"-"`
	Started   time.Time `json:"started"`
	Command   string    `json:"command"`
	Machine   string    `json:"machine"`
	LoadStart string    `json:"load_start"`
	LoadEnd   string    `json:"load_end"`
	// Upstream describes where main.py came from; "" when drums ran
	// alone, NoUpstream saying why.
	Upstream   string               `json:"upstream,omitempty"`
	NoUpstream string               `json:"no_upstream,omitempty"`
	Sessions   *SessionsResult      `json:"sessions,omitempty"`
	Density    []DensityResult      `json:"density,omitempty"`
	Latency    *compat.BenchReport  `json:"latency,omitempty"`
	Steps      []StepRow            `json:"steps,omitempty"`
	StepLoop   *StepLoopDescription `json:"step_loop,omitempty"`
}

// StepLoopDescription says when and how the step loop ran.
type StepLoopDescription struct {
	Stamp
	Loop     float64  `json:"loop_seconds"`
	Rounds   int      `json:"rounds"`
	Requests []string `json:"requests"`
	// Setup says what each desktop has open.
	Setup string `json:"setup"`
	// UpstreamMax, if positive, is the largest count stepped against
	// upstream too (Config.StepUpstreamMax).
	UpstreamMax int `json:"upstream_max,omitempty"`
}

// Write writes the report as Name.md, Name.svg and Name.json into dir,
// creating it.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the report: %w", err)
	}
	for ext, content := range map[string][]byte{".md": []byte(r.Markdown()), ".svg": []byte(r.SVG()), ".json": append(data, '\n')} {
		if err := os.WriteFile(filepath.Join(dir, r.Name+ext), content, 0o644); err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
	}
	return nil
}

// ReadReport reads a report that Write wrote as JSON.
func ReadReport(file string) (*Report, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse report %s: %w", file, err)
	}
	return &r, nil
}

// serverName is how a server is named in the report.
func serverName(s string) string {
	if s == string(compat.Upstream) {
		return "upstream main.py"
	}
	return "drums (guestd)"
}

// Markdown renders the report: how it ran, the chart, then each part's
// tables with its own date and load.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# drums bench\n\n")
	fmt.Fprintf(&b, "- command: `%s`\n", r.Command)
	fmt.Fprintf(&b, "- date: %s\n", r.Started.Format(time.RFC3339))
	fmt.Fprintf(&b, "- machine: %s\n", r.Machine)
	fmt.Fprintf(&b, "- load average (1, 5, 15 min): %s at the start, %s at the end\n", r.LoadStart, r.LoadEnd)
	if r.Upstream != "" {
		fmt.Fprintf(&b, "- upstream: %s, in the same desktops as guestd\n", r.Upstream)
	} else {
		fmt.Fprintf(&b, "- upstream: none (%s); drums alone\n", r.NoUpstream)
	}
	fmt.Fprintf(&b, "\n![drums bench](%s.svg)\n", r.Name)
	if s := r.Sessions; s != nil {
		s.markdown(&b)
	}
	if len(r.Density) > 0 {
		densityMarkdown(&b, r.Density)
	}
	if r.Latency != nil {
		b.WriteString("\n## Request latency, one desktop\n\n")
		b.WriteString(r.Latency.Markdown())
	}
	if len(r.Steps) > 0 {
		r.stepsMarkdown(&b)
	}
	return b.String()
}

func stampLine(s Stamp) string {
	return fmt.Sprintf("%s, %.0f s, load average (1 min) %s → %s", s.Date.Format(time.RFC3339), s.Seconds, s.LoadBefore, s.LoadAfter)
}

func (s *SessionsResult) markdown(b *strings.Builder) {
	b.WriteString("\n## Sessions: create, reset, remove, idle memory\n\n")
	fmt.Fprintf(b, "- %s\n", stampLine(s.Stamp))
	fmt.Fprintf(b, "- %s from the `%s` image (1920x1080, nothing open), created one after the other, idle %s with all of them up, reset one after the other, removed one after the other: what `sessions`' BenchmarkLifecycle measures, through the engine's public API\n\n", plural(s.Desktops, "desktop"), s.Image, s.Idle)
	b.WriteString("| what | median | p95 | min | max |\n|---|---|---|---|---|\n")
	type row struct {
		what string
		st   *compat.Stats
	}
	rows := []row{{"create-to-ready (guestd answers `GET /screenshot` with a PNG)", &s.Create}}
	if s.SpacedCreate != nil {
		rows = append(rows, row{"create-to-ready, spaced: each once the spares are up", s.SpacedCreate})
	}
	rows = append(rows, row{"reset-to-ready, same id and address", &s.Reset})
	if s.SpacedReset != nil {
		rows = append(rows, row{"reset-to-ready, spaced: each once every standby is up", s.SpacedReset})
	}
	for _, r := range append(rows, row{"remove", &s.Remove}) {
		fmt.Fprintf(b, "| %s | **%s** | %s | %s | %s |\n", r.what, compat.Millis(r.st.Median), compat.Millis(r.st.P95), compat.Millis(r.st.Min), compat.Millis(r.st.Max))
	}
	if s.Standby {
		fmt.Fprintf(b, "\nThe engine kept standbys (`--standby`): every create and reset was followed by the start of the desktop's next incarnation in the background, %d of %d resets one after the other took it (the others started cold), each beside the start of the standby the reset before left; the spaced resets, one after the other again, came each once every standby was up (as when an episode outlasts a desktop's start); the idle memory below counts each desktop's standby.\n", s.StandbyResets, s.Reset.N)
	}
	if s.Spares > 0 {
		fmt.Fprintf(b, "\nThe engine kept %s of the default request (`--spares %d`), desktops started ahead with no network for creates to take: the creates one after the other started once the spares were up, and %d of %d took one (%s; the others started cold, beside the start of the spare the take before left); the spaced creates came each once the spares were up again (as when creates come further apart than a desktop's start), each took one, and each desktop was removed again at once. The idle memory below does not count the spares.\n",
			plural(s.Spares, "spare"), s.Spares, len(s.SpareCreates), s.Create.N, ordinals(s.SpareCreates))
	}
	if len(s.InitSteps) > 0 {
		b.WriteString("\nInit steps of a create (median ms since init started")
		if s.Spares > 0 {
			b.WriteString("; of the creates that started cold only: a spare's start logs none")
		}
		b.WriteString("):")
		for _, st := range s.InitSteps {
			fmt.Fprintf(b, " %s %.1f", st.Name, st.Ms)
		}
		b.WriteString(".\n")
	}
	if len(s.PSS) > 0 {
		fmt.Fprintf(b, "\nIdle memory, %s up for %s: **%.1f MiB** PSS per desktop (summed over its processes; min %.1f, max %.1f); the host's MemAvailable fell by %.1f MiB per desktop.\n\n",
			plural(s.Desktops, "desktop"), s.Idle, mib(s.meanPSS()), mib(slices.Min(s.PSS)), mib(slices.Max(s.PSS)), mib(s.HostPerDesktop))
		b.WriteString("| process | PSS per desktop |\n|---|---|\n")
		for _, p := range s.ByProcess {
			fmt.Fprintf(b, "| %s | %.1f MiB |\n", p.Name, mib(p.KiB))
		}
	}
}

func (r *Report) stepsMarkdown(b *strings.Builder) {
	b.WriteString("\n## RL step loop\n\n")
	if d := r.StepLoop; d != nil {
		fmt.Fprintf(b, "- %s\n\n", stampLine(d.Stamp))
		fmt.Fprintf(b, "Each desktop (1920x1080, %s) loops, as fast as it is answered, for %.0f s per loop (%d rounds per server, alternating which server goes first, after one untimed step on every desktop), a new connection per request:\n\n", d.Setup, d.Loop, d.Rounds)
		for _, q := range d.Requests {
			fmt.Fprintf(b, "- %s\n", q)
		}
		if d.UpstreamMax > 0 {
			fmt.Fprintf(b, "\nUpstream main.py steps on up to %s only; larger counts step drums alone, on desktops brought up without main.py beside the first %d, whose main.py stays up, idle.\n", plural(d.UpstreamMax, "desktop"), d.UpstreamMax)
		}
		b.WriteString("\nAll desktops step at once. CPU per step is what every process of the desktops used (their cgroups: Xvfb, the buses, openbox, both servers) over the steps; client, what this process (the loop's HTTP client, on the same machine) used.\n\n")
	}
	b.WriteString("| server | desktops | steps/s | per desktop (slowest–fastest) | step p50 | step p95 |")
	for _, q := range r.Steps[0].Requests {
		fmt.Fprintf(b, " %s p50 / p95 |", q.Name)
	}
	b.WriteString(" CPU per step | client CPU per step | errors | load 1 min |\n|---|---|---|---|---|---|")
	b.WriteString(strings.Repeat("---|", len(r.Steps[0].Requests)+4) + "\n")
	for _, s := range r.Steps {
		fmt.Fprintf(b, "| %s | %d | **%.1f** | %.1f (%.1f–%.1f) | %s | %s |", serverName(s.Server), s.Desktops, s.StepsPerSecond, s.PerDesktop,
			s.SlowestDesktop, s.FastestDesktop, compat.Millis(s.Step.Median), compat.Millis(s.Step.P95))
		for _, q := range s.Requests {
			fmt.Fprintf(b, " %s / %s |", compat.Millis(q.Stats.Median), compat.Millis(q.Stats.P95))
		}
		cpu, client := "—", compat.Millis(s.ClientPerStep)
		if s.CPUMeasured {
			cpu = compat.Millis(s.CPUPerStep)
		}
		errs := fmt.Sprint(s.Errors)
		if s.FirstError != "" {
			errs += fmt.Sprintf(" (first: %.120s)", strings.ReplaceAll(s.FirstError, "|", "\\|"))
		}
		fmt.Fprintf(b, " %s | %s | %s | %s → %s |\n", cpu, client, errs, s.LoadBefore, s.LoadAfter)
	}
	if ratios := r.stepRatios(); ratios != "" {
		fmt.Fprintf(b, "\n%s\n", ratios)
	}

	b.WriteString("\n### Where the time goes\n\n")
	b.WriteString("A step's median time by request (share of the sum of the requests' medians), and the mean body size:\n\n")
	b.WriteString("| server | desktops |")
	for _, q := range r.Steps[0].Requests {
		fmt.Fprintf(b, " %s |", q.Name)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(r.Steps[0].Requests)) + "\n")
	for _, s := range r.Steps {
		var sum time.Duration
		for _, q := range s.Requests {
			sum += q.Stats.Median
		}
		fmt.Fprintf(b, "| %s | %d |", serverName(s.Server), s.Desktops)
		for _, q := range s.Requests {
			fmt.Fprintf(b, " %s (%.0f%%), %s |", compat.Millis(q.Stats.Median), 100*float64(q.Stats.Median)/float64(max(1, sum)), size(q.MeanBytes))
		}
		b.WriteString("\n")
	}
	if r.Steps[0].Host != nil {
		b.WriteString("\nThe host's CPU time over the loops (all CPUs, from /proc/stat; others: busy time not charged to the desktops' cgroups or the client, which is the kernel's work charged to no process and the machine's other users):\n\n")
		b.WriteString("| server | desktops | desktops' processes | client | others | I/O wait | steal | idle |\n|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Steps {
			if h := s.Host; h != nil {
				fmt.Fprintf(b, "| %s | %d | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% | %.0f%% |\n", serverName(s.Server), s.Desktops,
					100*h.Desktops, 100*h.Client, 100*h.Others, 100*h.IOWait, 100*h.Steal, 100*h.Idle)
			}
		}
	}
	if !r.Steps[0].CPUMeasured {
		return
	}
	b.WriteString("\nCPU per step by process (the desktops' processes; " + endedProcs + " is the cgroups' time less that of the processes alive at the end):\n\n| process |")
	for _, s := range r.Steps {
		fmt.Fprintf(b, " %s, %d |", serverName(s.Server), s.Desktops)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(r.Steps)) + "\n")
	for _, name := range procNames(r.Steps) {
		fmt.Fprintf(b, "| %s |", name)
		for _, s := range r.Steps {
			cell := "—"
			if i := slices.IndexFunc(s.Procs, func(p ProcRow) bool { return p.Name == name }); i >= 0 {
				cell = compat.Millis(s.Procs[i].PerStep)
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	b.WriteString("| **all** |")
	for _, s := range r.Steps {
		fmt.Fprintf(b, " **%s** |", compat.Millis(s.CPUPerStep))
	}
	b.WriteString("\n")
}

// stepRow is the row of server on n desktops, or nil.
func (r *Report) stepRow(server string, n int) *StepRow {
	for i := range r.Steps {
		if r.Steps[i].Server == server && r.Steps[i].Desktops == n {
			return &r.Steps[i]
		}
	}
	return nil
}

// plural is "1 desktop", "2 desktops".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// stepRatios compares the servers at each desktop count where both ran.
func (r *Report) stepRatios() string {
	var parts []string
	for _, g := range r.Steps {
		u := r.stepRow(string(compat.Upstream), g.Desktops)
		if g.Server != string(compat.Guestd) || u == nil || u.StepsPerSecond <= 0 {
			continue
		}
		part := fmt.Sprintf("on %s, %.1fx the steps per second", plural(g.Desktops, "desktop"), g.StepsPerSecond/u.StepsPerSecond)
		if g.CPUPerStep > 0 && u.CPUPerStep > 0 {
			part += fmt.Sprintf(" at %.1fx less CPU per step", float64(u.CPUPerStep)/float64(g.CPUPerStep))
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "drums against upstream: " + strings.Join(parts, "; ") + "."
}

// procNames are the process names of the rows, by their largest time in
// any row.
func procNames(rows []StepRow) []string {
	top := map[string]time.Duration{}
	for _, s := range rows {
		for _, p := range s.Procs {
			top[p.Name] = max(top[p.Name], p.PerStep)
		}
	}
	var names []string
	for n := range top {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(top[b], top[a]), strings.Compare(a, b)) })
	return names
}

func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
