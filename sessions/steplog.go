package sessions

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
)

// stepMessage is the debug record the engine logs when a session's init
// reports a step done (start_linux.go); StepLog reads it.
const stepMessage = "session step"

// StepTime is a step of a session's init and when it was done, in
// milliseconds since init started.
type StepTime struct {
	Name string  `json:"name"`
	Ms   float64 `json:"ms"`
}

// StepLog is a slog.Handler for Config.Logger that keeps when each step of
// every session's init was done and drops every other record: what the
// benchmarks report as the init steps.
type StepLog struct {
	mu    sync.Mutex
	steps map[string][]float64
}

var _ slog.Handler = (*StepLog)(nil)

func (l *StepLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *StepLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *StepLog) WithGroup(string) slog.Handler            { return l }

// Handle implements slog.Handler.
func (l *StepLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != stepMessage {
		return nil
	}
	var name string
	var ms float64
	var ok bool
	r.Attrs(func(a slog.Attr) bool {
		switch {
		case a.Key == "step":
			name = a.Value.String()
		case a.Key == "ms" && a.Value.Kind() == slog.KindFloat64:
			ms, ok = a.Value.Float64(), true
		}
		return true
	})
	if name == "" || !ok {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.steps == nil {
		l.steps = map[string][]float64{}
	}
	l.steps[name] = append(l.steps[name], ms)
	return nil
}

// Take returns the median of each step logged since the last Take, in the
// order the steps finish, and forgets them.
func (l *StepLog) Take() []StepTime {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	steps := l.steps
	l.steps = nil
	l.mu.Unlock()
	var out []StepTime
	for name, v := range steps {
		slices.Sort(v)
		out = append(out, StepTime{Name: name, Ms: v[len(v)/2]})
	}
	slices.SortFunc(out, func(a, b StepTime) int { return cmp.Or(cmp.Compare(a.Ms, b.Ms), cmp.Compare(a.Name, b.Name)) })
	return out
}
