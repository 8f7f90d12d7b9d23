package osworld

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

// execByCommand answers /execute by the command's words.
func execByCommand(answers map[string]client.ExecResult) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Command any `json:"command"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		a, ok := answers[CommandWords(req.Command)]
		if !ok {
			testutil.WriteJSON(w, 500, map[string]any{"status": "error", "message": "unknown " + CommandWords(req.Command)})
			return
		}
		testutil.WriteJSON(w, 200, a)
	}
}

func mustTask(t *testing.T, doc string) *Task {
	t.Helper()
	task, err := ParseTask([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestEvaluateConjunctions(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/execute", execByCommand(map[string]client.ExecResult{
		"get a": {Output: "uint32 300\n"},
		"get b": {Output: "false\n"},
	}))
	e := testEnv(t, f)
	doc := `{"id": "x", "evaluator": {"func": ["exact_match", "exact_match"], "conj": "%s",
		"result": [{"type": "vm_command_line", "command": ["get", "a"]}, {"type": "vm_command_line", "command": ["get", "b"]}],
		"expected": [{"type": "rule", "rules": {"expected": "uint32 0\n"}}, {"type": "rule", "rules": {"expected": "false\n"}}]}}`
	or := e.Evaluate(context.Background(), mustTask(t, strings.Replace(doc, "%s", "or", 1)), false)
	if or.Score == nil || *or.Score != 1 || !or.GettersOK() {
		t.Errorf("or: %+v", or)
	}
	and := e.Evaluate(context.Background(), mustTask(t, strings.Replace(doc, "%s", "and", 1)), false)
	if and.Score == nil || *and.Score != 0 || len(and.Metrics) != 2 || !and.Metrics[1].Skipped {
		t.Errorf("and: %+v", and)
	}
}

func TestEvaluateInfeasibleAndFail(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	e := testEnv(t, f)
	inf := mustTask(t, `{"id": "x", "evaluator": {"func": "infeasible", "postconfig": [{"type": "sleep", "parameters": {"seconds": 0}}]}}`)
	if ev := e.Evaluate(context.Background(), inf, false); ev.Score == nil || *ev.Score != 0 || len(ev.Postconfig) != 1 {
		t.Errorf("infeasible, no action: %+v", ev)
	}
	if ev := e.Evaluate(context.Background(), inf, true); *ev.Score != 1 {
		t.Errorf("infeasible, FAIL: %+v", ev)
	}
	feasible := mustTask(t, `{"id": "x", "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": "a"}, "expected": {"type": "rule", "rules": {"expected": "a"}}}}`)
	if ev := e.Evaluate(context.Background(), feasible, true); *ev.Score != 0 {
		t.Errorf("feasible, FAIL: %+v", ev)
	}
	if ev := e.Evaluate(context.Background(), feasible, false); *ev.Score != 1 {
		t.Errorf("feasible: %+v", ev)
	}
}

func TestEvaluateNotNativeStillRunsGetters(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/file", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("xlsx")) })
	e := testEnv(t, f)
	task := mustTask(t, `{"id": "x", "evaluator": {"func": "compare_table",
		"result": {"type": "vm_file", "path": "/home/user/a.xlsx", "dest": "a.xlsx"},
		"expected": {"type": "cloud_file", "path": "https://huggingface.co/a.xlsx", "dest": "gold.xlsx"}}}`)
	ev := e.Evaluate(context.Background(), task, false)
	if ev.Score != nil {
		t.Errorf("score %v for a metric drums does not compute", *ev.Score)
	}
	if diff := cmp.Diff([]string{"metric:compare_table"}, ev.NotNative); diff != "" {
		t.Errorf("not native (-want +got):\n%s", diff)
	}
	if len(ev.Getters) != 2 || !ev.Getters[0].OK || ev.Getters[1].OK {
		t.Errorf("getters = %+v (vm_file ok, cloud_file missing from the cache)", ev.Getters)
	}
	if !strings.Contains(ev.Summary(), "--via-python") {
		t.Errorf("summary = %q", ev.Summary())
	}
}

// A metric that raises makes evaluate() raise: OSWorld's runners record no
// result, so there is no score (never a 0), with the exception as reason.
func TestEvaluateMetricErrorNoScore(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/execute", execByCommand(map[string]client.ExecResult{"timedatectl status": {Error: "System has not been booted with systemd"}}))
	e := testEnv(t, f)
	task := mustTask(t, `{"id": "x", "evaluator": {"func": "is_utc_0", "result": {"type": "vm_command_line", "command": "timedatectl status", "shell": true}}}`)
	ev := e.Evaluate(context.Background(), task, false)
	if ev.Score != nil || !strings.Contains(ev.Error, "IndexError") {
		t.Errorf("ev = %+v", ev)
	}
}

func TestGettersOverFakeGuest(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	f.Handle("/file", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch r.PostForm.Get("file_path") {
		case "/home/user/a.txt":
			_, _ = w.Write([]byte("A"))
		case chromePreferences:
			_, _ = w.Write([]byte(`{"default_search_provider_data": {"template_url_data": {"short_name": "Bing"}}, "profile": {"name": "Thomas"}, "session": {"restore_on_startup": 5}}`))
		default:
			testutil.WriteJSON(w, 404, map[string]string{"error": "File not found"})
		}
	})
	f.Handle("/list_directory", func(w http.ResponseWriter, r *http.Request) {
		testutil.WriteJSON(w, 200, map[string]any{"directory_tree": map[string]any{"name": "d", "type": "directory", "children": []any{}}})
	})
	f.Handle("/accessibility", func(w http.ResponseWriter, r *http.Request) {
		testutil.WriteJSON(w, 200, map[string]any{"AT": `<desktop-frame xmlns:st="s"><application name="Chromium"><frame><entry name="Address and search bar" st:focused="true">example.com/page</entry></frame></application></desktop-frame>`})
	})
	f.Handle("/execute", execByCommand(map[string]client.ExecResult{
		"python3 -c from datetime import datetime; print(datetime.now().astimezone().isoformat())": {Output: "2024-03-07T10:00:00.123456+01:00\n"},
	}))
	e := testEnv(t, f)
	ctx := context.Background()
	got := func(cfg Getter) any {
		t.Helper()
		v, err := e.RunGetter(ctx, cfg)
		if err != nil {
			t.Fatalf("%s: %v", cfg.Type(), err)
		}
		return v
	}
	p := got(Getter{"type": "vm_file", "path": "/home/user/a.txt", "dest": "a.txt"})
	if b, _ := os.ReadFile(p.(string)); string(b) != "A" {
		t.Errorf("vm_file content %q", b)
	}
	if v := got(Getter{"type": "vm_file", "path": "/home/user/missing", "dest": "m"}); v != nil {
		t.Errorf("missing vm_file = %v, want None", v)
	}
	multi := got(Getter{"type": "vm_file", "multi": true, "path": []any{"/home/user/a.txt", "/home/user/missing"}, "dest": []any{"a", "m"}, "gives": []any{0.0, 1.0}})
	if l, ok := multi.([]any); !ok || len(l) != 2 || l[1] != nil {
		t.Errorf("multi vm_file = %v", multi)
	}
	if v := got(Getter{"type": "default_search_engine"}); v != "Bing" {
		t.Errorf("default_search_engine = %v", v)
	}
	if v := got(Getter{"type": "profile_name"}); v != "Thomas" {
		t.Errorf("profile_name = %v", v)
	}
	if v := got(Getter{"type": "new_startup_page"}); v != "true" {
		t.Errorf("new_startup_page = %v", v)
	}
	if v := got(Getter{"type": "list_directory", "path": "/d"}); v.(map[string]any)["name"] != "d" {
		t.Errorf("list_directory = %v", v)
	}
	if v := got(Getter{"type": "active_url_from_accessTree", "goto_prefix": "https://www."}); v != "https://www.example.com/page" {
		t.Errorf("active url = %v", v)
	}
	parsed := got(Getter{"type": "url_dashPart", "goto_prefix": "https://", "partIndex": 3.0, "returnType": "json", "key": "p"})
	if diff := cmp.Diff(map[string]any{"p": "page"}, parsed); diff != "" {
		t.Errorf("url_dashPart (-want +got):\n%s", diff)
	}
	rules := map[string]any{"relativeTime": map[string]any{"from": "next Monday"}, "expected": map[string]any{"time": "{DoW} {Month0D}/{Day0D}/{Year}"}}
	cfg := Getter{"type": "rule_relativeTime", "rules": rules}
	r := got(cfg).(map[string]any)
	if r["expected"].(map[string]any)["time"] != "Mon 03/11/2024" {
		t.Errorf("relative time = %v", r)
	}
	if rules["expected"].(map[string]any)["time"] != "{DoW} {Month0D}/{Day0D}/{Year}" {
		t.Error("the getter changed the task's rules")
	}
	if _, err := e.RunGetter(ctx, Getter{"type": "cloud_file", "path": "https://x/y", "dest": "y"}); err == nil {
		t.Error("cloud_file without a cache succeeded")
	}
	if _, err := e.RunGetter(ctx, Getter{"type": "pdf_from_url"}); err == nil {
		t.Error("a getter drums does not implement succeeded")
	}
	e.Now = func() time.Time { return time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC) }
	v := got(Getter{"type": "vm_file", "path": "/home/user/a.txt", "dest": "r.txt", "time_suffix": true})
	if !strings.HasSuffix(v.(string), "r_20240102_030405.txt") {
		t.Errorf("time suffix path = %v", v)
	}
}

// judgeFunc is a Judge answering from a function (a test double for
// OSWorld's Python; PythonJudge itself is tested in TestPythonJudge).
type judgeFunc func(f string, args []any) (MetricAnswer, error)

func (j judgeFunc) Metric(_ context.Context, f string, args []any, _ map[string]any) (MetricAnswer, error) {
	return j(f, args)
}

func TestEvaluateJudge(t *testing.T) {
	e := testEnv(t, testutil.NewFakeGuest(t))
	exact := mustTask(t, `{"id": "x", "evaluator": {"func": "exact_match", "result": {"type": "rule", "rules": "a"}, "expected": {"type": "rule", "rules": {"expected": "a"}}}}`)
	notNative := mustTask(t, `{"id": "x", "evaluator": {"func": "compare_table", "result": {"type": "rule", "rules": "a"}, "expected": {"type": "rule", "rules": {"expected": "a"}}}}`)
	refused := mustTask(t, `{"id": "x", "evaluator": {"func": "check_json", "result": {"type": "rule", "rules": "`+
		strings.ReplaceAll(file(t, "s.json", `{"k": "v"}`), `\`, `\\`)+`"}, "expected": {"type": "rule", "rules": {"expect": [{"key": ["k"], "method": "re.X", "ref": "v"}]}}}}`)
	score := func(s float64) (MetricAnswer, error) { return MetricAnswer{Score: fptr(s)}, nil }
	for _, c := range []struct {
		name      string
		task      *Task
		judge     Judge
		score     *float64
		evaluator string
		diverged  bool
		errHas    string
	}{
		{"agree", exact, judgeFunc(func(string, []any) (MetricAnswer, error) { return score(1) }), fptr(1), EvaluatorOSWorld, false, ""},
		{"diverge", exact, judgeFunc(func(string, []any) (MetricAnswer, error) { return score(0) }), fptr(0), EvaluatorOSWorld, true, ""},
		{"osworld raised", exact, judgeFunc(func(string, []any) (MetricAnswer, error) { return MetricAnswer{Raised: "KeyError: 'x'"}, nil }), nil, EvaluatorOSWorld, true, "KeyError"},
		{"worker down", exact, judgeFunc(func(string, []any) (MetricAnswer, error) { return MetricAnswer{}, os.ErrClosed }), fptr(1), EvaluatorNative, false, ""},
		{"no checkout", exact, nil, fptr(1), EvaluatorNative, false, ""},
		{"not native, OSWorld scores", notNative, judgeFunc(func(string, []any) (MetricAnswer, error) { return score(1) }), fptr(1), EvaluatorOSWorld, false, ""},
		{"refused natively, no checkout: no score", refused, nil, nil, EvaluatorNative, false, "flag re.X"},
		{"refused natively, OSWorld scores", refused, judgeFunc(func(string, []any) (MetricAnswer, error) { return score(1) }), fptr(1), EvaluatorOSWorld, false, ""},
	} {
		e.Judge = c.judge
		ev := e.Evaluate(context.Background(), c.task, false)
		if !cmp.Equal(ev.Score, c.score) || ev.Evaluator != c.evaluator || (len(ev.Diverged) > 0) != c.diverged || !strings.Contains(ev.Error, c.errHas) {
			t.Errorf("%s: score %v, evaluator %q, diverged %q, error %q", c.name, ScoreText(ev.Score), ev.Evaluator, ev.Diverged, ev.Error)
		}
	}
}
