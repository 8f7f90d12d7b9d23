package provider

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/drums-dev/drums/provider/client"
)

// Whatever a client sends to the v1 API, the daemon answers a documented
// status with an error body (never a 500 or a panic), and a desktop it
// leases on the way is released again. The seed corpus is in
// testdata/fuzz; make fuzz runs it briefly.
func FuzzAPIRequest(f *testing.F) {
	for _, s := range []struct {
		method uint8
		path   string
		body   string
	}{
		{0, "/v1/desktops", `{"width": 1280, "height": 800, "lease_seconds": 60}`},
		{0, "/v1/desktops", `{"lease_seconds": 18446744074}`},
		{0, "/v1/desktops", `{"limits": {"cpus": 1e9, "pids": -1}}`},
		{0, "/v1/desktops", `{"image": "../x", "snapshot": "a/b"}`},
		{0, "/v1/desktops/x/renew", `{"lease_seconds": 9223372037}`},
		{0, "/v1/desktops/x/revert", `{"snapshot": ""}`},
		{0, "/v1/desktops/x/snapshots", `{"name": "s"}`},
		{1, "/v1/desktops/x", ``},
		{2, "/v1/snapshots/..", ``},
		{0, "/v1/desktops", `{"width": 1e309}`},
		{0, "/v1/desktops", `[]`},
	} {
		f.Add(s.method, s.path, s.body)
	}
	dir := f.TempDir()
	cfg := testConfig(dir)
	srv, err := NewServer(cfg, newFakeEngine(), testLogger(f))
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		srv.cfg.DrainOnExit = true
		srv.Shutdown(context.Background())
	})
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return dialUnix(ctx, cfg.Socket)
	}}}
	c, err := client.New(cfg.Socket, "")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(c.Close)
	methods := []string{"POST", "GET", "DELETE", "PUT"}
	f.Fuzz(func(t *testing.T, method uint8, path, body string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#?") {
			return // not a request line an HTTP client sends
		}
		req, err := http.NewRequest(methods[int(method)%len(methods)], "http://drums"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", req.Method, path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s %s %q: %d %s", req.Method, path, body, resp.StatusCode, b)
		}
		if resp.StatusCode >= 400 {
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if json.Unmarshal(b, &eb) != nil || eb.Error.Code == "" || eb.Error.Message == "" {
				t.Fatalf("%s %s %q: %d without an error body: %s", req.Method, path, body, resp.StatusCode, b)
			}
		}
		// Give back what the request leased, so capacity lasts.
		for _, d := range mustList(t, c) {
			if d.State == client.StateLeased {
				c.Release(context.Background(), d.ID)
			}
		}
	})
}

func mustList(t *testing.T, c *client.Client) []client.Desktop {
	t.Helper()
	l, err := c.List(context.Background())
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	return l
}
