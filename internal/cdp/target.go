package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Target is one entry of Target.getTargets.
type Target struct {
	TargetID string `json:"targetId"`
	Type     string `json:"type"`
	Title    string `json:"title"`
	URL      string `json:"url"`
}

// Pages lists the open tabs (targets of type "page"), in the order Chromium
// reports them (Playwright's context.pages follows the same discovery).
func (c *Conn) Pages(ctx context.Context) ([]Target, error) {
	var r struct {
		TargetInfos []Target `json:"targetInfos"`
	}
	if err := c.Call(ctx, "", "Target.getTargets", nil, &r); err != nil {
		return nil, err
	}
	var out []Target
	for _, t := range r.TargetInfos {
		if t.Type == "page" {
			out = append(out, t)
		}
	}
	return out, nil
}

// Attach opens a flat session on a page.
func (c *Conn) Attach(ctx context.Context, targetID string) (string, error) {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	err := c.Call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, &r)
	return r.SessionID, err
}

// Detach ends a flat session, errors ignored (the page may be gone).
func (c *Conn) Detach(ctx context.Context, session string) {
	_ = c.Call(ctx, "", "Target.detachFromTarget", map[string]any{"sessionId": session}, nil)
}

// NewPage is Playwright's context.new_page(): a blank tab in the default
// browser context, attached.
func (c *Conn) NewPage(ctx context.Context) (targetID, session string, err error) {
	var r struct {
		TargetID string `json:"targetId"`
	}
	if err := c.Call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &r); err != nil {
		return "", "", err
	}
	s, err := c.Attach(ctx, r.TargetID)
	if err != nil {
		return r.TargetID, "", err
	}
	return r.TargetID, s, nil
}

// NavigationError is a page.goto failure: the page stays open, OSWorld logs
// it. Either Chromium reported a network error (ErrorText) or the load
// event did not come within Timeout.
type NavigationError struct {
	URL string
	// ErrorText is Chromium's reason for a network error
	// ("net::ERR_NAME_NOT_RESOLVED"); "" when the load timed out.
	ErrorText string
	// Timeout is how long the load event was waited for, when it did not
	// come.
	Timeout time.Duration
}

func (e *NavigationError) Error() string {
	if e.ErrorText != "" {
		return fmt.Sprintf("navigation failed: %s: %s", e.URL, e.ErrorText)
	}
	return fmt.Sprintf("navigation failed: %s: no load event within %s", e.URL, e.Timeout)
}

// Navigate is page.goto(url) waiting for the load event: it fails at once on a
// network error and with a timeout when the load event does not come, both
// a *NavigationError.
func (c *Conn) Navigate(ctx context.Context, session, rawURL string, timeout time.Duration) error {
	if err := c.Call(ctx, session, "Page.enable", nil, nil); err != nil {
		return err
	}
	loaded, stop := c.Await(session, "Page.loadEventFired")
	defer stop()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := c.Call(ctx, session, "Page.navigate", map[string]any{"url": rawURL}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return &NavigationError{URL: rawURL, ErrorText: nav.ErrorText}
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-loaded:
		return nil
	case <-t.C:
		return &NavigationError{URL: rawURL, Timeout: timeout}
	case <-c.done:
		return c.Err()
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Eval runs a JavaScript expression in a page and returns its value.
func (c *Conn) Eval(ctx context.Context, session, expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	if err := c.Call(ctx, session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
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

// Title is page.title(): document.title, "" when the page has none.
func (c *Conn) Title(ctx context.Context, targetID string) (string, error) {
	s, err := c.Attach(ctx, targetID)
	if err != nil {
		return "", err
	}
	defer c.Detach(ctx, s)
	var title string
	err = c.Eval(ctx, s, "document.title", &title)
	return title, err
}

// PageContentJS is page.content(): the doctype and the serialised document.
const PageContentJS = `(document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML`

// CloseTarget closes a tab.
func (c *Conn) CloseTarget(ctx context.Context, targetID string) error {
	return c.Call(ctx, "", "Target.closeTarget", map[string]any{"targetId": targetID}, nil)
}
