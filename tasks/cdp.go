package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/drums-dev/drums/internal/ctxtime"
)

// cdp is a Chrome DevTools protocol connection to the browser target, in
// flat-session mode: commands for a page carry that page's sessionId. It
// stands in for Playwright's connect_over_cdp, which OSWorld's chrome setup
// steps and getters use.
type cdp struct {
	ws      *wsConn
	mu      sync.Mutex
	next    int64
	pending map[int64]chan cdpMsg
	waiters map[*cdpWaiter]struct{}
	done    chan struct{}
	err     error // why the reader stopped; set before done is closed
}

type cdpMsg struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *cdpError       `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type cdpWaiter struct {
	session, method string
	ch              chan cdpMsg
}

// cdpHTTPTimeout bounds the /json/version probe; DevTools answers it at once
// when the browser is up.
const cdpHTTPTimeout = 5 * time.Second

// dialCDP connects to the DevTools endpoint at host:port once.
func dialCDP(ctx context.Context, host string, port int) (*cdp, error) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	hctx, cancel := context.WithTimeout(ctx, cdpHTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, "http://"+hp+"/json/version", nil)
	if err != nil {
		return nil, fmt.Errorf("build devtools probe: %w", err)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
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
	wctx, cancel2 := context.WithTimeout(ctx, cdpHTTPTimeout)
	defer cancel2()
	ws, err := dialWS(wctx, u.String())
	if err != nil {
		return nil, err
	}
	c := &cdp{ws: ws, pending: map[int64]chan cdpMsg{}, waiters: map[*cdpWaiter]struct{}{}, done: make(chan struct{})}
	go c.read()
	return c, nil
}

// connectCDP polls dialCDP until it works or within is over: Chromium takes
// a moment after its launch to open the port, and socat forwards 9222 only
// once Chromium listens on 1337.
func connectCDP(ctx context.Context, host string, port int, within, pause time.Duration) (*cdp, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := dialCDP(ctx, host, port)
		if err == nil {
			return c, nil
		}
		if time.Now().Add(pause).After(deadline) {
			return nil, fmt.Errorf("connect to chromium devtools within %s: %w", within, err)
		}
		if serr := ctxtime.Sleep(ctx, pause); serr != nil {
			return nil, errors.Join(err, serr)
		}
	}
}

func (c *cdp) read() {
	for {
		b, err := c.ws.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.err = fmt.Errorf("devtools connection: %w", err)
			c.mu.Unlock()
			close(c.done)
			return
		}
		var m cdpMsg
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != 0 {
			if ch, ok := c.pending[m.ID]; ok {
				delete(c.pending, m.ID)
				ch <- m
			}
		} else {
			for w := range c.waiters {
				if w.method == m.Method && w.session == m.SessionID {
					select {
					case w.ch <- m:
					default:
					}
				}
			}
		}
		c.mu.Unlock()
	}
}

// Close ends the connection; the tabs stay open.
func (c *cdp) Close() { _ = c.ws.Close(); <-c.done }

// call sends a command (to the browser when session is "") and decodes its
// result into out (unless nil).
func (c *cdp) call(ctx context.Context, session, method string, params, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan cdpMsg, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = struct{}{}
	}
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if err := c.ws.WriteText(b); err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s (%d)", method, m.Error.Message, m.Error.Code)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("decode %s result: %w", method, err)
			}
		}
		return nil
	case <-c.done:
		return fmt.Errorf("%s: %w", method, c.err)
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// await registers interest in an event before the command that causes it
// is sent; the returned function unregisters.
func (c *cdp) await(session, method string) (<-chan cdpMsg, func()) {
	w := &cdpWaiter{session: session, method: method, ch: make(chan cdpMsg, 1)}
	c.mu.Lock()
	c.waiters[w] = struct{}{}
	c.mu.Unlock()
	return w.ch, func() {
		c.mu.Lock()
		delete(c.waiters, w)
		c.mu.Unlock()
	}
}

// target is one entry of Target.getTargets.
type target struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	URL      string `json:"url"`
}

// pages lists the open tabs (targets of type "page"), in the order Chromium
// reports them (Playwright's context.pages follows the same discovery).
func (c *cdp) pages(ctx context.Context) ([]target, error) {
	var r struct {
		TargetInfos []target `json:"targetInfos"`
	}
	if err := c.call(ctx, "", "Target.getTargets", nil, &r); err != nil {
		return nil, err
	}
	var out []target
	for _, t := range r.TargetInfos {
		if t.Type == "page" {
			out = append(out, t)
		}
	}
	return out, nil
}

// startupPages waits (up to within) for the browser's first tab and lists
// the tabs. DevTools answers before Chromium has opened its startup window;
// a tab created in that moment is lost when the window comes. OSWorld never
// meets this: its first connection attempt fails and it sleeps 5 s.
func (c *cdp) startupPages(ctx context.Context, within time.Duration) ([]target, error) {
	deadline := time.Now().Add(within)
	for {
		p, err := c.pages(ctx)
		if err != nil || len(p) > 0 || time.Now().After(deadline) {
			return p, err
		}
		if err := ctxtime.Sleep(ctx, startupPoll); err != nil {
			return nil, err
		}
	}
}

// startupPoll is how often startupPages looks for the first tab; DevTools
// offers no event for it before a client attaches.
const startupPoll = 100 * time.Millisecond

// attach opens a flat session on a page.
func (c *cdp) attach(ctx context.Context, targetID string) (string, error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, &r)
	return r.SessionID, err
}

func (c *cdp) detach(ctx context.Context, session string) {
	_ = c.call(ctx, "", "Target.detachFromTarget", map[string]any{"sessionId": session}, nil)
}

// newPage is Playwright's context.new_page(): a blank tab in the default
// browser context, attached.
func (c *cdp) newPage(ctx context.Context) (targetID, session string, err error) {
	var r struct {
		TargetID string `json:"targetId"`
	}
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &r); err != nil {
		return "", "", err
	}
	s, err := c.attach(ctx, r.TargetID)
	if err != nil {
		return r.TargetID, "", err
	}
	return r.TargetID, s, nil
}

// errNavigation is a page.goto failure: the page stays open, OSWorld logs it.
var errNavigation = errors.New("navigation failed")

// goTo is page.goto(url) waiting for the load event: it fails at once on a
// network error and with a timeout when the load event does not come.
func (c *cdp) goTo(ctx context.Context, session, rawURL string, timeout time.Duration) error {
	if err := c.call(ctx, session, "Page.enable", nil, nil); err != nil {
		return err
	}
	loaded, stop := c.await(session, "Page.loadEventFired")
	defer stop()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := c.call(ctx, session, "Page.navigate", map[string]any{"url": rawURL}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("%w: %s: %s", errNavigation, rawURL, nav.ErrorText)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-loaded:
		return nil
	case <-t.C:
		return fmt.Errorf("%w: %s: no load event within %s", errNavigation, rawURL, timeout)
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// eval runs a JavaScript expression in a page and returns its value.
func (c *cdp) eval(ctx context.Context, session, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return err
	}
	if r.Exception != nil {
		return fmt.Errorf("evaluate %q: %s", expr, r.Exception.Text)
	}
	if len(r.Result.Value) == 0 {
		return fmt.Errorf("evaluate %q: no value", expr)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// pageTitle is page.title(): document.title, "" when the page has none.
func (c *cdp) pageTitle(ctx context.Context, targetID string) (string, error) {
	s, err := c.attach(ctx, targetID)
	if err != nil {
		return "", err
	}
	defer c.detach(ctx, s)
	var title string
	err = c.eval(ctx, s, "document.title", &title)
	return title, err
}

// pageContentJS is page.content(): the doctype and the serialised document.
const pageContentJS = `(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML`

func (c *cdp) closeTarget(ctx context.Context, targetID string) error {
	return c.call(ctx, "", "Target.closeTarget", map[string]any{"targetId": targetID}, nil)
}
