package bench

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drums-dev/drums/compat"
)

// StepRequest is one request of an RL step. The i-th step sends
// Bodies[i%len(Bodies)] (none: no body), and the answer must pass Check:
// a fast failure is never counted as a fast step.
type StepRequest struct {
	Name   string
	Method string
	Path   string
	Bodies [][]byte // JSON
	Check  func(status int, body []byte) error
}

// stepAction is the pyautogui action of a step, in OSWorld's shape
// (PythonController sends ["python", "-c", "import pyautogui; import time;
// pyautogui.FAILSAFE = False; <action>"]) with pyautogui's own 0.1 s PAUSE
// turned off, as an RL loop that wants speed sets it.
const stepAction = "import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; pyautogui.click(%d, %d)"

// stepPoints are where successive steps click: alternating, so that every
// step moves the pointer and the next screenshot is a new frame, and both
// inside the text of the terminal that the default setup opens
// (gnome-terminal --geometry=80x24+60+60), where a click changes nothing
// else.
var stepPoints = [][2]int{{300, 300}, {400, 300}}

// DefaultSteps is the RL step: one pyautogui action through /execute, then
// the observation OSWorld takes after it, a screenshot and the
// accessibility tree.
func DefaultSteps() []StepRequest {
	var bodies [][]byte
	for _, p := range stepPoints {
		b, _ := json.Marshal(map[string]any{"command": []string{"python", "-c", fmt.Sprintf(stepAction, p[0], p[1])}, "shell": false})
		bodies = append(bodies, b)
	}
	return []StepRequest{
		{Name: "execute", Method: "POST", Path: "/execute", Bodies: bodies, Check: checkExecute},
		{Name: "screenshot", Method: "GET", Path: "/screenshot", Check: checkPNG},
		{Name: "accessibility", Method: "GET", Path: "/accessibility", Check: checkAccessibility},
	}
}

// The checks are cheap on purpose: the loop's client shares the machine
// with the desktops, and decoding every PNG would take CPU from them.

// excerpt is the start of a failed answer for an error, or the title of
// an HTML page (upstream's Werkzeug debugger names the exception there).
func excerpt(body []byte) string {
	if _, rest, ok := bytes.Cut(body, []byte("<title>")); ok {
		if title, _, ok := bytes.Cut(rest, []byte("</title>")); ok {
			return "page titled " + strings.Join(strings.Fields(string(title)), " ")
		}
	}
	return fmt.Sprintf("%.200q", body)
}

func checkExecute(status int, body []byte) error {
	var r struct {
		Returncode *int   `json:"returncode"`
		Error      string `json:"error"`
	}
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, excerpt(body))
	}
	if err := json.Unmarshal(body, &r); err != nil || r.Returncode == nil {
		return fmt.Errorf("not an /execute answer: %s", excerpt(body))
	}
	if *r.Returncode != 0 {
		return fmt.Errorf("returncode %d: %.200q", *r.Returncode, r.Error)
	}
	return nil
}

func checkPNG(status int, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, excerpt(body))
	}
	if !bytes.HasPrefix(body, []byte("\x89PNG\r\n\x1a\n")) {
		return fmt.Errorf("not a PNG: %.40q", body)
	}
	return nil
}

func checkAccessibility(status int, body []byte) error {
	if status != http.StatusOK {
		return fmt.Errorf("status %d: %s", status, excerpt(body))
	}
	if !bytes.Contains(body, []byte(`"AT"`)) || !bytes.Contains(body, []byte("desktop-frame")) {
		return fmt.Errorf("no accessibility tree: %s", excerpt(body))
	}
	return nil
}

// Target is one desktop's server under test: its base URL, and what the
// desktop's processes have used (nil: not measured).
type Target struct {
	URL string
	CPU func() (CPUSample, error)
}

// LoopResult is one loop over some desktops, or the sum of several.
type LoopResult struct {
	Server   string
	Desktops int
	Loops    int
	Wall     time.Duration
	Steps    int
	Errors   int
	// FirstError is the first failed request's error.
	FirstError string
	// DesktopSteps are the steps each desktop completed.
	DesktopSteps []int
	Step         []time.Duration
	// Requests are the times of each request of the completed steps, by
	// StepRequest.Name; Bytes their summed body sizes.
	Requests map[string][]time.Duration
	Bytes    map[string]int64
	// CPU is what the desktops' cgroups used, Client what this process
	// (the loop's client) did, Procs the desktops' CPU by process name.
	CPU, Client time.Duration
	Procs       map[string]time.Duration
	CPUMeasured bool
	// Host is the whole host's CPU time over the loop (zero: not read).
	Host HostCPU
}

// requestTimeout bounds one request of the loop: above upstream's slowest
// answer on a loaded machine (an accessibility walk of an application can
// take seconds), below the loop's patience.
const requestTimeout = time.Minute

// errorBackoff is the pause after a failed step, so that a desktop that
// refuses connections does not spin the client; it stays short against a
// loop of seconds.
const errorBackoff = 100 * time.Millisecond

// Loop runs the step on every target at once, each as fast as it answers,
// until d has passed (a step under way then is finished), one new
// connection per request as OSWorld's clients make; host, if not nil,
// reads the host's CPU time. It fails only when ctx ends or CPU cannot be
// read; failed steps are counted.
func Loop(ctx context.Context, server string, targets []Target, steps []StepRequest, d time.Duration, host func() (HostCPU, error)) (*LoopResult, error) {
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	if host == nil {
		host = func() (HostCPU, error) { return HostCPU{}, nil }
	}
	hostBefore, err := host()
	if err != nil {
		return nil, err
	}
	before, err := sampleAll(targets)
	if err != nil {
		return nil, err
	}
	clientBefore := clientCPU()
	start := time.Now()
	deadline := start.Add(d)
	runs := make([]desktopRun, len(targets))
	var wg sync.WaitGroup
	for i := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = loopDesktop(ctx, client, targets[i].URL, steps, deadline)
		}()
	}
	wg.Wait()
	res := &LoopResult{Server: server, Desktops: len(targets), Loops: 1, Wall: time.Since(start), Client: clientCPU() - clientBefore,
		Requests: map[string][]time.Duration{}, Bytes: map[string]int64{}, Procs: map[string]time.Duration{}}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	after, err := sampleAll(targets)
	if err != nil {
		return nil, err
	}
	hostAfter, err := host()
	if err != nil {
		return nil, err
	}
	res.Host = hostAfter.sub(hostBefore)
	for i := range targets {
		if targets[i].CPU != nil {
			res.CPUMeasured = true
			res.CPU += after[i].Total - before[i].Total
			for name, t := range cpuByProcess(before[i], after[i]) {
				res.Procs[name] += t
			}
		}
		r := runs[i]
		res.Steps += r.steps
		res.Errors += r.errors
		if res.FirstError == "" {
			res.FirstError = r.firstError
		}
		res.DesktopSteps = append(res.DesktopSteps, r.steps)
		res.Step = append(res.Step, r.step...)
		for k, s := range steps {
			res.Requests[s.Name] = append(res.Requests[s.Name], r.requests[k]...)
			res.Bytes[s.Name] += r.bytes[k]
		}
	}
	return res, nil
}

func sampleAll(targets []Target) ([]CPUSample, error) {
	out := make([]CPUSample, len(targets))
	for i, t := range targets {
		if t.CPU == nil {
			continue
		}
		s, err := t.CPU()
		if err != nil {
			return nil, fmt.Errorf("read the desktops' cpu time: %w", err)
		}
		out[i] = s
	}
	return out, nil
}

// clientCPU is the user and system time of this process so far.
func clientCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// desktopRun is one desktop's part of a loop.
type desktopRun struct {
	steps, errors int
	firstError    string
	step          []time.Duration
	requests      [][]time.Duration // by step request
	bytes         []int64
}

func loopDesktop(ctx context.Context, client *http.Client, base string, steps []StepRequest, deadline time.Time) desktopRun {
	r := desktopRun{requests: make([][]time.Duration, len(steps)), bytes: make([]int64, len(steps))}
	took := make([]time.Duration, len(steps))
	size := make([]int64, len(steps))
	for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
		start := time.Now()
		var failed error
		for k := range steps {
			t0 := time.Now()
			n, err := steps[k].do(ctx, client, base, i)
			took[k], size[k] = time.Since(t0), n
			if err != nil {
				failed = fmt.Errorf("%s %s: %w", steps[k].Method, steps[k].Path, err)
				break
			}
		}
		if failed != nil {
			if ctx.Err() != nil {
				break
			}
			r.errors++
			if r.firstError == "" {
				r.firstError = failed.Error()
			}
			select {
			case <-ctx.Done():
			case <-time.After(errorBackoff):
			}
			continue
		}
		r.steps++
		r.step = append(r.step, time.Since(start))
		for k := range steps {
			r.requests[k] = append(r.requests[k], took[k])
			r.bytes[k] += size[k]
		}
	}
	return r
}

// do sends the request of step i and checks the answer; it returns the
// body's size.
func (s *StepRequest) do(ctx context.Context, client *http.Client, base string, i int) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var body io.Reader
	if len(s.Bodies) > 0 {
		body = bytes.NewReader(s.Bodies[i%len(s.Bodies)])
	}
	req, err := http.NewRequestWithContext(ctx, s.Method, base+s.Path, body)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("read the answer: %w", err)
	}
	return int64(len(data)), s.Check(resp.StatusCode, data)
}

// add sums b into r: the same server and desktops, another loop.
func (r *LoopResult) add(b *LoopResult) error {
	if r.Server != b.Server || r.Desktops != b.Desktops {
		return errors.New("bench: adding loops of different servers or desktop counts")
	}
	r.Loops += b.Loops
	r.Wall += b.Wall
	r.Steps += b.Steps
	r.Errors += b.Errors
	if r.FirstError == "" {
		r.FirstError = b.FirstError
	}
	for i, n := range b.DesktopSteps {
		r.DesktopSteps[i] += n
	}
	r.Step = append(r.Step, b.Step...)
	for k, v := range b.Requests {
		r.Requests[k] = append(r.Requests[k], v...)
		r.Bytes[k] += b.Bytes[k]
	}
	r.CPU += b.CPU
	r.Client += b.Client
	for k, v := range b.Procs {
		r.Procs[k] += v
	}
	r.CPUMeasured = r.CPUMeasured || b.CPUMeasured
	r.Host = HostCPU{Busy: r.Host.Busy + b.Host.Busy, IOWait: r.Host.IOWait + b.Host.IOWait, Steal: r.Host.Steal + b.Host.Steal,
		Total: r.Host.Total + b.Host.Total}
	return nil
}

// StepRow is a loop's figures, as the report shows them.
type StepRow struct {
	Server   string  `json:"server"`
	Desktops int     `json:"desktops"`
	Loops    int     `json:"loops"`
	Seconds  float64 `json:"seconds"`
	Steps    int     `json:"steps"`
	Errors   int     `json:"errors"`
	// FirstError is the first failed request's error, if any.
	FirstError string `json:"first_error,omitempty"`
	// StepsPerSecond is every desktop's steps over the wall time;
	// PerDesktop the same per desktop, with the slowest and fastest.
	StepsPerSecond float64      `json:"steps_per_second"`
	PerDesktop     float64      `json:"steps_per_second_per_desktop"`
	SlowestDesktop float64      `json:"slowest_desktop"`
	FastestDesktop float64      `json:"fastest_desktop"`
	Step           compat.Stats `json:"step"`
	Requests       []RequestRow `json:"requests"`
	// CPUPerStep is the desktops' CPU time per step (0 when not
	// measured), ClientPerStep this process's.
	CPUPerStep    time.Duration `json:"cpu_per_step_ns"`
	ClientPerStep time.Duration `json:"client_cpu_per_step_ns"`
	CPUMeasured   bool          `json:"cpu_measured"`
	// Procs is CPUPerStep split by process name, largest first.
	Procs []ProcRow `json:"procs"`
	// Host is the share of the host's CPU time (all CPUs) over the loops
	// that went to each use; empty when not read.
	Host       *HostShare `json:"host,omitempty"`
	LoadBefore string     `json:"load_before"`
	LoadAfter  string     `json:"load_after"`
}

// HostShare splits the host's CPU time over the loops, as fractions of
// it: the desktops' processes, the loop's client, everything else that was
// busy (the kernel's work outside the desktops, other users), I/O wait,
// steal and idle.
type HostShare struct {
	Desktops float64 `json:"desktops"`
	Client   float64 `json:"client"`
	Others   float64 `json:"others"`
	IOWait   float64 `json:"iowait"`
	Steal    float64 `json:"steal"`
	Idle     float64 `json:"idle"`
}

// RequestRow is one request of the step.
type RequestRow struct {
	Name      string       `json:"name"`
	Stats     compat.Stats `json:"stats"`
	MeanBytes int64        `json:"mean_bytes"`
}

// ProcRow is a process name's CPU time per step.
type ProcRow struct {
	Name    string        `json:"name"`
	PerStep time.Duration `json:"per_step_ns"`
}

// row summarises r; order is the step's request names.
func (r *LoopResult) row(order []string) StepRow {
	row := StepRow{Server: r.Server, Desktops: r.Desktops, Loops: r.Loops, Seconds: r.Wall.Seconds(), Steps: r.Steps,
		Errors: r.Errors, FirstError: r.FirstError, Step: compat.NewStats(r.Step), CPUMeasured: r.CPUMeasured}
	if r.Wall > 0 {
		row.StepsPerSecond = float64(r.Steps) / r.Wall.Seconds()
		row.PerDesktop = row.StepsPerSecond / float64(max(1, r.Desktops))
		if len(r.DesktopSteps) > 0 {
			row.SlowestDesktop = float64(slices.Min(r.DesktopSteps)) / r.Wall.Seconds()
			row.FastestDesktop = float64(slices.Max(r.DesktopSteps)) / r.Wall.Seconds()
		}
	}
	if h := r.Host; h.Total > 0 {
		t := float64(h.Total)
		row.Host = &HostShare{Desktops: float64(r.CPU) / t, Client: float64(r.Client) / t, IOWait: float64(h.IOWait) / t,
			Steal: float64(h.Steal) / t, Idle: float64(h.Total-h.Busy-h.IOWait-h.Steal) / t}
		row.Host.Others = max(0, float64(h.Busy-r.CPU-r.Client)/t)
	}
	for _, name := range order {
		rr := RequestRow{Name: name, Stats: compat.NewStats(r.Requests[name])}
		if rr.Stats.N > 0 {
			rr.MeanBytes = r.Bytes[name] / int64(rr.Stats.N)
		}
		row.Requests = append(row.Requests, rr)
	}
	if r.Steps > 0 {
		n := time.Duration(r.Steps)
		row.CPUPerStep, row.ClientPerStep = r.CPU/n, r.Client/n
		for name, t := range r.Procs {
			row.Procs = append(row.Procs, ProcRow{Name: name, PerStep: t / n})
		}
		slices.SortFunc(row.Procs, func(a, b ProcRow) int {
			return cmp.Or(cmp.Compare(b.PerStep, a.PerStep), cmp.Compare(a.Name, b.Name))
		})
	}
	return row
}
