package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/provider/client"
)

// The clients against openapi.json: provider/client and drums_osworld's
// Daemon run one scenario against the daemon behind a checkedAPI.

// step is one call of the clients' scenario.
type step struct {
	op      string // operationId: the Go client's method, lowerCamelCase; drums_osworld's, snake_case
	id      string // the desktop: a name save gave an earlier answer's id, or a literal id
	name    string // snapshot name, for revert, saveSnapshot and deleteSnapshot
	lease   client.LeaseRequest
	seconds int    // renew
	save    string // names the answer's desktop id (list: the first)
	noToken bool   // sent without the bearer token
	before  func()
	// The answer: its status, and for an error its code. invalid marks a
	// request that breaks the document on purpose.
	status  int
	code    string
	invalid bool
}

// scenario calls every /v1 operation and meets every error code, over a
// daemon of capacity 2 with one warm 800x600 desktop (scenarioServer).
// At the capacity step, both desktops are leased whichever way the
// background pool work went before.
func scenario(eng *fakeEngine) []step {
	full := client.LeaseRequest{Width: 1024, Height: 768, Image: "osworld", LeaseSeconds: 600,
		Limits: client.Limits{MemoryBytes: 1 << 30, Pids: 1024, CPUs: 1}, NoEgress: true}
	small := client.LeaseRequest{Width: 1024, Height: 768}
	return []step{
		{op: "health", status: 200},
		{op: "list", status: 200, save: "W"}, // the warm desktop, the only one
		{op: "renew", id: "W", status: 409, code: client.CodeConflict},
		{op: "lease", lease: small, status: 500, code: client.CodeInternal, before: func() {
			eng.mu.Lock()
			eng.failNext = errors.New("fake engine: start failed")
			eng.mu.Unlock()
		}},
		{op: "lease", lease: full, status: 201, save: "A"},
		{op: "get", id: "A", status: 200},
		{op: "renew", id: "A", seconds: 300, status: 200},
		{op: "saveSnapshot", id: "A", name: "s1", status: 201},
		{op: "snapshots", status: 200},
		{op: "revert", id: "A", name: "s1", status: 200, save: "A"},
		{op: "revert", id: "A", status: 200, save: "A"},
		{op: "lease", lease: small, status: 201, save: "B"}, // evicts the warm one
		{op: "lease", lease: small, status: 503, code: client.CodeCapacity},
		{op: "get", id: "no-such-desktop", status: 404, code: client.CodeNotFound},
		{op: "revert", id: "A", name: "missing", status: 404, code: client.CodeNotFound},
		{op: "lease", lease: client.LeaseRequest{Width: 10, Height: 10}, status: 400, code: client.CodeBadRequest, invalid: true},
		{op: "deleteSnapshot", name: "-bad", status: 400, code: client.CodeBadRequest, invalid: true},
		{op: "deleteSnapshot", name: "s1", status: 204},
		{op: "takeover", id: "A", status: 200},
		{op: "takeover", id: "no-such-desktop", status: 404, code: client.CodeNotFound},
		{op: "release", id: "A", status: 204},
		{op: "release", id: "B", status: 204},
		{op: "release", id: "B", status: 204}, // already released
		{op: "health", noToken: true, status: 401, code: client.CodeAuth},
	}
}

const scenarioToken = "t0ken"

// scenarioServer serves the API, with scenarioToken, over a fake engine
// that holds one warm 800x600 desktop in a capacity of 2, on loopback
// TCP; the document checks every exchange.
func scenarioServer(t *testing.T, sp *spec) (*checkedAPI, *fakeEngine, string) {
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 2
	cfg.PoolSize = 1
	cfg.Warm = []Shape{{Width: 800, Height: 600}}
	m, eng := contractManager(t, cfg)
	deadline := time.Now().Add(testDeadline)
	for c := m.countByState(); c[client.StateReady] != 1 || c[client.StateCreating] != 0; c = m.countByState() {
		if time.Now().After(deadline) {
			t.Fatalf("the warm desktop never started: %v", c)
		}
		time.Sleep(10 * time.Millisecond) // polling the pool: there is nothing to await
	}
	c := &checkedAPI{sp: sp, h: newAPI(m, scenarioToken, "7070")}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, eng, srv.URL
}

// outcome is what a client made of an answer: the desktop id in it, or
// an error's status and code (status 0: no error).
type outcome struct {
	id     string
	status int
	code   string
}

// runScenario makes each step's call and checks that the client sent one
// request, for the step's operation, that the document accepts (or
// refuses, for an invalid step), and read the answer's status and code.
func runScenario(t *testing.T, sp *spec, c *checkedAPI, steps []step, call func(step, string) outcome) {
	t.Helper()
	ops, codes := map[string]bool{}, map[string]bool{}
	for _, s := range steps {
		ops[s.op], codes[s.code] = true, true
	}
	for _, id := range v1Operations(sp) {
		if !ops[id] {
			t.Errorf("the scenario never calls %s", id)
		}
	}
	for _, code := range sp.codes() {
		if !codes[code] {
			t.Errorf("the scenario never meets error code %s", code)
		}
	}
	ids := map[string]string{}
	for i, s := range steps {
		where := fmt.Sprintf("step %d (%s %s)", i, s.op, s.id)
		if s.before != nil {
			s.before()
		}
		id := s.id
		if v, ok := ids[s.id]; ok {
			id = v
		}
		got := call(s, id)
		exs := c.take()
		if len(exs) != 1 {
			t.Fatalf("%s: the client sent %d requests", where, len(exs))
		}
		ex := exs[0]
		if ex.op != s.op {
			t.Errorf("%s: the client sent %s %s, operation %q", where, ex.method, ex.path, ex.op)
		}
		if s.invalid != (len(ex.request) > 0) {
			t.Errorf("%s: the request breaks the document: %v, want %v: %v", where, len(ex.request) > 0, s.invalid, ex.request)
		}
		for _, p := range ex.response {
			t.Errorf("%s: %s", where, p)
		}
		if ex.status != s.status {
			t.Fatalf("%s: the server answered %d %s, want %d", where, ex.status, ex.body, s.status)
		}
		want := outcome{}
		if s.status >= 400 {
			want = outcome{status: s.status, code: s.code}
		}
		if got.status != want.status || got.code != want.code {
			t.Errorf("%s: the client made %+v of %d %s, want %+v", where, got, ex.status, ex.body, want)
		}
		if s.save != "" {
			if got.id == "" {
				t.Fatalf("%s: no desktop id in the answer %s", where, ex.body)
			}
			ids[s.save] = got.id
		}
	}
}

// v1Operations are the operations the clients call: those under /v1
// (/metrics is scraped).
func v1Operations(sp *spec) []string {
	var out []string
	for _, op := range sp.ops {
		if strings.HasPrefix(op.path, "/v1/") {
			out = append(out, op.id)
		}
	}
	slices.Sort(out)
	return out
}

// goSentinels is the sentinel each error code matches in provider/client.
var goSentinels = map[string]error{
	client.CodeNotFound:   client.ErrNotFound,
	client.CodeBadRequest: client.ErrBadRequest,
	client.CodeCapacity:   client.ErrCapacity,
	client.CodeConflict:   client.ErrConflict,
	client.CodeAuth:       client.ErrUnauthorized,
	client.CodeInternal:   client.ErrInternal,
}

// The Go client: each method is one /v1 operation, and the scenario's
// calls are requests the document accepts, whose answers the client reads
// as documented, errors matching their code's sentinel.
func TestOpenAPIGoClient(t *testing.T) {
	sp := loadSpec(t)
	var methods []string
	ct := reflect.TypeFor[*client.Client]()
	for i := range ct.NumMethod() {
		// Close drops idle connections, Forward is drums ui's transport,
		// SetLeaseRetry the client's own policy.
		if n := ct.Method(i).Name; n != "Close" && n != "Forward" && n != "SetLeaseRetry" {
			methods = append(methods, string(unicode.ToLower(rune(n[0])))+n[1:])
		}
	}
	slices.Sort(methods)
	if d := cmp.Diff(v1Operations(sp), methods); d != "" {
		t.Errorf("operations (-openapi.json +provider/client methods):\n%s", d)
	}
	if d := cmp.Diff(sp.codes(), sortedKeys(goSentinels)); d != "" {
		t.Errorf("error codes (-openapi.json +sentinels):\n%s", d)
	}
	c, eng, base := scenarioServer(t, sp)
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	withToken, err := client.New(base, scenarioToken)
	if err != nil {
		t.Fatal(err)
	}
	// One request per step: the capacity step's answer is the point here,
	// not the retry of a client of many daemons (client's retry_test.go).
	withToken.SetLeaseRetry(client.Retry{Attempts: 1})
	anon, err := client.New(base, "")
	if err != nil {
		t.Fatal(err)
	}
	runScenario(t, sp, c, scenario(eng), func(s step, id string) outcome {
		cl := withToken
		if s.noToken {
			cl = anon
		}
		var out outcome
		var err error
		var d client.Desktop
		switch s.op {
		case "health":
			_, err = cl.Health(ctx)
		case "list":
			var ds []client.Desktop
			if ds, err = cl.List(ctx); len(ds) > 0 {
				d = ds[0]
			}
		case "lease":
			d, err = cl.Lease(ctx, s.lease)
		case "get":
			d, err = cl.Get(ctx, id)
		case "renew":
			d, err = cl.Renew(ctx, id, s.seconds)
		case "revert":
			d, err = cl.Revert(ctx, id, s.name)
		case "saveSnapshot":
			_, err = cl.SaveSnapshot(ctx, id, s.name)
		case "snapshots":
			_, err = cl.Snapshots(ctx)
		case "deleteSnapshot":
			err = cl.DeleteSnapshot(ctx, s.name)
		case "release":
			err = cl.Release(ctx, id)
		case "takeover":
			d, err = cl.Takeover(ctx, id, true)
		default:
			t.Fatalf("no Go client call for %s", s.op)
		}
		out.id = d.ID
		var e *client.Error
		switch {
		case err == nil:
		case errors.As(err, &e):
			out.status, out.code = e.Status, e.Code
			if !errors.Is(err, goSentinels[e.Code]) {
				t.Errorf("%s: %v does not match the sentinel of its code", s.op, err)
			}
		default:
			t.Fatalf("%s: %v", s.op, err)
		}
		return out
	})
}

// pythonClasses is the exception drums_osworld raises for each error code.
var pythonClasses = map[string]string{
	client.CodeNotFound:   "NotFound",
	client.CodeBadRequest: "BadRequest",
	client.CodeCapacity:   "CapacityExhausted",
	client.CodeConflict:   "Conflict",
	client.CodeAuth:       "DaemonError",
	client.CodeInternal:   "DaemonError",
}

// pythonTransport are Daemon's methods that are not an operation.
var pythonTransport = []string{"request", "where"}

// drums_osworld's Daemon, in Debian's python3, through
// testdata/daemon_calls.py: each public method is one /v1 operation or
// transport, the codes it branches on are the document's, and the
// scenario's calls are requests the document accepts, whose errors raise
// their code's exception.
func TestOpenAPIPythonClient(t *testing.T) {
	_, err := os.Stat("/usr/bin/python3")
	testutil.Need(t, "Debian's python3", err)
	sp := loadSpec(t)
	c, eng, base := scenarioServer(t, sp)
	pkg, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", filepath.Join("testdata", "daemon_calls.py"))
	cmd.Env = pythonEnv("PYTHONPATH="+pkg, "DRUMS_URL="+base, "DRUMS_TOKEN="+scenarioToken, "DRUMS_LEASE_ATTEMPTS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start python3: %v", err)
	}
	lines := bufio.NewScanner(stdout)
	read := func(v any) {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("daemon_calls.py said nothing more: %v; stderr:\n%s", lines.Err(), stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("daemon_calls.py said %q: %v", lines.Text(), err)
		}
	}

	var hello struct {
		Methods []string
		Codes   map[string]string
	}
	read(&hello)
	want := slices.Clone(pythonTransport)
	for _, id := range v1Operations(sp) {
		want = append(want, snakeCase(id))
	}
	slices.Sort(want)
	if d := cmp.Diff(want, hello.Methods); d != "" {
		t.Errorf("Daemon's methods (-openapi.json operations and transport +daemon.py):\n%s", d)
	}
	if d := cmp.Diff(sp.codes(), sortedKeys(pythonClasses)); d != "" {
		t.Errorf("error codes (-openapi.json +pythonClasses):\n%s", d)
	}
	for code, class := range hello.Codes {
		if !slices.Contains(sp.codes(), code) {
			t.Errorf("daemon.py branches on code %q, which the document does not have (%v)", code, sp.codes())
		} else if pythonClasses[code] != class {
			t.Errorf("daemon.py raises %s for code %q, want %s", class, code, pythonClasses[code])
		}
	}

	runScenario(t, sp, c, scenario(eng), func(s step, id string) outcome {
		kw := map[string]any{}
		switch s.op {
		case "health", "list", "snapshots":
		case "get", "release":
			kw["desktop_id"] = id
		case "renew":
			kw["desktop_id"], kw["lease_seconds"] = id, s.seconds
		case "revert":
			kw["desktop_id"], kw["snapshot"] = id, s.name
		case "saveSnapshot":
			kw["desktop_id"], kw["name"] = id, s.name
		case "deleteSnapshot":
			kw["name"] = s.name
		case "takeover":
			kw["desktop_id"], kw["enabled"] = id, true
		case "lease": // drums_osworld's lease offers no limits or no_egress
			l := s.lease
			kw["width"], kw["height"], kw["snapshot"], kw["image"], kw["lease_seconds"] = l.Width, l.Height, l.Snapshot, l.Image, l.LeaseSeconds
		default:
			t.Fatalf("no drums_osworld call for %s", s.op)
		}
		call := map[string]any{"method": snakeCase(s.op), "kwargs": kw}
		if s.noToken {
			call["token"] = ""
		}
		b, _ := json.Marshal(call)
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			t.Fatalf("write to daemon_calls.py: %v", err)
		}
		var answer struct {
			Result json.RawMessage
			Error  *struct {
				Class, Code, Message string
				Status               int
			}
		}
		read(&answer)
		if e := answer.Error; e != nil {
			if e.Class != pythonClasses[e.Code] || e.Message == "" {
				t.Errorf("%s: daemon.py raised %s (%q) for code %q, want %s with the message", s.op, e.Class, e.Message, e.Code, pythonClasses[e.Code])
			}
			return outcome{status: e.Status, code: e.Code}
		}
		var d struct{ ID string }
		var ds []struct{ ID string }
		if json.Unmarshal(answer.Result, &ds) == nil && len(ds) > 0 {
			d = ds[0]
		} else {
			_ = json.Unmarshal(answer.Result, &d)
		}
		return outcome{id: d.ID}
	})
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("daemon_calls.py: %v; stderr:\n%s", err, stderr.String())
	}
}

// snakeCase turns an operationId into drums_osworld's method name.
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
