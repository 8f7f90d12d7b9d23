package osworld

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drums-dev/drums/internal/childproc"
)

// PythonConfig runs tasks through OSWorld's own DesktopEnv with
// provider_name="drums" (the provider package in provider/python).
type PythonConfig struct {
	Python       string // the interpreter: Debian's /usr/bin/python3
	OSWorld      string // an OSWorld checkout (holds desktop_env)
	PythonPath   string // more PYTHONPATH entries (OSWorld's dependencies)
	ProviderPath string // the directory holding the drums_osworld package
	Socket       string // the daemon socket the provider leases from
	CacheDir     string // DesktopEnv's cache_dir (OSWorld's file cache layout)
	LogDir       string // one log per worker
	Image        string // the image desktops run from (DRUMS_IMAGE), "" for the daemon's
}

//go:embed osworld_worker.py
var workerPy string

// Check reports a configuration that cannot work before any task runs, and
// makes its paths absolute: the worker runs in the OSWorld checkout.
func (c *PythonConfig) Check() error {
	if c.OSWorld == "" {
		return errors.New("--via-python needs an OSWorld checkout: set DRUMS_OSWORLD or --osworld")
	}
	if err := c.absolute(); err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Join(c.OSWorld, "desktop_env")); err != nil || !st.IsDir() {
		return fmt.Errorf("%s has no desktop_env directory: not an OSWorld checkout", c.OSWorld)
	}
	if _, err := os.Stat(filepath.Join(c.ProviderPath, "drums_osworld", "__init__.py")); err != nil {
		return fmt.Errorf("drums_osworld not found under %s: set --provider-python", c.ProviderPath)
	}
	if _, err := exec.LookPath(c.Python); err != nil {
		return fmt.Errorf("python %s: %w", c.Python, err)
	}
	return nil
}

// absolute makes every path of c absolute against the current directory: a
// bare interpreter name stays for PATH, the list keeps its separators.
func (c *PythonConfig) absolute() error {
	paths := []*string{&c.OSWorld, &c.ProviderPath, &c.Socket, &c.CacheDir, &c.LogDir}
	if strings.ContainsRune(c.Python, filepath.Separator) {
		paths = append(paths, &c.Python)
	}
	for _, p := range paths {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if c.PythonPath == "" {
		return nil
	}
	entries := filepath.SplitList(c.PythonPath)
	for i, e := range entries {
		abs, err := filepath.Abs(e)
		if err != nil {
			return err
		}
		entries[i] = abs
	}
	c.PythonPath = strings.Join(entries, string(filepath.ListSeparator))
	return nil
}

// WorkerAnswer is one worker answer.
type WorkerAnswer struct {
	Ready           bool     `json:"ready"`
	Fatal           string   `json:"fatal"`
	Trace           string   `json:"trace"`
	SetupOK         *bool    `json:"setup_ok"`
	SetupError      string   `json:"setup_error"`
	ScreenshotBytes int      `json:"screenshot_bytes"`
	A11yBytes       int      `json:"a11y_bytes"`
	ObsError        string   `json:"obs_error"`
	MetricScore     *float64 `json:"metric_score"`
	MetricRaised    string   `json:"metric_raised"`
	Score           *float64 `json:"score"`
	EvalError       string   `json:"eval_error"`
	Error           string   `json:"error"`
	Seconds         float64  `json:"seconds"`
	// The task's solution, where the request had one: why it did not run
	// to its end, or the score after it (or why evaluate() raised).
	SolutionError string   `json:"solution_error"`
	ScoreAfter    *float64 `json:"score_after"`
	AfterError    string   `json:"after_error"`
}

// Worker is one running worker process.
type Worker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
	log string
}

// startTimeout bounds a worker's start: importing desktop_env and leasing
// the first desktop. It must stay above a cold import of OSWorld's metric
// modules (pandas, lxml, …: ~15 s on a loaded machine).
const startTimeout = 3 * time.Minute

func (c *PythonConfig) StartWorker(ctx context.Context, n int, width, height int) (*Worker, error) {
	return c.spawn(ctx, fmt.Sprintf("osworld-worker-%d.log", n), map[string]any{"cache_dir": c.CacheDir, "width": width, "height": height})
}

// spawn starts a worker with its argv[1] config, logging to LogDir/logName.
func (c *PythonConfig) spawn(ctx context.Context, logName string, config map[string]any) (*Worker, error) {
	paths := []string{c.ProviderPath, c.OSWorld}
	if c.PythonPath != "" {
		paths = append(paths, c.PythonPath)
	}
	arg, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encode worker config: %w", err)
	}
	cmd := exec.Command(c.Python, "-c", workerPy, string(arg))
	cmd.Dir = c.OSWorld
	cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join(paths, ":"), "DRUMS_SOCKET="+c.Socket, "DRUMS_IMAGE="+c.Image, "PYTHONUNBUFFERED=1")
	cmd.SysProcAttr = childproc.SysProcAttr(syscall.SIGKILL)
	logPath := filepath.Join(c.LogDir, logName)
	if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("create worker log dir: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open worker log: %w", err)
	}
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("worker stdin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("worker stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", c.Python, err)
	}
	logf.Close() // the child holds it
	w := &Worker{cmd: cmd, in: in, out: bufio.NewScanner(out), log: logPath}
	w.out.Buffer(make([]byte, 1<<20), 16<<20)
	a, err := w.Read(ctx, startTimeout)
	if err != nil {
		w.Stop()
		return nil, fmt.Errorf("osworld worker did not start: %w (log %s)", err, logPath)
	}
	if !a.Ready {
		w.Stop()
		return nil, fmt.Errorf("osworld worker: %s (log %s)", a.Fatal, logPath)
	}
	return w, nil
}

// Read waits for one answer line. After an error the caller stops the
// worker (Stop).
func (w *Worker) Read(ctx context.Context, timeout time.Duration) (WorkerAnswer, error) {
	type got struct {
		a   WorkerAnswer
		err error
	}
	ch := make(chan got, 1)
	go func() {
		if !w.out.Scan() {
			err := w.out.Err()
			if err == nil {
				err = io.EOF
			}
			ch <- got{err: fmt.Errorf("worker exited: %w", err)}
			return
		}
		var a WorkerAnswer
		err := json.Unmarshal(w.out.Bytes(), &a)
		ch <- got{a, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case g := <-ch:
		return g.a, g.err
	case <-t.C:
		return WorkerAnswer{}, fmt.Errorf("no answer within %s", timeout)
	case <-ctx.Done():
		return WorkerAnswer{}, ctx.Err()
	}
}

// Send writes one request line to the worker.
func (w *Worker) Send(req []byte) error {
	_, err := w.in.Write(append(req, '\n'))
	return err
}

// Log is the worker's log file.
func (w *Worker) Log() string { return w.log }

// Stop ends the worker: stdin closed lets it release its desktop, then the
// process group is killed if it lingers.
func (w *Worker) Stop() {
	_ = w.in.Close()
	done := make(chan struct{})
	go func() { _ = w.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// metricTimeout bounds one OSWorld metric call (a metric over a large
// document reads and compares it whole).
const metricTimeout = 2 * time.Minute

// PythonJudge is OSWorld's Python scoring metrics for the native runner:
// one worker with no DesktopEnv, started on the first call and again after
// it dies, shared by the runner's tasks. Each call and OSWorld's answer is
// a line of LogDir/metric-calls.jsonl, the getter values the metric
// corpus records from runs (TestMetricCorpus -record).
type PythonJudge struct {
	Config *PythonConfig
	// Warn, when set, is told once that the call log could not be
	// written: the scores stand.
	Warn io.Writer

	mu     sync.Mutex
	w      *Worker
	calls  *os.File // the call log, opened by the first call
	broken bool     // the call log failed: calls go unlogged
	warned bool
}

// MetricCallsLog is the judge's log of calls in LogDir.
const MetricCallsLog = "metric-calls.jsonl"

// metricCall is one line of MetricCallsLog.
type metricCall struct {
	Func    string         `json:"func"`
	Args    []any          `json:"args"`
	Options map[string]any `json:"options,omitempty"`
	OSWorld MetricAnswer   `json:"osworld"`
}

// Metric is desktop_env.evaluators.metrics.<f>(*args, **opts) in the
// worker; args are JSON as OSWorld's getters return them (a tuple is a
// list).
func (j *PythonJudge) Metric(ctx context.Context, f string, args []any, opts map[string]any) (MetricAnswer, error) {
	call := map[string]any{"func": f, "result": Arg(args, 0), "options": opts}
	if len(args) > 1 {
		call["expected"] = args[1]
	}
	req, err := json.Marshal(map[string]any{"metric": call})
	if err != nil {
		return MetricAnswer{}, fmt.Errorf("encode the metric call: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.w == nil {
		if j.w, err = j.Config.spawn(ctx, "osworld-metrics.log", map[string]any{"metrics_only": true}); err != nil {
			return MetricAnswer{}, err
		}
	}
	if err := j.w.Send(req); err != nil {
		j.closeLocked()
		return MetricAnswer{}, fmt.Errorf("osworld metrics worker: %w", err)
	}
	a, err := j.w.Read(ctx, metricTimeout)
	if err != nil {
		log := j.w.log
		j.closeLocked()
		return MetricAnswer{}, fmt.Errorf("osworld metrics worker: %w (log %s)", err, log)
	}
	if a.MetricScore == nil && a.MetricRaised == "" {
		return MetricAnswer{}, fmt.Errorf("osworld metrics worker answered no metric score (log %s)", j.w.log)
	}
	ans := MetricAnswer{Score: a.MetricScore, Raised: a.MetricRaised}
	j.logCall(metricCall{Func: f, Args: args, Options: opts, OSWorld: ans})
	return ans, nil
}

// logCall appends c to the call log. The log is a record beside the
// score, so a failure does not fail the call: it is said once (Warn), a
// call that cannot be encoded goes unlogged, and a log that cannot be
// opened or written is given up.
func (j *PythonJudge) logCall(c metricCall) {
	if j.broken {
		return
	}
	line, err := json.Marshal(c)
	if err != nil {
		j.warn(fmt.Errorf("encode the metric call of %s: %w", c.Func, err))
		return
	}
	if j.calls == nil {
		if j.calls, err = os.OpenFile(filepath.Join(j.Config.LogDir, MetricCallsLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			j.broken = true
			j.warn(fmt.Errorf("metric call log: %w", err))
			return
		}
	}
	if _, err := j.calls.Write(append(line, '\n')); err != nil {
		j.broken = true
		j.calls.Close()
		j.calls = nil
		j.warn(fmt.Errorf("metric call log: %w", err))
	}
}

// warn says the first failure of the call log.
func (j *PythonJudge) warn(err error) {
	if j.warned || j.Warn == nil {
		return
	}
	j.warned = true
	fmt.Fprintf(j.Warn, "osworld metrics: %v (the scores stand; calls may go unlogged)\n", err)
}

// Close stops the worker and closes the call log.
func (j *PythonJudge) Close() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closeLocked()
	if j.calls != nil {
		j.calls.Close()
		j.calls = nil
	}
}

func (j *PythonJudge) closeLocked() {
	if j.w != nil {
		j.w.Stop()
		j.w = nil
	}
}
