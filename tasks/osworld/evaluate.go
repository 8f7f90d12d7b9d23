package osworld

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// Evaluation is what DesktopEnv.evaluate() did for one task.
type Evaluation struct {
	// Score is the task's score; nil when there is none: a metric or
	// getter drums cannot compute and no OSWorld to ask, one that raised
	// (OSWorld's evaluate() raises, its runners record no result), or a
	// failed postconfig. Error says which.
	Score      *float64       `json:"score"`
	Postconfig []StepResult   `json:"postconfig,omitempty"`
	Getters    []GetterResult `json:"getters,omitempty"`
	Metrics    []MetricResult `json:"metrics,omitempty"`
	// NotNative names the getters and metrics drums left to OSWorld.
	NotNative []string `json:"not_native,omitempty"`
	// Evaluator says whose metrics scored: EvaluatorOSWorld (OSWorld's
	// Python metrics over drums' getters, each native metric computed
	// beside it) or EvaluatorNative (drums' Go metrics alone).
	Evaluator string `json:"evaluator,omitempty"`
	// Diverged says, for each metric whose native score differs from
	// OSWorld's, both scores.
	Diverged []string `json:"diverged,omitempty"`
	// Error is why the evaluation stopped early.
	Error string `json:"error,omitempty"`
	// Screenshot is the screen once the evaluation ran (its postconfig
	// included), a saved PNG relative to the files directory.
	Screenshot string `json:"screenshot,omitempty"`
}

// GetterResult is one getter call.
type GetterResult struct {
	Role  string `json:"role"` // "result" or "expected"
	Index int    `json:"index"`
	Type  string `json:"type"`
	OK    bool   `json:"ok"`
	// Empty is set when the getter returned OSWorld's None or an empty value.
	Empty bool `json:"empty,omitempty"`
	// Value is the start of the value's Python repr, for reading a report.
	Value string `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// MetricResult is one metric call.
type MetricResult struct {
	Func string `json:"func"`
	// Score and Error are the evaluator's of record: OSWorld's where it
	// is given, drums' own otherwise.
	Score *float64 `json:"score"`
	Error string   `json:"error,omitempty"`
	// Skipped: an earlier metric decided the conjunction.
	Skipped bool `json:"skipped,omitempty"`
	// Native and OSWorld are each side's answer where it was asked.
	Native  *MetricAnswer `json:"native,omitempty"`
	OSWorld *MetricAnswer `json:"osworld,omitempty"`
	// Diverged says how the two sides' answers differ.
	Diverged string `json:"diverged,omitempty"`
}

// MetricAnswer is one side's answer to a metric call: a score, or the
// exception the metric raised, or why it could not be computed.
type MetricAnswer struct {
	Score  *float64 `json:"score,omitempty"`
	Raised string   `json:"raised,omitempty"`
	// NoScore is why there is no answer (not computed natively, worker
	// failed).
	NoScore string `json:"no_score,omitempty"`
}

func (a *MetricAnswer) String() string {
	switch {
	case a.NoScore != "":
		return "no score (" + a.NoScore + ")"
	case a.Raised != "":
		return "raised " + a.Raised
	}
	return ScoreText(a.Score)
}

// The evaluators of an Evaluation.
const (
	EvaluatorOSWorld = "osworld"
	EvaluatorNative  = "native"
)

// Judge scores a metric with OSWorld's own Python,
// desktop_env.evaluators.metrics.<func>(*args, **options). An error is a
// judge that could not answer, not a metric that raised.
type Judge interface {
	Metric(ctx context.Context, f string, args []any, opts map[string]any) (MetricAnswer, error)
}

// scoreMetric is one metric call: OSWorld's answer where a judge is
// given, drums' beside it where the metric is native, their difference.
// raised says the answer of record is an exception the metric raised.
func (e *Env) scoreMetric(ctx context.Context, ev *Evaluation, f string, args []any, opts map[string]any) (mr MetricResult, raised bool) {
	mr.Func = f
	if m, ok := metrics[f]; ok && MetricNative(f) {
		a := MetricAnswer{}
		s, err := m(args, opts)
		switch {
		case errors.Is(err, ErrNotNative):
			a.NoScore = err.Error()
		case err != nil:
			a.Raised = err.Error()
		default:
			a.Score = fptr(s)
		}
		mr.Native = &a
	}
	if e.Judge != nil {
		a, err := e.Judge.Metric(ctx, f, args, opts)
		if err != nil {
			a = MetricAnswer{NoScore: "OSWorld's metric: " + err.Error()}
		}
		mr.OSWorld = &a
	}
	record := mr.Native
	ev.Evaluator = EvaluatorNative
	if mr.OSWorld != nil && mr.OSWorld.NoScore == "" {
		record = mr.OSWorld
		ev.Evaluator = EvaluatorOSWorld
		if d := diverges(mr.Native, mr.OSWorld); d != "" {
			mr.Diverged = d
			ev.Diverged = append(ev.Diverged, fmt.Sprintf("%s: %s", f, d))
		}
	}
	switch {
	case record == nil:
		mr.Error = fmt.Sprintf("%v: metric %s", ErrNotNative, f)
	case record.NoScore != "":
		mr.Error = record.NoScore
	case record.Raised != "":
		mr.Error, raised = record.Raised, true
	default:
		mr.Score = record.Score
	}
	if mr.OSWorld != nil && mr.OSWorld.NoScore != "" {
		mr.Error = JoinReason(mr.Error, mr.OSWorld.NoScore) // drums' answer stood in
	}
	return mr, raised
}

// diverges says how drums' answer differs from OSWorld's, "" when they
// agree or drums has none.
func diverges(native, osworld *MetricAnswer) string {
	if native == nil || native.NoScore != "" {
		return ""
	}
	same := native.Raised != "" && osworld.Raised != "" ||
		native.Score != nil && osworld.Score != nil && math.Abs(*native.Score-*osworld.Score) <= 1e-9
	if same {
		return ""
	}
	return fmt.Sprintf("native %s, OSWorld %s", native, osworld)
}

// GettersOK reports whether every getter that ran returned without error.
func (ev Evaluation) GettersOK() bool {
	for _, g := range ev.Getters {
		if !g.OK {
			return false
		}
	}
	return true
}

// NotNativeParts lists the task's getters and metrics drums does not
// implement, as "metric:NAME" and "getter:NAME".
func NotNativeParts(t *Task) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for i, f := range t.Evaluator.Funcs {
		if !MetricNative(f) {
			add("metric:" + f)
		}
		if f == "infeasible" {
			continue
		}
		for _, g := range []Getter{t.Evaluator.Results[i], t.Evaluator.Expected[i]} {
			if g != nil && !GetterNative(g.Type()) {
				add("getter:" + g.Type())
			}
		}
	}
	return out
}

func fptr(f float64) *float64 { return &f }

// Evaluate is DesktopEnv.evaluate() with no action taken, or with the last
// action FAIL when lastFail: postconfig, then the metrics over their getters
// with the evaluator's conjunction. Getters run even when a metric is not
// native, so their health is reported.
func (e *Env) Evaluate(ctx context.Context, t *Task, lastFail bool) Evaluation {
	var ev Evaluation
	post, err := e.Setup(ctx, t.Evaluator.Postconfig)
	ev.Postconfig = post
	if err != nil {
		ev.Error = "postconfig: " + err.Error()
		return ev
	}
	ev.NotNative = NotNativeParts(t)
	if e.Judge != nil {
		// OSWorld's Python computes the metrics drums does not.
		ev.NotNative = slices.DeleteFunc(ev.NotNative, func(p string) bool { return strings.HasPrefix(p, "metric:") })
	}
	evr := t.Evaluator
	if len(evr.Funcs) == 1 && evr.Funcs[0] == "infeasible" {
		// DesktopEnv.evaluate decides infeasible itself, no metric
		// function: drums' rule is OSWorld's.
		ev.Score = fptr(score(lastFail))
		ev.Evaluator = EvaluatorNative
		ev.Metrics = []MetricResult{{Func: "infeasible", Score: ev.Score}}
		return ev
	}
	if lastFail {
		ev.Score = fptr(0)
		return ev
	}
	var results []float64
	computable := len(ev.NotNative) == 0
	for i, f := range evr.Funcs {
		mr := MetricResult{Func: f}
		result, rerr := e.runGetter(ctx, &ev, "result", i, evr.Results[i])
		if rerr != nil && errors.Is(rerr, client.ErrFileNotFound) && evr.Results[i] != nil && computable {
			// OSWorld: a FileNotFoundError in the result getter scores 0
			// under "and" and skips the metric under "or".
			mr.Error = rerr.Error()
			mr.Score = fptr(0)
			ev.Metrics = append(ev.Metrics, mr)
			if evr.Conj == "and" || !evr.Multi {
				ev.Score = fptr(0)
				skipRest(&ev, evr.Funcs[i+1:])
				return ev
			}
			continue
		}
		var expected any
		var eerr error
		hasExpected := evr.Expected[i] != nil
		if hasExpected {
			expected, eerr = e.runGetter(ctx, &ev, "expected", i, evr.Expected[i])
		}
		if !computable {
			continue
		}
		if rerr != nil || eerr != nil {
			err := errors.Join(rerr, eerr)
			if errors.Is(err, ErrNeedsFileCache) || errors.Is(err, ErrMirrorMismatch) || errors.Is(err, ErrNotNative) {
				ev.Error = err.Error()
				return ev
			}
			// A getter that raises makes OSWorld's evaluate() raise: its
			// runners record no result.
			mr.Error = err.Error()
			ev.Metrics = append(ev.Metrics, mr)
			ev.Error = fmt.Sprintf("getter of metric %d (%s): %v", i, f, err)
			return ev
		}
		args := []any{result}
		if hasExpected {
			args = append(args, expected)
		}
		mr, raised := e.scoreMetric(ctx, &ev, f, args, evr.Options[i])
		ev.Metrics = append(ev.Metrics, mr)
		if mr.Score == nil {
			skipRest(&ev, evr.Funcs[i+1:])
			// An exception in a metric makes evaluate() raise (OSWorld's
			// runners record no result); a metric not computed has no
			// score either, never a 0.
			if raised {
				ev.Error = fmt.Sprintf("%v: metric %s raised: %s", ErrMetric, f, mr.Error)
			} else {
				ev.Error = fmt.Sprintf("metric %s: %s", f, mr.Error)
			}
			return ev
		}
		s := *mr.Score
		if evr.Multi && evr.Conj == "and" && s == 0 {
			ev.Score = fptr(0)
			skipRest(&ev, evr.Funcs[i+1:])
			return ev
		}
		if evr.Multi && evr.Conj == "or" && s == 1 {
			ev.Score = fptr(1)
			skipRest(&ev, evr.Funcs[i+1:])
			return ev
		}
		results = append(results, s)
	}
	if !computable {
		return ev
	}
	if len(results) == 0 {
		ev.Score = fptr(0)
		return ev
	}
	if !evr.Multi {
		ev.Score = fptr(results[0])
		return ev
	}
	total := 0.0
	best := results[0]
	for _, r := range results {
		total += r
		best = max(best, r)
	}
	if evr.Conj == "and" {
		ev.Score = fptr(total / float64(len(results)))
	} else {
		ev.Score = fptr(best)
	}
	return ev
}

// skipRest records the metrics a conjunction no longer needed.
func skipRest(ev *Evaluation, rest []string) {
	for _, f := range rest {
		ev.Metrics = append(ev.Metrics, MetricResult{Func: f, Skipped: true})
	}
}

// runGetter runs a getter (nil config: OSWorld passes None) and records it.
func (e *Env) runGetter(ctx context.Context, ev *Evaluation, role string, i int, cfg Getter) (any, error) {
	if cfg == nil {
		return nil, nil
	}
	gr := GetterResult{Role: role, Index: i, Type: cfg.Type()}
	if !GetterNative(cfg.Type()) {
		gr.Error = ErrNotNative.Error()
		ev.Getters = append(ev.Getters, gr)
		return nil, fmt.Errorf("getter %s: %w", cfg.Type(), ErrNotNative)
	}
	v, err := e.RunGetter(ctx, cfg)
	if err != nil {
		gr.Error = err.Error()
	} else {
		gr.OK = true
		gr.Empty = !pyvalue.Truthy(v)
		gr.Value = shorten(pyvalue.Repr(v), valueLimit)
	}
	ev.Getters = append(ev.Getters, gr)
	return v, err
}

// valueLimit bounds a getter value's repr in the report: enough to see a
// URL list or a command's output, not a whole page.
const valueLimit = 300

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Summary is a one-line account of an evaluation for a report's reason.
func (ev Evaluation) Summary() string {
	var parts []string
	if ev.Error != "" {
		parts = append(parts, ev.Error)
	}
	if len(ev.NotNative) > 0 {
		parts = append(parts, "not native: "+strings.Join(ev.NotNative, ", ")+" (use --via-python)")
	}
	if len(ev.Diverged) > 0 {
		parts = append(parts, "diverged: "+strings.Join(ev.Diverged, "; "))
	}
	return strings.Join(parts, "; ")
}

// JoinReason joins the non-empty parts of a reason with "; ".
func JoinReason(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}

// ScoreText is a score as the report prints it: Python's repr, "–" for
// none.
func ScoreText(s *float64) string {
	if s == nil {
		return "–"
	}
	return pyvalue.Repr(*s)
}
