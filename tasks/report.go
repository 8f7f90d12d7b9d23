package tasks

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// Task statuses in the report.
const (
	StatusRan            = "ran"              // setup and observation worked
	StatusNeedsFileCache = "needs-file-cache" // a file-cache file is missing; not run
	StatusNeedsLiveWeb   = "needs-live-web"   // needs the internet; run offline for what it shows
	StatusMissingApp     = "missing-app"      // a program is missing on the desktop; not run
	StatusUnsupported    = "unsupported"      // a step drums cannot perform; not run
	StatusFailed         = "failed"           // setup, observation or the runner failed
)

// Statuses in report order.
var Statuses = []string{StatusRan, StatusNeedsFileCache, StatusNeedsLiveWeb, StatusMissingApp, StatusUnsupported, StatusFailed}

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
	// ScoreAfter is the score after a built-in task's solution.
	ScoreAfter  *float64     `json:"score_after,omitempty"`
	Seconds     float64      `json:"seconds"`
	Setup       []StepResult `json:"setup,omitempty"`
	Observation *Observation `json:"observation,omitempty"`
	Evaluation  *Evaluation  `json:"evaluation,omitempty"`
	After       *Evaluation  `json:"evaluation_after,omitempty"`
	Desktop     string       `json:"desktop,omitempty"`
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
}

// Totals counts results by status.
func Totals(rs []Result) map[string]int {
	t := map[string]int{}
	for _, r := range rs {
		t[r.Status]++
	}
	return t
}

// WriteFiles writes report.json and report.md into dir.
func (r Report) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	b, err := json.MarshalIndent(r.Results, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	if err := r.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func scoreText(s *float64) string {
	if s == nil {
		return "–"
	}
	return pyvalue.Repr(*s)
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
	b.WriteString("Statuses: **ran** = setup and observation worked (score before acting computed where the metric is native); " +
		"**needs-file-cache** = a file of OSWorld's file cache is missing (not run); **needs-live-web** = the task needs " +
		"internet sites or package mirrors (run offline to show what works); **missing-app** = a program is not installed " +
		"on the desktop (not run); **unsupported** = a step drums cannot perform (not run); **failed** = setup, observation " +
		"or the runner failed.\n\n")
	domains := map[string][]Result{}
	for _, x := range r.Results {
		domains[x.Domain] = append(domains[x.Domain], x)
	}
	names := make([]string, 0, len(domains))
	for d := range domains {
		names = append(names, d)
	}
	sort.Strings(names)
	b.WriteString("## Totals per domain\n\n| domain | tasks |")
	for _, s := range Statuses {
		b.WriteString(" " + s + " |")
	}
	b.WriteString(" setup ok | score before 0 | score before >0 | no score |\n|---|---:|")
	for range Statuses {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|---:|\n")
	row := func(name string, rs []Result) {
		t := Totals(rs)
		setup, zero, pos, none := 0, 0, 0, 0
		for _, x := range rs {
			if x.SetupOK != nil && *x.SetupOK {
				setup++
			}
			switch {
			case x.ScoreBefore == nil:
				none++
			case *x.ScoreBefore == 0:
				zero++
			default:
				pos++
			}
		}
		fmt.Fprintf(&b, "| %s | %d |", name, len(rs))
		for _, s := range Statuses {
			fmt.Fprintf(&b, " %d |", t[s])
		}
		fmt.Fprintf(&b, " %d | %d | %d | %d |\n", setup, zero, pos, none)
	}
	for _, d := range names {
		row(d, domains[d])
	}
	row("**all**", r.Results)
	b.WriteString("\n## Tasks\n\n| domain | id | status | setup | obs | getters | score before | s | reason |\n|---|---|---|---|---|---|---:|---:|---|\n")
	for _, d := range names {
		for _, x := range domains[d] {
			score := scoreText(x.ScoreBefore)
			if x.ScoreAfter != nil {
				score += " → " + scoreText(x.ScoreAfter)
			}
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s | %.1f | %s |\n", x.Domain, x.ID, x.Status,
				boolText3(x.SetupOK), boolText3(x.ObservationOK), boolText3(x.GettersOK), score, x.Seconds, mdCell(x.Reason, 240))
		}
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write markdown report: %w", err)
	}
	return nil
}
