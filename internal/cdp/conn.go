package cdp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
)

// Transport carries whole DevTools messages, one JSON object each.
// WriteMessage may be called from several goroutines at once; ReadMessage
// from one.
type Transport interface {
	ReadMessage() ([]byte, error)
	WriteMessage(msg []byte) error
	Close() error
}

// Conn is a DevTools connection to the browser target: commands to the
// browser (session "") or to a page's flat session, and the events they
// cause.
type Conn struct {
	t       Transport
	mu      sync.Mutex
	next    int64
	pending map[int64]chan Msg
	waiters map[*waiter]struct{}
	done    chan struct{}
	err     error // why the reader stopped; set before done is closed
}

// Msg is one DevTools message: an answer (ID set) or an event (Method set).
type Msg struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *Error          `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// Error is a command's error answer.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

type waiter struct {
	session, method string
	ch              chan Msg
}

// New starts reading t; Close ends both.
func New(t Transport) *Conn {
	c := &Conn{t: t, pending: map[int64]chan Msg{}, waiters: map[*waiter]struct{}{}, done: make(chan struct{})}
	go c.read()
	return c
}

func (c *Conn) read() {
	for {
		b, err := c.t.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.err = fmt.Errorf("devtools connection: %w", err)
			c.mu.Unlock()
			close(c.done)
			return
		}
		var m Msg
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

// Close ends the connection and waits for its reader; the tabs stay open.
func (c *Conn) Close() { _ = c.t.Close(); <-c.done }

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it has not).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Call sends a command (to the browser when session is "") and decodes its
// result into out (unless nil). A DevTools error answer is an *Error,
// wrapped.
func (c *Conn) Call(ctx context.Context, session, method string, params, out any) error {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan Msg, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	// The reader removes an answered call; this removes one that failed or
	// was given up.
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
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
	if err := c.t.WriteMessage(b); err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %w", method, m.Error)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				return fmt.Errorf("decode %s result: %w", method, err)
			}
		}
		return nil
	case <-c.done:
		return fmt.Errorf("%s: %w", method, c.Err())
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Await registers interest in an event of a session before the command
// that causes it is sent; the returned function unregisters.
func (c *Conn) Await(session, method string) (<-chan Msg, func()) {
	w := &waiter{session: session, method: method, ch: make(chan Msg, 1)}
	c.mu.Lock()
	c.waiters[w] = struct{}{}
	c.mu.Unlock()
	return w.ch, func() {
		c.mu.Lock()
		delete(c.waiters, w)
		c.mu.Unlock()
	}
}
