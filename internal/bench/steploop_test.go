package bench

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGuest answers the step's three requests as guestd does, and keeps
// the actions it was sent and the connections they came on.
type fakeGuest struct {
	*httptest.Server
	mu      sync.Mutex
	actions []string
	conns   map[string]bool
	// broken answers /screenshot with a 500.
	broken bool
}

func newFakeGuest(t *testing.T, broken bool) *fakeGuest {
	g := &fakeGuest{conns: map[string]bool{}, broken: broken}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.conns[r.RemoteAddr] = true
		g.mu.Unlock()
		switch r.URL.Path {
		case "/execute":
			var body struct{ Command []string }
			data, _ := io.ReadAll(r.Body)
			if json.Unmarshal(data, &body) != nil || len(body.Command) != 3 {
				http.Error(w, "bad body", 400)
				return
			}
			g.mu.Lock()
			g.actions = append(g.actions, body.Command[2])
			g.mu.Unlock()
			io.WriteString(w, `{"error": "", "output": "", "returncode": 0, "status": "success"}`)
		case "/screenshot":
			if g.broken {
				http.Error(w, "no X", 500)
				return
			}
			io.WriteString(w, "\x89PNG\r\n\x1a\nrest of a png")
		case "/accessibility":
			io.WriteString(w, `{"AT": "<desktop-frame name=\"main\"/>"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(g.Close)
	return g
}

func TestLoop(t *testing.T) {
	a, b := newFakeGuest(t, false), newFakeGuest(t, false)
	// The host's 2 CPUs over the loop: 1 s, 400 ms of it busy (the
	// desktops' 10 ms and the client's part of it), 100 ms waiting for
	// I/O, 100 ms stolen.
	hostReads := 0
	hostCPU := func() (HostCPU, error) {
		hostReads++
		n := time.Duration(hostReads - 1)
		return HostCPU{Busy: n * 400 * time.Millisecond, IOWait: n * 100 * time.Millisecond, Steal: n * 100 * time.Millisecond, Total: n * time.Second}, nil
	}
	samples := 0
	cpu := func() (CPUSample, error) {
		// Each desktop's cgroup used 10 ms between the two samples,
		// 4 of them by guestd.
		samples++
		total := time.Duration(samples) * 10 * time.Millisecond
		return CPUSample{Total: total, Procs: map[int]ProcCPU{7: {Comm: "guestd", Start: 1, CPU: total * 4 / 10}}}, nil
	}
	res, err := Loop(context.Background(), "guestd", []Target{{URL: a.URL, CPU: cpu}, {URL: b.URL}}, DefaultSteps(), 150*time.Millisecond, hostCPU)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps < 2 || res.Errors != 0 || len(res.Step) != res.Steps || len(res.DesktopSteps) != 2 || res.DesktopSteps[0]+res.DesktopSteps[1] != res.Steps {
		t.Fatalf("loop: %d steps, %d errors, %d step times, per desktop %v", res.Steps, res.Errors, len(res.Step), res.DesktopSteps)
	}
	for _, name := range []string{"execute", "screenshot", "accessibility"} {
		if len(res.Requests[name]) != res.Steps || res.Bytes[name] == 0 {
			t.Errorf("%s: %d times, %d bytes over %d steps", name, len(res.Requests[name]), res.Bytes[name], res.Steps)
		}
	}
	// The action alternates between the two points, OSWorld's shape with
	// PAUSE off; every request came on a connection of its own.
	if len(a.actions) < 2 || a.actions[0] == a.actions[1] ||
		a.actions[0] != "import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; pyautogui.click(300, 300)" {
		t.Errorf("actions %q", a.actions)
	}
	if len(a.conns) != 3*res.DesktopSteps[0] {
		t.Errorf("%d connections for %d steps of 3 requests", len(a.conns), res.DesktopSteps[0])
	}
	if !res.CPUMeasured || res.CPU != 10*time.Millisecond || res.Procs["guestd"] != 4*time.Millisecond || res.Procs[endedProcs] != 6*time.Millisecond {
		t.Errorf("cpu %v, by process %v", res.CPU, res.Procs)
	}

	row := res.row([]string{"execute", "screenshot", "accessibility"})
	if row.Steps != res.Steps || row.StepsPerSecond <= 0 || row.PerDesktop != row.StepsPerSecond/2 || len(row.Requests) != 3 ||
		row.Requests[1].MeanBytes != int64(len("\x89PNG\r\n\x1a\nrest of a png")) || row.CPUPerStep != 10*time.Millisecond/time.Duration(res.Steps) {
		t.Errorf("row %+v", row)
	}
	if row.Procs[0].Name != endedProcs || row.Procs[1].Name != "guestd" {
		t.Errorf("processes not largest first: %+v", row.Procs)
	}
	if h := row.Host; h == nil || h.Desktops != 0.01 || h.IOWait != 0.1 || h.Steal != 0.1 || h.Idle != 0.4 ||
		h.Others+h.Client < 0.38 || h.Others+h.Client > 0.3900001 {
		t.Errorf("host share %+v", h)
	}
}

// A failing request fails its step, which is counted and not timed, and
// the first error is kept.
func TestLoopCountsFailures(t *testing.T) {
	g := newFakeGuest(t, true)
	res, err := Loop(context.Background(), "upstream", []Target{{URL: g.URL}}, DefaultSteps(), 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 0 || res.Errors == 0 || !strings.Contains(res.FirstError, "GET /screenshot: status 500") || len(res.Requests["execute"]) != 0 {
		t.Errorf("%d steps, %d errors, first %q", res.Steps, res.Errors, res.FirstError)
	}
	if res.CPUMeasured {
		t.Error("cpu measured without a sampler")
	}
}

func TestLoopResultsAdd(t *testing.T) {
	a := &LoopResult{Server: "guestd", Desktops: 2, Loops: 1, Wall: time.Second, Steps: 3, DesktopSteps: []int{1, 2},
		Requests: map[string][]time.Duration{"x": {1, 2, 3}}, Bytes: map[string]int64{"x": 30}, Procs: map[string]time.Duration{"p": 5}}
	b := &LoopResult{Server: "guestd", Desktops: 2, Loops: 1, Wall: time.Second, Steps: 1, Errors: 1, FirstError: "boom", DesktopSteps: []int{1, 0},
		Requests: map[string][]time.Duration{"x": {4}}, Bytes: map[string]int64{"x": 10}, Procs: map[string]time.Duration{"p": 1, "q": 2}, CPUMeasured: true}
	if err := a.add(b); err != nil {
		t.Fatal(err)
	}
	if a.Loops != 2 || a.Wall != 2*time.Second || a.Steps != 4 || a.Errors != 1 || a.FirstError != "boom" || a.DesktopSteps[0] != 2 ||
		len(a.Requests["x"]) != 4 || a.Bytes["x"] != 40 || a.Procs["p"] != 6 || a.Procs["q"] != 2 || !a.CPUMeasured {
		t.Errorf("sum %+v", a)
	}
	if err := a.add(&LoopResult{Server: "upstream", Desktops: 2}); err == nil {
		t.Error("added a loop of another server")
	}
}

func TestChecks(t *testing.T) {
	for _, c := range []struct {
		check  func(int, []byte) error
		status int
		body   string
		ok     bool
	}{
		{checkExecute, 200, `{"returncode": 0, "status": "success"}`, true},
		{checkExecute, 200, `{"returncode": 1, "error": "Traceback"}`, false},
		{checkExecute, 200, `{"status": "success"}`, false},
		{checkExecute, 500, `{"message": "x"}`, false},
		{checkPNG, 200, "\x89PNG\r\n\x1a\n...", true},
		{checkPNG, 200, "GIF89a", false},
		{checkAccessibility, 200, `{"AT": "<desktop-frame/>"}`, true},
		{checkAccessibility, 200, `{"AT": null}`, false},
		{checkAccessibility, 500, `{"AT": "<desktop-frame/>"}`, false},
	} {
		if err := c.check(c.status, []byte(c.body)); (err == nil) != c.ok {
			t.Errorf("%d %q: %v, want ok %v", c.status, c.body, err, c.ok)
		}
	}
	// Werkzeug's debugger page names the exception in its title.
	page := "<!doctype html>\n<html lang=en>\n  <head>\n    <title>IndexError: list index out of range\n // Werkzeug Debugger</title>"
	if err := checkAccessibility(500, []byte(page)); err == nil || err.Error() != "status 500: page titled IndexError: list index out of range // Werkzeug Debugger" {
		t.Errorf("debugger page: %v", err)
	}
}
