package tasks

import (
	"embed"
	"fmt"
	"path"
	"sort"

	"github.com/drums-dev/drums/tasks/osworld"
)

// builtinFS holds drums' own tasks in OSWorld's format, each with a
// scripted solution: one each for files, the terminal, gsettings, a GTK
// application and Chromium. Each scores 0 before its solution and 1 after.
//
//go:embed builtin/*.json
var builtinFS embed.FS

// BuiltinDomain is the domain built-in tasks are reported under.
const BuiltinDomain = "drums"

// Builtin returns the built-in tasks, sorted by id.
func Builtin() ([]*osworld.Task, error) {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil, fmt.Errorf("read built-in tasks: %w", err)
	}
	var out []*osworld.Task
	for _, e := range entries {
		b, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read built-in task %s: %w", e.Name(), err)
		}
		t, err := osworld.ParseTask(b)
		if err != nil {
			return nil, fmt.Errorf("built-in task %s: %w", e.Name(), err)
		}
		t.Domain = BuiltinDomain
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
