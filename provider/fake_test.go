package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/drums-dev/drums/sessions"
)

// fakeEngine is the tier-0 stand-in for *sessions.Engine. A desktop's
// "upper layer" is a map of file names to contents: SaveUpper writes it to
// the snapshot directory as files, Create and Reset start from those files.
// Sessions outlive a Manager, so a second Manager over the same fake sees
// what Adopt would find after a daemon restart.
type fakeEngine struct {
	mu       sync.Mutex
	n        int
	live     map[string]*fakeSession
	known    map[string]bool // created or adopted by "this process"
	maxLive  int
	limit    int           // engine slots; 0 = unlimited
	delay    time.Duration // per Create
	failNext error         // returned by the next Create
	events   chan string   // "create ID", "reset ID", "remove ID"
	// hold, when set before the daemon starts, is called first by every
	// Create: a test blocks a start in it (a slow start in flight).
	hold func(sessions.Request)
}

type fakeSession struct {
	sess    sessions.Session
	snapDir string
	files   map[string]string
	ended   chan struct{} // its "init": closed when it dies, is reset or removed
}

// end closes s's ended channel once.
func (s *fakeSession) end() {
	select {
	case <-s.ended:
	default:
		close(s.ended)
	}
}

// sessionOf is the engine's session id in a desktop's API id.
func sessionOf(desktopID string) string {
	s, _, _ := strings.Cut(desktopID, ".")
	return s
}

var _ Engine = (*fakeEngine)(nil)

func newFakeEngine() *fakeEngine {
	return &fakeEngine{live: map[string]*fakeSession{}, known: map[string]bool{}, events: make(chan string, 1024)}
}

func (f *fakeEngine) event(s string) {
	select {
	case f.events <- s:
	default:
	}
}

func loadFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	if dir == "" {
		return files, nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = string(b)
	}
	return files, nil
}

func (f *fakeEngine) Create(ctx context.Context, req sessions.Request) (*sessions.Session, error) {
	if f.hold != nil {
		f.hold(req)
	}
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	files, err := loadFiles(req.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("fake create from %s: %w", req.Snapshot, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return nil, err
	}
	if f.limit > 0 && len(f.live) >= f.limit {
		return nil, fmt.Errorf("fake engine full: %w", sessions.ErrCapacity)
	}
	f.n++
	id := fmt.Sprintf("fake-%d", f.n)
	s := &fakeSession{
		sess: sessions.Session{ID: id, Address: fmt.Sprintf("10.99.%d.%d", f.n/250, f.n%250+2), GuestPort: 5000,
			Width: req.Width, Height: req.Height, Slot: f.n, Created: time.Now(), State: sessions.StateReady},
		snapDir: req.Snapshot,
		files:   files,
		ended:   make(chan struct{}),
	}
	f.live[id] = s
	f.known[id] = true
	f.maxLive = max(f.maxLive, len(f.live))
	f.event("create " + id)
	c := s.sess
	return &c, nil
}

func (f *fakeEngine) Get(id string) (*sessions.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.live[id]
	if s == nil {
		return nil, fmt.Errorf("fake session %s: %w", id, sessions.ErrNotFound)
	}
	c := s.sess
	return &c, nil
}

func (f *fakeEngine) List() []*sessions.Session {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*sessions.Session
	for id, s := range f.live {
		if f.known[id] {
			c := s.sess
			out = append(out, &c)
		}
	}
	return out
}

func (f *fakeEngine) Reset(ctx context.Context, id string) (*sessions.Session, error) {
	f.mu.Lock()
	s := f.live[id]
	f.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("fake reset %s: %w", id, sessions.ErrNotFound)
	}
	files, err := loadFiles(s.snapDir)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.files = files
	s.sess.State = sessions.StateReady
	s.end()
	s.ended = make(chan struct{})
	f.event("reset " + id)
	c := s.sess
	return &c, nil
}

func (f *fakeEngine) Remove(ctx context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.live[id]; ok {
		s.end()
		delete(f.live, id)
		f.event("remove " + id)
	}
	delete(f.known, id)
	return nil
}

func (f *fakeEngine) SaveUpper(ctx context.Context, id, dir string) error {
	f.mu.Lock()
	s := f.live[id]
	var files map[string]string
	if s != nil {
		files = make(map[string]string, len(s.files))
		for k, v := range s.files {
			files[k] = v
		}
	}
	f.mu.Unlock()
	if s == nil {
		return fmt.Errorf("fake save %s: %w", id, sessions.ErrNotFound)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// StartSpares: the fake keeps no spares.
func (f *fakeEngine) StartSpares() {}

// Adopt is what a new process finds: every live session becomes known.
func (f *fakeEngine) Adopt(ctx context.Context) ([]*sessions.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*sessions.Session
	for id, s := range f.live {
		f.known[id] = true
		c := s.sess
		out = append(out, &c)
	}
	return out, nil
}

func (f *fakeEngine) Sweep(ctx context.Context) (sessions.SweepReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id := range f.live {
		if !f.known[id] {
			delete(f.live, id)
			f.event("remove " + id)
		}
	}
	return sessions.SweepReport{}, nil
}

// fail marks a session failed, as the engine does when its init or an
// essential process dies.
func (f *fakeEngine) fail(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.live[sessionOf(id)]
	s.sess.State, s.sess.Reason = sessions.StateFailed, "Xvfb killed by SIGKILL"
	s.end()
}

func (f *fakeEngine) Ended(id string) (<-chan struct{}, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.live[id]
	if s == nil {
		return nil, fmt.Errorf("fake session %s: %w", id, sessions.ErrNotFound)
	}
	return s.ended, nil
}

// write is a desktop writing a file into its upper layer.
func (f *fakeEngine) write(id, name, content string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live[sessionOf(id)].files[name] = content
}

func (f *fakeEngine) has(id, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.live[sessionOf(id)]
	if s == nil {
		return false
	}
	_, ok := s.files[name]
	return ok
}

// forget makes the fake behave like a new process: nothing is known until
// Adopt. It simulates the daemon's death.
func (f *fakeEngine) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.known = map[string]bool{}
}

// inject adds a session the daemon never recorded (a crash mid-create).
func (f *fakeEngine) inject() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := fmt.Sprintf("fake-%d", f.n)
	f.live[id] = &fakeSession{sess: sessions.Session{ID: id, Address: "10.99.9.9", GuestPort: 5000, State: sessions.StateReady}, ended: make(chan struct{}),
		files: map[string]string{}}
	return id
}

func (f *fakeEngine) liveCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live)
}
