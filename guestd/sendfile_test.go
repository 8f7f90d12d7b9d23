package guestd

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

var mimeNames = []string{
	"a.txt", "A.TXT", "report.pdf", "x.py", "data.json", "page.html", "style.css", "app.js",
	"img.PNG", "photo.jpeg", "vid.mp4", "song.mp3", "doc.docx", "sheet.xlsx", "slides.pptx",
	"a.tar.gz", "a.tgz", "b.tar.bz2", "c.txz", "img.svgz", "f.gz", "f.Z", "f.z", "noext",
	".bashrc", "a.b.c.odt", "x.xml", "y.svg", "weird.", "data:text/csv,1,2", "file:name.png",
	"a.unknownext", "a.csv", "notes.md", "k.xcf", "v.webm", "arch.zip", "arch.7z", "mail.eml",
}

func TestGuessType(t *testing.T) {
	db := loadMimeDB()
	if got := db.guessType("a.tar.gz"); got != "application/x-tar" {
		t.Errorf("a.tar.gz: %s", got)
	}
	t.Run("cpython", func(t *testing.T) {
		script := `
import json, sys, mimetypes
print(json.dumps([mimetypes.guess_type(n)[0] or "" for n in json.load(sys.stdin)]))
`
		var want []string
		testutil.PythonOracle(t, script, mimeNames, &want)
		for i, n := range mimeNames {
			if got := db.guessType(n); got != want[i] {
				t.Errorf("guessType(%q) = %q, Python %q", n, got, want[i])
			}
		}
	})
}

func TestDispositionNames(t *testing.T) {
	cases := map[string]string{
		"plain.txt":      "filename=plain.txt",
		"with space.txt": `filename="with space.txt"`,
		`q"uote.txt`:     `filename="q\"uote.txt"`,
		"é ü.txt":        `filename="e u.txt"; filename*=UTF-8''%C3%A9%20%C3%BC.txt`,
		// Werkzeug 3 quotes the empty ASCII fold; attr-chars stay literal.
		"日本":        `filename=""; filename*=UTF-8''%E6%97%A5%E6%9C%AC`,
		"ü!#$&+^`|": "filename=u!#$&+^`|; filename*=UTF-8''%C3%BC!#$&+^`|",
	}
	for in, want := range cases {
		if got := dispositionNames(in); got != want {
			t.Errorf("dispositionNames(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestFileHeadersMatchWerkzeug serves the same files through /file and
// through Werkzeug's send_file (Debian's Flask) and compares the headers.
func TestFileHeadersMatchWerkzeug(t *testing.T) {
	te := newTestEnv(t)
	dir := t.TempDir()
	// Names whose headers Werkzeug 2.2 (Debian) and 3.x (what pip gives
	// an OSWorld VM) agree on.
	names := []string{"plain.txt", "with space.docx", "résumé.pdf", "x.py", "a.tar.gz",
		"noext", "日本語 ファイル.xlsx", `q"uote.json`, "ﬁle①.csv"}
	var paths []string
	for i, n := range names {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(strings.Repeat("x", 10+i)), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	compared := []string{"Content-Type", "Content-Disposition", "Content-Length", "Last-Modified", "Cache-Control", "Etag"}
	got := make([]map[string]string, len(paths))
	for i, p := range paths {
		r := te.postForm("/file", "file_path="+url.QueryEscape(p))
		if r.status != 200 {
			t.Fatalf("/file %s: %d %s", p, r.status, r.body)
		}
		got[i] = map[string]string{}
		for _, h := range compared {
			got[i][h] = r.header.Get(h)
		}
	}
	testutil.Need(t, "python3-flask for the header comparison", pythonImport("flask"))
	script := `
import json, sys
from flask import Flask, send_file
app = Flask("t"); app.debug = True
@app.route("/f", methods=["POST"])
def f():
    from flask import request
    return send_file(request.form["p"], as_attachment=True)
c = app.test_client()
out = []
for p in json.load(sys.stdin):
    r = c.post("/f", data={"p": p})
    out.append({k: r.headers.get(k, "") for k in ["Content-Type", "Content-Disposition", "Content-Length", "Last-Modified", "Cache-Control", "ETag"]})
print(json.dumps(out))
`
	var want []map[string]string
	testutil.PythonOracle(t, script, paths, &want)
	for i := range paths {
		want[i]["Etag"] = want[i]["ETag"]
		delete(want[i], "ETag")
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s (-werkzeug +guestd):\n%s", names[i], diff)
		}
	}
}

func TestByteRange(t *testing.T) {
	cases := []struct {
		header     string
		start, end int64
		ok         bool
	}{
		{"bytes=0-9", 0, 10, true},
		{"bytes=5-", 5, 104, true},
		{"bytes=-4", 100, 104, true},
		{"bytes=-0", 0, 104, true},
		{"bytes=100-200", 100, 104, true},
		{"bytes=200-", 0, 0, false},
		{"bytes=5-3", 0, 0, false},
		{"bytes=0-1,4-5", 0, 0, false},
		{"items=0-1", 0, 0, false},
		{"bytes=-200", 0, 0, false},
		{"bytes", 0, 0, false},
	}
	for _, c := range cases {
		s, e, ok := byteRange(c.header, 104)
		if s != c.start || e != c.end || ok != c.ok {
			t.Errorf("byteRange(%q) = %d, %d, %v", c.header, s, e, ok)
		}
	}
}

func TestScreenshotConditional(t *testing.T) {
	te := newTestEnv(t)
	r := te.get("/screenshot")
	etag := r.header.Get("ETag")
	size := r.header.Get("Content-Length")

	req := newRequest(http.MethodGet, "/screenshot", nil, "")
	req.Header.Set("Range", "bytes=0-7")
	r = te.do(req)
	if r.status != 206 || r.body != "\x89PNG\r\n\x1a\n" || r.header.Get("Content-Range") != "bytes 0-7/"+size || r.header.Get("Accept-Ranges") != "bytes" {
		t.Errorf("range: %d %q %v", r.status, r.body, r.header)
	}

	req = newRequest(http.MethodGet, "/screenshot", nil, "")
	req.Header.Set("Range", "bytes=99999999-")
	r = te.do(req)
	if r.status != 416 || !strings.Contains(r.body, "<title>416 Requested Range Not Satisfiable</title>") || r.header.Get("Content-Range") == "" {
		t.Errorf("416: %d %q %v", r.status, r.body, r.header)
	}

	// A later second cannot be "not modified since" an earlier capture.
	req = newRequest(http.MethodGet, "/screenshot", nil, "")
	req.Header.Set("If-Modified-Since", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat))
	r = te.do(req)
	if r.status != 304 || r.body != "" || r.header.Get("Content-Type") != "" || r.header.Get("ETag") == "" {
		t.Errorf("304: %d %v", r.status, r.header)
	}

	// Each screenshot has its own ETag, so an old one never matches:
	// upstream saves its file anew for every request, and guestd gives
	// the same PNG the request's time.
	req = newRequest(http.MethodGet, "/screenshot", nil, "")
	req.Header.Set("If-None-Match", etag)
	if r = te.do(req); r.status != 200 {
		t.Errorf("If-None-Match with an old tag: %d", r.status)
	}
	req = newRequest(http.MethodGet, "/screenshot", nil, "")
	req.Header.Set("If-None-Match", "*")
	if r = te.do(req); r.status != 304 {
		t.Errorf("If-None-Match *: %d", r.status)
	}
}
