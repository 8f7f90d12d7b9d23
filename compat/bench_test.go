package compat

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewStats(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	// 20 samples 1..20 in shuffled order: median (10+11)/2, p95 the 19th.
	s := NewStats(ms(20, 3, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19))
	if s.N != 20 || s.Median != 10500*time.Microsecond || s.P95 != 19*time.Millisecond || s.Min != time.Millisecond || s.Max != 20*time.Millisecond {
		t.Errorf("stats of 1..20: %+v", s)
	}
	// Odd count: the middle sample; p95 of 3 samples is the largest.
	s = NewStats(ms(5, 1, 9))
	if s.Median != 5*time.Millisecond || s.P95 != 9*time.Millisecond {
		t.Errorf("stats of 1,5,9: %+v", s)
	}
	if (NewStats(nil) != Stats{}) {
		t.Error("stats of nothing are not zero")
	}
}

func TestBuiltinBenchmarksParse(t *testing.T) {
	bs, err := BuiltinBenchmarks()
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, b := range bs {
		paths[b.Request.Method+" "+b.Request.Path] = true
	}
	// The requests the latency comparison must cover.
	for _, p := range []string{"GET /screenshot", "GET /cursor_position", "POST /execute", "GET /accessibility", "GET /terminal"} {
		if !paths[p] {
			t.Errorf("no benchmark times %s", p)
		}
	}
	if got := SelectBenchmarks(bs, []string{"execute/*"}); len(got) != 3 {
		t.Errorf("execute/* selects %d benchmarks, want 3", len(got))
	}
	// The busy screen changes before every request; the unchanged one never.
	shots := map[string]int{}
	for _, b := range SelectBenchmarks(bs, []string{"screenshot*"}) {
		shots[b.Name] = len(b.Each)
	}
	if len(shots) != 3 || shots["screenshot/busy"] == 0 || shots["screenshot/unchanged"] != 0 || shots["screenshot"] != 0 {
		t.Errorf("screenshot rows and their each actions: %v", shots)
	}
}

func TestParseBenchmarksRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"no status":   `{"benchmarks":[{"name":"a","request":{"method":"GET","path":"/x"},"expect":{"json.x":"1"}}]}`,
		"bad regexp":  `{"benchmarks":[{"name":"a","request":{"method":"GET","path":"/x"},"expect":{"status":"("}}]}`,
		"unknown key": `{"benchmarks":[{"name":"a","request":{"method":"GET","path":"/x"},"expect":{"status":"200"},"n":3}]}`,
		"repeated":    `{"benchmarks":[{"name":"a","request":{"method":"GET","path":"/x"},"expect":{"status":"200"}},{"name":"a","request":{"method":"GET","path":"/x"},"expect":{"status":"200"}}]}`,
		"empty":       `{"benchmarks":[]}`,
		"bad each":    `{"benchmarks":[{"name":"a","each":[{"sh":"x","run":["y"]}],"request":{"method":"GET","path":"/x"},"expect":{"status":"200"}}]}`,
	} {
		if _, err := ParseBenchmarks([]byte(doc), name); !errors.Is(err, ErrBadCase) {
			t.Errorf("%s: %v, want ErrBadCase", name, err)
		}
	}
}

// countingServer answers /ok with a JSON success and /bad with a 500, and
// counts requests and the connections they came on.
type countingServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	conns    map[string]bool
}

func newCountingServer() *countingServer {
	s := &countingServer{conns: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		s.conns[r.RemoteAddr] = true
		s.mu.Unlock()
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/bad" {
			w.WriteHeader(500)
		}
		io.WriteString(w, `{"status": "success", "returncode": 0}`)
	}))
	return s
}

func TestBenchTimesBothServers(t *testing.T) {
	up, gd := newCountingServer(), newCountingServer()
	defer up.Close()
	defer gd.Close()
	fd := &fakeDesktop{up: up.Server, gd: gd.Server}
	bs, err := ParseBenchmarks([]byte(`{"benchmarks":[{"name":"ok","doc":"a request","setup":[{"sh":"prepare"}],
		"request":{"method":"POST","path":"/ok","json":{"command":["echo","hi"]}},
		"expect":{"status":"200","json.returncode":"0"},"cleanup":[{"sh":"restore"}]}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Bench(context.Background(), fd, bs, BenchOptions{N: 5, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	if r.Upstream.N != 5 || r.Guestd.N != 5 || r.Guestd.Median <= 0 {
		t.Errorf("result %+v", r)
	}
	// Warm-up included, each request on a connection of its own.
	for name, s := range map[string]*countingServer{"upstream": up, "guestd": gd} {
		if s.requests != 7 || len(s.conns) != 7 {
			t.Errorf("%s saw %d requests on %d connections, want 7 on 7", name, s.requests, len(s.conns))
		}
	}
	if len(fd.execs) != 2 || fd.execs[0][2] != "prepare" || fd.execs[1][2] != "restore" {
		t.Errorf("setup and cleanup ran as %q", fd.execs)
	}
	md := rep.Markdown()
	if !strings.Contains(md, "| `POST /ok`, a request |") || !strings.Contains(md, "- ok: `POST /ok json {\"command\":[\"echo\",\"hi\"]}`") {
		t.Errorf("markdown table lacks the row:\n%s", md)
	}
}

// clockDesktop is a fakeDesktop whose servers and commands write one
// log, in the order they ran, and move a clock of the test's: an hour per
// command, a millisecond per request.
type clockDesktop struct {
	*fakeDesktop
	mu    sync.Mutex
	clock time.Time
	log   []string
}

func (c *clockDesktop) tick(what string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, what)
	c.clock = c.clock.Add(d)
}

func (c *clockDesktop) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clock
}

func (c *clockDesktop) Exec(ctx context.Context, argv []string) (ExecResult, error) {
	c.tick(argv[len(argv)-1], time.Hour)
	return c.fakeDesktop.Exec(ctx, argv)
}

func (c *clockDesktop) server(name string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.tick(name, time.Millisecond)
	}))
}

func TestBenchRunsEachBeforeEveryRequest(t *testing.T) {
	c := &clockDesktop{fakeDesktop: &fakeDesktop{}}
	c.up, c.gd = c.server("upstream"), c.server("guestd")
	defer c.up.Close()
	defer c.gd.Close()
	bs, err := ParseBenchmarks([]byte(`{"benchmarks":[{"name":"ok","setup":[{"sh":"prepare"}],"each":[{"sh":"next"}],
		"request":{"method":"GET","path":"/ok"},"expect":{"status":"200"},"cleanup":[{"sh":"restore"}]}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Bench(context.Background(), c, bs, BenchOptions{N: 2, Warmup: 1, now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	// One warm-up round and two timed ones, upstream first in even rounds.
	want := []string{"prepare",
		"next", "upstream", "next", "guestd",
		"next", "guestd", "next", "upstream",
		"next", "upstream", "next", "guestd",
		"restore"}
	if !slices.Equal(c.log, want) {
		t.Errorf("ran\n%q\nwant\n%q", c.log, want)
	}
	// Each request moved the clock by a millisecond and each command by an
	// hour: a timed span of exactly a millisecond holds the request alone.
	for name, s := range map[string]Stats{"upstream": rep.Results[0].Upstream, "guestd": rep.Results[0].Guestd} {
		if s.N != 2 || s.Min != time.Millisecond || s.Max != time.Millisecond {
			t.Errorf("%s timed %+v, want 2 requests of 1ms each", name, s)
		}
	}
}

func TestBenchFailsOnUnexpectedAnswer(t *testing.T) {
	up, gd := newCountingServer(), newCountingServer()
	defer up.Close()
	defer gd.Close()
	fd := &fakeDesktop{up: up.Server, gd: gd.Server}
	bs, err := ParseBenchmarks([]byte(`{"benchmarks":[{"name":"bad","request":{"method":"GET","path":"/bad"},
		"expect":{"status":"200"},"cleanup":[{"sh":"restore"}]}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Bench(context.Background(), fd, bs, BenchOptions{N: 3})
	if err == nil || !strings.Contains(err.Error(), "status is 500, expected 200") {
		t.Errorf("error %v, want one naming the status", err)
	}
	if len(fd.execs) != 1 {
		t.Errorf("cleanup did not run after the failure: %q", fd.execs)
	}
}

func TestBenchGuestdAlone(t *testing.T) {
	gd := newCountingServer()
	defer gd.Close()
	fd := &fakeDesktop{gd: gd.Server}
	bs, err := ParseBenchmarks([]byte(`{"benchmarks":[{"name":"ok","request":{"method":"GET","path":"/ok"},"expect":{"status":"200"}}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	rep, err := Bench(context.Background(), fd, bs, BenchOptions{N: 3, Warmup: 1, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if r := rep.Results[0]; r.Upstream.N != 0 || r.Guestd.N != 3 || gd.requests != 4 {
		t.Errorf("result %+v after %d requests, want guestd timed 3 times after 1 warm-up, upstream never", r, gd.requests)
	}
	if strings.Contains(progress.String(), "upstream") {
		t.Errorf("progress names upstream: %q", progress.String())
	}
	md := rep.Markdown()
	if !strings.Contains(md, "guestd alone (no upstream tree: DRUMS_UPSTREAM and DRUMS_UPSTREAM_PYTHONPATH unset)") || !strings.Contains(md, "| `GET /ok` | — | — | ") {
		t.Errorf("markdown does not say guestd ran alone:\n%s", md)
	}
}
