package tasks

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drums-dev/drums/tasks/osworld"
)

// Task statuses in the report.
const (
	StatusRan            = "ran"              // setup and observation worked
	StatusDiverged       = "diverged"         // ran, and a native metric's score differs from OSWorld's
	StatusNeedsFileCache = "needs-file-cache" // a file-cache file is missing; not run
	StatusNeedsLiveWeb   = "needs-live-web"   // needs the internet; run offline for what it shows
	StatusMissingApp     = "missing-app"      // a program is missing on the desktop; not run
	StatusUnsupported    = "unsupported"      // a step drums cannot perform; not run
	StatusFailed         = "failed"           // setup, observation or the runner failed
)

// Statuses in report order.
var Statuses = []string{StatusRan, StatusDiverged, StatusNeedsFileCache, StatusNeedsLiveWeb, StatusMissingApp, StatusUnsupported, StatusFailed}

// Result is one task's row of report.json.
type Result struct {
	Domain string `json:"domain"`
	ID     string `json:"id"`
	Status string `json:"status"`
	// Reason says why the task did not run, or what limits its run.
	Reason       string       `json:"reason"`
	Mode         string       `json:"mode"` // "native" or "osworld"
	Requirements Requirements `json:"requirements"`
	// Feasible is false for OSWorld's infeasible tasks (score 1 only for
	// an agent that answers FAIL).
	Feasible      bool     `json:"feasible"`
	SetupOK       *bool    `json:"setup_ok"`
	ObservationOK *bool    `json:"observation_ok"`
	GettersOK     *bool    `json:"getters_ok"`
	ScoreBefore   *float64 `json:"score_before"`
	// Evaluator says whose metrics scored: EvaluatorOSWorld (OSWorld's
	// Python) or EvaluatorNative (drums' Go metrics, no OSWorld checkout
	// given); "" when no metric ran.
	Evaluator string `json:"evaluator,omitempty"`
	// ScoreAfter is the score after the task's solution.
	ScoreAfter *float64 `json:"score_after,omitempty"`
	// Solution is what the task's solution did; nil: it has none.
	Solution    *SolutionResult      `json:"solution,omitempty"`
	Seconds     float64              `json:"seconds"`
	Setup       []osworld.StepResult `json:"setup,omitempty"`
	Observation *Observation         `json:"observation,omitempty"`
	Evaluation  *osworld.Evaluation  `json:"evaluation,omitempty"`
	After       *osworld.Evaluation  `json:"evaluation_after,omitempty"`
	Desktop     string               `json:"desktop,omitempty"`
}

// Observation is what DesktopEnv._get_obs() returned after the setup.
type Observation struct {
	ScreenshotBytes    int    `json:"screenshot_bytes"`
	AccessibilityBytes int    `json:"accessibility_bytes"`
	Screenshot         string `json:"screenshot,omitempty"` // saved PNG, relative to the files directory
	// Accessibility is the saved tree (XML), relative to the files
	// directory.
	Accessibility string `json:"accessibility,omitempty"`
	Error         string `json:"error,omitempty"`
}

// OK is the report's observation_ok: a non-empty screenshot and tree.
func (o *Observation) OK() bool {
	return o != nil && o.Error == "" && o.ScreenshotBytes > 0 && o.AccessibilityBytes > 0
}

func bptr(b bool) *bool { return &b }

// Report is a whole run.
type Report struct {
	Results  []Result
	Started  time.Time
	Duration time.Duration
	Command  string
	Mode     string
	// Files is the directory the results' saved files (screenshots,
	// accessibility trees) are relative to; "" is the report's own.
	Files string
}

// runInfo is run.json: what report.json, a list of results, does not say
// of the run.
type runInfo struct {
	Command string    `json:"command,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Seconds float64   `json:"seconds,omitempty"`
	Mode    string    `json:"mode,omitempty"`
	Files   string    `json:"files,omitempty"`
}

// Totals counts results by status.
func Totals(rs []Result) map[string]int {
	t := map[string]int{}
	for _, r := range rs {
		t[r.Status]++
	}
	return t
}

// The report's files in its directory.
const (
	ReportJSON = "report.json"
	RunJSON    = "run.json"
	ReportMD   = "report.md"
	ReportHTML = "report.html"
)

// WriteFiles writes report.json, run.json, report.md and report.html into
// dir.
func (r Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	if err := saveJSON(filepath.Join(dir, ReportJSON), r.Results); err != nil {
		return err
	}
	info := runInfo{Command: r.Command, Started: r.Started.UTC(), Seconds: r.Duration.Seconds(), Mode: r.Mode, Files: r.Files}
	if err := saveJSON(filepath.Join(dir, RunJSON), info); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, ReportMD), r.WriteMarkdown); err != nil {
		return err
	}
	return r.WriteHTMLFile(dir)
}

// WriteHTMLFile writes report.html into dir, its links relative to dir.
func (r Report) WriteHTMLFile(dir string) error {
	return writeFile(filepath.Join(dir, ReportHTML), func(w io.Writer) error { return r.WriteHTML(w, dir) })
}

// ReadReport reads the report a run wrote into dir: report.json, and
// run.json where the run wrote one (reports from before it have none).
func ReadReport(dir string) (Report, error) {
	var r Report
	b, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		return r, fmt.Errorf("read report: %w", err)
	}
	if err := json.Unmarshal(b, &r.Results); err != nil {
		return r, fmt.Errorf("decode %s: %w", filepath.Join(dir, ReportJSON), err)
	}
	b, err = os.ReadFile(filepath.Join(dir, RunJSON))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	} else if err != nil {
		return r, fmt.Errorf("read run info: %w", err)
	}
	var info runInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return r, fmt.Errorf("decode %s: %w", filepath.Join(dir, RunJSON), err)
	}
	r.Command, r.Started, r.Mode, r.Files = info.Command, info.Started, info.Mode, info.Files
	r.Duration = time.Duration(info.Seconds * float64(time.Second))
	return r, nil
}

func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// writeFile creates path and fills it with write.
func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	if err := write(f); err != nil {
		return errors.Join(err, f.Close())
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Base(path), err)
	}
	return nil
}

// scoresText is the score before acting, and after the solution where
// one ran.
func scoresText(r Result) string {
	score := osworld.ScoreText(r.ScoreBefore)
	if r.ScoreAfter != nil {
		score += " → " + osworld.ScoreText(r.ScoreAfter)
	}
	return score
}

func boolText3(b *bool) string {
	switch {
	case b == nil:
		return "–"
	case *b:
		return "yes"
	}
	return "no"
}

// mdCell makes text safe inside a Markdown table cell.
func mdCell(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", "\\|")
	if limit > 0 && len([]rune(s)) > limit {
		s = string([]rune(s)[:limit]) + "…"
	}
	return s
}

// statusMeaning says what each status means (the reports' legends). A
// switch rather than a map, so that it costs nothing at package init:
// every drums process links this package, each desktop's session init
// among them.
func statusMeaning(status string) string {
	switch status {
	case StatusRan:
		return "setup and observation worked (score before acting by OSWorld's metrics where a checkout is given, else by drums' proven Go metrics)"
	case StatusDiverged:
		return "ran, and a native metric scored differently from OSWorld's Python (the score is OSWorld's; the reason gives both)"
	case StatusNeedsFileCache:
		return "a file of OSWorld's file cache is missing (not run)"
	case StatusNeedsLiveWeb:
		return "the task needs internet sites or package mirrors (run offline to show what works)"
	case StatusMissingApp:
		return "a program is not installed on the desktop (not run)"
	case StatusUnsupported:
		return "a step drums cannot perform (not run)"
	case StatusFailed:
		return "setup, observation or the runner failed"
	}
	return ""
}

// domainTotals is one row of the totals per domain.
type domainTotals struct {
	Name     string
	Tasks    int
	ByStatus []int // in Statuses' order
	// SetupOK counts setups that ran; ScoreZero, ScorePositive and NoScore
	// the scores before acting; Solved and Unsolved the reference solutions
	// by outcome.
	SetupOK, ScoreZero, ScorePositive, NoScore int
	Solved, Unsolved                           int
}

func totalsOf(name string, rs []Result) domainTotals {
	d := domainTotals{Name: name, Tasks: len(rs)}
	t := Totals(rs)
	for _, s := range Statuses {
		d.ByStatus = append(d.ByStatus, t[s])
	}
	for _, x := range rs {
		if x.SetupOK != nil && *x.SetupOK {
			d.SetupOK++
		}
		if x.Solution != nil && x.Solution.Outcome == SolutionSolved {
			d.Solved++
		} else if x.Solution != nil && x.Solution.Outcome == SolutionFailed {
			d.Unsolved++
		}
		switch {
		case x.ScoreBefore == nil:
			d.NoScore++
		case *x.ScoreBefore == 0:
			d.ScoreZero++
		default:
			d.ScorePositive++
		}
	}
	return d
}

// byDomain groups the results by domain, the domains in name order and
// each domain's tasks in the report's order.
func byDomain(rs []Result) (names []string, domains map[string][]Result) {
	domains = map[string][]Result{}
	for _, x := range rs {
		domains[x.Domain] = append(domains[x.Domain], x)
	}
	for d := range domains {
		names = append(names, d)
	}
	sort.Strings(names)
	return names, domains
}

// WriteMarkdown writes the human report: totals per domain, then one row
// per task.
func (r Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# drums task-compat report\n\n")
	if r.Command != "" {
		fmt.Fprintf(&b, "Command: `%s`  \n", r.Command)
	}
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, "Started: %s, took %s, mode: %s\n\n", r.Started.UTC().Format(time.RFC3339), r.Duration.Round(time.Second), r.Mode)
	}
	var legend []string
	for _, s := range Statuses {
		legend = append(legend, "**"+s+"** = "+statusMeaning(s))
	}
	b.WriteString("Statuses: " + strings.Join(legend, "; ") + ".\n\n")
	names, domains := byDomain(r.Results)
	b.WriteString("## Totals per domain\n\n| domain | tasks |")
	for _, s := range Statuses {
		b.WriteString(" " + s + " |")
	}
	b.WriteString(" setup ok | score before 0 | score before >0 | no score | solved by its solution | solution failed |\n|---|---:|")
	for range Statuses {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|---:|---:|---:|\n")
	row := func(d domainTotals) {
		fmt.Fprintf(&b, "| %s | %d |", d.Name, d.Tasks)
		for _, n := range d.ByStatus {
			fmt.Fprintf(&b, " %d |", n)
		}
		fmt.Fprintf(&b, " %d | %d | %d | %d | %d | %d |\n", d.SetupOK, d.ScoreZero, d.ScorePositive, d.NoScore, d.Solved, d.Unsolved)
	}
	for _, d := range names {
		row(totalsOf(d, domains[d]))
	}
	row(totalsOf("**all**", r.Results))
	b.WriteString("\n## Tasks\n\n| domain | id | status | setup | obs | getters | score before | evaluator | reference solution | s | reason |\n|---|---|---|---|---|---|---:|---|---|---:|---|\n")
	for _, d := range names {
		for _, x := range domains[d] {
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %s | %s | %.1f | %s |\n", x.Domain, x.ID, x.Status,
				boolText3(x.SetupOK), boolText3(x.ObservationOK), boolText3(x.GettersOK), scoresText(x), cmp.Or(x.Evaluator, "–"), mdCell(solutionText(x), 160), x.Seconds, mdCell(x.Reason, 240))
		}
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}
