package osworld

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

// fakeBrowser is a test double of Chromium's DevTools endpoint: tabs with
// URLs and titles, driven over a real WebSocket.
type fakeBrowser struct {
	srv   *httptest.Server
	mu    sync.Mutex
	pages []*fakePage
	next  int
	// origin records whether a client sent an Origin header.
	origin bool
}

type fakePage struct{ id, url, title string }

func newFakeBrowser(t *testing.T, urls ...string) *fakeBrowser {
	b := &fakeBrowser{}
	for _, u := range urls {
		b.addPage(u)
	}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *fakeBrowser) addPage(u string) *fakePage {
	b.next++
	p := &fakePage{id: fmt.Sprintf("T%d", b.next), url: u, title: titleOf(u)}
	b.pages = append(b.pages, p)
	return p
}

func titleOf(u string) string {
	if u == "about:blank" {
		return ""
	}
	return "title of " + u
}

func (b *fakeBrowser) hostPort(t *testing.T) (string, int) {
	u, _ := url.Parse(b.srv.URL)
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname(), port
}

func (b *fakeBrowser) urls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, p := range b.pages {
		out = append(out, p.url)
	}
	return out
}

func (b *fakeBrowser) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/json/version" {
		// Chromium answers with the host it thinks it has.
		testutil.WriteJSON(w, 200, map[string]string{"webSocketDebuggerUrl": "ws://localhost:9222/devtools/browser/x"})
		return
	}
	if r.Header.Get("Origin") != "" {
		b.mu.Lock()
		b.origin = true
		b.mu.Unlock()
	}
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	send := func(v any) {
		msg, _ := json.Marshal(v)
		_ = ws.Write(r.Context(), websocket.MessageText, msg)
	}
	for {
		_, msg, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		var m struct {
			ID        int64          `json:"id"`
			Method    string         `json:"method"`
			Params    map[string]any `json:"params"`
			SessionID string         `json:"sessionId"`
		}
		if json.Unmarshal(msg, &m) != nil {
			return
		}
		result, event := b.handle(m.Method, m.Params, m.SessionID)
		send(map[string]any{"id": m.ID, "result": result, "sessionId": m.SessionID})
		if event != "" {
			send(map[string]any{"method": event, "params": map[string]any{}, "sessionId": m.SessionID})
		}
	}
}

func (b *fakeBrowser) page(id string) *fakePage {
	for _, p := range b.pages {
		if p.id == id {
			return p
		}
	}
	return nil
}

func (b *fakeBrowser) handle(method string, params map[string]any, session string) (any, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	target := strings.TrimPrefix(session, "S-")
	switch method {
	case "Target.getTargets":
		var infos []map[string]any
		for _, p := range b.pages {
			infos = append(infos, map[string]any{"targetId": p.id, "type": "page", "title": p.url, "url": p.url})
		}
		infos = append(infos, map[string]any{"targetId": "W1", "type": "service_worker", "url": "x"})
		return map[string]any{"targetInfos": infos}, ""
	case "Target.createTarget":
		p := b.addPage(params["url"].(string))
		return map[string]any{"targetId": p.id}, ""
	case "Target.attachToTarget":
		return map[string]any{"sessionId": "S-" + params["targetId"].(string)}, ""
	case "Target.closeTarget":
		id := params["targetId"].(string)
		for i, p := range b.pages {
			if p.id == id {
				b.pages = append(b.pages[:i], b.pages[i+1:]...)
				break
			}
		}
		return map[string]any{"success": true}, ""
	case "Page.navigate":
		u := params["url"].(string)
		if p := b.page(target); p != nil {
			p.url, p.title = u, titleOf(u)
		}
		if strings.Contains(u, "unreachable") {
			return map[string]any{"frameId": "F", "errorText": "net::ERR_NAME_NOT_RESOLVED"}, ""
		}
		return map[string]any{"frameId": "F"}, "Page.loadEventFired"
	case "Runtime.evaluate":
		p := b.page(target)
		var v any
		switch params["expression"] {
		case "document.title":
			v = p.title
		case "location.href":
			v = p.url
		default:
			v = "<html>" + p.url + "</html>"
		}
		return map[string]any{"result": map[string]any{"type": "string", "value": v}}, ""
	}
	return map[string]any{}, ""
}

func TestChromeOpenAndCloseTabs(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	b := newFakeBrowser(t, "chrome://newtab/")
	e := testEnv(t, f)
	// DevTools is reached at the guest's host: both fakes are on 127.0.0.1.
	_, port := b.hostPort(t)
	e.Chromium = port
	res, err := e.Setup(context.Background(), []Step{
		step("chrome_open_tabs", map[string]any{"urls_to_open": []any{"https://www.lonelyplanet.com", "https://unreachable.example", "https://www.tripadvisor.com"}}),
		step("chrome_close_tabs", map[string]any{"urls_to_close": []any{"https://tripadvisor.com/"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res[0].Warning, "ERR_NAME_NOT_RESOLVED") {
		t.Errorf("a page that does not load is a warning: %+v", res[0])
	}
	if diff := cmp.Diff([]string{"https://www.lonelyplanet.com", "https://unreachable.example"}, b.urls()); diff != "" {
		t.Errorf("tabs (-want +got):\n%s", diff)
	}
	if b.origin {
		t.Error("the client sent an Origin header; Chromium refuses those")
	}

	tabs, err := e.RunGetter(context.Background(), Getter{"type": "open_tabs_info"})
	if err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"title": "title of https://www.lonelyplanet.com", "url": "https://www.lonelyplanet.com"},
		map[string]any{"title": "title of https://unreachable.example", "url": "https://unreachable.example"},
	}
	if diff := cmp.Diff(want, tabs); diff != "" {
		t.Errorf("open_tabs_info (-want +got):\n%s", diff)
	}
}

func TestChromeConnectTimesOut(t *testing.T) {
	f := testutil.NewFakeGuest(t)
	e := testEnv(t, f)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	e.Chromium = port
	e.Timeouts.CDPConnect = 50e6
	if _, err := e.Setup(context.Background(), []Step{step("chrome_open_tabs", map[string]any{"urls_to_open": []any{"https://a.com"}})}); err == nil {
		t.Error("no devtools, yet the step succeeded")
	}
	// The getter returns [] when nothing answers, as OSWorld's does.
	e.Timeouts.Launch = 1e9
	tabs, err := getOpenTabsInfo(context.Background(), e, Getter{"type": "open_tabs_info"})
	if err != nil || len(tabs.([]any)) != 0 {
		t.Errorf("tabs = %v, %v", tabs, err)
	}
}
