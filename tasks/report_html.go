package tasks

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drums-dev/drums/tasks/osworld"
)

// The page is XHTML-safe HTML (void elements closed, no named entities
// but XML's, no boolean attributes), so that encoding/xml can check in a
// test that its tags balance. It has no script: an accessibility tree
// opens on demand (<details>) as an outline of its elements, with a link
// to the whole XML (a browser shows it as a tree only in a tab of its own,
// not in a frame, and a page cannot read a local file without a server),
// the screenshots load lazily, and the chart is inline SVG styled by the
// page's CSS. This file builds the page's data; report_markup.go writes
// it.

// WriteHTML writes the report as one HTML page whose links to the saved
// screenshots and accessibility trees are relative to dir, where the page
// is to live; a file that is not on disk is shown as not kept.
func (r Report) WriteHTML(w io.Writer, dir string) error {
	page, err := r.htmlPage(dir)
	if err != nil {
		return err
	}
	var b strings.Builder
	page.write(&b)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

type htmlPage struct {
	Command, Started, Took, Mode string
	Tasks                        int
	Statuses                     []htmlStatus
	Totals                       []domainTotals
	All                          domainTotals
	Chart                        htmlChart
	Domains                      []htmlDomain
}

type htmlStatus struct{ Name, Meaning string }

type htmlDomain struct {
	Name  string
	Tasks []htmlTask
}

type htmlTask struct {
	Anchor, Domain, ID, Status, Reason string
	Scores, Seconds, Desktop           string
	Solution                           string // solutionText; "" for none
	Setup, Observation, Getters        string
	Shots                              []htmlFile
	Tree                               *htmlTree
	Steps                              []htmlStep
	Evals                              []htmlEval
}

// htmlFile is a saved file; Src is "" when it is not on disk.
type htmlFile struct{ Label, Src, Bytes string }

// htmlTree is an accessibility tree: the file, and the outline of its
// first elements.
type htmlTree struct {
	htmlFile
	Outline  string
	Elements int // in the whole tree
	More     int // elements past the outline
	Error    string
}

type htmlStep struct{ Phase, Type, Seconds, Note string }

type htmlEval struct {
	Label, Score, Error string
	NotNative           []string
	Getters             []osworld.GetterResult
	Metrics             []htmlMetric
}

type htmlMetric struct{ Func, Score, Note string }

func (r Report) htmlPage(dir string) (htmlPage, error) {
	files := r.Files
	if files == "" {
		files = dir
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return htmlPage{}, err
	}
	absFiles, err := filepath.Abs(files)
	if err != nil {
		return htmlPage{}, err
	}
	// link is the page's relative link to a saved file and its path, ""
	// when the file is not there.
	link := func(rel string) (string, string) {
		if rel == "" {
			return "", ""
		}
		p := filepath.Join(absFiles, rel)
		if _, err := os.Stat(p); err != nil {
			return "", ""
		}
		l, err := filepath.Rel(absDir, p)
		if err != nil {
			return "", ""
		}
		return filepath.ToSlash(l), p
	}
	p := htmlPage{Command: r.Command, Mode: r.Mode, Tasks: len(r.Results)}
	if !r.Started.IsZero() {
		p.Started = r.Started.UTC().Format(time.RFC3339)
		p.Took = r.Duration.Round(time.Second).String()
	}
	for _, s := range Statuses {
		p.Statuses = append(p.Statuses, htmlStatus{Name: s, Meaning: statusMeaning(s)})
	}
	names, domains := byDomain(r.Results)
	for _, d := range names {
		p.Totals = append(p.Totals, totalsOf(d, domains[d]))
		hd := htmlDomain{Name: d}
		for _, x := range domains[d] {
			hd.Tasks = append(hd.Tasks, htmlTaskOf(x, link))
		}
		p.Domains = append(p.Domains, hd)
	}
	p.All = totalsOf("all", r.Results)
	p.Chart = chartOf(p.Totals)
	return p, nil
}

func htmlTaskOf(x Result, link func(string) (string, string)) htmlTask {
	src := func(rel string) string { s, _ := link(rel); return s }
	t := htmlTask{
		Anchor: "t-" + x.Domain + "-" + x.ID, Domain: x.Domain, ID: x.ID, Status: x.Status, Reason: x.Reason,
		Scores: scoresText(x), Desktop: x.Desktop,
		Setup: boolText3(x.SetupOK), Observation: boolText3(x.ObservationOK), Getters: boolText3(x.GettersOK),
	}
	if x.Solution != nil {
		t.Solution = solutionText(x)
	}
	if x.Seconds > 0 { // 0: classified without running
		t.Seconds = strconv.FormatFloat(x.Seconds, 'f', 1, 64)
	}
	var stepSeconds float64
	steps := func(phase string, rs []osworld.StepResult) {
		for _, s := range rs {
			note := s.Error
			if note == "" {
				note = s.Warning
			}
			t.Steps = append(t.Steps, htmlStep{Phase: phase, Type: s.Type, Seconds: strconv.FormatFloat(s.Seconds, 'f', 2, 64), Note: note})
			stepSeconds += s.Seconds
		}
	}
	steps("setup", x.Setup)
	if o := x.Observation; o != nil && o.ScreenshotBytes > 0 {
		t.Shots = append(t.Shots, htmlFile{Label: "after setup (the first observation)", Src: src(o.Screenshot), Bytes: thousands(o.ScreenshotBytes)})
	}
	if o := x.Observation; o != nil && o.AccessibilityBytes > 0 {
		s, p := link(o.Accessibility)
		t.Tree = &htmlTree{htmlFile: htmlFile{Label: "accessibility tree after setup", Src: s, Bytes: thousands(o.AccessibilityBytes)}}
		if p != "" {
			t.Tree.outline(p)
		}
	}
	for _, e := range []struct {
		label, shot string
		ev          *osworld.Evaluation
	}{{"before acting", "after the evaluation before acting", x.Evaluation}, {"after the solution", "after the solution and its evaluation", x.After}} {
		if e.ev == nil {
			continue
		}
		steps("postconfig "+e.label, e.ev.Postconfig)
		if e.ev.Screenshot != "" {
			t.Shots = append(t.Shots, htmlFile{Label: e.shot, Src: src(e.ev.Screenshot)})
		}
		label := e.label
		if e.ev.Evaluator != "" {
			label += ", scored by " + e.ev.Evaluator
		}
		he := htmlEval{Label: label, Score: osworld.ScoreText(e.ev.Score), Error: e.ev.Error, NotNative: e.ev.NotNative, Getters: e.ev.Getters}
		for _, m := range e.ev.Metrics {
			note := m.Error
			switch {
			case m.Skipped:
				note = "skipped: an earlier metric decided"
			case m.Diverged != "":
				note = osworld.JoinReason("diverged: "+m.Diverged, note)
			case m.Native != nil && m.OSWorld != nil:
				note = osworld.JoinReason(note, "OSWorld's score; native agrees")
			}
			he.Metrics = append(he.Metrics, htmlMetric{Func: m.Func, Score: osworld.ScoreText(m.Score), Note: note})
		}
		t.Evals = append(t.Evals, he)
	}
	// The rest of the task's time: the settle pause, the observation,
	// getters, metrics and the solution's actions.
	if rest := x.Seconds - stepSeconds; len(t.Steps) > 0 && rest > 0 {
		what := "settle, observation, getters, metrics"
		if x.After != nil {
			what += ", the solution"
		}
		t.Steps = append(t.Steps, htmlStep{Phase: "the rest", Type: what, Seconds: strconv.FormatFloat(rest, 'f', 2, 64)})
	}
	return t
}

// outlineLines bounds a tree's outline in the page: a desktop's tree has
// up to tens of thousands of elements (1.3 MB of XML for a LibreOffice
// window), and a suite's page holds hundreds. It must stay above what
// shows a window's structure (a dialog is ~50 elements).
const outlineLines = 300

// outline reads the saved tree at path into an outline of its first
// elements: one line each, indented by depth, its role (the element's
// name), its name attribute and the start of its text.
func (t *htmlTree) outline(path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Error = err.Error()
		return
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var b strings.Builder
	depth, lines := 0, 0
	pending := "" // the open element's line, waiting for its text
	flush := func(text string) {
		if pending == "" {
			return
		}
		if text = strings.Join(strings.Fields(text), " "); text != "" {
			pending += ": " + clip(text, 80)
		}
		b.WriteString(pending + "\n")
		pending = ""
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Error = "the rest does not parse: " + err.Error()
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			flush("")
			t.Elements++
			if lines < outlineLines {
				line := strings.Repeat("  ", depth) + tok.Name.Local
				for _, a := range tok.Attr {
					if a.Name.Space == "" && a.Name.Local == "name" && a.Value != "" {
						line += " " + strconv.Quote(clip(a.Value, 80))
					}
				}
				pending = line
				lines++
			}
			depth++
		case xml.CharData:
			flush(string(tok))
		case xml.EndElement:
			flush("")
			depth--
		}
	}
	flush("")
	t.Outline = b.String()
	t.More = t.Elements - lines
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// htmlChart is the totals per domain as horizontal bars, one per domain,
// each split by status. Coordinates are in SVG user units, as text so
// that the page is the same bytes on every platform.
type htmlChart struct {
	Width, Height, LabelX int
	Rows                  []chartRow
	Legend                []chartLegend
}

type chartRow struct {
	Label, Total, TotalX string
	Y, TextY             int
	Segments             []chartSegment
}

type chartSegment struct {
	Status, X, W, Tip string
	Y                 int
}

type chartLegend struct {
	Status             string
	X, Y, TextX, TextY int
}

// Chart geometry: domain names right-aligned left of barX, the longest
// bar barWidth wide, the count after each bar.
const (
	chartBarX     = 160
	chartBarWidth = 520
	chartRowH     = 24
	chartBarH     = 16
	chartWidth    = 760
	chartLegendW  = 125 // per status; 6 statuses stay inside chartWidth
)

func chartOf(totals []domainTotals) htmlChart {
	most := 1
	for _, d := range totals {
		most = max(most, d.Tasks)
	}
	unit := float64(chartBarWidth) / float64(most)
	c := htmlChart{Width: chartWidth, LabelX: chartBarX - 8}
	for i, d := range totals {
		row := chartRow{Label: d.Name, Total: strconv.Itoa(d.Tasks), Y: 8 + i*chartRowH}
		row.TextY = row.Y + chartBarH - 3
		x := float64(chartBarX)
		for j, n := range d.ByStatus {
			if n == 0 {
				continue
			}
			w := float64(n) * unit
			row.Segments = append(row.Segments, chartSegment{Status: Statuses[j], X: svgNum(x), W: svgNum(w), Y: row.Y,
				Tip: fmt.Sprintf("%s: %s %d of %d", d.Name, Statuses[j], n, d.Tasks)})
			x += w
		}
		row.TotalX = svgNum(x + 6)
		c.Rows = append(c.Rows, row)
	}
	legendY := 8 + len(totals)*chartRowH + 8
	for i, s := range Statuses {
		x := 10 + i*chartLegendW
		c.Legend = append(c.Legend, chartLegend{Status: s, X: x, Y: legendY, TextX: x + 16, TextY: legendY + 11})
	}
	c.Height = legendY + chartBarH + 4
	return c
}

func svgNum(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
