package osworld

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseTaskSingleEvaluator(t *testing.T) {
	task, err := ParseTask([]byte(`{
		"id": "a1", "instruction": "x", "related_apps": ["os"],
		"config": [{"type": "execute", "parameters": {"command": ["ls"]}}],
		"evaluator": {"func": "exact_match",
			"result": {"type": "vm_command_line", "command": "echo hi", "shell": true},
			"expected": {"type": "rule", "rules": {"expected": "hi\n"}},
			"postconfig": [{"type": "sleep", "parameters": {"seconds": 0.5}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := task.Evaluator
	if ev.Multi || ev.Conj != "and" || len(ev.Funcs) != 1 || ev.Funcs[0] != "exact_match" {
		t.Fatalf("evaluator = %+v", ev)
	}
	if ev.Results[0].Type() != "vm_command_line" || ev.Expected[0].Type() != "rule" || len(ev.Options[0]) != 0 {
		t.Fatalf("getters = %+v %+v %+v", ev.Results, ev.Expected, ev.Options)
	}
	if len(ev.Postconfig) != 1 || ev.Postconfig[0].Type != "sleep" {
		t.Fatalf("postconfig = %+v", ev.Postconfig)
	}
	// Written back in the form it was read in.
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	_ = json.Unmarshal(b, &back)
	if back["func"] != "exact_match" {
		t.Errorf("marshalled func = %v", back["func"])
	}
}

func TestParseTaskMultiEvaluator(t *testing.T) {
	task, err := ParseTask([]byte(`{"id": "b", "evaluator": {
		"func": ["exact_match", "check_include_exclude"], "conj": "or",
		"result": [{"type": "vm_command_line", "command": "a"}, {"type": "vm_command_line", "command": "b"}],
		"expected": [{"type": "rule", "rules": {"expected": "x"}}, null],
		"options": [{}, {"k": 1}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := task.Evaluator
	if !ev.Multi || ev.Conj != "or" || len(ev.Funcs) != 2 {
		t.Fatalf("evaluator = %+v", ev)
	}
	if ev.Expected[1] != nil {
		t.Errorf("expected[1] = %v, want nil", ev.Expected[1])
	}
	if diff := cmp.Diff(map[string]any{"k": 1.0}, ev.Options[1]); diff != "" {
		t.Errorf("options[1] (-want +got):\n%s", diff)
	}
}

func TestParseTaskInfeasibleAndErrors(t *testing.T) {
	task, err := ParseTask([]byte(`{"id": "c", "evaluator": {"func": "infeasible"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if task.Evaluator.Results[0] != nil || task.Evaluator.Expected[0] != nil {
		t.Errorf("infeasible has getters: %+v", task.Evaluator)
	}
	for name, doc := range map[string]string{
		"no id":          `{"evaluator": {"func": "x"}}`,
		"no func":        `{"id": "x", "evaluator": {}}`,
		"bad conj":       `{"id": "x", "evaluator": {"func": ["a", "b"], "conj": "xor", "result": [{"type":"r"},{"type":"r"}]}}`,
		"length":         `{"id": "x", "evaluator": {"func": ["a", "b"], "result": [{"type": "r"}]}}`,
		"step no params": `{"id": "x", "config": [{"type": "sleep"}], "evaluator": {"func": "infeasible"}}`,
		"not json":       `{`,
	} {
		if _, err := ParseTask([]byte(doc)); !errors.Is(err, ErrBadTask) {
			t.Errorf("%s: err = %v, want ErrBadTask", name, err)
		}
	}
}

func TestSuiteSelect(t *testing.T) {
	s := Suite{"os": {"aaaa-1", "bbbb-2"}, "chrome": {"cccc-3"}}
	all, err := s.Select(Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{"chrome", "cccc-3"}, {"os", "aaaa-1"}, {"os", "bbbb-2"}}
	if diff := cmp.Diff(want, all); diff != "" {
		t.Errorf("all (-want +got):\n%s", diff)
	}
	got, err := s.Select(Filter{Domains: []string{"os"}, IDs: []string{"bbbb"}})
	if err != nil || len(got) != 1 || got[0].ID != "bbbb-2" {
		t.Errorf("filtered = %v, %v", got, err)
	}
	if _, err := s.Select(Filter{Domains: []string{"nope"}}); !errors.Is(err, ErrBadFilter) {
		t.Errorf("unknown domain: %v", err)
	}
	if _, err := s.Select(Filter{IDs: []string{"zzzz"}}); !errors.Is(err, ErrBadFilter) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestLoadTaskChecksFileName(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "os"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "os", "x.json"), []byte(`{"id": "y", "evaluator": {"func": "infeasible"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTask(dir, "os", "x"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("err = %v", err)
	}
}

func TestSubstitute(t *testing.T) {
	s := Screen{Width: 1920, Height: 1081, Password: "pw"}
	got, err := Substitute([]any{"python", "-c", "click({SCREEN_WIDTH_HALF}, {SCREEN_HEIGHT_HALF}) {SCREEN_WIDTH}x{SCREEN_HEIGHT}"}, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]any{"python", "-c", "click(960, 540) 1920x1081"}, got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	str, err := Substitute("echo {CLIENT_PASSWORD} | sudo -S true", s)
	if err != nil || str != "echo pw | sudo -S true" {
		t.Errorf("string = %q, %v", str, err)
	}
	if _, err := Substitute([]any{"a", 1.0}, s); err == nil {
		t.Error("a number in a command list must be an error")
	}
}

func TestDownloadName(t *testing.T) {
	// Python: uuid.uuid5(uuid.NAMESPACE_URL, url)
	url := "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/6766f2b8-8a72-417f-a9e5-56fcaa735837/helloExtension.zip"
	got := DownloadName(url, "/home/user/Desktop/helloExtension.zip")
	if want := "867d9ab8-c99b-577a-bab8-2dfe56912d99_helloExtension.zip"; got != want {
		t.Errorf("DownloadName = %q, want %q", got, want)
	}
}
