package guestd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"golang.org/x/net/websocket"
)

// The live view: what OSWorld's docker provider publishes on a VM's port
// 8006, a noVNC page to watch the desktop in a browser (and, with
// takeover, drive it). guestd serves it on a listener of its own (guestd
// --vnc-listen): the desktop's own noVNC files (Debian's novnc package, in
// /usr/share/novnc) and, at /websockify, where noVNC connects by default,
// an RFB stream over a WebSocket (internal/rfb), which opens the screen
// only while somebody watches.
//
// Reachable where guestd is and only there: it listens in the desktop's
// network namespace like port 5000, and refuses, as guestd does, a Host
// that is a name (DNS rebinding). Unlike guestd it serves a page, so the
// WebSocket accepts the Origin of that page: its own (the Host it was
// asked under), or an allowed one (--allow-origin); a WebSocket is not
// bound by CORS, so any other page could otherwise open one and, with
// takeover, type into the desktop.

// Viewers serve one viewer's RFB stream (internal/rfb's Server).
type Viewers interface {
	Serve(ctx context.Context, rw io.ReadWriteCloser) error
}

// LiveOptions configure the live view.
type LiveOptions struct {
	// Web is noVNC's directory; default /usr/share/novnc.
	Web string
	// Takeover, when on, passes the viewers' keyboard and mouse to the
	// desktop; the page then does not open view-only. nil is view-only.
	Takeover *Takeover
}

// DefaultNoVNC is where Debian's novnc package puts noVNC.
const DefaultNoVNC = "/usr/share/novnc"

// Live is the live view's HTTP handler.
type Live struct {
	viewers Viewers
	opts    LiveOptions
	pages   requestFilter
	log     *slog.Logger
	files   http.Handler
	ws      websocket.Server
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewLive serves viewers; cfg gives the allowed origins and hosts and the
// logger.
func NewLive(cfg Config, opts LiveOptions, viewers Viewers) (*Live, error) {
	cfg = cfg.withDefaults()
	pages, err := newRequestFilter(cfg)
	if err != nil {
		return nil, fmt.Errorf("new live view: %w", err)
	}
	if opts.Web == "" {
		opts.Web = DefaultNoVNC
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Live{viewers: viewers, opts: opts, pages: pages, log: cfg.Logger.With("component", "live"),
		files: http.FileServer(http.Dir(opts.Web)), ctx: ctx, cancel: cancel}
	l.ws = websocket.Server{Handshake: chooseProtocol, Handler: l.serveViewer}
	return l, nil
}

// Close ends every viewer's connection.
func (l *Live) Close() error {
	l.cancel()
	return nil
}

func (l *Live) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !l.pages.hostAllowed(r.Host) {
		l.refuse(w, r, fmt.Sprintf("the live view serves IP addresses, localhost and allowed names only, against DNS rebinding: host %q is not allowed (guestd --allow-host)", r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		liveError(w, http.StatusMethodNotAllowed, "the live view answers GET and HEAD only")
		return
	}
	switch r.URL.Path {
	case "/":
		// noVNC's own page, told to connect at once, to fit the window
		// and, unless takeover is on, to send no input.
		q := "autoconnect=true&resize=scale&reconnect=true"
		if l.opts.Takeover == nil || !l.opts.Takeover.On() {
			q += "&view_only=true"
		}
		w.Header().Set("Cache-Control", "no-cache")
		http.Redirect(w, r, "vnc.html?"+q, http.StatusFound)
	case "/websockify":
		if !l.sameOrigin(r) {
			l.refuse(w, r, fmt.Sprintf("the live view's WebSocket serves its own page only: Origin %q is not allowed (guestd --allow-origin)",
				strings.Join(r.Header.Values("Origin"), ", ")))
			return
		}
		l.ws.ServeHTTP(w, r)
	default:
		if _, err := os.Stat(l.opts.Web); err != nil {
			liveError(w, http.StatusNotFound, fmt.Sprintf("noVNC is not installed in this desktop (%s: %v); the RFB WebSocket at /websockify still answers", l.opts.Web, err))
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		l.files.ServeHTTP(w, r)
	}
}

// sameOrigin reports whether r's Origin may open the WebSocket: none (not
// a browser), the page's own (scheme://Host), or an allowed one.
func (l *Live) sameOrigin(r *http.Request) bool {
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return true
	}
	if len(origins) > 1 || r.Host == "" {
		return false
	}
	o := strings.ToLower(origins[0])
	host := strings.ToLower(r.Host)
	return o == "http://"+host || o == "https://"+host || l.pages.origins[o]
}

func (l *Live) refuse(w http.ResponseWriter, r *http.Request, msg string) {
	l.log.Warn("refused a request a web page could have sent", "method", r.Method, "path", r.URL.Path,
		"origin", r.Header.Values("Origin"), "host", r.Host)
	liveError(w, http.StatusForbidden, msg)
}

// liveError is the live view's one error body: plain text.
func liveError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	fmt.Fprintln(w, msg)
}

// chooseProtocol answers websockify's "binary" subprotocol when the page
// asks for it (older noVNC pages do); noVNC 1.3 asks for none.
func chooseProtocol(cfg *websocket.Config, _ *http.Request) error {
	for _, p := range cfg.Protocol {
		if p == "binary" {
			cfg.Protocol = []string{"binary"}
			return nil
		}
	}
	cfg.Protocol = nil
	return nil
}

func (l *Live) serveViewer(ws *websocket.Conn) {
	ws.PayloadType = websocket.BinaryFrame
	remote := ws.Request().RemoteAddr
	l.log.Info("viewer connected", "remote", remote)
	if err := l.viewers.Serve(l.ctx, ws); err != nil {
		l.log.Warn("viewer disconnected", "remote", remote, "error", err)
		return
	}
	l.log.Info("viewer disconnected", "remote", remote)
}
