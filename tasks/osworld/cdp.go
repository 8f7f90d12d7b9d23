package osworld

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/drums-dev/drums/internal/cdp"
	"github.com/drums-dev/drums/internal/ctxtime"
)

// OSWorld's chrome setup steps and getters reach Chromium through
// Playwright's connect_over_cdp; internal/cdp is that connection, and this
// file holds what OSWorld's use of it adds: polling for the port, and the
// startup tab.

// connectCDP polls cdp.Dial until it works or within is over: Chromium takes
// a moment after its launch to open the port, and socat forwards 9222 only
// once Chromium listens on 1337.
func connectCDP(ctx context.Context, host string, port int, within, pause time.Duration) (*cdp.Conn, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := cdp.Dial(ctx, host, port)
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

// startupPages waits (up to within) for the browser's first tab and lists
// the tabs. DevTools answers before Chromium has opened its startup window;
// a tab created in that moment is lost when the window comes. OSWorld never
// meets this: its first connection attempt fails and it sleeps 5 s.
func startupPages(ctx context.Context, c *cdp.Conn, within time.Duration) ([]cdp.Target, error) {
	deadline := time.Now().Add(within)
	for {
		p, err := c.Pages(ctx)
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
