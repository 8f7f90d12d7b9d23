package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/drums-dev/drums/tasks/osworld"
)

// workerSolution judges the task's solution from a worker's answer.
func workerSolution(a *osworld.WorkerAnswer) *SolutionResult {
	if a.SolutionError != "" {
		return solutionOutcome(a.Score, nil, errors.New(a.SolutionError))
	}
	ev := &osworld.Evaluation{Score: a.ScoreAfter}
	if a.AfterError != "" {
		ev.Error = "evaluate() raised " + a.AfterError
	}
	return solutionOutcome(a.Score, ev, nil)
}

// runPython runs the queue over Parallel OSWorld workers. A worker that
// dies fails its task and is replaced for the next one.
func (r *Runner) runPython(ctx context.Context, queue []*planned, results []Result) {
	work := make(chan *planned)
	var wg sync.WaitGroup
	n := min(r.cfg.Parallel, max(len(queue), 1))
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var w *osworld.Worker
			defer func() {
				if w != nil {
					w.Stop()
				}
			}()
			for p := range work {
				if w == nil {
					var err error
					if w, err = r.cfg.Python.StartWorker(ctx, i, r.cfg.Width, r.cfg.Height); err != nil {
						p.res.Status, p.res.Reason = StatusFailed, err.Error()
						results[p.idx] = p.res
						r.progress.Done(p.res)
						continue
					}
				}
				if !r.pythonOne(ctx, w, p) {
					w.Stop()
					w = nil
				}
				results[p.idx] = p.res
				r.progress.Done(p.res)
			}
		}(i)
	}
	for _, p := range queue {
		work <- p
	}
	close(work)
	wg.Wait()
}

// stage puts a task's file-cache files where OSWorld's SetupController
// and get_cloud_file look before downloading, CacheDir/<task id>/<name>
// (FileCache's layout), so DesktopEnv finds them all: a mirrored file is
// checked against the mirror's manifest on the way. A file already in
// CacheDir because CacheDir is the cache's Dir stays as it is.
func stage(c *osworld.PythonConfig, cache osworld.FileCache, taskID string, files []CacheFile) error {
	for _, f := range files {
		dst := filepath.Join(c.CacheDir, taskID, f.Name)
		if cache.Has(taskID, f.Name) && sameFile(cache.Path(taskID, f.Name), dst) {
			continue
		}
		data, err := cache.Read(taskID, f.Name, f.URL)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return fmt.Errorf("stage %s: %w", f.describe(), err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return fmt.Errorf("stage %s: %w", f.describe(), err)
		}
	}
	return nil
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// pythonOne runs one task on a worker; false means the worker is gone.
func (r *Runner) pythonOne(ctx context.Context, w *osworld.Worker, p *planned) bool {
	if err := stage(r.cfg.Python, r.cfg.Cache, p.task.ID, p.res.Requirements.FileCache); err != nil {
		r.finish(&p.res, StatusFailed, "file cache for OSWorld's cache_dir: "+err.Error())
		return true
	}
	req, _ := json.Marshal(map[string]any{"path": p.task.Path, "settle": r.cfg.Settle.Seconds(), "solution": p.task.Solution})
	if err := w.Send(req); err != nil {
		p.res.Status, p.res.Reason = StatusFailed, "osworld worker: "+err.Error()
		return false
	}
	a, err := w.Read(ctx, r.cfg.TaskTimeout)
	if err != nil {
		p.res.Status, p.res.Reason = StatusFailed, fmt.Sprintf("osworld worker: %v (log %s)", err, w.Log())
		return false
	}
	p.res.Seconds = a.Seconds
	if a.Error != "" {
		r.finish(&p.res, StatusFailed, "osworld worker: "+a.Error)
		return true
	}
	p.res.SetupOK = a.SetupOK
	if a.SetupOK == nil || !*a.SetupOK {
		r.finish(&p.res, StatusFailed, "setup: "+a.SetupError)
		return true
	}
	obs := &Observation{ScreenshotBytes: a.ScreenshotBytes, AccessibilityBytes: a.A11yBytes, Error: a.ObsError}
	p.res.Observation = obs
	p.res.ObservationOK = bptr(obs.OK())
	p.res.ScoreBefore = a.Score
	p.res.Evaluator = osworld.EvaluatorOSWorld
	if len(p.task.Solution) > 0 {
		p.res.Solution = workerSolution(&a)
		p.res.ScoreAfter = a.ScoreAfter
	}
	if a.EvalError == "" {
		p.res.GettersOK = bptr(true)
	} else {
		p.res.GettersOK = bptr(false)
	}
	if !obs.OK() {
		r.finish(&p.res, StatusFailed, "observation: "+obs.describe())
		return true
	}
	reason := ""
	if a.EvalError != "" {
		reason = "evaluate() raised " + a.EvalError
	}
	r.finish(&p.res, StatusRan, osworld.JoinReason(append([]string{reason}, p.res.Requirements.UnavailableServices()...)...))
	return true
}
