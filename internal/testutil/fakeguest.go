package testutil

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/drums-dev/drums/guestd/client"
)

// FakeGuest is a test double of the guest server: it records every request
// and answers from handlers the test sets per path (a default answers like
// an idle guest).
type FakeGuest struct {
	srv      *httptest.Server
	mu       sync.Mutex
	reqs     []FakeRequest
	handlers map[string]http.HandlerFunc
}

// FakeRequest is a request a FakeGuest received, its body decoded.
type FakeRequest struct {
	Path string
	Host string // the Host it named
	Body string
	JSON map[string]any
	Form map[string]string
}

// NewFakeGuest starts a FakeGuest, closed when t ends.
func NewFakeGuest(t testing.TB) *FakeGuest {
	f := &FakeGuest{handlers: map[string]http.HandlerFunc{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the guest's base URL.
func (f *FakeGuest) URL() string { return f.srv.URL }

func (f *FakeGuest) serve(w http.ResponseWriter, r *http.Request) {
	rec := FakeRequest{Path: r.URL.Path, Host: r.Host, Form: map[string]string{}}
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
		WriteJSON(w, 200, map[string]any{"output": nil, "status": "success"})
	case "/execute", "/setup/execute":
		WriteJSON(w, 200, client.ExecResult{Status: "success"})
	case "/screenshot":
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write([]byte("\x89PNG\r\n\x1a\nfake"))
	case "/accessibility":
		WriteJSON(w, 200, map[string]any{"AT": "<desktop-frame/>"})
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

// Handle answers requests for path with h instead of the default.
func (f *FakeGuest) Handle(path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[path] = h
}

// Requests are the requests for path so far.
func (f *FakeGuest) Requests(path string) []FakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []FakeRequest
	for _, r := range f.reqs {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
