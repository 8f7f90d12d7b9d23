// Package cdp is a client of the Chrome DevTools protocol in flat-session
// mode (commands for a page carry its sessionId): a Conn multiplexes
// commands and events over a Transport, which is a DevTools WebSocket
// (Dial, on github.com/coder/websocket) or Chromium's
// --remote-debugging-pipe (Pipe), and Target and Page helpers do what
// Playwright's connect_over_cdp does for OSWorld. It knows nothing of tasks
// or tests.
package cdp
