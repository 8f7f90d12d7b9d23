package rfb

import (
	"context"
	"errors"
	"fmt"
	"image"
	"log/slog"
	"sync"
	"time"
)

// Screen is the desktop's screen as the live view follows it (the real one
// is internal/x11's Watcher; tests use a fake). One goroutine uses it.
type Screen interface {
	// Wait returns once the screen may have changed since the last
	// Update, at once before the first.
	Wait(ctx context.Context) error
	// Update brings fb (a copy of the screen, or nil) up to date and
	// returns it, or a new image when the screen's size changed, with
	// the rectangles that changed; the first Update returns the whole
	// screen.
	Update(ctx context.Context, fb *image.RGBA) (*image.RGBA, []image.Rectangle, error)
	// Close releases the screen.
	Close() error
}

// Input is where a viewer's events go when takeover is on (internal/x11's
// Display, over XTEST).
type Input interface {
	MoveTo(ctx context.Context, x, y int) error
	Button(ctx context.Context, n int, down bool) error
	Key(ctx context.Context, keysym uint32, down bool) error
}

// Options configure a Server.
type Options struct {
	// Open opens the screen; it is called when the first viewer has
	// completed the handshake, and the screen is closed again when the
	// last viewer leaves. Required.
	Open func() (Screen, error)
	// Input, when set, receives the viewers' pointer and key events;
	// nil makes the view read-only: the events are read and dropped.
	Input Input
	// Name is the desktop name sent to viewers (noVNC shows it as the
	// page's title).
	Name string
	// Released is called after the last viewer left and the screen was
	// closed (guestd gives memory back then); may be nil.
	Released func()
	// Logger gets one line per viewer joining and leaving; default
	// slog.Default().
	Logger *slog.Logger
	// WriteTimeout drops a viewer that does not take an update within it
	// (a frozen tab, a peer gone without a word), which would keep the
	// screen open for ever; default a minute. It must stay above what a
	// slow link takes to carry a whole Raw frame: 8 MB at 1920x1080, 7 s
	// at 10 Mbit/s. It applies to connections that have deadlines.
	WriteTimeout time.Duration
}

// Server serves viewers over byte streams (Serve). Nothing runs while no
// viewer is connected: no screen is open and no goroutine is left.
type Server struct {
	opts         Options
	log          *slog.Logger
	writeTimeout time.Duration

	mu      sync.Mutex // guards the fields below
	watch   *watch     // nil while nobody watches
	viewers int
	closed  bool
	conns   map[*viewer]struct{}
}

// NewServer returns a Server; it opens nothing until a viewer arrives.
func NewServer(opts Options) (*Server, error) {
	if opts.Open == nil {
		return nil, errors.New("new rfb server: Open is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	wt := opts.WriteTimeout
	if wt <= 0 {
		wt = defaultWriteTimeout
	}
	return &Server{opts: opts, log: log, writeTimeout: wt, conns: map[*viewer]struct{}{}}, nil
}

// Viewers is how many viewers are connected.
func (s *Server) Viewers() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.viewers
}

// Close ends every viewer's connection; Serve returns ErrClosed from then
// on.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*viewer, 0, len(s.conns))
	for v := range s.conns {
		conns = append(conns, v)
	}
	s.mu.Unlock()
	for _, v := range conns {
		v.stop(ErrClosed)
	}
	return nil
}

// watch is the screen while somebody watches it: the copy of the screen
// every viewer encodes from, and the goroutine that keeps it up to date,
// but only while a viewer waits for an update (otherwise what changes
// accumulates in the X server, at no cost).
type watch struct {
	screen Screen
	cancel context.CancelFunc
	done   chan struct{}
	// want is poked (it holds one token) by a viewer that waits for a
	// change.
	want chan struct{}
	// ready is closed once the first Update is in fb, or failed (err).
	ready chan struct{}
	err   error

	fbMu sync.RWMutex // guards fb; held for writing during Update
	fb   *image.RGBA

	mu      sync.Mutex // guards members
	members map[*viewer]struct{}
}

// join adds v to the watch, opening the screen if v is the first viewer,
// and waits until the copy of the screen holds a frame.
func (s *Server) join(ctx context.Context, v *viewer) (*watch, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	w := s.watch
	if w == nil {
		scr, err := s.opts.Open()
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("open the screen: %w", err)
		}
		lctx, cancel := context.WithCancel(context.Background())
		w = &watch{screen: scr, cancel: cancel, done: make(chan struct{}), want: make(chan struct{}, 1),
			ready: make(chan struct{}), members: map[*viewer]struct{}{}}
		s.watch = w
		w.poke()
		go s.follow(lctx, w)
	}
	s.viewers++
	w.mu.Lock()
	w.members[v] = struct{}{}
	w.mu.Unlock()
	s.mu.Unlock()
	select {
	case <-w.ready:
	case <-ctx.Done():
		s.leave(w, v)
		return nil, ctx.Err()
	}
	if w.err != nil {
		s.leave(w, v)
		return nil, w.err
	}
	return w, nil
}

// leave removes v; the last viewer out stops the watch and closes the
// screen.
func (s *Server) leave(w *watch, v *viewer) {
	s.mu.Lock()
	s.viewers--
	w.mu.Lock()
	delete(w.members, v)
	last := len(w.members) == 0
	w.mu.Unlock()
	if last && s.watch == w {
		s.watch = nil
	}
	s.mu.Unlock()
	if !last {
		return
	}
	w.cancel()
	<-w.done
	w.fbMu.Lock()
	w.fb = nil
	w.fbMu.Unlock()
	if err := w.screen.Close(); err != nil {
		s.log.Warn("close the live view's screen", "error", err)
	}
	if s.opts.Released != nil {
		s.opts.Released()
	}
}

// poke tells the follow loop that a viewer waits for a change.
func (w *watch) poke() {
	select {
	case w.want <- struct{}{}:
	default:
	}
}

// follow keeps w.fb up to date while viewers wait for changes, until ctx
// ends (the last viewer left) or the screen fails (every viewer is
// disconnected then; the next one opens the screen anew).
func (s *Server) follow(ctx context.Context, w *watch) {
	defer close(w.done)
	first := true
	fail := func(err error) {
		if first {
			w.err = err
			close(w.ready)
		}
		s.mu.Lock()
		if s.watch == w {
			s.watch = nil
		}
		s.mu.Unlock()
		w.mu.Lock()
		for v := range w.members {
			v.stop(fmt.Errorf("follow the screen: %w", err))
		}
		w.mu.Unlock()
	}
	for {
		select {
		case <-w.want:
		case <-ctx.Done():
			return
		}
		if err := w.screen.Wait(ctx); err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			return
		}
		w.fbMu.Lock()
		fb, rects, err := w.screen.Update(ctx, w.fb)
		resized := w.fb != nil && fb != nil && fb.Rect != w.fb.Rect
		w.fb = fb
		w.fbMu.Unlock()
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			return
		}
		if first {
			first = false
			close(w.ready)
		}
		if len(rects) == 0 && !resized {
			// Woken for nothing (the pointer poll, a stale event): the
			// viewer that asked still waits.
			w.poke()
			continue
		}
		w.mu.Lock()
		for v := range w.members {
			v.changed(rects, resized)
		}
		w.mu.Unlock()
	}
}
