package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// browser is a test double of Chromium's DevTools: it answers each command
// through answer, which returns the result, an error message, or an event
// to send after the answer.
type browser func(method string, params map[string]any) (result any, errMsg, event string)

type command struct {
	ID        int64          `json:"id"`
	Method    string         `json:"method"`
	Params    map[string]any `json:"params"`
	SessionID string         `json:"sessionId"`
}

// reply is the messages the browser sends for one command.
func (b browser) reply(raw []byte) [][]byte {
	var c command
	if json.Unmarshal(raw, &c) != nil {
		return nil
	}
	result, errMsg, event := b(c.Method, c.Params)
	answer := map[string]any{"id": c.ID, "sessionId": c.SessionID}
	if errMsg != "" {
		answer["error"] = map[string]any{"code": -32000, "message": errMsg}
	} else {
		answer["result"] = result
	}
	a, _ := json.Marshal(answer)
	out := [][]byte{a}
	if event != "" {
		e, _ := json.Marshal(map[string]any{"method": event, "params": map[string]any{}, "sessionId": c.SessionID})
		out = append(out, e)
	}
	return out
}

// tabs is a browser with one tab that navigates and evaluates.
func tabs(method string, params map[string]any) (any, string, string) {
	switch method {
	case "Target.getTargets":
		return map[string]any{"targetInfos": []any{
			map[string]any{"targetId": "W", "type": "service_worker"},
			map[string]any{"targetId": "T1", "type": "page", "url": "about:blank"},
		}}, "", ""
	case "Target.attachToTarget":
		return map[string]any{"sessionId": "S-" + params["targetId"].(string)}, "", ""
	case "Page.enable":
		return map[string]any{}, "", ""
	case "Page.navigate":
		if params["url"] == "http://unreachable.test/" {
			return map[string]any{"errorText": "net::ERR_NAME_NOT_RESOLVED"}, "", ""
		}
		if params["url"] == "http://neverloads.test/" {
			return map[string]any{"frameId": "F"}, "", ""
		}
		return map[string]any{"frameId": "F"}, "", "Page.loadEventFired"
	case "Runtime.evaluate":
		v := "title of " + params["expression"].(string)
		if params["expression"] == "big" {
			v = strings.Repeat("x", 1<<20) // beyond a WebSocket library's default read limit
		}
		return map[string]any{"result": map[string]any{"value": v}}, "", ""
	}
	return nil, "'" + method + "' wasn't found", ""
}

func pipeBrowser(t *testing.T, b browser) *Conn {
	toBrowser, fromTest := io.Pipe()
	toTest, fromBrowser := io.Pipe()
	go func() {
		r := bufio.NewReader(toBrowser)
		for {
			raw, err := r.ReadBytes(0)
			if err != nil {
				fromBrowser.Close()
				return
			}
			for _, m := range b.reply(raw[:len(raw)-1]) {
				if _, err := fromBrowser.Write(append(m, 0)); err != nil {
					return
				}
			}
		}
	}()
	c := New(Pipe(toTest, fromTest))
	t.Cleanup(c.Close)
	return c
}

func wsBrowser(t *testing.T, b browser) *Conn {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/json/version" {
			// Chromium names the host it thinks it has.
			_, _ = io.WriteString(w, `{"webSocketDebuggerUrl": "ws://localhost:9222/devtools/browser/x"}`)
			return
		}
		if r.Header.Get("Origin") != "" {
			http.Error(w, "Chromium refuses an Origin it was not told to allow", http.StatusForbidden)
			return
		}
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			_, raw, err := ws.Read(r.Context())
			if err != nil {
				return
			}
			for _, m := range b.reply(raw) {
				_ = ws.Write(r.Context(), websocket.MessageText, m)
			}
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	c, err := Dial(context.Background(), u.Hostname(), port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestTransports(t *testing.T) {
	for name, dial := range map[string]func(*testing.T, browser) *Conn{"pipe": pipeBrowser, "websocket": wsBrowser} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c := dial(t, tabs)
			pages, err := c.Pages(ctx)
			if err != nil || len(pages) != 1 || pages[0].TargetID != "T1" {
				t.Fatalf("Pages = %+v, %v; want the one page", pages, err)
			}
			title, err := c.Title(ctx, "T1")
			if err != nil || title != "title of document.title" {
				t.Errorf("Title = %q, %v", title, err)
			}
			s, err := c.Attach(ctx, "T1")
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Navigate(ctx, s, "http://a.test/", time.Minute); err != nil {
				t.Errorf("Navigate waits for the load event: %v", err)
			}
			var nav *NavigationError
			if err := c.Navigate(ctx, s, "http://unreachable.test/", time.Minute); !errors.As(err, &nav) ||
				*nav != (NavigationError{URL: "http://unreachable.test/", ErrorText: "net::ERR_NAME_NOT_RESOLVED"}) {
				t.Errorf("Navigate to an unreachable page: %v, want a NavigationError with Chromium's errorText", err)
			}
			if err := c.Navigate(ctx, s, "http://neverloads.test/", time.Millisecond); !errors.As(err, &nav) ||
				*nav != (NavigationError{URL: "http://neverloads.test/", Timeout: time.Millisecond}) {
				t.Errorf("Navigate to a page that never loads: %v, want a NavigationError with its timeout", err)
			}
			var de *Error
			if err := c.Call(ctx, "", "No.such", nil, nil); !errors.As(err, &de) || de.Code != -32000 {
				t.Errorf("an error answer: %v, want an *Error", err)
			}
			var got string
			if err := c.Eval(ctx, s, "big", &got); err != nil || len(got) != 1<<20 {
				t.Errorf("a 1 MiB answer: %d bytes, %v", len(got), err)
			}
		})
	}
}

func TestCallEndsWithTheConnection(t *testing.T) {
	toTest, fromBrowser := io.Pipe()
	toBrowser, fromTest := io.Pipe()
	toBrowser.Close() // the browser is gone: writes fail
	c := New(Pipe(toTest, fromTest))
	fromBrowser.Close() // and reads end
	<-c.Done()
	if err := c.Call(context.Background(), "", "Target.getTargets", nil, nil); err == nil {
		t.Error("a call on an ended connection succeeded")
	}
	if c.Err() == nil {
		t.Error("an ended connection says no why")
	}
}
