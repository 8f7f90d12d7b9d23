package compat

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinCasesParse(t *testing.T) {
	cs, err := BuiltinCases()
	if err != nil {
		t.Fatal(err)
	}
	routes := map[string]int{}
	for _, c := range cs {
		routes[c.Route]++
	}
	// Every route of guest-api.md §2 has cases.
	for _, r := range []string{"/execute", "/setup/execute", "/execute_with_verification", "/setup/execute_with_verification",
		"/setup/launch", "/run_python", "/run_bash_script", "/screenshot", "/accessibility", "/terminal", "/screen_size",
		"/window_size", "/cursor_position", "/platform", "/desktop_path", "/list_directory", "/file", "/setup/upload",
		"/setup/download_file", "/wallpaper", "/setup/change_wallpaper", "/setup/open_file", "/setup/activate_window",
		"/setup/close_window", "/start_recording", "/end_recording", "/static/<path>", "/", "(task setup)"} {
		if routes[r] == 0 {
			t.Errorf("no case covers %s", r)
		}
	}
}

func TestBuiltinAllowlistCoversOnlyKnownCases(t *testing.T) {
	cs, err := BuiltinCases()
	if err != nil {
		t.Fatal(err)
	}
	a, err := BuiltinAllowlist()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range a.Entries {
		for _, g := range e.Cases {
			if len(Select(cs, []string{g})) == 0 {
				t.Errorf("known difference %s names %q, which matches no case", e.ID, g)
			}
		}
	}
}

func TestParseCasesRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown key":    `{"cases":[{"name":"a/b","route":"/x","steps":[{"request":{"method":"GET","path":"/x","bogus":1}}]}]}`,
		"no steps":       `{"cases":[{"name":"a/b","route":"/x","steps":[]}]}`,
		"bad name":       `{"cases":[{"name":"A B","route":"/x","steps":[{"request":{"method":"GET","path":"/x"}}]}]}`,
		"bad method":     `{"cases":[{"name":"a/b","route":"/x","steps":[{"request":{"method":"FETCH","path":"/x"}}]}]}`,
		"two bodies":     `{"cases":[{"name":"a/b","route":"/x","steps":[{"request":{"method":"POST","path":"/x","json":{},"form":{}}}]}]}`,
		"bad regexp":     `{"cases":[{"name":"a/b","route":"/x","steps":[{"request":{"method":"GET","path":"/x"},"compare":{"replace":[{"field":"*","pattern":"(","with":""}]}}]}]}`,
		"action both":    `{"cases":[{"name":"a/b","route":"/x","setup":[{"sh":"x","run":["y"]}],"steps":[{"request":{"method":"GET","path":"/x"}}]}]}`,
		"shared probe":   `{"cases":[{"name":"a/b","route":"/x","shared":true,"probe":{"windows":true},"steps":[{"request":{"method":"GET","path":"/x"}}]}]}`,
		"empty probe":    `{"cases":[{"name":"a/b","route":"/x","probe":{},"steps":[{"request":{"method":"GET","path":"/x"}}]}]}`,
		"bad route":      `{"cases":[{"name":"a/b","route":"x","steps":[{"request":{"method":"GET","path":"/x"}}]}]}`,
		"no cases":       `{"cases":[]}`,
		"not json":       `{"cases":`,
		"image fraction": `{"cases":[{"name":"a/b","route":"/x","steps":[{"request":{"method":"GET","path":"/x"},"compare":{"image":{"max_fraction":2}}}]}]}`,
	} {
		if _, err := ParseCases([]byte(doc), name); !errors.Is(err, ErrBadCase) {
			t.Errorf("%s: got %v, want ErrBadCase", name, err)
		}
	}
}

func TestLoadCasesFromUserFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "mine.json")
	doc := `{"cases":[{"name":"mine/a","route":"/platform","steps":[{"request":{"method":"GET","path":"/platform"}}]},
	                  {"name":"mine/a","route":"/platform","steps":[{"request":{"method":"GET","path":"/platform"}}]}]}`
	if err := os.WriteFile(f, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCases(f); !errors.Is(err, ErrBadCase) {
		t.Fatalf("duplicate names: got %v", err)
	}
}

func TestRequestBodies(t *testing.T) {
	r := Request{Method: "POST", Path: "/x", Multipart: &Multipart{
		Fields: map[string]string{"file_path": "~/a"},
		Files:  map[string]Part{"file_data": {Filename: "a", Base64: "AAE="}},
	}}
	body, ctype, err := r.body()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ctype, multipartBoundary) || !bytes.Contains(body, []byte("\x00\x01")) || !bytes.Contains(body, []byte(`name="file_path"`)) {
		t.Fatalf("multipart: %s %q", ctype, body)
	}
	r = Request{Method: "POST", Path: "/x", Form: map[string]string{"b": "2 3", "a": "1"}}
	body, ctype, _ = r.body()
	if string(body) != "a=1&b=2+3" || ctype != "application/x-www-form-urlencoded" {
		t.Fatalf("form: %s %s", body, ctype)
	}
	r = Request{Method: "POST", Path: "/x", Raw: &Raw{ContentType: "text/plain", Body: "{"}}
	body, ctype, _ = r.body()
	if string(body) != "{" || ctype != "text/plain" {
		t.Fatalf("raw: %s %s", body, ctype)
	}
}

func jsonResp(body string) Response {
	return Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}, "Date": {"x"}}, Body: []byte(body)}
}

func fieldMap(v View) map[string]string {
	m := map[string]string{}
	for _, f := range v {
		m[f.Name] = f.Value
	}
	return m
}

func TestNormalizeJSONIgnoresFormatting(t *testing.T) {
	pretty := jsonResp("{\n  \"error\": \"\",\n  \"output\": \"h\\u00e9\\n\",\n  \"returncode\": 0,\n  \"status\": \"success\"\n}\n")
	compact := jsonResp(`{"status":"success","returncode":0,"output":"hé\n","error":""}`)
	a, b := Normalize(Observation{Response: pretty}, Compare{}), Normalize(Observation{Response: compact}, Compare{})
	if d := Diff(0, a, b, nil, nil); len(d) != 0 {
		t.Fatalf("formatting made a difference: %+v", d)
	}
	m := fieldMap(a)
	if m["json.output"] != `"hé\n"` || m["json.returncode"] != "0" || m["status"] != "200" || m["header.content-type"] != "application/json" {
		t.Fatalf("fields: %v", m)
	}
	if _, ok := m["header.date"]; ok {
		t.Fatal("Date must not be compared")
	}
}

func TestNormalizeJSONNesting(t *testing.T) {
	v := Normalize(Observation{Response: jsonResp(`{"directory_tree":{"children":[{"name":"a","type":"file"},{"error":"x"}],"e":{},"l":[],"n":null,"b":true,"f":1.0}}`)}, Compare{})
	m := fieldMap(v)
	want := map[string]string{
		"json.directory_tree.children[0].name": `"a"`, "json.directory_tree.children[1].error": `"x"`,
		"json.directory_tree.e": "{}", "json.directory_tree.l": "[]", "json.directory_tree.n": "null",
		"json.directory_tree.b": "true", "json.directory_tree.f": "1.0",
	}
	for k, w := range want {
		if m[k] != w {
			t.Errorf("%s = %q, want %q", k, m[k], w)
		}
	}
}

func TestNormalizeDebuggerPage(t *testing.T) {
	page := `<!doctype html><html><head><title>ValueError: No closing quotation // Werkzeug Debugger</title></head>
<body><div class="debugger"><h1>ValueError</h1><div class="detail"><p class="errormsg">ValueError: No closing &#34;quotation&#34;
</p></div> SECRET = "abc"</body></html>`
	r := Response{Status: 500, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte(page)}
	m := fieldMap(Normalize(Observation{Response: r}, Compare{}))
	if m["body"] != `werkzeug debugger 500: ValueError: No closing "quotation"` {
		t.Fatalf("body = %q", m["body"])
	}
}

func TestNormalizeReplaceAndIgnore(t *testing.T) {
	c := Compare{
		Ignore:  []string{"json.wait_time"},
		Replace: []Replace{{Field: "json.*", Pattern: `/tmp/python_exec_[0-9a-f]{32}\.py`, With: "<tmp>"}},
	}
	if err := compileReplaces(c.Replace); err != nil {
		t.Fatal(err)
	}
	m := fieldMap(Normalize(Observation{Response: jsonResp(`{"error":"File \"/tmp/python_exec_0123456789abcdef0123456789abcdef.py\"","wait_time":0.1}`)}, c))
	if m["json.error"] != `"File \"<tmp>\""` {
		t.Fatalf("replace: %q", m["json.error"])
	}
	if _, ok := m["json.wait_time"]; ok {
		t.Fatal("ignored field kept")
	}
}

func TestNormalizeBodies(t *testing.T) {
	bin := Response{Status: 200, Header: http.Header{"Content-Type": {"application/octet-stream"}}, Body: []byte{0xff, 0, 1}}
	m := fieldMap(Normalize(Observation{Response: bin}, Compare{}))
	if m["body.size"] != "3" || len(m["body.sha256"]) != 64 {
		t.Fatalf("binary: %v", m)
	}
	mp4 := Response{Status: 200, Header: http.Header{"Content-Type": {"video/mp4"}}, Body: []byte("\x00\x00\x00\x20ftypisom....")}
	if m := fieldMap(Normalize(Observation{Response: mp4}, Compare{})); m["body"] != "mp4 video" {
		t.Fatalf("mp4: %v", m)
	}
	txt := Response{Status: 200, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: []byte("Linux")}
	if m := fieldMap(Normalize(Observation{Response: txt}, Compare{})); m["body"] != `"Linux"` {
		t.Fatalf("text: %v", m)
	}
	if m := fieldMap(Normalize(Observation{Response: Response{Err: context.DeadlineExceeded}}, Compare{})); m["transport"] != "timeout" || len(m) != 1 {
		t.Fatalf("transport: %v", m)
	}
}

func TestCanonicalXMLSortsApplicationsOnly(t *testing.T) {
	ns := `xmlns:st="https://accessibility.ubuntu.example.org/ns/state"`
	a := `<desktop-frame ` + ns + `><application name="b"><frame name="x" st:active="true">t&amp;x<label name="1"/><label name="2"/></frame></application><application name="a"/></desktop-frame>`
	b := `<desktop-frame ` + ns + `><application name="a"/><application name="b"><frame name="x" st:active="true">t&amp;x<label name="1"/><label name="2"/></frame></application></desktop-frame>`
	if canonicalXML(a) != canonicalXML(b) {
		t.Fatalf("application order matters:\n%s\n---\n%s", canonicalXML(a), canonicalXML(b))
	}
	c := strings.Replace(b, `<label name="1"/><label name="2"/>`, `<label name="2"/><label name="1"/>`, 1)
	if canonicalXML(c) == canonicalXML(b) {
		t.Fatal("order below the applications must matter")
	}
	d := strings.Replace(b, `name="x" st:active="true"`, `st:active="true" name="x"`, 1)
	if canonicalXML(d) == canonicalXML(b) {
		t.Fatal("attribute order must matter (guest-api §4.4)")
	}
	want := "<desktop-frame xmlns:st=\"https://accessibility.ubuntu.example.org/ns/state\">\n  <application name=\"a\">\n  <application name=\"b\">\n    <frame name=\"x\" st:active=\"true\"> text=\"t&x\"\n      <label name=\"1\">\n      <label name=\"2\">"
	if got := canonicalXML(a); got != want {
		t.Fatalf("rendering:\n%s\nwant\n%s", got, want)
	}
	if canonicalXML("<broken") != "<broken" {
		t.Fatal("unparsable XML must stay as is")
	}
}

func TestDiffFields(t *testing.T) {
	up := View{{Name: "status", Value: "200"}, {Name: "json.a", Value: "1"}, {Name: "json.b", Value: "x\ny\nz"}}
	gd := View{{Name: "status", Value: "200"}, {Name: "json.b", Value: "x\nY\nz"}, {Name: "json.c", Value: "2"}}
	ds := Diff(3, up, gd, nil, nil)
	if len(ds) != 3 {
		t.Fatalf("diffs: %+v", ds)
	}
	if ds[0].Field != "json.a" || ds[0].Guestd != absent || ds[2].Field != "json.c" || ds[2].Upstream != absent || ds[0].Step != 3 {
		t.Fatalf("absent fields: %+v", ds)
	}
	if !strings.Contains(ds[1].Detail, "- y") || !strings.Contains(ds[1].Detail, "+ Y") {
		t.Fatalf("line diff: %q", ds[1].Detail)
	}
}

func img(w, h int, c color.RGBA) *image.RGBA {
	m := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			m.SetRGBA(x, y, c)
		}
	}
	return m
}

func TestCompareImages(t *testing.T) {
	a := img(10, 10, color.RGBA{10, 10, 10, 255})
	b := img(10, 10, color.RGBA{10, 10, 10, 255})
	b.SetRGBA(5, 5, color.RGBA{14, 10, 10, 255})
	if ok, _ := compareImages(a, b, nil, nil); ok {
		t.Fatal("exact comparison missed a pixel")
	}
	if ok, _ := compareImages(a, b, &ImageCompare{Channel: 4}, nil); !ok {
		t.Fatal("channel tolerance ignored")
	}
	if ok, _ := compareImages(a, b, &ImageCompare{MaxFraction: 0.01}, nil); !ok {
		t.Fatal("fraction tolerance ignored")
	}
	if ok, _ := compareImages(a, b, nil, []Rect{{X: 4, Y: 4, W: 2, H: 2}}); !ok {
		t.Fatal("mask ignored")
	}
	if ok, detail := compareImages(a, img(9, 10, color.RGBA{}), nil, nil); ok || !strings.Contains(detail, "size") {
		t.Fatalf("size mismatch: %v %s", ok, detail)
	}
}

func TestAllowlist(t *testing.T) {
	doc := `{"entries":[{"id":"bash","cases":["run_bash_script/*"],"fields":["status"],"upstream":"500","guestd":"200","kind":"upstream-bug","reason":"§8.2.1"}]}`
	a, err := ParseAllowlist([]byte(doc), "t")
	if err != nil {
		t.Fatal(err)
	}
	if a.Explain("run_bash_script/echo", Difference{Field: "status", Upstream: "500", Guestd: "200"}) == nil {
		t.Fatal("entry does not match")
	}
	if a.Explain("run_bash_script/echo", Difference{Field: "status", Upstream: "500", Guestd: "404"}) != nil {
		t.Fatal("guestd value not checked")
	}
	if a.Explain("execute/x", Difference{Field: "status", Upstream: "500", Guestd: "200"}) != nil {
		t.Fatal("case not checked")
	}
	for name, bad := range map[string]string{
		"no reason": `{"entries":[{"id":"x","cases":["a"],"fields":["b"],"kind":"upstream-bug"}]}`,
		"bad kind":  `{"entries":[{"id":"x","cases":["a"],"fields":["b"],"kind":"meh","reason":"r"}]}`,
		"dup id":    `{"entries":[{"id":"x","cases":["a"],"fields":["b"],"kind":"deliberate","reason":"r"},{"id":"x","cases":["a"],"fields":["b"],"kind":"deliberate","reason":"r"}]}`,
		"bad regex": `{"entries":[{"id":"x","cases":["a"],"fields":["b"],"kind":"deliberate","reason":"r","upstream":"("}]}`,
		"no fields": `{"entries":[{"id":"x","cases":["a"],"fields":[],"kind":"deliberate","reason":"r"}]}`,
	} {
		if _, err := ParseAllowlist([]byte(bad), name); !errors.Is(err, ErrBadAllowlist) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// fakeDesktop serves two httptest servers and records Exec calls.
type fakeDesktop struct {
	up, gd *httptest.Server
	execs  [][]string
	files  string // what the probe script prints
}

var _ Desktop = (*fakeDesktop)(nil)

func (f *fakeDesktop) URL(s Server) string {
	if s == Upstream {
		if f.up == nil { // guestd alone
			return ""
		}
		return f.up.URL
	}
	return f.gd.URL
}

func (f *fakeDesktop) Exec(_ context.Context, argv []string) (ExecResult, error) {
	f.execs = append(f.execs, argv)
	if len(argv) > 2 && argv[2] == probeFilesScript {
		return ExecResult{Stdout: []byte(f.files)}, nil
	}
	if len(argv) > 0 && argv[0] == "wmctrl" {
		return ExecResult{Stdout: []byte("0x01  0 xterm.XTerm  host  my title\n")}, nil
	}
	if strings.Contains(strings.Join(argv, " "), "fail-me") {
		return ExecResult{Code: 1, Stderr: []byte("nope")}, nil
	}
	return ExecResult{}, nil
}

func TestRunClassifiesCases(t *testing.T) {
	handler := func(version string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			switch r.URL.Path {
			case "/same":
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"echo":`+string(body)+`}`)
			case "/bash":
				w.Header().Set("Content-Type", "application/json")
				if version == "up" {
					w.WriteHeader(500)
				}
				io.WriteString(w, `{"x":1}`)
			case "/png":
				w.Header().Set("Content-Type", "image/png")
				png.Encode(w, img(4, 4, color.RGBA{1, 2, 3, 255}))
			default:
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				io.WriteString(w, version)
			}
		}
	}
	fd := &fakeDesktop{up: httptest.NewServer(handler("up")), gd: httptest.NewServer(handler("gd")), files: "~/f\tfile 1 abc\n"}
	defer fd.up.Close()
	defer fd.gd.Close()
	doc := `{"cases":[
	 {"name":"t/same","route":"/same","setup":[{"sh":"prep"}],"steps":[{"request":{"method":"POST","path":"/same","json":{"a":[1,"é"]}}},{"request":{"method":"GET","path":"/png"}}],
	  "probe":{"files":["~/f"],"windows":true},"cleanup":[{"run":["clean"]}]},
	 {"name":"t/bash","route":"/bash","steps":[{"request":{"method":"POST","path":"/bash"}}]},
	 {"name":"t/diff","route":"/other","shared":true,"steps":[{"request":{"method":"GET","path":"/other"}}]},
	 {"name":"t/slow","route":"/other","slow":true,"steps":[{"request":{"method":"GET","path":"/other"}}]},
	 {"name":"t/setup-fails","route":"/other","setup":[{"sh":"fail-me"}],"cleanup":[{"sh":"clean-after-failure"}],"steps":[{"request":{"method":"GET","path":"/same"}}]}
	]}`
	cs, err := ParseCases([]byte(doc), "t")
	if err != nil {
		t.Fatal(err)
	}
	allow, err := ParseAllowlist([]byte(`{"entries":[{"id":"b","cases":["t/bash"],"fields":["status"],"upstream":"500","guestd":"200","kind":"upstream-bug","reason":"r"},
	  {"id":"stale","cases":["t/none"],"fields":["x"],"kind":"nondeterminism","reason":"r"}]}`), "a")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	rep, err := Run(context.Background(), fd, cs, Options{Allow: allow, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Verdict{"t/same": Same, "t/bash": Intended, "t/diff": Different, "t/slow": Skipped, "t/setup-fails": Error}
	for _, c := range rep.Cases {
		if c.Verdict != want[c.Name] {
			t.Errorf("%s: %s (%s %+v), want %s", c.Name, c.Verdict, c.Reason, c.Differences, want[c.Name])
		}
	}
	if !rep.Failed() || rep.Totals[Different] != 1 || len(rep.Reasons) != 1 || rep.UnusedAllowed[0] != "stale" {
		t.Fatalf("report: %+v", rep)
	}
	if got := strings.Count(progress.String(), "\n"); got != len(cs) {
		t.Fatalf("progress lines: %d\n%s", got, progress.String())
	}
	// Isolated cases set up and clean up once per server; a failed setup
	// still cleans up.
	joined := ""
	for _, e := range fd.execs {
		joined += strings.Join(e, " ") + "\n"
	}
	if strings.Count(joined, "prep") != 2 || strings.Count(joined, "clean\n") != 2 || !strings.Contains(joined, "clean-after-failure") {
		t.Fatalf("exec calls:\n%s", joined)
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range []string{"## Different (1)", "### `t/diff`", "**different**", "intended: b", "| `/bash` | 1 | 0 | 1 |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q:\n%s", s, md)
		}
	}
}

func TestParseWmctrl(t *testing.T) {
	got := parseWmctrl("0x01e00003  0 gnome-terminal-server.Gnome-terminal  host  user@host: ~\n0x02  -1 xterm.XTerm host a  b\n")
	if len(got) != 2 || got[0] != "gnome-terminal-server.Gnome-terminal\tuser@host: ~" || got[1] != "xterm.XTerm\ta  b" {
		t.Fatalf("%q", got)
	}
}

func TestUpstreamFromEnv(t *testing.T) {
	t.Setenv(EnvUpstream, "")
	if _, err := UpstreamFromEnv(); !errors.Is(err, ErrNoUpstream) || !strings.Contains(err.Error(), EnvUpstream) {
		t.Fatalf("unset: %v", err)
	}
	dir := t.TempDir()
	t.Setenv(EnvUpstream, dir)
	if _, err := UpstreamFromEnv(); !errors.Is(err, ErrNoUpstream) || !strings.Contains(err.Error(), "main.py") {
		t.Fatalf("empty dir: %v", err)
	}
	for _, f := range []string{"main.py", "pyxcursor.py"} {
		os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	t.Setenv(EnvUpstreamPythonPath, "/a::/b")
	tr, err := UpstreamFromEnv()
	if err != nil || tr.Dir != dir || len(tr.PythonPath) != 2 {
		t.Fatalf("%+v %v", tr, err)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		g, s string
		want bool
	}{
		{"*", "execute/list-echo", true}, {"execute/*", "execute/a", true}, {"execute/*", "setup-execute/a", false},
		{"json.*", "json.a.b[0]", true}, {"ab*b", "ab", false}, {"a*b*c", "a-b-b-c", true}, {"a*b*c", "acb", false},
		{"status", "status", true}, {"status", "statuses", false}, {"*-name", "ld/empty-name", true},
	} {
		if got := globMatch(c.g, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v", c.g, c.s, got)
		}
	}
}

func TestNormalizeSortsAllow(t *testing.T) {
	a := Response{Status: 405, Header: http.Header{"Allow": {"POST, OPTIONS"}, "Content-Type": {"text/html; charset=utf-8"}}}
	b := Response{Status: 405, Header: http.Header{"Allow": {"OPTIONS, POST"}, "Content-Type": {"text/html; charset=utf-8"}}}
	if d := Diff(0, Normalize(Observation{Response: a}, Compare{}), Normalize(Observation{Response: b}, Compare{}), nil, nil); len(d) != 0 {
		t.Fatalf("Allow order: %+v", d)
	}
}

func TestReportFindsStaleKnownDifferences(t *testing.T) {
	a, err := ParseAllowlist([]byte(`{"entries":[
		{"id":"bug","kind":"upstream-bug","cases":["x/*"],"fields":["status"],"reason":"r"},
		{"id":"flaky","kind":"nondeterminism","cases":["x/*"],"fields":["json.t"],"reason":"r"}]}`), "test")
	if err != nil {
		t.Fatal(err)
	}
	diff := []Difference{{Field: "status", Upstream: "500", Guestd: "200"}}
	cases := []CaseResult{
		{Name: "x/differs", Differences: diff},
		{Name: "x/now-same"},
		{Name: "x/skipped", Verdict: Skipped},
		{Name: "y/other"},
	}
	for i := range cases {
		if cases[i].Verdict != Skipped {
			cases[i].classify(a)
		}
	}
	r := &Report{Cases: cases}
	r.finish(a)
	if want := []string{"bug: x/now-same"}; !slices.Equal(r.StaleAllowed, want) {
		t.Errorf("stale %q, want %q", r.StaleAllowed, want)
	}
	if !slices.Equal(r.UnusedAllowed, []string{"flaky"}) {
		t.Errorf("unused %q", r.UnusedAllowed)
	}
	if !r.Failed() {
		t.Error("a report with a stale known difference does not fail")
	}
}
