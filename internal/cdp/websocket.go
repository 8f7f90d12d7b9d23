package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/coder/websocket"
)

// httpTimeout bounds the /json/version probe and the WebSocket handshake;
// DevTools answers both at once when the browser is up.
const httpTimeout = 5 * time.Second

// maxMessage bounds one DevTools message: a page's serialised document
// (page.content()) or a screenshot comes as one, and a page can be tens of
// MiB.
const maxMessage = 64 << 20

// direct is the probe's and the WebSocket's HTTP client: no proxy from the
// environment (the browser is on a desktop of this host), no redirects
// followed (the probe's answer is the browser's own).
var direct = &http.Client{Transport: &http.Transport{}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Dial connects to the DevTools endpoint at host:port once: the browser's
// WebSocket URL from /json/version, reached where the probe was.
func Dial(ctx context.Context, host string, port int) (*Conn, error) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	hctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, "http://"+hp+"/json/version", nil)
	if err != nil {
		return nil, fmt.Errorf("build devtools probe: %w", err)
	}
	resp, err := direct.Do(req)
	if err != nil {
		return nil, fmt.Errorf("devtools at %s: %w", hp, err)
	}
	defer resp.Body.Close()
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("devtools at %s: /json/version answered %s", hp, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil || v.WS == "" {
		return nil, fmt.Errorf("devtools at %s: no webSocketDebuggerUrl: %v", hp, err)
	}
	u, err := url.Parse(v.WS)
	if err != nil {
		return nil, fmt.Errorf("devtools at %s: bad websocket url %q: %w", hp, v.WS, err)
	}
	// Chromium names the host it was asked as; through socat that may be
	// localhost inside the desktop. Reach it where the probe did.
	u.Host = hp
	wctx, cancel2 := context.WithTimeout(ctx, httpTimeout)
	defer cancel2()
	// Chromium's DevTools takes no compression (the default).
	ws, _, err := websocket.Dial(wctx, u.String(), &websocket.DialOptions{HTTPClient: direct})
	if err != nil {
		return nil, fmt.Errorf("websocket %s: %w", u.Redacted(), err)
	}
	ws.SetReadLimit(maxMessage)
	return New(&wsTransport{ws: ws}), nil
}

// wsTransport is a DevTools WebSocket: one text message per DevTools
// message.
type wsTransport struct{ ws *websocket.Conn }

func (t *wsTransport) ReadMessage() ([]byte, error) {
	_, b, err := t.ws.Read(context.Background())
	return b, err
}

func (t *wsTransport) WriteMessage(msg []byte) error {
	return t.ws.Write(context.Background(), websocket.MessageText, msg)
}

// Close sends a normal closure; the library bounds the wait for the
// browser's answer.
func (t *wsTransport) Close() error { return t.ws.Close(websocket.StatusNormalClosure, "") }
