package osworld

import (
	_ "embed"
	"encoding/json"
	"sync"
)

// The metric corpus (testdata/metric-corpus.json) is what proves a Go
// metric equal to OSWorld's: recorded inputs, each with the answer
// OSWorld's Python metric gave and the one drums' gave when it was
// recorded. TestMetricCorpus recomputes drums' answers on every run and
// fails where they differ from OSWorld's; -record (with DRUMS_OSWORLD)
// re-asks OSWorld.
//
//go:embed testdata/metric-corpus.json
var corpusJSON []byte

// MetricCorpus is testdata/metric-corpus.json.
type MetricCorpus struct {
	// OSWorld is the commit of the checkout whose metrics answered.
	OSWorld string        `json:"osworld"`
	Entries []CorpusEntry `json:"entries"`
}

// CorpusEntry is one metric call: func(*args, **options) with the files
// it reads. A string "$FILE/name" in args stands for the path of
// Files[name], written to a directory of the caller's.
type CorpusEntry struct {
	Name    string            `json:"name"`
	Func    string            `json:"func"`
	Args    []any             `json:"args"`
	Options map[string]any    `json:"options,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
	OSWorld MetricAnswer      `json:"osworld"`
	Native  MetricAnswer      `json:"native"`
}

// corpusFile is the prefix of a file reference in a corpus entry's args.
const corpusFile = "$FILE/"

// proven is the set of metrics the corpus proves equal: at least one
// entry drums computed, and no entry where drums' answer differs.
var proven = sync.OnceValue(func() map[string]bool {
	var c MetricCorpus
	if err := json.Unmarshal(corpusJSON, &c); err != nil {
		return nil // an unreadable corpus proves nothing: TestMetricCorpus fails
	}
	return c.proves()
})

func (c MetricCorpus) proves() map[string]bool {
	out := map[string]bool{}
	bad := map[string]bool{}
	for _, e := range c.Entries {
		if e.Native.NoScore != "" {
			continue
		}
		if diverges(&e.Native, &e.OSWorld) != "" || e.OSWorld.NoScore != "" {
			bad[e.Func] = true
		}
		out[e.Func] = true
	}
	for f := range bad {
		delete(out, f)
	}
	return out
}
