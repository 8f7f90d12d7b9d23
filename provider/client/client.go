package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/drums-dev/drums/internal/ctxtime"
)

// DefaultSocket is where `drums serve` listens unless told otherwise.
const DefaultSocket = "/run/drums/drums.sock"

// EnvSocket names the environment variable that points clients (the CLI,
// tasks, the Python provider) at the daemon's socket.
const EnvSocket = "DRUMS_SOCKET"

// maxErrorBody bounds how much of a non-JSON error answer is quoted back; it
// must stay above a typical proxy error page's first line.
const maxErrorBody = 4096

// Client talks to one provider daemon, or to many through a load balancer
// (a Kubernetes Service): then a lease at capacity is retried (LeaseRetry),
// and the calls on a desktop go to the daemon that holds it when the
// desktop names one (Desktop.Daemon). It is safe for concurrent use.
type Client struct {
	http  *http.Client
	base  string // "http://drums" for a unix socket, else the URL given
	token string
	retry Retry
	// viaURL: the client reaches the daemon at a URL, perhaps through a
	// load balancer; a unix socket's client talks to its daemon only.
	viaURL bool

	mu     sync.Mutex
	owners map[string]string // desktop id -> its daemon's URL (Desktop.Daemon)
}

// Retry bounds how a lease answered "capacity" is tried again: Attempts
// in all, waiting Initial, then twice as long each time up to Max, each
// wait with up to half of it added at random so that clients turned away
// together do not come back together. Each try opens a new connection,
// so a load balancer may send it to another daemon.
type Retry struct {
	Attempts     int
	Initial, Max time.Duration
}

// LeaseRetry is the retry of a client of an http(s) URL: about 20 s in
// all before "capacity" is final. A unix socket reaches one daemon, whose
// capacity answer is final (it already waited for its own pool's work).
var LeaseRetry = Retry{Attempts: 6, Initial: 500 * time.Millisecond, Max: 8 * time.Second}

// New returns a client for target: a unix socket path ("/run/drums/drums.sock"
// or "unix:///run/drums/drums.sock") or an http(s) URL of a daemon started
// with --listen. token, if not empty, is sent as a bearer token. An empty
// target means $DRUMS_SOCKET, else DefaultSocket.
func New(target, token string) (*Client, error) {
	if target == "" {
		target = DefaultSocketPath()
	}
	c := &Client{token: token}
	switch {
	case strings.HasPrefix(target, "http://"), strings.HasPrefix(target, "https://"):
		u, err := url.Parse(target)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("parse daemon url %q: %w", target, errors.Join(ErrBadRequest, err))
		}
		c.base = strings.TrimSuffix(target, "/")
		c.http = &http.Client{}
		c.retry, c.viaURL = LeaseRetry, true
	default:
		path := strings.TrimPrefix(target, "unix://")
		if path == "" {
			return nil, fmt.Errorf("daemon socket path is empty: %w", ErrBadRequest)
		}
		var d net.Dialer
		c.base = "http://drums"
		c.http = &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return d.DialContext(ctx, "unix", path)
			},
			// Keep connections: a warm-pool lease is a millisecond and a
			// new connection per call would be a visible part of it.
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return c, nil
}

// DefaultSocketPath is $DRUMS_SOCKET when set, else DefaultSocket.
func DefaultSocketPath() string {
	if s := os.Getenv(EnvSocket); s != "" {
		return s
	}
	return DefaultSocket
}

// SetLeaseRetry replaces the client's retry of leases at capacity
// (Attempts 1: none).
func (c *Client) SetLeaseRetry(r Retry) { c.retry = r }

// Lease asks for a ready desktop; it returns once the desktop answers. At
// capacity it tries again as the client's Retry says.
func (c *Client) Lease(ctx context.Context, req LeaseRequest) (Desktop, error) {
	wait := c.retry.Initial
	for attempt := 1; ; attempt++ {
		var d Desktop
		err := c.do(ctx, c.base, http.MethodPost, "/v1/desktops", req, &d)
		if err == nil {
			c.owned(d)
			return d, nil
		}
		if !errors.Is(err, ErrCapacity) || attempt >= c.retry.Attempts {
			return d, err
		}
		// A kept connection would reach the same daemon again.
		c.http.CloseIdleConnections()
		if serr := ctxtime.Sleep(ctx, wait+rand.N(wait/2+1)); serr != nil {
			return d, errors.Join(err, serr)
		}
		wait = min(2*wait, c.retry.Max)
	}
}

// owned records which daemon holds d, when d names one and the client
// reaches daemons by URL.
func (c *Client) owned(d Desktop) {
	if !c.viaURL || d.Daemon == "" || d.Daemon == c.base {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owners == nil {
		c.owners = map[string]string{}
	}
	c.owners[d.ID] = strings.TrimSuffix(d.Daemon, "/")
}

// at is the URL of the daemon that holds desktop id: the one it named, or
// the client's.
func (c *Client) at(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.owners[id]; ok {
		return b
	}
	return c.base
}

// desktopCall makes a call on desktop id at its daemon and records the
// daemon of the desktop answered (a revert may answer another id).
func (c *Client) desktopCall(ctx context.Context, method, id, suffix string, in any) (Desktop, error) {
	var d Desktop
	err := c.do(ctx, c.at(id), method, "/v1/desktops/"+url.PathEscape(id)+suffix, in, &d)
	if err == nil {
		c.owned(d)
	}
	return d, err
}

// Get returns one desktop.
func (c *Client) Get(ctx context.Context, id string) (Desktop, error) {
	return c.desktopCall(ctx, http.MethodGet, id, "", nil)
}

// List returns every desktop the daemon holds, warm ones included.
func (c *Client) List(ctx context.Context) ([]Desktop, error) {
	var ds []Desktop
	err := c.do(ctx, c.base, http.MethodGet, "/v1/desktops", nil, &ds)
	return ds, err
}

// Renew extends a lease; leaseSeconds 0 takes the daemon's default.
func (c *Client) Renew(ctx context.Context, id string, leaseSeconds int) (Desktop, error) {
	return c.desktopCall(ctx, http.MethodPost, id, "/renew", RenewRequest{LeaseSeconds: leaseSeconds})
}

// Revert returns a clean desktop (snapshot "") or one started from the named
// snapshot. The answer's ID may differ from id: use it from then on.
func (c *Client) Revert(ctx context.Context, id, snapshot string) (Desktop, error) {
	return c.desktopCall(ctx, http.MethodPost, id, "/revert", RevertRequest{Snapshot: snapshot})
}

// SaveSnapshot saves the desktop's files as the named snapshot, replacing
// one of that name. Processes are not saved.
func (c *Client) SaveSnapshot(ctx context.Context, id, name string) (Snapshot, error) {
	var s Snapshot
	err := c.do(ctx, c.at(id), http.MethodPost, "/v1/desktops/"+url.PathEscape(id)+"/snapshots", SnapshotRequest{Name: name}, &s)
	return s, err
}

// Takeover turns the live view's takeover on or off for a leased desktop:
// on, the viewers of its port 8006 drive its keyboard and mouse.
func (c *Client) Takeover(ctx context.Context, id string, enabled bool) (Desktop, error) {
	return c.desktopCall(ctx, http.MethodPost, id, "/takeover", TakeoverRequest{Enabled: enabled})
}

// Snapshots lists the saved snapshots.
func (c *Client) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var ss []Snapshot
	err := c.do(ctx, c.base, http.MethodGet, "/v1/snapshots", nil, &ss)
	return ss, err
}

// DeleteSnapshot removes a snapshot; deleting one that does not exist succeeds.
func (c *Client) DeleteSnapshot(ctx context.Context, name string) error {
	return c.do(ctx, c.base, http.MethodDelete, "/v1/snapshots/"+url.PathEscape(name), nil, nil)
}

// Release gives a desktop back; releasing one that is already gone succeeds.
func (c *Client) Release(ctx context.Context, id string) error {
	if err := c.do(ctx, c.at(id), http.MethodDelete, "/v1/desktops/"+url.PathEscape(id), nil, nil); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.owners, id)
	c.mu.Unlock()
	return nil
}

// Health reports the daemon's status and desktop counts.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.do(ctx, c.base, http.MethodGet, "/v1/health", nil, &h)
	return h, err
}

// Forward sends a request for path (with its query) to the daemon, with
// the token, and returns the answer as it is: drums ui passes the page's
// requests on this way.
func (c *Client) Forward(ctx context.Context, method, path string, header http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	maps.Copy(req.Header, header)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp, nil
}

// Close drops idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// do sends one request to the daemon at base.
func (c *Client) do(ctx context.Context, base, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return fmt.Errorf("build %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode answer of %s %s: %w", method, path, err)
	}
	return nil
}

// decodeError turns an error answer into *Error, also when a proxy in
// between answered with something that is not the daemon's JSON.
func decodeError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var eb ErrorBody
	if json.Unmarshal(raw, &eb) == nil && eb.Error.Code != "" {
		return &Error{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	code := CodeInternal
	switch {
	case resp.StatusCode == http.StatusNotFound:
		code = CodeNotFound
	case resp.StatusCode == http.StatusUnauthorized:
		code = CodeAuth
	case resp.StatusCode < 500:
		code = CodeBadRequest
	}
	msg := strings.TrimSpace(string(raw))
	if msg == "" {
		msg = resp.Status
	}
	return &Error{Status: resp.StatusCode, Code: code, Message: msg}
}
