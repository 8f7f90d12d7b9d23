package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// guest is a test double of a guest server: handlers per path, and a count
// of the requests each path received.
type guest struct {
	mu    sync.Mutex
	calls map[string]int
	hosts []string
}

func newGuest(t *testing.T, handlers map[string]http.HandlerFunc) (*Client, *guest) {
	t.Helper()
	g := &guest{calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.calls[r.URL.Path]++
		g.hosts = append(g.hosts, r.Host)
		g.mu.Unlock()
		h, ok := handlers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	c := New(srv.URL+"/", nil)
	t.Cleanup(c.Close)
	c.Retry = Retry{Attempts: 3, Pause: time.Millisecond}
	c.FileRetry = c.Retry
	return c, g
}

func (g *guest) count(path string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls[path]
}

func TestDoKeepsTheWholeAnswer(t *testing.T) {
	c, g := newGuest(t, map[string]http.HandlerFunc{
		"/platform": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Seen-Type", r.Header.Get("Content-Type"))
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, "Linux")
		},
	})
	h := http.Header{"content-type": {"text/plain"}, "Host": {"example.test"}}
	a, err := c.Do(context.Background(), http.MethodGet, "/platform", h, nil, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != http.StatusTeapot || string(a.Body) != "Linux" || a.Header.Get("X-Seen-Type") != "text/plain" {
		t.Errorf("answer %d %q %v", a.Status, a.Body, a.Header)
	}
	if g.hosts[0] != "example.test" {
		t.Errorf("Host %q, want the header's", g.hosts[0])
	}
}

func TestExecuteRetriesUntilOK(t *testing.T) {
	var n int
	c, g := newGuest(t, map[string]http.HandlerFunc{
		"/execute": func(w http.ResponseWriter, r *http.Request) {
			if n++; n < 3 {
				http.Error(w, "busy", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, `{"status": "success", "output": "hi\n", "error": "", "returncode": 0}`)
		},
	})
	r, err := c.ExecutePython(context.Background(), "print('hi')")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(ExecResult{Status: "success", Output: "hi\n"}, r); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if got := g.count("/execute"); got != 3 {
		t.Errorf("%d calls, want 3", got)
	}
	// Without retries the first 500 is the answer, as an *Error.
	n = 0
	_, err = c.Execute(context.Background(), "/execute", "true", true)
	var ge *Error
	if !errors.As(err, &ge) || ge.Status != http.StatusInternalServerError || ge.Body != "busy" || !errors.Is(err, ErrStatus) {
		t.Errorf("Execute on a 500: %v", err)
	}
}

func TestGetFileNotFound(t *testing.T) {
	c, g := newGuest(t, map[string]http.HandlerFunc{
		"/file": func(w http.ResponseWriter, r *http.Request) {
			if r.PostFormValue("file_path") == "/home/user/a.txt" {
				_, _ = io.WriteString(w, "content")
				return
			}
			http.Error(w, "File not found", http.StatusNotFound)
		},
	})
	b, err := c.GetFile(context.Background(), "/home/user/a.txt")
	if err != nil || string(b) != "content" {
		t.Errorf("GetFile = %q, %v", b, err)
	}
	if _, err := c.GetFile(context.Background(), "/nope"); !errors.Is(err, ErrFileNotFound) {
		t.Errorf("missing file: %v, want ErrFileNotFound", err)
	}
	if got := g.count("/file"); got != 1+3 {
		t.Errorf("%d calls, want 1 and 3 attempts for the missing file", got)
	}
}

func TestScreenshotMustBeAnImage(t *testing.T) {
	png := "\x89PNG\r\n\x1a\nrest"
	body := png
	c, _ := newGuest(t, map[string]http.HandlerFunc{
		"/screenshot": func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, body) },
	})
	if b, err := c.Screenshot(context.Background()); err != nil || string(b) != png {
		t.Errorf("Screenshot = %q, %v", b, err)
	}
	body = "<html>not an image</html>"
	if _, err := c.Screenshot(context.Background()); err == nil {
		t.Error("an HTML answer was taken for a screenshot")
	}
}

func TestUploadIsOSWorldsForm(t *testing.T) {
	var fields map[string]string
	c, _ := newGuest(t, map[string]http.HandlerFunc{
		"/setup/upload": func(w http.ResponseWriter, r *http.Request) {
			f, fh, err := r.FormFile("file_data")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			data, _ := io.ReadAll(f)
			fields = map[string]string{"file_path": r.FormValue("file_path"), "name": fh.Filename, "data": string(data)}
		},
	})
	if err := c.Upload(context.Background(), "/home/user/doc.txt", []byte("text")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"file_path": "/home/user/doc.txt", "name": "doc.txt", "data": "text"}, fields); diff != "" {
		t.Errorf("form (-want +got):\n%s", diff)
	}
}

func TestAnswersOSWorldReadsAsNone(t *testing.T) {
	c, _ := newGuest(t, map[string]http.HandlerFunc{
		"/window_size": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "no window", http.StatusNotFound)
		},
		"/terminal": func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, `{"output": null}`) },
	})
	if m, err := c.WindowSize(context.Background(), "gedit"); m != nil || err != nil {
		t.Errorf("WindowSize without a window = %v, %v; want nil, nil", m, err)
	}
	if out, err := c.Terminal(context.Background()); out != nil || err != nil {
		t.Errorf("Terminal without one = %v, %v", out, err)
	}
	if err := c.Ready(context.Background()); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if c.Host() != "127.0.0.1" {
		t.Errorf("Host = %q", c.Host())
	}
}
