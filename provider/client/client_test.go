package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestNewTargets(t *testing.T) {
	t.Setenv(EnvSocket, "/tmp/from-env.sock")
	for _, c := range []struct{ target, base string }{
		{"", "http://drums"},
		{"/run/x.sock", "http://drums"},
		{"unix:///run/x.sock", "http://drums"},
		{"http://127.0.0.1:7070/", "http://127.0.0.1:7070"},
		{"https://drums.example:443", "https://drums.example:443"},
	} {
		cl, err := New(c.target, "")
		if err != nil || cl.base != c.base {
			t.Errorf("New(%q): base %q, %v; want %q", c.target, cl.base, err, c.base)
		}
	}
	if _, err := New("unix://", ""); !errors.Is(err, ErrBadRequest) {
		t.Errorf("empty socket path: %v", err)
	}
	if got := DefaultSocketPath(); got != "/tmp/from-env.sock" {
		t.Errorf("DefaultSocketPath with %s set: %q", EnvSocket, got)
	}
}

// A proxy between client and daemon may answer with plain text: the error
// still carries a code and the text.
func TestErrorsFromOtherServers(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/v1/health":
			http.Error(w, "bad gateway", http.StatusBadGateway)
		case "/v1/desktops/x":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"code":"capacity","message":"full"}}`))
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Health(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeInternal || e.Status != 502 || e.Message != "bad gateway" {
		t.Errorf("plain-text 502: %#v", err)
	}
	if auth != "Bearer tok" {
		t.Errorf("Authorization %q", auth)
	}
	if _, err := c.Get(ctx, "x"); !errors.Is(err, ErrNotFound) {
		t.Errorf("empty 404: %v", err)
	}
	c.SetLeaseRetry(Retry{Attempts: 1}) // the answer is the point here (retry_test.go)
	if _, err := c.Lease(ctx, LeaseRequest{}); !errors.Is(err, ErrCapacity) || errors.Is(err, ErrNotFound) {
		t.Errorf("capacity body: %v", err)
	}
}
