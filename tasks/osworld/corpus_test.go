package osworld

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const corpusPath = "testdata/metric-corpus.json"

// regexMetricCases are the regex edge cases as OSWorld's metrics meet
// them; want is Python's answer, wantErr drums' refusal.
func regexMetricCases(t *testing.T) []metricCase {
	nl := file(t, "dollar.txt", "abc\n")
	cafe := file(t, "cafe.txt", "café\n")
	arabic := file(t, "arabic.txt", "٣\n")
	settings := file(t, "re.json", `{"name": "Abc\n", "word": "café"}`)
	blanks := file(t, "blanks.txt", "\x1chello\u00a0\u3000world\x1f\n")
	plain := file(t, "plain.txt", "hello world")
	times := file(t, "times.txt", "12:0٣:01 a\n12:00:01 b\n")
	filterUnicode := file(t, "msgFilterRules.dat", "name=\"x\"\nenabled=\"yes\"\naction=\"Delete\"\ncondition=\"AND (subject,contains,café)\"\n")
	urlRule := func(p string) map[string]any { return rules("expected", []any{p}) }
	jsonRule := func(method, ref string, key ...any) map[string]any {
		return rules("expect", []any{rules("key", key, "method", method, "ref", ref)})
	}
	return []metricCase{
		{"re $ before final newline", "check_list", []any{nl, rules("expect", []any{`abc$`})}, nil, 1, false},
		{"re $ then more", "check_list", []any{nl, rules("expect", []any{`abc$\n`})}, nil, 1, true},
		{"re \\w on café", "check_list", []any{cafe, rules("expect", []any{`^\w+$`})}, nil, 1, true},
		{"re \\w ASCII text", "check_list", []any{nl, rules("expect", []any{`^\w+\s$`})}, nil, 1, false},
		{"re \\d on Arabic-Indic", "check_list", []any{arabic, rules("expect", []any{`^\d$`})}, nil, 1, false},
		{"re look-ahead", "check_list", []any{nl, rules("expect", []any{`a(?=b)`})}, nil, 1, true},
		{"re \\Z", "check_list", []any{nl, rules("unexpect", []any{`abc\Z`})}, nil, 1, false},
		{"re flag I", "check_json", []any{settings, jsonRule("re.I", "^abc$", "name")}, nil, 1, false},
		{"re flag X", "check_json", []any{settings, jsonRule("re.X", "^a b c", "name")}, nil, 0, true},
		{"re flag unknown", "check_json", []any{settings, jsonRule("re.NOSUCH", "abc", "name")}, nil, 0, true},
		{"re flag A \\w", "check_json", []any{settings, jsonRule("re.A", `^\w+$`, "word")}, nil, 0, false},
		{"re \\w Unicode", "check_json", []any{settings, jsonRule("re", `^\w+$`, "word")}, nil, 1, true},
		{"url \\d Unicode", "is_expected_url_pattern_match", []any{"https://a.com/p/١٢", urlRule(`/p/\d+$`)}, nil, 1, false},
		{"url $ newline", "is_expected_url_pattern_match", []any{"https://a.com/\n", urlRule(`com/$`)}, nil, 1, false},
		{"text blanks Unicode", "compare_text_file", []any{blanks, plain}, map[string]any{"ignore_blanks": true}, 1, false},
		{"line number Arabic-Indic", "check_line_number", []any{times, rules("expected", "2")}, nil, 1, false},
		{"filter \\w Unicode", "check_thunderbird_filter", []any{filterUnicode, rules("expect", []any{rules("enabled", "yes", "action", "Delete", "condition", []any{"AND (subject,contains,café)"})})}, nil, 1, true},
		{"search query \\w", "is_expected_search_query", []any{map[string]any{"url": "https://s.com/?q=日本"}, rules("expect", rules("pattern", `q=\w+`))}, nil, 1, true},
	}
}

func TestRegexMetricCases(t *testing.T) { runMetricCases(t, regexMetricCases(t)) }

// allMetricCases are the metric tables the corpus holds.
func allMetricCases(t *testing.T) []metricCase {
	var all []metricCase
	for _, f := range []func(*testing.T) []metricCase{generalCases, diffTextCases, jsonCases, textFileCases, chromeCases, appConfigCases, regexMetricCases} {
		all = append(all, f(t)...)
	}
	return all
}

// corpusEntry makes a table case a corpus entry: the paths of files the
// case's file calls wrote become "$FILE/" references.
func corpusEntry(t *testing.T, c metricCase) CorpusEntry {
	e := CorpusEntry{Name: c.name, Func: c.metric, Options: c.opts, Files: map[string]string{}}
	e.Args = mapStrings(c.args, func(x string) string {
		f, ok := testFiles.Load(x)
		if !ok {
			return x
		}
		nc := f.([2]string)
		sum := sha256.Sum256([]byte(nc[1]))
		name := nc[0] + "-" + hex.EncodeToString(sum[:4])
		e.Files[name] = nc[1]
		return corpusFile + name
	}).([]any)
	if len(e.Files) == 0 {
		e.Files = nil
	}
	// Through JSON, as the corpus keeps it.
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var out CorpusEntry
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// materialize writes an entry's files into dir and returns its args with
// the references replaced by their paths.
func (e CorpusEntry) materialize(t *testing.T, dir string) []any {
	for name, content := range e.Files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return mapStrings(e.Args, func(x string) string {
		if name, ok := strings.CutPrefix(x, corpusFile); ok {
			return filepath.Join(dir, name)
		}
		return x
	}).([]any)
}

// mapStrings is v with every string in it, however deep, replaced by f's.
func mapStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = mapStrings(x[i], f)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, y := range x {
			out[k] = mapStrings(y, f)
		}
		return out
	}
	return v
}

// nativeAnswer is drums' answer to an entry, as scoreMetric takes it.
func (e CorpusEntry) nativeAnswer(t *testing.T) MetricAnswer {
	m, ok := metrics[e.Func]
	if !ok {
		return MetricAnswer{NoScore: "no Go metric " + e.Func}
	}
	opts := e.Options
	if opts == nil {
		opts = map[string]any{}
	}
	s, err := m(e.materialize(t, t.TempDir()), opts)
	switch {
	case errors.Is(err, ErrNotNative):
		return MetricAnswer{NoScore: err.Error()}
	case err != nil:
		return MetricAnswer{Raised: err.Error()}
	}
	return MetricAnswer{Score: fptr(s)}
}

// sameKind reports whether two answers are the same score, or both
// raised, or both not computed (messages name temporary paths).
func sameKind(a, b MetricAnswer) bool {
	switch {
	case a.Score != nil && b.Score != nil:
		return *a.Score == *b.Score
	case a.Raised != "" && b.Raised != "", a.NoScore != "" && b.NoScore != "":
		return true
	}
	return false
}

// osworldJudge is OSWorld's metrics from the checkout osw, its
// dependencies on DRUMS_OSWORLD_PYTHONPATH, stopped when t ends.
func osworldJudge(t *testing.T, osw string) *PythonJudge {
	t.Helper()
	prov, err := filepath.Abs(filepath.Join("..", "..", "provider", "python"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &PythonConfig{Python: debianPython, OSWorld: osw, PythonPath: os.Getenv("DRUMS_OSWORLD_PYTHONPATH"), ProviderPath: prov, LogDir: t.TempDir()}
	if err := cfg.Check(); err != nil {
		t.Fatal(err)
	}
	judge := &PythonJudge{Config: cfg}
	t.Cleanup(judge.Close)
	return judge
}

// recordCorpus asks OSWorld's metrics (DRUMS_OSWORLD) for each entry.
func recordCorpus(t *testing.T, entries []CorpusEntry) MetricCorpus {
	osw := os.Getenv("DRUMS_OSWORLD")
	if osw == "" {
		t.Fatal("-record needs DRUMS_OSWORLD (and DRUMS_OSWORLD_PYTHONPATH): the corpus is OSWorld's answers")
	}
	commit := os.Getenv("DRUMS_OSWORLD_COMMIT")
	if out, err := exec.Command("git", "-C", osw, "log", "-1", "--format=%H %cI").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	if commit == "" {
		t.Fatal("-record: the checkout is no git tree; set DRUMS_OSWORLD_COMMIT to the commit it came from (git log -1 of its git dir)")
	}
	judge := osworldJudge(t, osw)
	c := MetricCorpus{OSWorld: commit}
	for _, e := range entries {
		args := e.materialize(t, t.TempDir())
		opts := e.Options
		if opts == nil {
			opts = map[string]any{}
		}
		a, err := judge.Metric(context.Background(), e.Func, args, opts)
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		e.OSWorld = a
		e.Native = e.nativeAnswer(t)
		c.Entries = append(c.Entries, e)
	}
	return c
}

// runPrefix starts the names of corpus entries recorded from runs.
const runPrefix = "run "

// runEntries are the corpus entries from runs: the kept ones, and the
// metric calls of the runs whose logs DRUMS_METRIC_CALLS lists
// (colon-separated paths of a native run's logs/metric-calls.jsonl, made
// with DRUMS_OSWORLD set), for metrics drums has. A call whose file is not
// small UTF-8 text is left out (the corpus keeps files as text).
func runEntries(t *testing.T) []CorpusEntry {
	var kept MetricCorpus
	loadKept(t, corpusPath, &kept)
	byName := map[string]CorpusEntry{}
	for _, e := range kept.Entries {
		if strings.HasPrefix(e.Name, runPrefix) {
			byName[e.Name] = e
		}
	}
	for _, log := range filepath.SplitList(os.Getenv("DRUMS_METRIC_CALLS")) {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var c metricCall
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("%s: %v", log, err)
			}
			if _, ok := metrics[c.Func]; !ok {
				continue
			}
			if e, ok := runEntry(c); ok {
				byName[e.Name] = e
			} else {
				t.Logf("%s: a %s call reads a file that is not small text: left out", log, c.Func)
			}
		}
	}
	return slices.SortedFunc(maps.Values(byName), func(a, b CorpusEntry) int { return strings.Compare(a.Name, b.Name) })
}

// corpusFileLimit bounds a file a run's entry keeps.
const corpusFileLimit = 256 << 10

func runEntry(c metricCall) (CorpusEntry, bool) {
	e := CorpusEntry{Func: c.Func, Options: c.Options, Files: map[string]string{}}
	ok := true
	e.Args = mapStrings(c.Args, func(x string) string {
		st, err := os.Stat(x)
		if !filepath.IsAbs(x) || err != nil || !st.Mode().IsRegular() {
			return x
		}
		b, err := os.ReadFile(x)
		if err != nil || len(b) > corpusFileLimit || !utf8.Valid(b) {
			ok = false
			return x
		}
		sum := sha256.Sum256(b)
		name := filepath.Base(x) + "-" + hex.EncodeToString(sum[:4])
		e.Files[name] = string(b)
		return corpusFile + name
	}).([]any)
	if len(e.Files) == 0 {
		e.Files = nil
	}
	key, _ := json.Marshal([]any{e.Func, e.Args, e.Options, e.Files})
	sum := sha256.Sum256(key)
	e.Name = runPrefix + e.Func + " " + hex.EncodeToString(sum[:6])
	return e, ok
}

// TestMetricCorpus runs every Go metric on the corpus and compares its
// answers with OSWorld's recorded ones: a difference fails. Every table
// case must be in the corpus with the same inputs (-record to add it).
func TestMetricCorpus(t *testing.T) {
	var table []CorpusEntry
	names := map[string]bool{}
	for _, c := range allMetricCases(t) {
		if names[c.name] {
			t.Fatalf("two metric cases named %q: the corpus keys them by name", c.name)
		}
		names[c.name] = true
		table = append(table, corpusEntry(t, c))
	}
	if *record {
		keep(t, corpusPath, recordCorpus(t, append(table, runEntries(t)...)))
	}
	var c MetricCorpus
	loadKept(t, corpusPath, &c)
	if c.OSWorld == "" {
		t.Errorf("%s names no OSWorld commit", corpusPath)
	}
	kept := map[string]CorpusEntry{}
	for _, e := range c.Entries {
		kept[e.Name] = e
	}
	for _, want := range table {
		got, ok := kept[want.Name]
		if !ok {
			t.Errorf("case %q is not in %s: record it (DRUMS_OSWORLD=... go test ./tasks/osworld -run TestMetricCorpus -record)", want.Name, corpusPath)
			continue
		}
		got.OSWorld, got.Native = MetricAnswer{}, MetricAnswer{}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(want)
		if string(a) != string(b) {
			t.Errorf("case %q differs from its corpus entry: re-record\n corpus %s\n table  %s", want.Name, a, b)
		}
	}
	for _, e := range c.Entries {
		live := e.nativeAnswer(t)
		if d := diverges(&live, &e.OSWorld); d != "" {
			t.Errorf("%s (%s): diverged: %s", e.Name, e.Func, d)
		}
		if !sameKind(live, e.Native) {
			t.Errorf("%s (%s): drums now answers %s, the corpus recorded %s: re-record", e.Name, e.Func, &live, &e.Native)
		}
	}
}

// TestNativeMetricsProven: every Go metric has corpus entries it computed
// and agrees on all of them (MetricNative holds), and MetricNative follows
// the kept corpus.
func TestNativeMetricsProven(t *testing.T) {
	var c MetricCorpus
	loadKept(t, corpusPath, &c)
	proves := c.proves()
	for _, f := range slices.Sorted(maps.Keys(metrics)) {
		if !proves[f] {
			t.Errorf("metric %s is not proven by %s: no entry it computes, or one where it differs from OSWorld", f, corpusPath)
		}
		if MetricNative(f) != proves[f] {
			t.Errorf("MetricNative(%s) = %v, the kept corpus says %v", f, MetricNative(f), proves[f])
		}
	}
	if MetricNative("compare_table") {
		t.Error("compare_table has no Go metric; it must be left to OSWorld")
	}
}
