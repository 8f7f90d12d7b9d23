package compat

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// Verdict is the outcome of one case.
type Verdict string

const (
	Same      Verdict = "same"      // no difference
	Intended  Verdict = "intended"  // only differences on the known-differences list
	Different Verdict = "different" // at least one unexplained difference
	Error     Verdict = "error"     // the case could not run (setup failed, …)
	Skipped   Verdict = "skipped"   // slow without --include-slow, or a program missing
)

// Report is the result of a run, written as JSON and Markdown.
type Report struct {
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Command  string    `json:"command,omitempty"`
	Upstream string    `json:"upstream"`
	Guestd   string    `json:"guestd"`
	// Desktop describes how the two servers shared a desktop.
	Desktop string            `json:"desktop,omitempty"`
	Totals  map[Verdict]int   `json:"totals"`
	Routes  []RouteTotals     `json:"routes"`
	Reasons []IntendedSummary `json:"intended_differences"`
	// UnusedAllowed lists known-difference entries that covered nothing in
	// this run (stale, or their cases were skipped).
	UnusedAllowed []string `json:"unused_known_differences,omitempty"`
	// StaleAllowed lists "entry: case" pairs where the case ran and
	// compared but the entry explained nothing in it: the difference it
	// names is gone, and the entry would hide its return.
	StaleAllowed []string     `json:"stale_known_differences,omitempty"`
	Cases        []CaseResult `json:"cases"`
}

// RouteTotals counts the cases of one route by verdict.
type RouteTotals struct {
	Route  string          `json:"route"`
	Cases  int             `json:"cases"`
	Counts map[Verdict]int `json:"counts"`
}

// IntendedSummary is one known-difference entry that was used, with the
// cases it explained.
type IntendedSummary struct {
	ID     string   `json:"id"`
	Kind   string   `json:"kind"`
	Reason string   `json:"reason"`
	Cases  []string `json:"cases"`
}

// CaseResult is one case's outcome.
type CaseResult struct {
	Name        string       `json:"name"`
	Route       string       `json:"route"`
	Doc         string       `json:"doc,omitempty"`
	Verdict     Verdict      `json:"verdict"`
	Reason      string       `json:"reason,omitempty"`
	Seconds     float64      `json:"seconds"`
	Requests    []string     `json:"requests"`
	Answers     []AnswerPair `json:"answers,omitempty"`
	Differences []Difference `json:"differences,omitempty"`
}

// AnswerPair holds both normalised answers to one step, as text.
type AnswerPair struct {
	Upstream string `json:"upstream"`
	Guestd   string `json:"guestd"`
}

// classify sets each difference's reason from the list and the verdict.
func (c *CaseResult) classify(a *Allowlist) {
	c.Verdict = Same
	for i := range c.Differences {
		d := &c.Differences[i]
		if e := a.Explain(c.Name, *d); e != nil {
			d.Intended = e.ID
			if c.Verdict == Same {
				c.Verdict = Intended
			}
			continue
		}
		c.Verdict = Different
	}
}

// Failed reports whether any case differs unexplained or could not run, or
// a known difference explained nothing in a case that ran (it is stale).
func (r *Report) Failed() bool {
	return r.Totals[Different] > 0 || r.Totals[Error] > 0 || len(r.StaleAllowed) > 0
}

func (r *Report) finish(a *Allowlist) {
	r.Seconds = time.Since(r.Started).Seconds()
	r.Totals = map[Verdict]int{}
	routes := map[string]*RouteTotals{}
	used := map[string][]string{}
	for _, c := range r.Cases {
		r.Totals[c.Verdict]++
		rt := routes[c.Route]
		if rt == nil {
			rt = &RouteTotals{Route: c.Route, Counts: map[Verdict]int{}}
			routes[c.Route] = rt
		}
		rt.Cases++
		rt.Counts[c.Verdict]++
		for _, d := range c.Differences {
			if d.Intended != "" {
				if l := used[d.Intended]; len(l) == 0 || l[len(l)-1] != c.Name {
					used[d.Intended] = append(l, c.Name)
				}
			}
		}
	}
	for _, k := range sortedKeys(routes) {
		r.Routes = append(r.Routes, *routes[k])
	}
	if a != nil {
		for _, e := range a.Entries {
			if cs, ok := used[e.ID]; ok {
				r.Reasons = append(r.Reasons, IntendedSummary{ID: e.ID, Kind: e.Kind, Reason: e.Reason, Cases: cs})
			} else {
				r.UnusedAllowed = append(r.UnusedAllowed, e.ID)
			}
			if e.Kind == "nondeterminism" {
				continue // may rightly explain nothing in one run
			}
			for _, c := range r.Cases {
				compared := c.Verdict == Same || c.Verdict == Intended || c.Verdict == Different
				if compared && matchAny(e.Cases, c.Name) && !slices.Contains(used[e.ID], c.Name) {
					r.StaleAllowed = append(r.StaleAllowed, e.ID+": "+c.Name)
				}
			}
		}
	}
}

// Write stores the report as report.json and report.md in dir.
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create report dir: %w", err)
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.Markdown()), 0o644); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return nil
}

// Markdown renders the report for people: totals, a table per route, the
// intended differences with their reasons, then every case that is not
// plainly the same, with its requests and differences.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# drums compat report\n\n")
	p("guestd against upstream `main.py` on one desktop, request by request.\n\n")
	if r.Command != "" {
		p("- command: `%s`\n", r.Command)
	}
	if r.Desktop != "" {
		p("- desktop: %s\n", r.Desktop)
	}
	p("- started: %s, %.0f s\n", r.Started.Format(time.RFC3339), r.Seconds)
	p("- cases: %d — same %d, intended difference %d, different %d, error %d, skipped %d\n\n",
		len(r.Cases), r.Totals[Same], r.Totals[Intended], r.Totals[Different], r.Totals[Error], r.Totals[Skipped])
	p("## Cases per route\n\n| route | cases | same | intended | different | error | skipped |\n|---|---|---|---|---|---|---|\n")
	for _, rt := range r.Routes {
		c := rt.Counts
		p("| `%s` | %d | %d | %d | %d | %d | %d |\n", rt.Route, rt.Cases, c[Same], c[Intended], c[Different], c[Error], c[Skipped])
	}
	p("\n## Intended differences (%d)\n\n", len(r.Reasons))
	for _, s := range r.Reasons {
		p("- **%s** (%s): %s  \n  cases: %s\n", s.ID, s.Kind, s.Reason, strings.Join(s.Cases, ", "))
	}
	if len(r.UnusedAllowed) > 0 {
		p("\nKnown-difference entries that covered nothing in this run: %s\n", strings.Join(r.UnusedAllowed, ", "))
	}
	if len(r.StaleAllowed) > 0 {
		p("\nStale known differences (each explained nothing in a case that ran: the difference is gone, or an earlier entry explains it): %s\n", strings.Join(r.StaleAllowed, ", "))
	}
	order := []Verdict{Different, Error, Skipped, Intended, Same}
	for _, v := range order {
		var cs []CaseResult
		for _, c := range r.Cases {
			if c.Verdict == v {
				cs = append(cs, c)
			}
		}
		if len(cs) == 0 {
			continue
		}
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
		p("\n## %s (%d)\n\n", strings.ToUpper(string(v[:1]))+string(v[1:]), len(cs))
		if v == Same {
			for _, c := range cs {
				p("- `%s`\n", c.Name)
			}
			continue
		}
		for _, c := range cs {
			p("### `%s`\n\n", c.Name)
			if c.Doc != "" {
				p("%s\n\n", c.Doc)
			}
			if c.Reason != "" {
				p("%s\n\n", c.Reason)
			}
			for i, q := range c.Requests {
				p("%d. `%s`\n", i+1, mdCode(q))
			}
			if len(c.Differences) > 0 {
				p("\n| step | field | upstream | guestd | verdict |\n|---|---|---|---|---|\n")
				for _, d := range c.Differences {
					verdict := "**different**"
					if d.Intended != "" {
						verdict = "intended: " + d.Intended
					}
					step := "probe"
					if d.Step >= 0 {
						step = fmt.Sprint(d.Step + 1)
					}
					p("| %s | `%s` | %s | %s | %s |\n", step, d.Field, mdCell(d.Upstream), mdCell(d.Guestd), verdict)
				}
				for _, d := range c.Differences {
					if d.Detail != "" {
						p("\n`%s`:\n\n```\n%s\n```\n", d.Field, d.Detail)
					}
				}
			}
			p("\n")
		}
	}
	return b.String()
}

// mdCellLimit keeps table cells readable; the JSON report has everything.
const mdCellLimit = 160

func mdCell(s string) string {
	if len(s) > mdCellLimit {
		s = s[:mdCellLimit] + "…"
	}
	s = strings.ReplaceAll(s, "\n", "⏎")
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

func mdCode(s string) string {
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return strings.ReplaceAll(s, "`", "'")
}
