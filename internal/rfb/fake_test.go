package rfb

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"sync"
)

// world is a fake desktop: a screen image and the screens open on it (the
// fake of internal/x11's Watcher), counting opens and closes.
type world struct {
	mu      sync.Mutex
	img     *image.RGBA
	open    map[*fakeScreen]bool
	opens   int
	closes  int
	openErr error
	// waiting gets a token each time a screen's Wait blocks.
	waiting chan struct{}
}

func newWorld(w, h int) *world {
	wd := &world{img: image.NewRGBA(image.Rect(0, 0, w, h)), open: map[*fakeScreen]bool{}, waiting: make(chan struct{}, 16)}
	draw.Draw(wd.img, wd.img.Rect, image.NewUniform(color.RGBA{10, 20, 30, 255}), image.Point{}, draw.Src)
	return wd
}

func (wd *world) Open() (Screen, error) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	if wd.openErr != nil {
		return nil, wd.openErr
	}
	s := &fakeScreen{wd: wd, changed: make(chan struct{}, 1)}
	wd.open[s] = true
	wd.opens++
	return s, nil
}

// fill paints r with c and reports it changed to every open screen.
func (wd *world) fill(r image.Rectangle, c color.RGBA) {
	wd.mu.Lock()
	draw.Draw(wd.img, r, image.NewUniform(c), image.Point{}, draw.Src)
	for s := range wd.open {
		s.pending = append(s.pending, r)
		s.signal()
	}
	wd.mu.Unlock()
}

// resize replaces the screen by a w x h one.
func (wd *world) resize(w, h int) {
	wd.mu.Lock()
	wd.img = image.NewRGBA(image.Rect(0, 0, w, h))
	for s := range wd.open {
		s.signal()
	}
	wd.mu.Unlock()
}

func (wd *world) counts() (opens, closes, open int) {
	wd.mu.Lock()
	defer wd.mu.Unlock()
	return wd.opens, wd.closes, len(wd.open)
}

type fakeScreen struct {
	wd      *world
	changed chan struct{}
	started bool
	pending []image.Rectangle // guarded by wd.mu
}

func (s *fakeScreen) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *fakeScreen) Wait(ctx context.Context) error {
	if !s.started {
		return nil
	}
	select {
	case s.wd.waiting <- struct{}{}:
	default:
	}
	select {
	case <-s.changed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *fakeScreen) Update(_ context.Context, fb *image.RGBA) (*image.RGBA, []image.Rectangle, error) {
	s.wd.mu.Lock()
	defer s.wd.mu.Unlock()
	src := s.wd.img
	var rects []image.Rectangle
	if fb == nil || fb.Rect != src.Rect || !s.started {
		fb = image.NewRGBA(src.Rect)
		rects = []image.Rectangle{src.Rect}
	} else {
		rects = s.pending
	}
	s.pending = nil
	s.started = true
	for _, r := range rects {
		draw.Draw(fb, r, src, r.Min, draw.Src)
	}
	return fb, rects, nil
}

func (s *fakeScreen) Close() error {
	s.wd.mu.Lock()
	defer s.wd.mu.Unlock()
	if !s.wd.open[s] {
		return fmt.Errorf("fake screen closed twice")
	}
	delete(s.wd.open, s)
	s.wd.closes++
	return nil
}

// input records the events takeover passes on.
type input struct {
	mu     sync.Mutex
	events []string
	got    chan struct{}
}

func newInput() *input { return &input{got: make(chan struct{}, 64)} }

func (in *input) add(e string) error {
	in.mu.Lock()
	in.events = append(in.events, e)
	in.mu.Unlock()
	in.got <- struct{}{}
	return nil
}

func (in *input) MoveTo(_ context.Context, x, y int) error {
	return in.add(fmt.Sprintf("move %d,%d", x, y))
}
func (in *input) Button(_ context.Context, n int, down bool) error {
	return in.add(fmt.Sprintf("button %d %v", n, down))
}
func (in *input) Key(_ context.Context, k uint32, down bool) error {
	return in.add(fmt.Sprintf("key %#x %v", k, down))
}

var (
	_ Screen = (*fakeScreen)(nil)
	_ Input  = (*input)(nil)
)
