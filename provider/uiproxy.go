package provider

import (
	"crypto/rand"
	"crypto/subtle"
	"io"
	"net/http"
	"sync"

	"github.com/drums-dev/drums/provider/client"
)

// UIProxy is drums ui: the daemon's page for a browser on this machine,
// its requests passed through a client to the daemon (its unix socket, or
// its TCP listener with the bearer token the client adds). Anyone on the
// machine can reach a loopback port, so the proxy answers only requests
// with its cookie, which the one-time login URL hands out, and passes on
// only reads (GET, HEAD): the page never changes anything.
type UIProxy struct {
	c    *client.Client
	auth *cookieAuth

	mu   sync.Mutex
	code string // "" once used
}

// NewUIProxy serves the page from the daemon c talks to on a listener of
// this port.
func NewUIProxy(c *client.Client, port string) *UIProxy {
	return &UIProxy{c: c, auth: newCookieAuth(port), code: rand.Text()}
}

// LoginPath is the path, with the one-time code, to open first; it
// answers once.
func (p *UIProxy) LoginPath() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return uiLoginPath + "?code=" + p.code
}

// headers are what passes between browser and daemon: what the page's
// requests and answers need, nothing that authenticates.
var (
	requestHeaders  = []string{"Accept", "If-None-Match", "If-Modified-Since", "Range"}
	responseHeaders = []string{"Content-Type", "Content-Length", "Cache-Control", "ETag", "Last-Modified",
		"Content-Security-Policy", "X-Content-Type-Options", "Location"}
)

func (p *UIProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == uiLoginPath {
		p.login(w, r)
		return
	}
	if !p.auth.valid(r) {
		http.Error(w, "drums ui: open the login URL drums ui printed (it works once); a new drums ui prints a new one", http.StatusUnauthorized)
		return
	}
	h := http.Header{}
	for _, k := range requestHeaders {
		if v := r.Header.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	resp, err := p.c.Forward(r.Context(), r.Method, r.URL.RequestURI(), h)
	if err != nil {
		http.Error(w, "drums ui: the daemon did not answer: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for _, k := range responseHeaders {
		if v := resp.Header.Values(k); len(v) > 0 {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// login exchanges the one-time code for the cookie and sends the browser
// to the page.
func (p *UIProxy) login(w http.ResponseWriter, r *http.Request) {
	got := r.URL.Query().Get("code")
	p.mu.Lock()
	ok := p.code != "" && subtle.ConstantTimeCompare([]byte(got), []byte(p.code)) == 1
	if ok {
		p.code = ""
	}
	p.mu.Unlock()
	if !ok && !p.auth.valid(r) {
		http.Error(w, "drums ui: this login URL was used already or is wrong; run drums ui again for a new one", http.StatusUnauthorized)
		return
	}
	p.auth.issue(w, r)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}
