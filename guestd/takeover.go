package guestd

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// Input is where a live viewer's keyboard and mouse go (internal/x11's
// Display, over XTEST, as guestd's own actions).
type Input interface {
	MoveTo(ctx context.Context, x, y int) error
	Button(ctx context.Context, n int, down bool) error
	Key(ctx context.Context, keysym uint32, down bool) error
}

// Takeover is the live view's takeover switch: while on, the viewers'
// events reach the desktop; while off (view-only, the default) they are
// dropped here, and the live view's page opens view-only. guestd's own
// POST /live_view turns it on and off at run time (the daemon's takeover
// call): whoever reaches port 5000 can already drive the desktop, whereas
// a viewer of port 8006 must not be able to give itself the keyboard.
type Takeover struct {
	in Input
	on atomic.Bool
}

// NewTakeover passes events to in while on; on is the initial state
// (guestd --vnc-takeover).
func NewTakeover(in Input, on bool) *Takeover {
	t := &Takeover{in: in}
	t.on.Store(on)
	return t
}

// Set turns takeover on or off; viewers connected view-only keep their
// page's view_only until they reload it.
func (t *Takeover) Set(on bool) { t.on.Store(on) }

// On reports whether takeover is on.
func (t *Takeover) On() bool { return t.on.Load() }

// MoveTo passes a pointer motion on while takeover is on.
func (t *Takeover) MoveTo(ctx context.Context, x, y int) error {
	if !t.On() {
		return nil
	}
	return t.in.MoveTo(ctx, x, y)
}

// Button passes a button event on while takeover is on.
func (t *Takeover) Button(ctx context.Context, n int, down bool) error {
	if !t.On() {
		return nil
	}
	return t.in.Button(ctx, n, down)
}

// Key passes a key event on while takeover is on.
func (t *Takeover) Key(ctx context.Context, keysym uint32, down bool) error {
	if !t.On() {
		return nil
	}
	return t.in.Key(ctx, keysym, down)
}

// handleLiveView is POST /live_view, drums' own route (upstream has
// none): {"takeover": bool} sets the switch; the answer is the state,
// {"takeover": bool}. Without a live view it is a 404.
func (s *Server) handleLiveView(c echo.Context) error {
	if s.deps.Takeover == nil {
		return reply(ErrNotFound, "this guestd serves no live view (guestd --vnc-listen)")
	}
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	if v, ok := data["takeover"]; ok {
		on, isBool := v.(bool)
		if !isBool {
			return badInput("takeover must be true or false, not %v", v)
		}
		s.deps.Takeover.Set(on)
		s.log.Info("live view takeover", "on", on)
	}
	return jsonReply(c, http.StatusOK, map[string]any{"takeover": s.deps.Takeover.On()})
}
