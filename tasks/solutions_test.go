package tasks

import (
	"encoding/json"
	"errors"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drums-dev/drums/tasks/osworld"
)

var taskIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$`)

// osworldDomains are the domains of OSWorld's evaluation_examples.
var osworldDomains = []string{"chrome", "gimp", "libreoffice_calc", "libreoffice_impress", "libreoffice_writer", "multi_apps", "os", "thunderbird", "vlc", "vs_code"}

func TestReferenceSolutionsParse(t *testing.T) {
	n := 0
	err := fs.WalkDir(solutionsFS, "solutions", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		domain := path.Base(path.Dir(p))
		if !slices.Contains(osworldDomains, domain) || !taskIDRE.MatchString(d.Name()) {
			t.Errorf("%s: want solutions/DOMAIN/TASK-ID.json with one of OSWorld's domains", p)
		}
		acts, err := referenceSolution(domain, strings.TrimSuffix(d.Name(), ".json"))
		if err != nil {
			t.Error(err)
			return nil
		}
		b, _ := solutionsFS.ReadFile(p)
		var f solutionFile
		if json.Unmarshal(b, &f) != nil || f.Note == "" {
			t.Errorf("%s has no note saying what it does", p)
		}
		if strings.Contains(string(b), "{SCREEN_") || strings.Contains(string(b), "{CLIENT_PASSWORD}") {
			t.Errorf("%s uses a setup placeholder, which DesktopEnv.step does not substitute", p)
		}
		for i, a := range acts {
			if a.Code == osworld.ActionFail && i != len(acts)-1 {
				t.Errorf("%s: FAIL is not its last action", p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no reference solutions")
	}
	if acts, err := referenceSolution("os", "no-such-task"); acts != nil || err != nil {
		t.Errorf("a task without a solution: %v, %v", acts, err)
	}
}

func TestActionForms(t *testing.T) {
	var acts []osworld.Action
	in := `["FAIL", "import pyautogui", {"click": {"role": "push-button", "name": "OK", "clicks": 2}}, {"type": "sleep", "parameters": {"seconds": 1}}]`
	if err := json.Unmarshal([]byte(in), &acts); err != nil {
		t.Fatal(err)
	}
	if acts[0].Code != osworld.ActionFail || acts[1].Code != "import pyautogui" || acts[2].Click == nil || acts[2].Click.Clicks != 2 || acts[3].Step == nil {
		t.Fatalf("parsed %+v", acts)
	}
	out, err := json.Marshal(acts)
	if err != nil {
		t.Fatal(err)
	}
	var again []osworld.Action
	if err := json.Unmarshal(out, &again); err != nil || again[2].Click.Name != "OK" {
		t.Errorf("round trip %s: %v", out, err)
	}
	if !osworld.LastFails(acts[:1]) || osworld.LastFails(acts) || osworld.LastFails(nil) {
		t.Error("osworld.LastFails")
	}
	if err := json.Unmarshal([]byte(`{"click": {"name": "OK"}}`), &acts[0]); err == nil {
		t.Error("a click without a role was accepted")
	}
}

const clickTree = `<desktop-frame xmlns:cp="https://accessibility.ubuntu.example.org/ns/component" name="main">
<application name="Zenity"><frame name="Question" cp:screencoord="(100, 200)" cp:size="(400, 300)">
<push-button name="Cancel" cp:screencoord="(300, 450)" cp:size="(80, 30)"></push-button>
<push-button name="OK" cp:screencoord="(400, 450)" cp:size="(81, 31)"></push-button>
<push-button name="OK" cp:screencoord="(10, 10)" cp:size="(5, 5)"></push-button>
<push-button name="Hidden" cp:screencoord="(0, 0)" cp:size="(0, 0)"></push-button>
<label name="Plain"></label>
</frame></application></desktop-frame>`

func TestClickCode(t *testing.T) {
	code, err := osworld.ClickCode(clickTree, osworld.ElementClick{Role: "push-button", Name: "OK"})
	if want := `import pyautogui; pyautogui.click(440, 465, clicks=1, button="left")`; err != nil || code != want {
		t.Errorf("osworld.ClickCode = %q, %v; want %q", code, err, want)
	}
	code, err = osworld.ClickCode(clickTree, osworld.ElementClick{Role: "frame", Name: "Question", Clicks: 2, Button: "right"})
	if want := `import pyautogui; pyautogui.click(300, 350, clicks=2, button="right")`; err != nil || code != want {
		t.Errorf("osworld.ClickCode = %q, %v; want %q", code, err, want)
	}
	old := strings.ReplaceAll(clickTree, "https://accessibility.ubuntu.example.org/ns/component", "uri:deskat:component.at-spi.gnome.org")
	if code, err := osworld.ClickCode(old, osworld.ElementClick{Role: "push-button", Name: "Cancel"}); err != nil || !strings.Contains(code, "click(340, 465,") {
		t.Errorf("osworld.ClickCode in a tree of OSWorld's older namespace = %q, %v", code, err)
	}
	for _, c := range []osworld.ElementClick{{Role: "push-button", Name: "Nope"}, {Role: "push-button", Name: "Hidden"}, {Role: "label", Name: "Plain"}, {Role: "push-button", Name: "OK", App: "Nope"}} {
		if code, err := osworld.ClickCode(clickTree, c); err == nil {
			t.Errorf("%+v: osworld.ClickCode = %q, want an error", c, code)
		}
	}
}

func TestSolutionOutcome(t *testing.T) {
	zero, one, half := fptr(0), fptr(1), fptr(0.5)
	for _, c := range []struct {
		before *float64
		after  *osworld.Evaluation
		err    error
		want   string
	}{
		{zero, &osworld.Evaluation{Score: one}, nil, SolutionSolved},
		{zero, &osworld.Evaluation{Score: half}, nil, SolutionFailed},
		{zero, &osworld.Evaluation{Metrics: []osworld.MetricResult{{Func: "f", Error: "boom"}}}, nil, SolutionFailed},
		{one, &osworld.Evaluation{Score: one}, nil, SolutionFailed},
		{nil, &osworld.Evaluation{Score: one}, nil, SolutionFailed},
		{zero, nil, errors.New("action 1 exited 1"), SolutionFailed},
		{nil, &osworld.Evaluation{NotNative: []string{"metric:compare_table"}}, nil, SolutionUnscored},
	} {
		got := solutionOutcome(c.before, c.after, c.err)
		if got.Outcome != c.want || (c.want != SolutionSolved && got.Reason == "") {
			t.Errorf("solutionOutcome(%v, %+v, %v) = %+v, want %s with a reason", c.before, c.after, c.err, got, c.want)
		}
	}
	r := solutionOutcome(zero, &osworld.Evaluation{Metrics: []osworld.MetricResult{{Func: "f", Error: "boom"}}}, nil)
	if !strings.Contains(r.Reason, "boom") {
		t.Errorf("reason %q does not say the metric's error", r.Reason)
	}
}
