package tasks

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drums-dev/drums/tasks/osworld"
)

//go:embed episode/episode.json
var episodeJSON []byte

// EpisodeTask is the task `drums run` drives on every desktop: a GTK dialog
// answered with pyautogui actions.
func EpisodeTask() (*osworld.Task, error) {
	t, err := osworld.ParseTask(episodeJSON)
	if err != nil {
		return nil, fmt.Errorf("episode task: %w", err)
	}
	t.Domain = BuiltinDomain
	return t, nil
}

// EpisodeResult is one desktop's episode, timed the way an agent sees it.
type EpisodeResult struct {
	Desktop     string
	Setup       time.Duration   // reset: readiness probe and setup steps
	Observe     time.Duration   // the first observation
	Steps       []time.Duration // each action with the observation after it
	ScoreBefore *float64
	ScoreAfter  *float64
	Screenshots []string
	Err         error
}

// RunEpisode drives an OSWorld-style episode through the guest API as
// DesktopEnv does: reset (setup), observe (screenshot and accessibility
// tree), evaluate, then each solution action followed by an observation,
// and a final evaluation. Screenshots go to dir.
func RunEpisode(ctx context.Context, env *osworld.Env, t *osworld.Task, dir string) EpisodeResult {
	res := EpisodeResult{}
	start := time.Now()
	if _, err := env.Setup(ctx, t.Config); err != nil {
		res.Err = fmt.Errorf("reset: %w", err)
		return res
	}
	res.Setup = time.Since(start)
	obs := func(n int) error {
		img, err := env.Guest.Screenshot(ctx)
		if err != nil {
			return fmt.Errorf("screenshot: %w", err)
		}
		if _, err := env.Guest.Accessibility(ctx); err != nil {
			return fmt.Errorf("accessibility tree: %w", err)
		}
		if dir != "" {
			p := filepath.Join(dir, fmt.Sprintf("step-%02d.png", n))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("create screenshot dir: %w", err)
			}
			if err := os.WriteFile(p, img, 0o644); err != nil {
				return fmt.Errorf("save screenshot: %w", err)
			}
			res.Screenshots = append(res.Screenshots, p)
		}
		return nil
	}
	start = time.Now()
	if err := obs(0); err != nil {
		res.Err = err
		return res
	}
	res.Observe = time.Since(start)
	before := env.Evaluate(ctx, t, false)
	res.ScoreBefore = before.Score
	for i, a := range t.Solution {
		start := time.Now()
		// No pause: the step's time is the action and the observation.
		if err := Solve(ctx, env, []osworld.Action{a}, 0); err != nil {
			res.Err = fmt.Errorf("step %d: %w", i+1, err)
			return res
		}
		if err := obs(i + 1); err != nil {
			res.Err = fmt.Errorf("step %d: %w", i+1, err)
			return res
		}
		res.Steps = append(res.Steps, time.Since(start))
	}
	after := env.Evaluate(ctx, t, false)
	res.ScoreAfter = after.Score
	if after.Error != "" {
		res.Err = fmt.Errorf("evaluate: %s", strings.TrimSpace(after.Error))
	}
	return res
}
