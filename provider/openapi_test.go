package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// The daemon against openapi.json, the v1 API's one definition: its routes,
// wire types and error codes, and its answers to requests in and out of the
// document's ranges. openapi_clients_test.go holds the clients to it.

// wireTypes are the Go types of the document's object schemas, by schema
// name: the server decodes and encodes them, the Go client too.
var wireTypes = map[string]reflect.Type{
	"LeaseRequest":    reflect.TypeFor[client.LeaseRequest](),
	"Limits":          reflect.TypeFor[client.Limits](),
	"RenewRequest":    reflect.TypeFor[client.RenewRequest](),
	"TakeoverRequest": reflect.TypeFor[client.TakeoverRequest](),
	"RevertRequest":   reflect.TypeFor[client.RevertRequest](),
	"SnapshotRequest": reflect.TypeFor[client.SnapshotRequest](),
	"Desktop":         reflect.TypeFor[client.Desktop](),
	"Ports":           reflect.TypeFor[client.Ports](),
	"Snapshot":        reflect.TypeFor[client.Snapshot](),
	"Health":          reflect.TypeFor[client.Health](),
	"ErrorBody":       reflect.TypeFor[client.ErrorBody](),
	"ErrorDetail":     reflect.TypeFor[client.ErrorDetail](),
}

// The server's routes are the document's operations, no more and no less.
func TestOpenAPIRoutes(t *testing.T) {
	sp := loadSpec(t)
	var documented, served []string
	for _, op := range sp.ops {
		documented = append(documented, op.method+" "+op.path)
	}
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	for _, r := range newAPI(nil, "", "").Routes() {
		if isPage(r.Path) {
			continue // the page's files and data: not API (uiauth_test.go)
		}
		served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	slices.Sort(documented)
	slices.Sort(served)
	if d := cmp.Diff(documented, served); d != "" {
		t.Errorf("routes (-openapi.json +api.go):\n%s", d)
	}
}

// Every object schema is a Go wire type with the same JSON fields, of the
// same types; a field Go omits when zero is optional in the document, any
// other is required.
func TestOpenAPIWireTypes(t *testing.T) {
	sp := loadSpec(t)
	schemas := sp.root["components"].(map[string]any)["schemas"].(map[string]any)
	for _, name := range sortedKeys(schemas) {
		_, isType := wireTypes[name]
		if obj := schemas[name].(map[string]any)["type"] == "object"; obj != isType {
			t.Errorf("schema %s: object schema %v, Go wire type %v; each object schema needs one", name, obj, isType)
		}
	}
	for name, typ := range wireTypes {
		s, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("Go type %s has no schema %s", typ, name)
			continue
		}
		for _, p := range sp.structProblems(typ, s) {
			t.Errorf("%s (%s): %s", name, typ, p)
		}
	}
}

func (sp *spec) structProblems(typ reflect.Type, s map[string]any) []string {
	var out []string
	if s["additionalProperties"] != false {
		out = append(out, "additionalProperties must be false: the server refuses unknown fields, and a client must know every field it gets")
	}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	for _, r := range asArray(s["required"]) {
		required[r.(string)] = true
	}
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		seen[name] = true
		ps, ok := props[name].(map[string]any)
		if !ok {
			out = append(out, fmt.Sprintf("field %s (JSON %q) is not in the document", f.Name, name))
			continue
		}
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if omit == required[name] {
			out = append(out, fmt.Sprintf("field %q: Go omits it when zero: %v; the document requires it: %v", name, omit, required[name]))
		}
		if p := sp.typeProblem(f.Type, ps); p != "" {
			out = append(out, fmt.Sprintf("field %q: %s", name, p))
		}
	}
	for _, name := range sortedKeys(props) {
		if !seen[name] {
			out = append(out, fmt.Sprintf("property %q has no Go field", name))
		}
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// typeProblem says how Go type t and schema s disagree, "" when they agree.
func (sp *spec) typeProblem(t reflect.Type, s map[string]any) string {
	if r, ok := s["$ref"].(string); ok {
		if wt, ok := wireTypes[strings.TrimPrefix(r, "#/components/schemas/")]; ok {
			if wt != t {
				return fmt.Sprintf("Go %s, the document %s", t, r)
			}
			return ""
		}
		return sp.typeProblem(t, sp.ref(r))
	}
	if t.Kind() == reflect.Struct && t != timeType {
		return fmt.Sprintf("Go %s, the document no $ref to its schema", t)
	}
	var want string
	switch t.Kind() {
	case reflect.String:
		want = "string"
	case reflect.Bool:
		want = "boolean"
	case reflect.Int, reflect.Int64:
		want = "integer"
	case reflect.Float64:
		want = "number"
	case reflect.Map:
		want = "object"
	case reflect.Slice:
		want = "array"
	case reflect.Struct: // time.Time
		want = "string"
		if s["format"] != "date-time" {
			return "a time.Time is a date-time string"
		}
	default:
		return fmt.Sprintf("Go %s has no JSON type in these tests", t)
	}
	if s["type"] != want {
		return fmt.Sprintf("Go %s is JSON %s, the document says %v", t, want, s["type"])
	}
	switch t.Kind() {
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return fmt.Sprintf("Go %s: JSON keys are strings", t)
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			if p := sp.typeProblem(t.Elem(), props[name].(map[string]any)); p != "" {
				return name + ": " + p
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			return sp.typeProblem(t.Elem(), ap)
		}
	case reflect.Slice:
		items, ok := s["items"].(map[string]any)
		if !ok {
			return "an array without items"
		}
		return sp.typeProblem(t.Elem(), items)
	}
	return ""
}

// The error codes: provider/client's Code constants are the document's,
// each error status has one code, and errorStatus maps the daemon's and
// the engine's errors to a status and the code the document gives it.
func TestOpenAPIErrorCodes(t *testing.T) {
	sp := loadSpec(t)
	if d := cmp.Diff(sp.codes(), clientCodes(t)); d != "" {
		t.Errorf("error codes (-openapi.json +provider/client):\n%s", d)
	}
	byStatus := sp.errorCodes()
	for _, status := range sortedKeys(byStatus) {
		if cs := byStatus[status]; len(cs) != 1 {
			t.Errorf("status %s: codes %v; the document must give each error status one code", status, cs)
		}
	}
	for _, err := range []error{
		ErrNotFound, ErrUnknownSnapshot, ErrBadRequest, ErrCapacity, ErrConflict, ErrUnauthorized,
		sessions.ErrNotFound, sessions.ErrBadRequest, sessions.ErrNoImage, sessions.ErrCapacity, sessions.ErrBusy, sessions.ErrNotReady,
		errors.New("the engine failed"),
	} {
		status, code := errorStatus(err)
		if got := byStatus[strconv.Itoa(status)]; !slices.Equal(got, []string{code}) {
			t.Errorf("errorStatus(%v) = %d %s; the document's code for %d: %v", err, status, code, status, got)
		}
	}
}

// clientCodes reads the Code constants of provider/client/errors.go.
func clientCodes(t *testing.T) []string {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("client", "errors.go"), nil, 0)
	if err != nil {
		t.Fatalf("parse client/errors.go: %v", err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Code") {
					v, _ := strconv.Unquote(lit.Value)
					out = append(out, v)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// errorCodes maps each error status the document lists, on any operation
// or for unmatched requests, to the codes its answers may carry.
func (sp *spec) errorCodes() map[string][]string {
	admitted := map[string]map[string]bool{}
	add := func(status string, r map[string]any) {
		n, _ := strconv.Atoi(status)
		if n < 400 {
			return
		}
		s := r["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
		if admitted[status] == nil {
			admitted[status] = map[string]bool{}
		}
		for _, c := range sp.codes() {
			if len(sp.validate(s, map[string]any{"error": map[string]any{"code": c, "message": "m"}}, "")) == 0 {
				admitted[status][c] = true
			}
		}
	}
	for _, op := range sp.ops {
		for status, r := range op.responses {
			add(status, r.(map[string]any))
		}
	}
	add("404", sp.unmatched("404"))
	add("405", sp.unmatched("405"))
	out := map[string][]string{}
	for status, cs := range admitted {
		var list []string
		for c := range cs {
			list = append(list, c)
		}
		slices.Sort(list)
		out[status] = list
	}
	return out
}

// contractManager is a manager over a fake engine, drained when the test
// ends.
func contractManager(t *testing.T, cfg Config) (*Manager, *fakeEngine) {
	t.Helper()
	eng := newFakeEngine()
	m, err := NewManager(cfg, eng, testLogger(t))
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	newFakeGuest(t).install(m)
	if err := m.Start(context.Background()); err != nil {
		t.Fatalf("start manager: %v", err)
	}
	t.Cleanup(func() {
		if err := m.Close(context.Background(), true); err != nil {
			t.Errorf("close manager: %v", err)
		}
	})
	return m, eng
}

// serverProbe sends requests straight to a checkedAPI.
type serverProbe struct {
	t     *testing.T
	c     *checkedAPI
	token string
}

// send sends one request and fails the test where the answer breaks the
// document; the request's own problems are the caller's to judge.
func (p serverProbe) send(method, path string, body []byte) exchange {
	p.t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	p.c.ServeHTTP(httptest.NewRecorder(), req)
	exs := p.c.take()
	if len(exs) != 1 {
		p.t.Fatalf("%s %s: %d exchanges", method, path, len(exs))
	}
	for _, pr := range exs[0].response {
		p.t.Error(pr)
	}
	return exs[0]
}

// The server against the document: each operation's example is accepted
// and answered as documented; probes around the examples (wrong types,
// numbers at and past their limits, names with and without their pattern,
// unknown, missing and lone fields, no body) are refused with a 400
// exactly where the document refuses them; unmatched requests and
// requests without the token get the documented errors.
func TestOpenAPIServer(t *testing.T) {
	sp := loadSpec(t)
	cfg := testConfig(t.TempDir())
	cfg.Capacity = 64 // released desktops are removed in the background
	m, _ := contractManager(t, cfg)
	ctx := context.Background()
	p := serverProbe{t: t, c: &checkedAPI{sp: sp, h: newAPI(m, "", "")}}
	// The examples name one snapshot; it is saved (again) before each
	// request, from a desktop held for that.
	snapName := sp.op("deleteSnapshot").paramExamples["name"]
	holder, err := m.Lease(ctx, client.LeaseRequest{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}

	// request sends a request to op with body, on a desktop leased for it
	// when the path has {id}, with path parameters from params or else
	// the document's examples; it releases the desktops it leased or got.
	request := func(op *operation, params map[string]string, body []byte) exchange {
		t.Helper()
		if _, err := m.SaveSnapshot(ctx, holder.ID, snapName); err != nil {
			t.Fatalf("save snapshot %s: %v", snapName, err)
		}
		var segs []string
		var leased string
		for _, s := range op.segments {
			name, ok := paramName(s)
			switch {
			case !ok:
				segs = append(segs, s)
			case name == "id":
				d, err := m.Lease(ctx, client.LeaseRequest{})
				if err != nil {
					t.Fatalf("lease a desktop for %s: %v", op.id, err)
				}
				leased = d.ID
				segs = append(segs, url.PathEscape(d.ID))
			case params[name] != "":
				segs = append(segs, url.PathEscape(params[name]))
			default:
				segs = append(segs, url.PathEscape(op.paramExamples[name]))
			}
		}
		ex := p.send(op.method, strings.Join(segs, "/"), body)
		var answer struct{ ID string }
		_ = json.Unmarshal(ex.body, &answer)
		for _, id := range []string{leased, answer.ID} {
			if id != "" {
				if err := m.Release(id); err != nil {
					t.Fatalf("release %s: %v", id, err)
				}
			}
		}
		return ex
	}

	for _, op := range sp.ops {
		var body []byte
		var example any
		if op.body != nil {
			mt := op.body["content"].(map[string]any)["application/json"].(map[string]any)
			var ok bool
			if example, ok = mt["example"]; !ok {
				t.Fatalf("%s: the request body has no example", op.id)
			}
			for _, missing := range sp.unnamed(mt["schema"].(map[string]any), example, op.id) {
				t.Errorf("%s's example lacks %s: an example names every field, so the server is shown to take each", op.id, missing)
			}
			body, _ = json.Marshal(example)
		}
		ex := request(op, nil, body)
		if len(ex.request) > 0 || ex.status/100 != 2 {
			t.Errorf("%s, the document's example: %d %s; the example's problems: %v", op.id, ex.status, ex.body, ex.request)
		}
		judge := func(what string, params map[string]string, body []byte) {
			t.Helper()
			ex := request(op, params, body)
			if docOK, serverOK := len(ex.request) == 0, ex.status != http.StatusBadRequest; docOK != serverOK {
				t.Errorf("%s with %s: the document accepts it: %v %v; the server answers %d %s", op.id, what, docOK, ex.request, ex.status, ex.body)
			}
		}
		if op.body != nil {
			judge("no body", nil, nil)
			for _, pb := range sp.bodyProbes(op.body["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any), example) {
				b, _ := json.Marshal(pb)
				judge(string(b), nil, b)
			}
		}
		for name, ps := range op.params {
			for _, v := range sp.valueProbes(ps) {
				if s, ok := v.(string); ok {
					judge(fmt.Sprintf("{%s} %q", name, s), map[string]string{name: s}, body)
				}
			}
		}
	}

	// Requests no operation matches.
	for _, r := range []struct{ method, path string }{
		{"GET", "/v2/desktops"}, {"GET", "/v1"}, {"PUT", "/v1/desktops"}, {"POST", "/v1/health"},
		{"GET", "/v1/desktops/"}, {"DELETE", "/v1/desktops/"}, {"DELETE", "/v1/snapshots/"},
	} {
		p.send(r.method, r.path, nil)
	}

	// With a token, every operation refuses a request without it.
	anon := serverProbe{t: t, c: &checkedAPI{sp: sp, h: newAPI(m, "s3cret", "7070")}}
	for _, op := range sp.ops {
		path := strings.NewReplacer("{id}", "x", "{name}", "x").Replace(op.path)
		if ex := anon.send(op.method, path, nil); ex.status != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", op.id, ex.status)
		}
	}
}

// resolved is s with its $ref followed and merged under s's own keywords.
func (sp *spec) resolved(s map[string]any) map[string]any {
	r, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	out := map[string]any{}
	for k, v := range sp.resolved(sp.ref(r)) {
		out[k] = v
	}
	for k, v := range s {
		if k != "$ref" {
			out[k] = v
		}
	}
	return out
}

// unnamed lists the properties of s, nested ones too, that example lacks.
func (sp *spec) unnamed(s map[string]any, example any, at string) []string {
	s = sp.resolved(s)
	props, _ := s["properties"].(map[string]any)
	ex, _ := example.(map[string]any)
	var out []string
	for _, name := range sortedKeys(props) {
		v, ok := ex[name]
		if !ok {
			out = append(out, at+"."+name)
			continue
		}
		out = append(out, sp.unnamed(props[name].(map[string]any), v, at+"."+name)...)
	}
	return out
}

// stringProbes are tried on every string with a pattern: names that fit
// the document's name patterns and names that break them in each way.
var stringProbes = []string{
	"a", "Z9", "osworld", "a.b_c-d", "UPPER", "-a", ".a", "_a", "a/b", "a b", "a..b", "é",
	strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65),
}

// valueProbes are the values to try for a schema: one of a wrong type,
// numbers at and one past each limit, the string probes for a pattern.
// A zero value (0, "", false) is left out: the server reads it as an
// absent field, as the document says, so the schema's range does not
// apply to it. A constraint the engine checks (x-checked-by) is left out
// too: these tests run over a fake engine.
func (sp *spec) valueProbes(s map[string]any) []any {
	s = sp.resolved(s)
	var out []any
	switch s["type"] {
	case "integer", "number", "boolean", "object":
		out = append(out, "1")
	case "string":
		out = append(out, json.Number("1"))
	}
	if _, engine := s["x-checked-by"]; engine {
		return out
	}
	for _, k := range []string{"minimum", "maximum"} {
		limit, ok := s[k].(json.Number)
		if !ok {
			continue
		}
		n, err := limit.Int64()
		if err != nil {
			// A fractional limit (cpus' 0.05): itself and a hundredth past.
			f, ferr := limit.Float64()
			if ferr != nil {
				panic(fmt.Sprintf("%s %s: not a number", k, limit))
			}
			past := f - 0.01
			if k == "maximum" {
				past = f + 0.01
			}
			out = append(out, limit, json.Number(strconv.FormatFloat(past, 'g', -1, 64)))
			continue
		}
		past := n - 1
		if k == "maximum" {
			past = n + 1
		}
		for _, v := range []int64{n, past} {
			if v != 0 {
				out = append(out, json.Number(strconv.FormatInt(v, 10)))
			}
		}
	}
	if _, ok := s["pattern"]; ok {
		for _, v := range stringProbes {
			out = append(out, v)
		}
	}
	return out
}

// bodyProbes are request bodies around example: each field set to each of
// its value probes, an unknown field, each required field and each field
// another depends on left out, in every object of the body.
func (sp *spec) bodyProbes(s map[string]any, example any) []any {
	var out []any
	var walk func(s map[string]any, at []string)
	walk = func(s map[string]any, at []string) {
		s = sp.resolved(s)
		for _, v := range sp.valueProbes(s) {
			out = append(out, withValue(example, at, v, true))
		}
		if s["type"] != "object" {
			return
		}
		out = append(out, withValue(example, append(slices.Clone(at), "unknown_field"), json.Number("1"), true))
		for _, r := range asArray(s["required"]) {
			out = append(out, withValue(example, append(slices.Clone(at), r.(string)), nil, false))
		}
		deps, _ := s["dependentRequired"].(map[string]any)
		for _, name := range sortedKeys(deps) {
			for _, n := range deps[name].([]any) {
				out = append(out, withValue(example, append(slices.Clone(at), n.(string)), nil, false))
			}
		}
		props, _ := s["properties"].(map[string]any)
		for _, name := range sortedKeys(props) {
			walk(props[name].(map[string]any), append(slices.Clone(at), name))
		}
	}
	walk(s, nil)
	return out
}

// withValue is a deep copy of v with the field at path set to x, or
// deleted when set is false.
func withValue(v any, path []string, x any, set bool) any {
	if len(path) == 0 {
		return x
	}
	src, _ := v.(map[string]any)
	m := make(map[string]any, len(src))
	for k, e := range src {
		m[k] = e
	}
	if len(path) == 1 && !set {
		delete(m, path[0])
		return m
	}
	m[path[0]] = withValue(m[path[0]], path[1:], x, set)
	return m
}
