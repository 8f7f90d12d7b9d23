package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// spec is openapi.json, the v1 API's definition, as the tests read it: its
// operations, and a validator of requests and answers against it. The
// validator knows the part of JSON Schema the document uses; a keyword it
// does not know is itself a problem, so the document cannot state a
// constraint that nothing checks.
type spec struct {
	root map[string]any
	ops  []*operation
	res  map[string]*regexp.Regexp // compiled patterns
}

// operation is one method on one path of the document.
type operation struct {
	id, method, path string
	segments         []string                  // the path split at "/", "{name}" for a parameter
	params           map[string]map[string]any // path parameter -> schema
	paramExamples    map[string]string
	body             map[string]any // the requestBody object, nil when it takes none
	responses        map[string]any // status -> response object
}

var pathMethods = []string{"get", "put", "post", "delete", "patch"}

// loadSpec reads openapi.json. Numbers stay json.Number, so that an integer
// and a number can be told apart.
func loadSpec(t testing.TB) *spec {
	t.Helper()
	b, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatalf("read the API document: %v", err)
	}
	root, err := decodeJSON(b)
	if err != nil {
		t.Fatalf("parse openapi.json: %v", err)
	}
	sp := &spec{root: root.(map[string]any), res: map[string]*regexp.Regexp{}}
	paths := sp.root["paths"].(map[string]any)
	for _, p := range sortedKeys(paths) {
		item := paths[p].(map[string]any)
		params, examples := map[string]map[string]any{}, map[string]string{}
		for k, v := range item {
			switch {
			case k == "parameters":
				for _, pv := range v.([]any) {
					prm := sp.deref(pv.(map[string]any))
					if prm["in"] != "path" {
						t.Fatalf("%s: parameter %v is not in the path; these tests check path parameters only", p, prm["name"])
					}
					name := prm["name"].(string)
					params[name] = prm["schema"].(map[string]any)
					if ex, ok := prm["example"].(string); ok {
						examples[name] = ex
					}
				}
			case !slices.Contains(pathMethods, k):
				t.Fatalf("%s: %q is not read by these tests", p, k)
			}
		}
		for _, m := range pathMethods {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op := &operation{method: strings.ToUpper(m), path: p, segments: strings.Split(p, "/"),
				params: params, paramExamples: examples, responses: map[string]any{}}
			for k, v := range o {
				switch k {
				case "operationId":
					op.id = v.(string)
				case "summary", "description":
				case "requestBody":
					op.body = sp.deref(v.(map[string]any))
				case "responses":
					for status, r := range v.(map[string]any) {
						op.responses[status] = sp.deref(r.(map[string]any))
					}
				default:
					t.Fatalf("%s %s: %q is not read by these tests", op.method, p, k)
				}
			}
			if op.id == "" {
				t.Fatalf("%s %s has no operationId", op.method, p)
			}
			for _, s := range op.segments {
				if name, ok := paramName(s); ok && params[name] == nil {
					t.Fatalf("%s %s: path parameter %s is not declared", op.method, p, name)
				}
			}
			sp.ops = append(sp.ops, op)
		}
	}
	return sp
}

// decodeJSON decodes exactly one JSON value, numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

func paramName(segment string) (string, bool) {
	if strings.HasPrefix(segment, "{") && strings.HasSuffix(segment, "}") {
		return segment[1 : len(segment)-1], true
	}
	return "", false
}

// ref resolves a local reference, "#/components/schemas/Desktop".
func (sp *spec) ref(r string) map[string]any {
	var v any = sp.root
	for _, part := range strings.Split(strings.TrimPrefix(r, "#/"), "/") {
		m, ok := v.(map[string]any)
		if !ok {
			panic("unresolvable reference " + r)
		}
		v = m[part]
	}
	m, ok := v.(map[string]any)
	if !ok {
		panic("unresolvable reference " + r)
	}
	return m
}

// deref follows o's $ref, if it has one (parameters, request bodies,
// responses; schemas keep theirs, the validator follows it).
func (sp *spec) deref(o map[string]any) map[string]any {
	if r, ok := o["$ref"].(string); ok {
		return sp.ref(r)
	}
	return o
}

// schema is a schema of components.schemas by name.
func (sp *spec) schema(name string) map[string]any {
	return sp.ref("#/components/schemas/" + name)
}

// codes is the enum of error codes (ErrorDetail.code), sorted.
func (sp *spec) codes() []string {
	var out []string
	for _, c := range sp.schema("ErrorDetail")["properties"].(map[string]any)["code"].(map[string]any)["enum"].([]any) {
		out = append(out, c.(string))
	}
	slices.Sort(out)
	return out
}

// op finds an operation by its operationId.
func (sp *spec) op(id string) *operation {
	for _, o := range sp.ops {
		if o.id == id {
			return o
		}
	}
	panic("no operation " + id)
}

// validate lists what in v breaks schema s; at names v in the messages.
func (sp *spec) validate(s map[string]any, v any, at string) []string {
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, at+": "+fmt.Sprintf(format, args...))
	}
	obj, isObj := v.(map[string]any)
	str, isStr := v.(string)
	num, isNum := v.(json.Number)
	for _, k := range sortedKeys(s) {
		kv := s[k]
		switch k {
		case "description", "summary", "example":
		case "$ref":
			problems = append(problems, sp.validate(sp.ref(kv.(string)), v, at)...)
		case "type":
			if !hasType(v, kv.(string)) {
				bad("%s is not of type %s", show(v), kv)
			}
		case "properties":
			for name, ps := range kv.(map[string]any) {
				if pv, ok := obj[name]; isObj && ok {
					problems = append(problems, sp.validate(ps.(map[string]any), pv, at+"."+name)...)
				}
			}
		case "additionalProperties":
			props, _ := s["properties"].(map[string]any)
			for _, name := range sortedKeys(obj) {
				if _, ok := props[name]; ok {
					continue
				}
				if sub, ok := kv.(map[string]any); ok {
					problems = append(problems, sp.validate(sub, obj[name], at+"."+name)...)
				} else if kv == false {
					bad("field %q is not in the document", name)
				}
			}
		case "required":
			for _, name := range kv.([]any) {
				if _, ok := obj[name.(string)]; isObj && !ok {
					bad("required field %q is missing", name)
				}
			}
		case "dependentRequired":
			for name, needs := range kv.(map[string]any) {
				if _, ok := obj[name]; !isObj || !ok {
					continue
				}
				for _, n := range needs.([]any) {
					if _, ok := obj[n.(string)]; !ok {
						bad("field %q needs %q too", name, n)
					}
				}
			}
		case "items":
			for i, item := range asArray(v) {
				problems = append(problems, sp.validate(kv.(map[string]any), item, fmt.Sprintf("%s[%d]", at, i))...)
			}
		case "enum":
			if !slices.Contains(kv.([]any), v) {
				bad("%s is not one of %v", show(v), kv)
			}
		case "const":
			if v != kv {
				bad("%s is not %s", show(v), show(kv))
			}
		case "minimum", "maximum":
			if !isNum {
				continue
			}
			x, _ := num.Float64()
			limit, _ := kv.(json.Number).Float64()
			if (k == "minimum" && x < limit) || (k == "maximum" && x > limit) {
				bad("%s is outside its %s %s", num, k, kv)
			}
		case "minLength":
			n, _ := kv.(json.Number).Int64()
			if isStr && int64(len([]rune(str))) < n {
				bad("%q is shorter than %d", str, n)
			}
		case "pattern":
			if isStr && !sp.pattern(kv.(string)).MatchString(str) {
				bad("%q does not match %s", str, kv)
			}
		case "format":
			if kv != "date-time" {
				bad("format %q is not checked by these tests", kv)
			} else if _, err := time.Parse(time.RFC3339Nano, str); isStr && err != nil {
				bad("%q is not a date-time", str)
			}
		case "allOf":
			for _, sub := range kv.([]any) {
				problems = append(problems, sp.validate(sub.(map[string]any), v, at)...)
			}
		case "not":
			if len(sp.validate(kv.(map[string]any), v, at)) == 0 {
				bad("%s matches %v, which it must not", show(v), kv)
			}
		default:
			if !strings.HasPrefix(k, "x-") {
				bad("the document uses %q, which these tests do not check", k)
			}
		}
	}
	return problems
}

func (sp *spec) pattern(p string) *regexp.Regexp {
	re := sp.res[p]
	if re == nil {
		re = regexp.MustCompile(p)
		sp.res[p] = re
	}
	return re
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(string(n), 10, 64)
		return err == nil
	}
	return false
}

func asArray(v any) []any {
	a, _ := v.([]any)
	return a
}

func show(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// match is what a request is to the document: the operation it is (nil
// when none), whether some operation has its path, and its path parameters.
type match struct {
	op       *operation
	pathSeen bool
	params   map[string]string
}

// find matches a method and an escaped path against the operations.
func (sp *spec) find(method, escapedPath string) match {
	got := strings.Split(escapedPath, "/")
	var m match
	for _, op := range sp.ops {
		params, ok := op.matchPath(got)
		if !ok {
			continue
		}
		m.pathSeen = true
		if op.method == method {
			return match{op: op, pathSeen: true, params: params}
		}
	}
	return m
}

func (op *operation) matchPath(got []string) (map[string]string, bool) {
	if len(got) != len(op.segments) {
		return nil, false
	}
	params := map[string]string{}
	for i, s := range op.segments {
		if name, ok := paramName(s); ok {
			v, err := url.PathUnescape(got[i])
			if err != nil || v == "" {
				return nil, false
			}
			params[name] = v
		} else if s != got[i] {
			return nil, false
		}
	}
	return params, true
}

// checkRequest lists what in a request breaks the document.
func (sp *spec) checkRequest(m match, r *http.Request, body []byte) []string {
	where := r.Method + " " + r.URL.Path
	if m.op == nil {
		return []string{where + ": no operation of the document"}
	}
	var problems []string
	if r.URL.RawQuery != "" {
		problems = append(problems, where+": the document defines no query parameters")
	}
	for name, v := range m.params {
		problems = append(problems, sp.validate(m.op.params[name], v, where+" {"+name+"}")...)
	}
	if m.op.body == nil {
		if len(body) > 0 {
			problems = append(problems, where+": the operation takes no body")
		}
		return problems
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if m.op.body["required"] == true {
			problems = append(problems, where+": the body is required")
		}
		return problems
	}
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	mt, ok := m.op.body["content"].(map[string]any)[media].(map[string]any)
	if !ok {
		return append(problems, fmt.Sprintf("%s: body of type %q, which the document does not list", where, media))
	}
	v, err := decodeJSON(body)
	if err != nil {
		return append(problems, fmt.Sprintf("%s: body is not JSON: %v", where, err))
	}
	return append(problems, sp.validate(mt["schema"].(map[string]any), v, where+" body")...)
}

// checkResponse lists what in an answer to a request matched as m breaks
// the document.
func (sp *spec) checkResponse(m match, method, path string, status int, h http.Header, body []byte) []string {
	where := fmt.Sprintf("%s %s answered %d", method, path, status)
	var responses map[string]any
	switch {
	case m.op != nil:
		responses = m.op.responses
	case m.pathSeen:
		responses = map[string]any{"405": sp.unmatched("405")}
	default:
		responses = map[string]any{"404": sp.unmatched("404")}
	}
	r, ok := responses[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s, a status the document does not list for it (%s): %s", where, strings.Join(sortedKeys(responses), ", "), body)}
	}
	content, ok := r["content"].(map[string]any)
	if !ok {
		if len(body) > 0 {
			return []string{fmt.Sprintf("%s with a body, where the document has none: %s", where, body)}
		}
		return nil
	}
	media, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	mt, ok := content[media].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s with Content-Type %q, which the document does not list", where, h.Get("Content-Type"))}
	}
	s := mt["schema"].(map[string]any)
	if media != "application/json" {
		return sp.validate(s, string(body), where)
	}
	v, err := decodeJSON(body)
	if err != nil {
		return []string{fmt.Sprintf("%s with a body that is not JSON: %v: %s", where, err, body)}
	}
	return sp.validate(s, v, where)
}

// unmatched is the document's answer to a request no operation matches.
func (sp *spec) unmatched(status string) map[string]any {
	u := sp.root["x-unmatched"].(map[string]any)["responses"].(map[string]any)
	return sp.deref(u[status].(map[string]any))
}

// exchange is one request through a checkedAPI, with what in it breaks
// the document.
type exchange struct {
	op                string // operationId, "" when none matched
	method, path      string
	status            int
	body              []byte
	request, response []string
}

// checkedAPI serves an API handler and checks every request and answer
// against the document, keeping each exchange for the test to look at.
type checkedAPI struct {
	sp *spec
	h  http.Handler

	mu  sync.Mutex
	log []exchange
}

func (c *checkedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m := c.sp.find(r.Method, r.URL.EscapedPath())
	ex := exchange{method: r.Method, path: r.URL.Path, request: c.sp.checkRequest(m, r, body)}
	if m.op != nil {
		ex.op = m.op.id
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, r)
	ex.status, ex.body = rec.Code, rec.Body.Bytes()
	ex.response = c.sp.checkResponse(m, r.Method, r.URL.Path, rec.Code, rec.Header(), ex.body)
	c.mu.Lock()
	c.log = append(c.log, ex)
	c.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(ex.body)
}

// take returns the exchanges since the last take.
func (c *checkedAPI) take() []exchange {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.log
	c.log = nil
	return out
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
