package tasks

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/ctxtime"
	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/drums-dev/drums/tasks/osworld"
)

// Desktop is a leased desktop as the runner needs it.
type Desktop struct {
	ID       string
	GuestURL string
	Width    int
	Height   int
}

// Desktops hands out desktops: the provider daemon (ProviderDesktops) in
// the product, a fake in tests.
type Desktops interface {
	Lease(ctx context.Context, width, height int) (Desktop, error)
	// Revert returns the desktop clean; the returned ID may differ.
	Revert(ctx context.Context, id string) (Desktop, error)
	Release(ctx context.Context, id string) error
}

// Progress hears about a run as it goes.
type Progress interface {
	Start(total int)
	Done(r Result)
	Finish()
}

// Config is one run of the suite.
type Config struct {
	// Examples is the directory with DOMAIN/ID.json task files.
	Examples string
	Cache    osworld.FileCache
	// Files receives screenshots (Files/screenshots), accessibility trees
	// (Files/accessibility) and the files steps and getters write
	// (Files/work, OSWorld's per-task cache dirs).
	Files         string
	Parallel      int
	Width, Height int
	Password      string // OSWorld's client_password ("password")
	Timeouts      osworld.Timeouts
	// TaskTimeout bounds one task from setup to score. It must stay above
	// the longest setup (a cold LibreOffice open plus downloads, ~2 min on a
	// loaded machine).
	TaskTimeout time.Duration
	// Settle is the pause between setup and observation, standing in for
	// the 60 s lib_run_single.py sleeps so that applications finish
	// starting.
	Settle time.Duration
	// LiveWeb says the desktops reach the internet, so tasks that need it
	// are judged like the others.
	LiveWeb bool
	// Python, when set, runs each task through OSWorld's own DesktopEnv.
	Python *osworld.PythonConfig
	// Judge, when set, scores the native runner's metrics with OSWorld's
	// own (PythonJudge), drums' computed beside them.
	Judge osworld.Judge
}

func (c Config) withDefaults() Config {
	if c.Parallel < 1 {
		c.Parallel = 1
	}
	if c.Width == 0 {
		c.Width, c.Height = 1920, 1080
	}
	if c.Password == "" {
		c.Password = "password"
	}
	if c.TaskTimeout == 0 {
		c.TaskTimeout = 10 * time.Minute
	}
	return c
}

// Runner runs tasks over leased desktops.
type Runner struct {
	cfg      Config
	desktops Desktops
	progress Progress
	// schemas are the GSettings schemas the desktops have (probed once).
	schemas map[string]bool
}

// NewRunner returns a runner; progress may be nil.
func NewRunner(cfg Config, desktops Desktops, progress Progress) *Runner {
	if progress == nil {
		progress = nopProgress{}
	}
	return &Runner{cfg: cfg.withDefaults(), desktops: desktops, progress: progress}
}

type nopProgress struct{}

func (nopProgress) Start(int)   {}
func (nopProgress) Done(Result) {}
func (nopProgress) Finish()     {}

// planned is a task with what is known before running it.
type planned struct {
	idx  int
	task *osworld.Task
	res  Result
	run  bool
}

// Run runs the entries and returns one result per entry, in order. Only a
// failure to get any desktop at all is an error; everything that goes
// wrong with one task is in its result.
func (r *Runner) Run(ctx context.Context, entries []osworld.Entry) ([]Result, error) {
	tasks := make([]*osworld.Task, len(entries))
	loadErrs := make([]error, len(entries))
	for i, e := range entries {
		tasks[i], loadErrs[i] = LoadTask(r.cfg.Examples, e.Domain, e.ID)
	}
	return r.run(ctx, entries, tasks, loadErrs)
}

// RunTasks runs already loaded tasks (built-in ones).
func (r *Runner) RunTasks(ctx context.Context, tasks []*osworld.Task) ([]Result, error) {
	entries := make([]osworld.Entry, len(tasks))
	for i, t := range tasks {
		entries[i] = osworld.Entry{Domain: t.Domain, ID: t.ID}
	}
	return r.run(ctx, entries, tasks, make([]error, len(tasks)))
}

func (r *Runner) run(ctx context.Context, entries []osworld.Entry, tasks []*osworld.Task, loadErrs []error) ([]Result, error) {
	r.progress.Start(len(entries))
	defer r.progress.Finish()
	results := make([]Result, len(entries))
	plans := make([]*planned, len(entries))
	programs := map[string]bool{}
	schemas := map[string]bool{}
	for i, e := range entries {
		p := &planned{idx: i, task: tasks[i], res: Result{Domain: e.Domain, ID: e.ID, Mode: r.mode()}}
		plans[i] = p
		if loadErrs[i] != nil {
			p.res.Status, p.res.Reason = StatusFailed, loadErrs[i].Error()
			continue
		}
		p.res.Requirements = Analyze(p.task, r.cfg.Cache)
		p.res.Feasible = !(len(p.task.Evaluator.Funcs) == 1 && p.task.Evaluator.Funcs[0] == "infeasible")
		for _, a := range p.res.Requirements.Apps {
			programs[a] = true
		}
		for _, s := range p.res.Requirements.Schemas {
			schemas[s] = true
		}
	}

	// One desktop answers which programs exist; the first worker keeps it.
	first, err := r.desktops.Lease(ctx, r.cfg.Width, r.cfg.Height)
	if err != nil {
		return nil, fmt.Errorf("lease a desktop: %w", err)
	}
	probe := client.New(first.GuestURL, nil)
	have, err := osworld.ProbePrograms(ctx, probe, sortedKeys(programs))
	if err == nil && len(schemas) > 0 {
		r.schemas, err = osworld.ProbeSchemas(ctx, probe)
	}
	probe.Close()
	if err != nil {
		_ = r.desktops.Release(context.WithoutCancel(ctx), first.ID)
		return nil, fmt.Errorf("probe programs on desktop %s: %w", first.ID, err)
	}

	var queue []*planned
	for _, p := range plans {
		if p.res.Status == "" {
			r.classify(p, have)
		}
		if p.run {
			queue = append(queue, p)
		} else {
			results[p.idx] = p.res
			r.progress.Done(p.res)
		}
	}

	if r.cfg.Python != nil {
		// OSWorld's DesktopEnv leases its own desktops.
		_ = r.desktops.Release(context.WithoutCancel(ctx), first.ID)
		r.runPython(ctx, queue, results)
		return results, nil
	}

	work := make(chan *planned)
	var wg sync.WaitGroup
	n := min(r.cfg.Parallel, max(len(queue), 1))
	for w := 0; w < n; w++ {
		var d *Desktop
		if w == 0 {
			d = &first
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(ctx, d, work, results)
		}()
	}
	for _, p := range queue {
		work <- p
	}
	close(work)
	wg.Wait()
	return results, nil
}

func (r *Runner) mode() string {
	if r.cfg.Python != nil {
		return "osworld"
	}
	return "native"
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// classify decides from the requirements whether a task runs.
func (r *Runner) classify(p *planned, have map[string]bool) {
	req := p.res.Requirements
	var missing []string
	for _, a := range req.Apps {
		if !have[a] {
			missing = append(missing, a)
		}
	}
	files := req.MissingFiles()
	switch {
	case len(req.Unsupported) > 0:
		p.res.Status, p.res.Reason = StatusUnsupported, strings.Join(req.Unsupported, "; ")
	case len(missing) > 0:
		p.res.Status, p.res.Reason = StatusMissingApp, "not installed on the desktop: "+strings.Join(missing, ", ")
		if len(files) > 0 {
			p.res.Reason += fmt.Sprintf("; also needs %d file-cache files", len(files))
		}
	case len(files) > 0:
		names := make([]string, len(files))
		for i, f := range files {
			names[i] = f.describe()
		}
		p.res.Status, p.res.Reason = StatusNeedsFileCache, fmt.Sprintf("%d of %d file-cache files missing: %s", len(files), len(req.FileCache), strings.Join(names, ", "))
		if r.cfg.Cache.Dir == "" && r.cfg.Cache.Mirror == nil {
			p.res.Reason += " (no --cache or --hf-mirror given)"
		}
	default:
		p.run = true
	}
	if !p.run && len(req.LiveWeb) > 0 && !r.cfg.LiveWeb {
		p.res.Reason += "; also needs live web: " + strings.Join(req.LiveWeb, ", ")
	}
}

// worker runs tasks on one desktop, reverting it between tasks.
func (r *Runner) worker(ctx context.Context, d *Desktop, work <-chan *planned, results []Result) {
	fresh := d != nil
	defer func() {
		if d != nil {
			_ = r.desktops.Release(context.WithoutCancel(ctx), d.ID)
		}
	}()
	for p := range work {
		if err := ctx.Err(); err != nil {
			p.res.Status, p.res.Reason = StatusFailed, "run cancelled: "+err.Error()
		} else if err := r.ensureDesktop(ctx, &d, fresh); err != nil {
			p.res.Status, p.res.Reason = StatusFailed, "no desktop: "+err.Error()
		} else {
			fresh = false
			r.runOne(ctx, d, p)
		}
		results[p.idx] = p.res
		r.progress.Done(p.res)
	}
}

// ensureDesktop gives the worker a clean desktop: a fresh lease, or the
// previous one reverted (leased anew when the revert fails).
func (r *Runner) ensureDesktop(ctx context.Context, d **Desktop, fresh bool) error {
	if *d != nil && fresh {
		return nil
	}
	if *d != nil {
		nd, err := r.desktops.Revert(ctx, (*d).ID)
		if err == nil {
			*d = &nd
			return nil
		}
		_ = r.desktops.Release(context.WithoutCancel(ctx), (*d).ID)
		*d = nil
	}
	nd, err := r.desktops.Lease(ctx, r.cfg.Width, r.cfg.Height)
	if err != nil {
		return err
	}
	*d = &nd
	return nil
}

// runOne runs a task natively on *d (which a revert for the task's
// solution may replace); a panic becomes a failed result, never a crashed
// runner.
func (r *Runner) runOne(ctx context.Context, d *Desktop, p *planned) {
	start := time.Now()
	p.res.Desktop = d.ID
	defer func() {
		p.res.Seconds = time.Since(start).Seconds()
		if v := recover(); v != nil {
			p.res.Status = StatusFailed
			p.res.Reason = fmt.Sprintf("runner panic: %v\n%s", v, debug.Stack())
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.TaskTimeout)
	defer cancel()
	env := r.env(*d, p.task)
	defer env.Guest.Close()
	r.episode(ctx, env, p.task, &p.res)
	if len(p.task.Solution) > 0 && solvesAfresh(p.task) && p.res.Status != StatusFailed {
		r.solveAfresh(ctx, d, p.task, &p.res)
	}
	if ctx.Err() != nil && p.res.Status != StatusFailed {
		p.res.Status = StatusFailed
		p.res.Reason = osworld.JoinReason(fmt.Sprintf("timed out after %s", r.cfg.TaskTimeout), p.res.Reason)
	}
}

func (r *Runner) env(d Desktop, t *osworld.Task) *osworld.Env {
	w, h := d.Width, d.Height
	if w == 0 {
		w, h = r.cfg.Width, r.cfg.Height
	}
	return &osworld.Env{
		Guest:    client.New(d.GuestURL, nil),
		TaskID:   t.ID,
		Screen:   osworld.Screen{Width: w, Height: h, Password: r.cfg.Password},
		Cache:    r.cfg.Cache,
		WorkDir:  filepath.Join(r.cfg.Files, "work", t.Domain, t.ID),
		Timeouts: r.cfg.Timeouts,
		Judge:    r.cfg.Judge,
	}
}

// episode is DesktopEnv.reset (setup), _get_obs and evaluate with no
// action, then the built-in solution and a second evaluation when the task
// has one.
func (r *Runner) episode(ctx context.Context, env *osworld.Env, t *osworld.Task, res *Result) {
	steps, err := env.Setup(ctx, t.Config)
	res.Setup = steps
	res.SetupOK = bptr(err == nil)
	if err != nil {
		r.finish(res, StatusFailed, "setup: "+err.Error())
		return
	}
	if r.cfg.Settle > 0 {
		if err := ctxtime.Sleep(ctx, r.cfg.Settle); err != nil {
			r.finish(res, StatusFailed, err.Error())
			return
		}
	}
	obs := r.observe(ctx, env, t)
	res.Observation = obs
	res.ObservationOK = bptr(obs.OK())
	ev := env.Evaluate(ctx, t, false)
	if obs.OK() {
		ev.Screenshot = r.snapshot(ctx, env, t, ".evaluated.png")
	}
	res.Evaluation = &ev
	res.ScoreBefore = ev.Score
	res.Evaluator = ev.Evaluator
	if len(ev.Getters) > 0 {
		res.GettersOK = bptr(ev.GettersOK())
	}
	if len(t.Solution) > 0 && !solvesAfresh(t) {
		if err := r.solve(ctx, env, t, res, obs.OK()); err != nil {
			r.finish(res, StatusFailed, "solution: "+err.Error())
			return
		}
	}
	if !obs.OK() {
		r.finish(res, StatusFailed, "observation: "+obs.describe())
		return
	}
	status := StatusRan
	if len(ev.Diverged) > 0 || res.After != nil && len(res.After.Diverged) > 0 {
		status = StatusDiverged
	}
	reasons := []string{ev.Summary()}
	if res.After != nil && len(res.After.Diverged) > 0 {
		reasons = append(reasons, "after the solution, diverged: "+strings.Join(res.After.Diverged, "; "))
	}
	if res.Feasible && ev.Score != nil && *ev.Score > 0 {
		reasons = append(reasons, fmt.Sprintf("score before acting is %s for a feasible task: the desktop did not start in the task's initial state (OSWorld's VM gives 0)", pyvalue.Repr(*ev.Score)))
	}
	reasons = append(reasons, res.Requirements.UnavailableServices()...)
	for _, s := range res.Requirements.Schemas {
		if r.schemas != nil && !r.schemas[s] {
			reasons = append(reasons, "gsettings schema "+s+" is not installed on the desktop: its settings do not change")
		}
	}
	for _, s := range steps {
		if s.Warning != "" {
			reasons = append(reasons, s.Type+" warned: "+s.Warning)
		}
	}
	r.finish(res, status, osworld.JoinReason(reasons...))
}

// solvesAfresh says whether a task's solution needs a desktop of its own,
// set up again: the evaluation before acting ran the evaluator's
// postconfig (a save with ctrl+s, an application closed or restarted),
// which leaves the desktop in a state OSWorld's agent never starts from.
func solvesAfresh(t *osworld.Task) bool { return len(t.Evaluator.Postconfig) > 0 }

// solveAfresh reverts the desktop, sets the task up again, waits as
// before the observation, and runs the solution and the evaluation after
// it (DesktopEnv.reset, the agent's steps, evaluate).
func (r *Runner) solveAfresh(ctx context.Context, d *Desktop, t *osworld.Task, res *Result) {
	fail := func(what string, err error) {
		res.Solution = solutionOutcome(res.ScoreBefore, nil, fmt.Errorf("%s: %w", what, err))
	}
	nd, err := r.desktops.Revert(ctx, d.ID)
	if err != nil {
		fail("revert the desktop for the solution", err)
		return
	}
	*d = nd
	env := r.env(nd, t)
	defer env.Guest.Close()
	if _, err := env.Setup(ctx, t.Config); err != nil {
		fail("set the task up again for the solution", err)
		return
	}
	if err := ctxtime.Sleep(ctx, r.cfg.Settle); err != nil {
		fail("settle", err)
		return
	}
	_ = r.solve(ctx, env, t, res, true)
}

// solve runs the task's solution and evaluates again (after it the
// screenshot, where shots), recording the outcome in res; the error is the
// solution's, when it did not run to its end.
func (r *Runner) solve(ctx context.Context, env *osworld.Env, t *osworld.Task, res *Result, shots bool) error {
	if err := Solve(ctx, env, t.Solution, StepPause); err != nil {
		res.Solution = solutionOutcome(res.ScoreBefore, nil, err)
		return err
	}
	after := env.Evaluate(ctx, t, osworld.LastFails(t.Solution))
	if shots {
		after.Screenshot = r.snapshot(ctx, env, t, ".solved.png")
	}
	res.After = &after
	res.ScoreAfter = after.Score
	res.Solution = solutionOutcome(res.ScoreBefore, &after, nil)
	return nil
}

// finish sets the status, keeping needs-live-web for tasks that need the
// internet when the desktops have none: what they did offline is in the
// other fields.
func (r *Runner) finish(res *Result, status, reason string) {
	if len(res.Requirements.LiveWeb) > 0 && !r.cfg.LiveWeb {
		res.Status = StatusNeedsLiveWeb
		res.Reason = osworld.JoinReason("needs "+strings.Join(res.Requirements.LiveWeb, ", ")+"; ran offline: "+status, reason)
		return
	}
	res.Status, res.Reason = status, reason
}

func (o *Observation) describe() string {
	if o.Error != "" {
		return o.Error
	}
	return fmt.Sprintf("screenshot %d bytes, accessibility tree %d bytes", o.ScreenshotBytes, o.AccessibilityBytes)
}

// observe is _get_obs: the screenshot and the accessibility tree, both
// kept under Files for the report.
func (r *Runner) observe(ctx context.Context, env *osworld.Env, t *osworld.Task) *Observation {
	o := &Observation{}
	img, err := env.Guest.Screenshot(ctx)
	if err != nil {
		o.Error = "screenshot: " + err.Error()
		return o
	}
	o.ScreenshotBytes = len(img)
	o.Screenshot = r.keep(t, "screenshots", ".png", img)
	tree, err := env.Guest.Accessibility(ctx)
	if err != nil {
		o.Error = "accessibility tree: " + err.Error()
		return o
	}
	o.AccessibilityBytes = len(tree)
	o.Accessibility = r.keep(t, "accessibility", ".xml", []byte(tree))
	return o
}

// snapshot keeps a screenshot of the desktop as it is now, for the
// report; "" when it cannot (the task's result does not depend on it).
func (r *Runner) snapshot(ctx context.Context, env *osworld.Env, t *osworld.Task, suffix string) string {
	if r.cfg.Files == "" {
		return ""
	}
	img, err := env.Guest.Screenshot(ctx)
	if err != nil {
		return ""
	}
	return r.keep(t, "screenshots", suffix, img)
}

// keep writes data to Files/kind/DOMAIN/ID+suffix and returns that path
// relative to Files; "" without Files or when the write fails (the report
// then says the file was not kept).
func (r *Runner) keep(t *osworld.Task, kind, suffix string, data []byte) string {
	if r.cfg.Files == "" {
		return ""
	}
	rel := filepath.Join(kind, t.Domain, t.ID+suffix)
	p := filepath.Join(r.cfg.Files, rel)
	if os.MkdirAll(filepath.Dir(p), 0o755) != nil || os.WriteFile(p, data, 0o644) != nil {
		return ""
	}
	return rel
}

// Solve runs a task's solution: pyautogui commands as DesktopEnv.step
// sends them, each followed by pause (DesktopEnv: 2 s); a click on an
// accessibility element at its centre in the tree observed just before it;
// DesktopEnv.step's WAIT as a pause, DONE and FAIL as nothing to run (the
// evaluation reads FAIL); shell steps through the setup controller.
func Solve(ctx context.Context, env *osworld.Env, actions []osworld.Action, pause time.Duration) error {
	for i, a := range actions {
		if a.Step != nil {
			if _, err := env.RunStep(ctx, *a.Step); err != nil {
				return fmt.Errorf("action %d (%s): %w", i+1, a.Step.Type, err)
			}
			continue
		}
		var code string
		switch a.Code {
		case osworld.ActionDone, osworld.ActionFail:
			continue
		case osworld.ActionWait:
		default:
			c, err := osworld.Substitute(a.Code, env.Screen)
			if err != nil {
				return fmt.Errorf("action %d: %w", i+1, err)
			}
			code = c.(string)
		}
		if a.Click != nil {
			tree, err := env.Guest.Accessibility(ctx)
			if err != nil {
				return fmt.Errorf("action %d: accessibility tree: %w", i+1, err)
			}
			if code, err = osworld.ClickCode(tree, *a.Click); err != nil {
				return fmt.Errorf("action %d: %w", i+1, err)
			}
		}
		if code != "" {
			res, err := env.Guest.ExecutePython(ctx, code)
			if err != nil {
				return fmt.Errorf("action %d: %w", i+1, err)
			}
			if res.ReturnCode != 0 {
				return fmt.Errorf("action %d exited %d: %s", i+1, res.ReturnCode, strings.TrimSpace(res.Error))
			}
		}
		if err := ctxtime.Sleep(ctx, pause); err != nil {
			return err
		}
	}
	return nil
}

// StepPause stands in for DesktopEnv.step's pause=2 s after an action: the
// desktop needs a moment to redraw before the next one. It must stay above
// a window's reaction to a key on a loaded machine (~100 ms).
const StepPause = 500 * time.Millisecond
