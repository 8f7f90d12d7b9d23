package tasks

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
)

// fakeGuest is a test double of the guest server: it records every request
// and answers from handlers the test sets per path (a default answers like
// an idle guest).
type fakeGuest struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []fakeReq
	handlers map[string]http.HandlerFunc
}

type fakeReq struct {
	Path string
	Body string
	JSON map[string]any
	Form map[string]string
}

func newFakeGuest(t *testing.T) *fakeGuest {
	f := &fakeGuest{handlers: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGuest) serve(w http.ResponseWriter, r *http.Request) {
	rec := fakeReq{Path: r.URL.Path, Form: map[string]string{}}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "multipart/"):
		_ = r.ParseMultipartForm(1 << 20)
		for k, v := range r.MultipartForm.Value {
			rec.Form[k] = v[0]
		}
		if fh := r.MultipartForm.File["file_data"]; len(fh) > 0 {
			fd, _ := fh[0].Open()
			b, _ := io.ReadAll(fd)
			rec.Form["file_data"] = string(b)
			rec.Form["file_name"] = fh[0].Filename
		}
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		_ = r.ParseForm()
		for k := range r.PostForm {
			rec.Form[k] = r.PostForm.Get(k)
		}
	default:
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		rec.Body = string(b)
		_ = json.Unmarshal(b, &rec.JSON)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, rec)
	h := f.handlers[r.URL.Path]
	f.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	switch r.URL.Path {
	case "/terminal":
		writeJSON(w, 200, map[string]any{"output": nil, "status": "success"})
	case "/execute", "/setup/execute":
		writeJSON(w, 200, client.ExecResult{Status: "success"})
	case "/screenshot":
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nfake"))
	case "/accessibility":
		writeJSON(w, 200, map[string]any{"AT": "<desktop-frame/>"})
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

func (f *fakeGuest) handle(path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[path] = h
}

func (f *fakeGuest) requests(path string) []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeReq
	for _, r := range f.reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// testEnv is an Env over the fake guest with short pauses.
func testEnv(t *testing.T, f *fakeGuest) *Env {
	g := client.New(f.srv.URL, nil)
	g.Retry = client.Retry{Attempts: 3, Pause: time.Millisecond}
	g.FileRetry = g.Retry
	t.Cleanup(g.Close)
	return &Env{
		Guest:   g,
		TaskID:  "task-1",
		Screen:  Screen{Width: 1920, Height: 1080, Password: "password"},
		WorkDir: t.TempDir(),
		Timeouts: Timeouts{
			Open: 5 * time.Second, Until: 500 * time.Millisecond, Launch: 5 * time.Second,
			CDPConnect: 2 * time.Second, PageLoad: 2 * time.Second, Ready: 300 * time.Millisecond, Pause: time.Millisecond,
		},
	}
}
