package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/sessions"
)

// fakeEngine makes sessions whose processes are the fake host's, logging
// init steps as the engine does.
type fakeEngine struct {
	h       *fakeHost
	log     *slog.Logger
	mu      sync.Mutex
	n       int
	live    map[string]bool
	resetOK bool
	standby bool // resets take a standby
	spares  int  // creates take a spare while spareUp
	spareUp bool
}

var _ Engine = (*fakeEngine)(nil)

func (e *fakeEngine) Create(_ context.Context, req sessions.Request) (*sessions.Session, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if req.Image != "core" {
		return nil, fmt.Errorf("image %q, want core", req.Image)
	}
	e.n++
	id := fmt.Sprintf("s%d", e.n)
	e.live[id] = true
	for step, ms := range map[string]float64{"xvfb": 30 + float64(e.n), "guestd": 40 + float64(e.n)} {
		e.log.Debug("session step", "id", id, "step", step, "ms", ms)
	}
	e.log.Info("something else", "step", "nope", "ms", 1.0)
	spare := e.spareUp
	e.spareUp = false // its replacement is up once waited for
	return &sessions.Session{ID: id, Plan: &sessions.Plan{Cgroup: e.h.cgroup}, Spare: spare}, nil
}

func (e *fakeEngine) Reset(_ context.Context, id string) (*sessions.Session, error) {
	if !e.resetOK {
		return nil, errors.New("reset refused")
	}
	return &sessions.Session{ID: id, Plan: &sessions.Plan{Cgroup: e.h.cgroup}, Standby: e.standby}, nil
}

func (e *fakeEngine) WaitStandby(context.Context, string) error {
	if !e.standby {
		return errors.New("no standby")
	}
	return nil
}

func (e *fakeEngine) WaitSpares(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.spares == 0 {
		return errors.New("no spares")
	}
	e.spareUp = true
	return nil
}

// Exec runs nothing: the parts over the fake engine run no command in a
// desktop.
func (e *fakeEngine) Exec(context.Context, string, []string, sessions.ExecOptions) (sessions.ExecResult, error) {
	return sessions.ExecResult{}, errors.New("the fake engine runs no command")
}

func (e *fakeEngine) Remove(_ context.Context, id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.live, id)
	return nil
}

func newFakeEngine(t *testing.T, steps *sessions.StepLog) *fakeEngine {
	h := newFakeHost(t)
	h.members(h.cgroup.Dirs["pids"], "10", "11")
	h.addProc("10", "Xvfb", "0", "0", "1", "12288")
	h.addProc("11", "guestd", "0", "0", "1", "4096")
	return &fakeEngine{h: h, log: slog.New(steps), live: map[string]bool{}, resetOK: true}
}

func TestRunSessions(t *testing.T) {
	steps := &sessions.StepLog{}
	e := newFakeEngine(t, steps)
	e.log.Debug("session step", "step", "before the part", "ms", 1.0) // forgotten at its start
	var out strings.Builder
	res, err := runSessions(context.Background(), e, steps, procfs{e.h.proc}, 3, "core", 0, false, 0, &out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Create.N != 3 || res.Reset.N != 3 || res.Remove.N != 3 || len(e.live) != 0 {
		t.Errorf("create %d, reset %d, remove %d, left %v", res.Create.N, res.Reset.N, res.Remove.N, e.live)
	}
	// Medians of 31..33 and 41..43, in the order they finish.
	if want := []sessions.StepTime{{Name: "xvfb", Ms: 32}, {Name: "guestd", Ms: 42}}; !slices.Equal(res.InitSteps, want) {
		t.Errorf("init steps %v, want %v", res.InitSteps, want)
	}
	if !slices.Equal(res.PSS, []int64{16384, 16384, 16384}) || res.ByProcess[0] != (MemRow{"Xvfb", 12288}) || res.ByProcess[1] != (MemRow{"guestd", 4096}) {
		t.Errorf("pss %v by process %v", res.PSS, res.ByProcess)
	}
	for _, line := range []string{"create-to-ready  n=3 ", "init steps (median ms since init started): xvfb 32.0 guestd 42.0",
		"idle memory      3 desktops up, 0s idle: mean 16.0 MiB PSS per desktop", "reset-to-ready   n=3 ", "remove           n=3 "} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out.String())
		}
	}

	// With standbys a desktop's memory counts its standby's, and the part
	// counts the resets that took one.
	e.standby = true
	e.h.members(sessions.StandbyCgroup(&sessions.Plan{Cgroup: e.h.cgroup}).Dirs["pids"], "12")
	e.h.addProc("12", "Xvfb", "0", "0", "1", "12288")
	out.Reset()
	if res, err = runSessions(context.Background(), e, steps, procfs{e.h.proc}, 2, "core", 0, true, 0, &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.PSS, []int64{28672, 28672}) || res.StandbyResets != 2 || res.SpacedReset == nil || res.SpacedReset.N != 2 ||
		!strings.Contains(out.String(), "2 of 2 resets took the desktop's standby") || !strings.Contains(out.String(), "reset, spaced    n=2 ") {
		t.Errorf("with standbys: pss %v, %d standby resets, output:\n%s", res.PSS, res.StandbyResets, out.String())
	}

	// With spares the first create takes one, the next start cold, and
	// every spaced create takes one; the spaced desktops are removed.
	e.standby, e.spares = false, 1
	out.Reset()
	if res, err = runSessions(context.Background(), e, steps, procfs{e.h.proc}, 3, "core", 0, false, 1, &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.SpareCreates, []int{1}) || res.SpacedCreate == nil || res.SpacedCreate.N != 3 || res.Create.N != 3 || len(e.live) != 0 ||
		!strings.Contains(out.String(), "1 of 3 creates took a spare: #1; the others started cold") || !strings.Contains(out.String(), "create, spaced   n=3 ") {
		t.Errorf("with spares: %v took one, spaced %+v, left %v, output:\n%s", res.SpareCreates, res.SpacedCreate, e.live, out.String())
	}
	var md strings.Builder
	res.markdown(&md)
	if !strings.Contains(md.String(), "| create-to-ready, spaced: each once the spares are up |") || !strings.Contains(md.String(), "1 of 3 took one (#1;") {
		t.Errorf("with spares, the report:\n%s", md.String())
	}
	// Spares that do not come up fail the part.
	e.spares = 0
	if _, err := runSessions(context.Background(), e, steps, procfs{e.h.proc}, 1, "core", 0, false, 1, io.Discard); err == nil || len(e.live) != 0 {
		t.Errorf("spares that never come up: %v, left %v", err, e.live)
	}

	// A failure midway still removes every desktop made.
	e.resetOK = false
	if _, err := runSessions(context.Background(), e, steps, procfs{e.h.proc}, 2, "core", 0, false, 0, io.Discard); err == nil || !strings.Contains(err.Error(), "reset refused") {
		t.Errorf("failed reset: %v", err)
	}
	if len(e.live) != 0 {
		t.Errorf("left after a failure: %v", e.live)
	}
}

// fakeDesktop is a step desktop over fake servers.
type fakeDesktop struct {
	guestd, upstream *fakeGuest
	closed           *int
}

func (d fakeDesktop) URL(s compat.Server) string {
	if s == compat.Upstream {
		if d.upstream == nil {
			return ""
		}
		return d.upstream.URL
	}
	return d.guestd.URL
}

func (d fakeDesktop) Exec(context.Context, []string) (compat.ExecResult, error) {
	return compat.ExecResult{}, nil
}

func (d fakeDesktop) CPU() (CPUSample, error) {
	return CPUSample{Total: time.Duration(time.Now().UnixNano() % 1e9)}, nil
}

func (d fakeDesktop) Describe() string { return "a fake desktop" }
func (d fakeDesktop) Close() error     { *d.closed++; return nil }

// Run with every part over fakes writes the three files with the
// figures; drums alone has no upstream rows and says why.
func TestRun(t *testing.T) {
	latency, err := compat.ParseBenchmarks([]byte(`{"benchmarks":[{"name":"tree","doc":"the tree","request":{"method":"GET","path":"/accessibility"},"expect":{"status":"200"}}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ upstream, upToOne bool }{{true, false}, {false, false}, {true, true}} {
		upstream := c.upstream
		t.Run(fmt.Sprintf("upstream=%v,upstream-max-1=%v", c.upstream, c.upToOne), func(t *testing.T) {
			steps := &sessions.StepLog{}
			e := newFakeEngine(t, steps)
			closed := 0
			var mu sync.Mutex // desktops come up concurrently
			var made []fakeDesktop
			host := Host{Engine: e, Steps: steps, Proc: e.h.proc, Stdout: io.Discard, Stderr: io.Discard,
				Desktop: func(_ context.Context, withUpstream bool) (Desktop, error) {
					mu.Lock()
					defer mu.Unlock()
					d := fakeDesktop{guestd: newFakeGuest(t, false), closed: &closed}
					if upstream && withUpstream {
						d.upstream = newFakeGuest(t, false)
					}
					made = append(made, d)
					return d, nil
				}}
			cfg := Config{Parts: Parts, Sessions: 1, LightImage: "core", Latency: latency, LatencyN: 2, StepDesktops: []int{1, 2},
				StepDuration: 50 * time.Millisecond, Rounds: 2, Out: filepath.Join(t.TempDir(), "out"), Name: "b", Command: "drums bench --test"}
			if upstream {
				cfg.Upstream = "main.py from here"
			} else {
				cfg.NoUpstream = "DRUMS_UPSTREAM is not set"
			}
			if c.upToOne {
				cfg.StepUpstreamMax = 1
			}
			rep, err := Run(context.Background(), cfg, host)
			if err != nil {
				t.Fatal(err)
			}
			if len(made) != 2 || closed != 2 || len(e.live) != 0 {
				t.Errorf("%d desktops made, %d closed, sessions left %v", len(made), closed, e.live)
			}
			rows := 2 // guestd on 1 and 2 desktops, upstream on as many
			if upstream {
				rows = 4
			}
			if c.upToOne {
				rows = 3
				if made[1].upstream != nil {
					t.Error("the second desktop has upstream beside guestd, above --step-upstream-max")
				}
			}
			if len(rep.Steps) != rows || rep.Steps[0].Loops != 2 || rep.Latency == nil || rep.Sessions == nil {
				t.Fatalf("report: %d step rows, latency %v, sessions %v", len(rep.Steps), rep.Latency != nil, rep.Sessions != nil)
			}
			for _, ext := range []string{".md", ".svg", ".json"} {
				data, err := os.ReadFile(filepath.Join(cfg.Out, "b"+ext))
				if err != nil {
					t.Fatal(err)
				}
				text := string(data)
				switch ext {
				case ".md":
					for _, want := range []string{"- command: `drums bench --test`", "![drums bench](b.svg)", "## RL step loop", "| drums (guestd) | 2 | **"} {
						if !strings.Contains(text, want) {
							t.Errorf("markdown lacks %q", want)
						}
					}
					if got := strings.Contains(text, "| upstream main.py | 2 |"); got != (upstream && !c.upToOne) {
						t.Errorf("markdown has upstream rows: %v, want %v", got, upstream)
					}
					if !upstream && !strings.Contains(text, "- upstream: none (DRUMS_UPSTREAM is not set); drums alone") {
						t.Error("markdown does not say drums ran alone")
					}
				case ".svg":
					if !strings.HasPrefix(text, "<svg ") || !strings.Contains(text, "RL step loop: steps per second per desktop") {
						t.Errorf("svg: %.200s", text)
					}
				case ".json":
					var back Report
					if err := json.Unmarshal(data, &back); err != nil || back.Steps[0].Steps == 0 {
						t.Errorf("json: %v, %+v", err, back.Steps)
					}
				}
			}
		})
	}
}

// A desktop that fails to come up fails the run, and the ones that came
// up are closed.
func TestRunClosesDesktopsOnFailure(t *testing.T) {
	closed, n := 0, 0
	var mu sync.Mutex
	host := Host{Stdout: io.Discard, Stderr: io.Discard, Desktop: func(context.Context, bool) (Desktop, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n == 2 {
			return nil, errors.New("no room")
		}
		return fakeDesktop{guestd: newFakeGuest(t, false), closed: &closed}, nil
	}}
	cfg := Config{Parts: []string{PartSteps}, StepDesktops: []int{3}, StepDuration: time.Millisecond, Rounds: 1, Out: t.TempDir(), Name: "b"}
	if _, err := Run(context.Background(), cfg, host); err == nil || !strings.Contains(err.Error(), "no room") {
		t.Errorf("run: %v", err)
	}
	if closed != 2 {
		t.Errorf("%d desktops closed, want the 2 that came up", closed)
	}
}
