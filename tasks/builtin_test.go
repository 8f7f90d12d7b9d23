package tasks

import (
	"testing"

	"github.com/drums-dev/drums/tasks/osworld"
)

func TestBuiltinTasksParse(t *testing.T) {
	ts, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) < 5 {
		t.Fatalf("%d built-in tasks, want at least 5", len(ts))
	}
	for _, task := range ts {
		if len(task.Solution) == 0 {
			t.Errorf("%s has no solution", task.ID)
		}
		if nn := osworld.NotNativeParts(task); len(nn) > 0 {
			t.Errorf("%s uses %v, which drums does not compute itself", task.ID, nn)
		}
		for _, s := range append(append([]osworld.Step{}, task.Config...), task.Evaluator.Postconfig...) {
			if err := osworld.CheckStep(s); err != nil {
				t.Errorf("%s: %v", task.ID, err)
			}
		}
	}
}
