package tasks

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/tasks/osworld"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden and the kept reports' report.html from the current output")

// smallReport is a report of five tasks, one per kind of row, with its
// files kept in a directory beside the report's (root/files, root/out):
// os/ran has every screenshot and its tree; os/gone recorded a
// screenshot that is not on disk.
func smallReport(t *testing.T) (r Report, out string) {
	t.Helper()
	root := t.TempDir()
	files := filepath.Join(root, "files")
	for f, content := range map[string]string{"screenshots/os/ran.png": "png", "screenshots/os/ran.evaluated.png": "png",
		"screenshots/os/ran.solved.png": "png", "accessibility/os/ran.xml": smallTree} {
		p := filepath.Join(files, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ran := Result{Domain: "os", ID: "ran", Status: StatusRan, Mode: "native", Feasible: true,
		SetupOK: bptr(true), ObservationOK: bptr(true), GettersOK: bptr(true), ScoreBefore: fptr(0), ScoreAfter: fptr(1),
		Seconds: 4.25, Desktop: "d-1.ABC",
		Setup: []osworld.StepResult{{Type: "execute", Seconds: 0.5}},
		Observation: &Observation{ScreenshotBytes: 31892, AccessibilityBytes: 1234567,
			Screenshot: "screenshots/os/ran.png", Accessibility: "accessibility/os/ran.xml"},
		Evaluation: &osworld.Evaluation{Score: fptr(0), Postconfig: []osworld.StepResult{{Type: "sleep", Seconds: 1}},
			Getters: []osworld.GetterResult{{Role: "result", Type: "vm_command_line", OK: true, Value: "'uint32 300\\n'"},
				{Role: "expected", Type: "rule", OK: true, Value: "{'expected': 'uint32 0\\n'}"}},
			Metrics:    []osworld.MetricResult{{Func: "exact_match", Score: fptr(0)}},
			Screenshot: "screenshots/os/ran.evaluated.png"},
		After: &osworld.Evaluation{Score: fptr(1), Metrics: []osworld.MetricResult{{Func: "exact_match", Score: fptr(1)}},
			Screenshot: "screenshots/os/ran.solved.png"},
	}
	gone := Result{Domain: "os", ID: "gone", Status: StatusFailed, Mode: "native", Feasible: true,
		Reason:  "observation: accessibility tree: <b>bold</b> & \"quoted\" 'text'\nsecond line",
		SetupOK: bptr(true), ObservationOK: bptr(false), Seconds: 2,
		Observation: &Observation{ScreenshotBytes: 10, Screenshot: "screenshots/os/gone.png", Error: "accessibility tree: boom"},
		Evaluation:  &osworld.Evaluation{Error: "getter vm_file: 404", Getters: []osworld.GetterResult{{Role: "result", Type: "vm_file", Error: "404 File not found"}}},
	}
	web := Result{Domain: "chrome", ID: "web", Status: StatusNeedsLiveWeb, Mode: "native", Feasible: true,
		Reason:  "needs www.example.com; ran offline: ran; chrome_open_tabs warned: navigation failed",
		SetupOK: bptr(true), ObservationOK: bptr(true), GettersOK: bptr(false), Seconds: 7.5,
		Setup:      []osworld.StepResult{{Type: "chrome_open_tabs", Seconds: 2.5, Warning: "navigation failed"}},
		Evaluation: &osworld.Evaluation{NotNative: []string{"metric:is_expected_active_tab", "getter:active_tab_info"}, Metrics: []osworld.MetricResult{{Func: "is_expected_active_tab", Skipped: true}}},
	}
	cache := Result{Domain: "calc", ID: "cache", Status: StatusNeedsFileCache, Mode: "native", Feasible: true,
		Reason: "1 of 1 file-cache files missing: a.xlsx"}
	app := Result{Domain: "calc", ID: "app", Status: StatusMissingApp, Mode: "native",
		Reason: "not installed on the desktop: libreoffice"}
	r = Report{Results: []Result{ran, gone, web, cache, app}, Mode: "native", Files: files,
		Command: "drums tasks run --suite s.json --out out --files files", Started: time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), Duration: 90 * time.Second}
	return r, filepath.Join(root, "out")
}

// smallTree is an accessibility tree as guestd answers it (one line), and
// smallOutline the page's outline of it.
const (
	smallTree = `<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state"><application name="gedit">` +
		`<frame name="Untitled &amp; &lt;new&gt;" st:showing="true"><label name="Greeting">Hello
  world</label><push-button name="OK" st:showing="true"/></frame></application></desktop-frame>`
	smallOutline = "desktop-frame\n  application \"gedit\"\n    frame \"Untitled & <new>\"\n      label \"Greeting\": Hello world\n      push-button \"OK\"\n"
)

// TestReportHTML: the page of a small report, for review
// (testdata/report.html.golden), and what it is made of.
func TestReportHTML(t *testing.T) {
	r, out := smallReport(t)
	var b bytes.Buffer
	if err := r.WriteHTML(&b, out); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "report.html.golden"), b.String(), *update)

	page := parseXHTML(t, b.Bytes())
	if n := page.count["article"]; n != len(r.Results) {
		t.Errorf("%d task articles, want %d", n, len(r.Results))
	}
	// os/ran's three screenshots and its tree, linked from out to files;
	// os/gone's screenshot is not on disk.
	want := []string{"../files/screenshots/os/ran.png", "../files/screenshots/os/ran.evaluated.png",
		"../files/screenshots/os/ran.solved.png", "../files/accessibility/os/ran.xml"}
	for _, src := range append(page.attrs["img src"], page.files()...) {
		if _, err := os.Stat(filepath.Join(out, filepath.FromSlash(src))); err != nil {
			t.Errorf("a link to a file that is not there: %s", src)
		}
	}
	if d := cmp.Diff(want[:3], page.attrs["img src"]); d != "" {
		t.Errorf("screenshots (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, page.files()); d != "" {
		t.Errorf("links to files (-want +got):\n%s", d)
	}
	if n := strings.Count(b.String(), "screenshot not kept"); n != 1 {
		t.Errorf("%d screenshots not kept, want os/gone's", n)
	}
	// The tree opens on demand: its outline is inside a details element.
	if page.count["details>pre"] != 1 || !strings.Contains(page.text, smallOutline) {
		t.Errorf("no outline %q in a details element: %v", smallOutline, page.count)
	}
	// One bar segment per non-zero status of each domain (calc 2, chrome
	// 1, os 2), then the legend's six.
	if n := page.count["svg>rect"]; n != 5+len(Statuses) {
		t.Errorf("%d rects in the chart, want %d", n, 5+len(Statuses))
	}
	// The reason is text, never markup.
	if page.count["b"] != 0 || !strings.Contains(page.text, "<b>bold</b> & \"quoted\" 'text'\nsecond line") {
		t.Errorf("the reason was not escaped as text")
	}
}

// TestReportFilesRoundTrip: WriteFiles writes the same page, and run.json
// brings back what report.json does not hold.
func TestReportFilesRoundTrip(t *testing.T) {
	r, out := smallReport(t)
	if err := r.WriteFiles(out); err != nil {
		t.Fatal(err)
	}
	got, err := ReadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, got); d != "" {
		t.Errorf("read back (-wrote +read):\n%s", d)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b, out); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(out, ReportHTML))
	if err != nil || string(html) != b.String() {
		t.Errorf("report.html differs from WriteHTML's page (%v)", err)
	}
	// A report from before run.json: the results alone.
	if err := os.Remove(filepath.Join(out, RunJSON)); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadReport(out); err != nil || got.Command != "" || len(got.Results) != len(r.Results) {
		t.Errorf("without run.json: %v, %q, %d results", err, got.Command, len(got.Results))
	}
	if _, err := ReadReport(t.TempDir()); err == nil {
		t.Error("a directory without report.json read as a report")
	}
}

// TestKeptReportsHTML: the kept reports' report.html is what drums tasks
// report --html makes of their report.json and run.json today, and
// parses: every directory under report/ that holds a report.json. -update
// rewrites them after a change to the page.
func TestKeptReportsHTML(t *testing.T) {
	var dirs []string
	err := filepath.WalkDir("report", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == ReportJSON {
			dirs = append(dirs, filepath.Dir(path))
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		t.Fatalf("kept reports under report/: %v (%d found)", err, len(dirs))
	}
	for _, dir := range dirs {
		r, err := ReadReport(dir)
		if err != nil {
			t.Fatal(err)
		}
		if r.Command == "" || r.Started.IsZero() {
			t.Errorf("%s: no run.json with the run's command and start", dir)
		}
		var b bytes.Buffer
		if err := r.WriteHTML(&b, dir); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join(dir, ReportHTML), b.String(), *update)
		if page := parseXHTML(t, b.Bytes()); page.count["article"] != len(r.Results) {
			t.Errorf("%s: %d articles for %d results", dir, page.count["article"], len(r.Results))
		}
	}
}

// xhtml is what parseXHTML saw: elements by name (and "parent>child"),
// attribute values by "element attr", and the text.
type xhtml struct {
	count map[string]int
	attrs map[string][]string
	text  string
}

// files are the page's links to files, in page order (not to its own
// anchors).
func (x xhtml) files() []string {
	var out []string
	for _, h := range x.attrs["a href"] {
		if !strings.HasPrefix(h, "#") {
			out = append(out, h)
		}
	}
	return out
}

// TestTreeOutline: the outline stops after outlineLines elements and
// counts the rest; a tree that stops parsing keeps what came before.
func TestTreeOutline(t *testing.T) {
	dir := t.TempDir()
	big := "<desktop-frame>" + strings.Repeat(`<filler name="f"/>`, outlineLines+50) + "</desktop-frame>"
	for _, c := range []struct {
		xml                   string
		lines, elements, more int
		err                   string
	}{
		{smallTree, 5, 5, 0, ""},
		{big, outlineLines, outlineLines + 51, 51, ""},
		{`<desktop-frame><application name="a"><frame>`, 3, 3, 0, "the rest does not parse: XML syntax error on line 1: unexpected EOF"},
	} {
		p := filepath.Join(dir, "tree.xml")
		if err := os.WriteFile(p, []byte(c.xml), 0o644); err != nil {
			t.Fatal(err)
		}
		var tr htmlTree
		tr.outline(p)
		if n := strings.Count(tr.Outline, "\n"); n != c.lines || tr.Elements != c.elements || tr.More != c.more || tr.Error != c.err {
			t.Errorf("%.40s…: %d lines, %d elements, %d more, error %q; want %d, %d, %d, %q",
				c.xml, n, tr.Elements, tr.More, tr.Error, c.lines, c.elements, c.more, c.err)
		}
	}
}

// parseXHTML reads the page as XML: strict, so that every tag is closed
// by its own end tag, attributes are quoted and the only entities are
// XML's own.
func parseXHTML(t *testing.T, page []byte) xhtml {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = true
	x := xhtml{count: map[string]int{}, attrs: map[string][]string{}}
	var stack []string
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line, _ := dec.InputPos()
			t.Fatalf("the page is not well-formed (line %d): %v", line, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			name := tok.Name.Local
			x.count[name]++
			if len(stack) > 0 {
				x.count[stack[len(stack)-1]+">"+name]++
			}
			for _, a := range tok.Attr {
				x.attrs[name+" "+a.Name.Local] = append(x.attrs[name+" "+a.Name.Local], a.Value)
			}
			stack = append(stack, name)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			text.Write(tok)
		}
	}
	if len(stack) != 0 || x.count["html"] != 1 {
		t.Fatalf("the page has %d html elements and leaves %v open", x.count["html"], stack)
	}
	x.text = text.String()
	return x
}
func fptr(f float64) *float64 { return &f }
