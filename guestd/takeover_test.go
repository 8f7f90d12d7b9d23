package guestd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// recordInput is an Input that records what reaches it.
type recordInput struct{ events []string }

func (r *recordInput) MoveTo(_ context.Context, x, y int) error {
	r.events = append(r.events, fmt.Sprintf("move %d,%d", x, y))
	return nil
}

func (r *recordInput) Button(_ context.Context, n int, down bool) error {
	r.events = append(r.events, fmt.Sprintf("button %d %v", n, down))
	return nil
}

func (r *recordInput) Key(_ context.Context, keysym uint32, down bool) error {
	r.events = append(r.events, fmt.Sprintf("key %#x %v", keysym, down))
	return nil
}

var _ Input = (*recordInput)(nil)

// POST /live_view turns takeover on and off; only while it is on do the
// viewers' events reach the desktop. A guestd without a live view answers
// 404.
func TestLiveViewTakeoverRoute(t *testing.T) {
	te := newTestEnv(t)
	if r := te.postJSON("/live_view", `{"takeover": true}`); r.status != http.StatusNotFound {
		t.Errorf("without a live view: %d %s", r.status, r.body)
	}

	in := &recordInput{}
	sw := NewTakeover(in, false)
	srv, err := New(Config{Logger: slog.New(slog.DiscardHandler), Home: t.TempDir(), TempDir: t.TempDir()},
		Deps{Display: te.disp, Accessibility: te.a11y, Takeover: sw})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	post := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(hs.URL+"/live_view", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("POST /live_view %s: %d %q", body, resp.StatusCode, raw)
		}
		return resp.StatusCode, out
	}
	ctx := context.Background()
	sw.MoveTo(ctx, 1, 2)
	if st, out := post(`{"takeover": true}`); st != 200 || out["takeover"] != true {
		t.Errorf("turn on: %d %v", st, out)
	}
	sw.Key(ctx, 0x61, true)
	sw.Button(ctx, 1, false)
	if st, out := post(`{}`); st != 200 || out["takeover"] != true {
		t.Errorf("read the state: %d %v", st, out)
	}
	if st, out := post(`{"takeover": "yes"}`); st != 400 || !sw.On() {
		t.Errorf("a non-boolean: %d %v, on=%v", st, out, sw.On())
	}
	if st, out := post(`{"takeover": false}`); st != 200 || out["takeover"] != false {
		t.Errorf("turn off: %d %v", st, out)
	}
	sw.MoveTo(ctx, 3, 4)
	if got, want := strings.Join(in.events, "; "), "key 0x61 true; button 1 false"; got != want {
		t.Errorf("events that reached the desktop: %q, want %q", got, want)
	}
}
