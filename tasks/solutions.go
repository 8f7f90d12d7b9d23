package tasks

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/drums-dev/drums/tasks/osworld"
)

// solutionsFS holds reference solutions of OSWorld tasks, one file per
// task: solutions/DOMAIN/ID.json, {"note": "...", "solution": [actions]}
// (actions as in Action). A task read from a suite gets the solution of its
// domain and id; OSWorld's own task files are not changed.
//
//go:embed solutions
var solutionsFS embed.FS

// solutionFile is one reference solution.
type solutionFile struct {
	// Note says what the solution does, and why an action is what it is
	// where that is not plain.
	Note     string           `json:"note"`
	Solution []osworld.Action `json:"solution"`
}

// referenceSolution is the reference solution of domain/id, nil if it has
// none.
func referenceSolution(domain, id string) ([]osworld.Action, error) {
	b, err := solutionsFS.ReadFile(path.Join("solutions", domain, id+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the solution of %s/%s: %w", domain, id, err)
	}
	var f solutionFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("solution of %s/%s: %w", domain, id, err)
	}
	if len(f.Solution) == 0 {
		return nil, fmt.Errorf("solution of %s/%s has no actions", domain, id)
	}
	return f.Solution, nil
}

// Solution outcomes in the report.
const (
	SolutionSolved = "solved" // 0 before acting, 1 after the solution
	SolutionFailed = "failed" // the solution did not take the score from 0 to 1
	// SolutionUnscored: the solution ran, but the task's metric or getter
	// is not native and this run is not through OSWorld's DesktopEnv.
	SolutionUnscored = "unscored"
)

// SolutionResult is what a task's solution did to its score.
type SolutionResult struct {
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// solutionOutcome judges a solution from the score before acting and the
// evaluation after it; err is why the solution did not run to its end.
func solutionOutcome(before *float64, after *osworld.Evaluation, err error) *SolutionResult {
	if err != nil {
		return &SolutionResult{Outcome: SolutionFailed, Reason: "solution: " + err.Error()}
	}
	why := []string{after.Summary()}
	for _, m := range after.Metrics {
		if m.Error != "" {
			why = append(why, m.Func+": "+m.Error)
		}
	}
	switch {
	case after.Score == nil && len(after.NotNative) > 0:
		return &SolutionResult{Outcome: SolutionUnscored, Reason: after.Summary()}
	case after.Score == nil:
		return &SolutionResult{Outcome: SolutionFailed, Reason: osworld.JoinReason(append([]string{"no score after the solution"}, why...)...)}
	case *after.Score != 1:
		return &SolutionResult{Outcome: SolutionFailed, Reason: osworld.JoinReason(append([]string{"score after the solution is " + osworld.ScoreText(after.Score)}, why...)...)}
	case before == nil || *before != 0:
		return &SolutionResult{Outcome: SolutionFailed, Reason: "score before acting is " + osworld.ScoreText(before) + ", not 0: the solution proves nothing"}
	}
	return &SolutionResult{Outcome: SolutionSolved}
}

// solutionText is the report's solution column: solved (0 → 1), failed
// and why, or none.
func solutionText(r Result) string {
	switch {
	case r.Solution == nil:
		return "none"
	case r.Solution.Outcome == SolutionSolved:
		return "solved (" + scoresText(r) + ")"
	case r.Solution.Outcome == SolutionUnscored:
		return "ran, not scored: " + r.Solution.Reason
	}
	return "failed: " + r.Solution.Reason
}

// LoadTask is osworld.LoadTask with drums' reference solution
// (solutions/DOMAIN/ID.json) where the task file has none.
func LoadTask(dir, domain, id string) (*osworld.Task, error) {
	t, err := osworld.LoadTask(dir, domain, id)
	if err != nil {
		return nil, err
	}
	if len(t.Solution) == 0 {
		if t.Solution, err = referenceSolution(domain, id); err != nil {
			return nil, err
		}
	}
	return t, nil
}
