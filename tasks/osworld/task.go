package osworld

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Task is one OSWorld task file (evaluation_examples/examples/DOMAIN/ID.json).
// Fields drums does not use are kept in the JSON only.
type Task struct {
	ID          string    `json:"id"`
	Snapshot    string    `json:"snapshot"`
	Instruction string    `json:"instruction"`
	Source      any       `json:"source"` // a URL, or a list of them
	Config      []Step    `json:"config"`
	RelatedApps []string  `json:"related_apps"`
	Evaluator   Evaluator `json:"evaluator"`
	Proxy       bool      `json:"proxy"`
	// Solution is drums' extension: the actions that solve the task, as an
	// agent would send them. OSWorld ignores it. Built-in tasks carry theirs;
	// an OSWorld task read by LoadTask gets its reference solution from
	// tasks/solutions.
	Solution []Action `json:"solution,omitempty"`

	// Domain is the suite's key the task was listed under.
	Domain string `json:"-"`
	// Path is the file the task was read from ("" for a built-in task).
	Path string `json:"-"`
}

// Step is one setup or postconfig step: OSWorld calls
// SetupController._<type>_setup(**parameters).
type Step struct {
	Type       string         `json:"type"`
	Parameters map[string]any `json:"parameters"`
}

// Getter is one result or expected getter config: OSWorld calls
// getters.get_<type>(env, config) with the whole object.
type Getter map[string]any

// Type is the getter's name without the get_ prefix.
func (g Getter) Type() string { s, _ := g["type"].(string); return s }

// Evaluator is a task's evaluator. OSWorld accepts either one metric (func a
// string; result, expected and options single objects) or several (func a
// list; the others lists of the same length, entries possibly null). Both
// forms are normalised to lists here; Multi records which one the file used,
// because the single form scores differently (no conjunction).
type Evaluator struct {
	Funcs      []string
	Multi      bool
	Conj       string // "and" (default) or "or"
	Results    []Getter
	Expected   []Getter // nil entries: the metric gets no expected value
	Options    []map[string]any
	Postconfig []Step
}

type rawEvaluator struct {
	Func       json.RawMessage `json:"func"`
	Conj       string          `json:"conj"`
	Result     json.RawMessage `json:"result"`
	Expected   json.RawMessage `json:"expected"`
	Options    json.RawMessage `json:"options"`
	Postconfig []Step          `json:"postconfig"`
}

// UnmarshalJSON reads both evaluator forms.
func (e *Evaluator) UnmarshalJSON(b []byte) error {
	var r rawEvaluator
	if err := json.Unmarshal(b, &r); err != nil {
		return err
	}
	*e = Evaluator{Conj: r.Conj, Postconfig: r.Postconfig}
	if e.Conj == "" {
		e.Conj = "and"
	}
	if e.Conj != "and" && e.Conj != "or" {
		return fmt.Errorf("evaluator conj %q is neither \"and\" nor \"or\"", r.Conj)
	}
	var one string
	switch {
	case len(r.Func) == 0:
		return fmt.Errorf("evaluator has no func")
	case json.Unmarshal(r.Func, &one) == nil:
		e.Funcs = []string{one}
	default:
		if err := json.Unmarshal(r.Func, &e.Funcs); err != nil {
			return fmt.Errorf("evaluator func is neither a string nor a list of strings: %w", err)
		}
		e.Multi = true
		if len(e.Funcs) == 0 {
			return fmt.Errorf("evaluator func is an empty list")
		}
	}
	n := len(e.Funcs)
	var err error
	if e.Results, err = getterList(r.Result, n, e.Multi, "result"); err != nil {
		return err
	}
	if e.Expected, err = getterList(r.Expected, n, e.Multi, "expected"); err != nil {
		return err
	}
	if e.Options, err = optionList(r.Options, n, e.Multi); err != nil {
		return err
	}
	return nil
}

// MarshalJSON writes the evaluator back in the form it was read in.
func (e Evaluator) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if e.Multi {
		m["func"] = e.Funcs
		m["conj"] = e.Conj
		m["result"] = e.Results
		m["expected"] = e.Expected
		m["options"] = e.Options
	} else {
		m["func"] = e.Funcs[0]
		if e.Results[0] != nil {
			m["result"] = e.Results[0]
		}
		if e.Expected[0] != nil {
			m["expected"] = e.Expected[0]
		}
		if len(e.Options[0]) > 0 {
			m["options"] = e.Options[0]
		}
	}
	if len(e.Postconfig) > 0 {
		m["postconfig"] = e.Postconfig
	}
	return json.Marshal(m)
}

func isNull(b json.RawMessage) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// getterList reads result or expected: absent (or an empty object/list) means
// none for every metric.
func getterList(raw json.RawMessage, n int, multi bool, what string) ([]Getter, error) {
	out := make([]Getter, n)
	if isNull(raw) {
		return out, nil
	}
	if !multi {
		var g Getter
		if err := json.Unmarshal(raw, &g); err != nil {
			return nil, fmt.Errorf("evaluator %s is not an object: %w", what, err)
		}
		if len(g) > 0 {
			if g.Type() == "" {
				return nil, fmt.Errorf("evaluator %s has no type", what)
			}
			out[0] = g
		}
		return out, nil
	}
	var gs []Getter
	if err := json.Unmarshal(raw, &gs); err != nil {
		return nil, fmt.Errorf("evaluator %s is not a list though func is: %w", what, err)
	}
	if len(gs) == 0 {
		return out, nil
	}
	if len(gs) != n {
		return nil, fmt.Errorf("evaluator has %d funcs but %d %s getters", n, len(gs), what)
	}
	for i, g := range gs {
		if len(g) > 0 && g.Type() == "" {
			return nil, fmt.Errorf("evaluator %s[%d] has no type", what, i)
		}
		if len(g) > 0 {
			out[i] = g
		}
	}
	return out, nil
}

func optionList(raw json.RawMessage, n int, multi bool) ([]map[string]any, error) {
	out := make([]map[string]any, n)
	for i := range out {
		out[i] = map[string]any{}
	}
	if isNull(raw) {
		return out, nil
	}
	var list []map[string]any
	if json.Unmarshal(raw, &list) == nil {
		// OSWorld takes a list of options even for a single func.
		if len(list) != n {
			return nil, fmt.Errorf("evaluator has %d funcs but %d options", n, len(list))
		}
		for i, o := range list {
			if o != nil {
				out[i] = o
			}
		}
		return out, nil
	}
	var one map[string]any
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, fmt.Errorf("evaluator options are neither an object nor a list: %w", err)
	}
	if multi {
		return nil, fmt.Errorf("evaluator options must be a list when func is")
	}
	if one != nil {
		out[0] = one
	}
	return out, nil
}

// ParseTask reads a task from JSON and checks what OSWorld would reject when
// it sets the task up.
func ParseTask(b []byte) (*Task, error) {
	var t Task
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadTask, err)
	}
	if t.ID == "" {
		return nil, fmt.Errorf("%w: no id", ErrBadTask)
	}
	if len(t.Evaluator.Funcs) == 0 {
		return nil, fmt.Errorf("%w: no evaluator", ErrBadTask)
	}
	for i, s := range append(append([]Step{}, t.Config...), t.Evaluator.Postconfig...) {
		if s.Type == "" {
			return nil, fmt.Errorf("%w: step %d has no type", ErrBadTask, i+1)
		}
		if s.Parameters == nil {
			return nil, fmt.Errorf("%w: step %d (%s) has no parameters", ErrBadTask, i+1, s.Type)
		}
	}
	return &t, nil
}

// LoadTask reads examples/DOMAIN/ID.json under dir.
func LoadTask(dir, domain, id string) (*Task, error) {
	p := filepath.Join(dir, domain, id+".json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read task %s/%s: %w", domain, id, err)
	}
	t, err := ParseTask(b)
	if err != nil {
		return nil, fmt.Errorf("parse task %s: %w", p, err)
	}
	if t.ID != id {
		return nil, fmt.Errorf("parse task %s: %w: id %q does not match the file name", p, ErrBadTask, t.ID)
	}
	t.Domain, t.Path = domain, p
	return t, nil
}

// Suite is a suite file such as test_nogdrive.json: domain → task ids.
type Suite map[string][]string

// LoadSuite reads a suite file.
func LoadSuite(path string) (Suite, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read suite: %w", err)
	}
	var s Suite
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("parse suite %s: %w", path, err)
	}
	return s, nil
}

// Entry is one task reference of a suite.
type Entry struct{ Domain, ID string }

// Filter selects suite entries; empty fields select everything.
type Filter struct {
	Domains []string // exact domain names
	IDs     []string // full ids or unique prefixes
}

// Select lists the suite's entries that pass f, domains in sorted order and
// ids in suite order. An id or domain in f that matches nothing is an error,
// so a typo does not silently run nothing.
func (s Suite) Select(f Filter) ([]Entry, error) {
	domains := make([]string, 0, len(s))
	for d := range s {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	wantDomain := map[string]bool{}
	for _, d := range f.Domains {
		if _, ok := s[d]; !ok {
			return nil, fmt.Errorf("%w: domain %q is not in the suite (have %v)", ErrBadFilter, d, domains)
		}
		wantDomain[d] = true
	}
	used := make([]bool, len(f.IDs))
	var out []Entry
	for _, d := range domains {
		if len(wantDomain) > 0 && !wantDomain[d] {
			continue
		}
		for _, id := range s[d] {
			if len(f.IDs) > 0 {
				hit := false
				for i, want := range f.IDs {
					if id == want || (len(want) >= 4 && len(want) < len(id) && id[:len(want)] == want) {
						hit, used[i] = true, true
					}
				}
				if !hit {
					continue
				}
			}
			out = append(out, Entry{Domain: d, ID: id})
		}
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("%w: id %q matches no task of the selected domains", ErrBadFilter, f.IDs[i])
		}
	}
	return out, nil
}
