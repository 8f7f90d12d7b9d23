package rfb

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/color"
	"io"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func newServer(t *testing.T, wd *world, in Input, released func(), tweak ...func(*Options)) *Server {
	t.Helper()
	o := Options{Open: wd.Open, Input: in, Name: "drums test", Released: released,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range tweak {
		f(&o)
	}
	srv, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// session is one viewer: the server's side runs Serve, the test holds the
// other end of a pipe.
type session struct {
	conn net.Conn
	done chan error
}

func connect(t *testing.T, srv *Server) *session {
	t.Helper()
	a, b := net.Pipe()
	s := &session{conn: b, done: make(chan error, 1)}
	go func() { s.done <- srv.Serve(context.Background(), a) }()
	t.Cleanup(func() { b.Close() })
	return s
}

func (s *session) client(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient(s.conn)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// end closes the viewer's side and returns what Serve returned.
func (s *session) end(t *testing.T) error {
	t.Helper()
	s.conn.Close()
	select {
	case err := <-s.done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the viewer left")
		return nil
	}
}

func update(t *testing.T, c *Client) Update {
	t.Helper()
	u, err := c.ReadUpdate()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func sameImage(a, b *image.RGBA) bool {
	return a.Rect == b.Rect && bytes.Equal(a.Pix, b.Pix)
}

// waitBlocked waits until the follow loop blocks in the screen's Wait:
// the server then has nothing to send and waits for the screen.
func waitBlocked(t *testing.T, wd *world) {
	t.Helper()
	select {
	case <-wd.waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never waited for the screen")
	}
}

func drain(wd *world) {
	for {
		select {
		case <-wd.waiting:
		default:
			return
		}
	}
}

// The handshake is RFB 3.8 with security None; the screen is opened at
// ClientInit (not at connect); ServerInit has the screen's size and a
// 32-bit true-colour format; the first request gets the whole screen.
func TestHandshakeAndFirstFrame(t *testing.T) {
	wd := newWorld(64, 48)
	srv := newServer(t, wd, nil, nil)
	s := connect(t, srv)
	var ver [12]byte
	if _, err := io.ReadFull(s.conn, ver[:]); err != nil || string(ver[:]) != "RFB 003.008\n" {
		t.Fatalf("version %q, %v", ver, err)
	}
	s.conn.Write([]byte("RFB 003.008\n"))
	var sec [2]byte
	if _, err := io.ReadFull(s.conn, sec[:]); err != nil || sec != [2]byte{1, 1} {
		t.Fatalf("security types %v, %v", sec, err)
	}
	if opens, _, _ := wd.counts(); opens != 0 {
		t.Fatalf("the screen was opened before ClientInit (%d opens)", opens)
	}
	s.conn.Write([]byte{1})
	var res [4]byte
	if _, err := io.ReadFull(s.conn, res[:]); err != nil || res != [4]byte{} {
		t.Fatalf("security result %v, %v", res, err)
	}
	s.conn.Write([]byte{0}) // ClientInit, not shared: shared anyway
	init := make([]byte, 24+len("drums test"))
	if _, err := io.ReadFull(s.conn, init); err != nil {
		t.Fatal(err)
	}
	want := []byte{0, 64, 0, 48, 32, 24, 0, 1, 0, 255, 0, 255, 0, 255, 0, 8, 16, 0, 0, 0, 0, 0, 0, 10}
	if !bytes.Equal(init[:24], want) || string(init[24:]) != "drums test" {
		t.Fatalf("ServerInit % x, want % x + name", init, want)
	}
	if opens, _, open := wd.counts(); opens != 1 || open != 1 {
		t.Fatalf("%d opens, %d open after ClientInit", opens, open)
	}
	if err := s.end(t); err != nil {
		t.Errorf("Serve: %v", err)
	}

	c := connect(t, srv).client(t)
	if err := c.Request(false); err != nil {
		t.Fatal(err)
	}
	u := update(t, c)
	if !slices.Equal(u.Rects, []image.Rectangle{image.Rect(0, 0, 64, 48)}) || u.Bytes != 4+12+64*48*4 {
		t.Errorf("first update %+v", u)
	}
	if !sameImage(c.FB, wd.img) {
		t.Error("the first frame is not the screen")
	}
}

// An incremental request is answered once the screen changes, with only
// what changed.
func TestIncrementalSendsChanges(t *testing.T) {
	wd := newWorld(64, 48)
	srv := newServer(t, wd, nil, nil)
	c := connect(t, srv).client(t)
	c.Request(false)
	update(t, c)
	for i, r := range []image.Rectangle{image.Rect(10, 5, 20, 10), image.Rect(0, 40, 64, 48)} {
		drain(wd)
		c.Request(true)
		waitBlocked(t, wd)
		wd.fill(r, color.RGBA{uint8(100 + i), 0, 0, 255})
		u := update(t, c)
		if !slices.Equal(u.Rects, []image.Rectangle{r}) || u.Bytes != 4+12+4*r.Dx()*r.Dy() {
			t.Errorf("update %d: %+v, want %v", i, u, r)
		}
		if !sameImage(c.FB, wd.img) {
			t.Errorf("update %d: the viewer's screen differs", i)
		}
	}
	// What changes while nobody asks is sent, merged, with the next
	// request.
	wd.fill(image.Rect(1, 1, 3, 3), color.RGBA{0, 200, 0, 255})
	wd.fill(image.Rect(0, 0, 5, 5), color.RGBA{0, 0, 200, 255})
	c.Request(true)
	u := update(t, c)
	if !slices.Equal(u.Rects, []image.Rectangle{image.Rect(0, 0, 5, 5)}) {
		t.Errorf("merged update %+v", u)
	}
	if !sameImage(c.FB, wd.img) {
		t.Error("after the merged update the viewer's screen differs")
	}
}

// View-only reads pointer and key events and drops them; takeover passes
// them on: the motion, then the buttons whose bits changed.
func TestInput(t *testing.T) {
	wd := newWorld(32, 32)
	c := connect(t, newServer(t, wd, nil, nil)).client(t)
	c.Pointer(1, 5, 6)
	c.Key('a', true)
	c.Request(false)
	update(t, c) // the server read the events and is still there

	in := newInput()
	c = connect(t, newServer(t, wd, in, nil)).client(t)
	c.Pointer(1, 5, 6)
	c.Pointer(0, 5, 6)
	c.Pointer(8, 7, 6) // wheel up
	c.Key('a', true)
	c.Key('a', false)
	want := []string{"move 5,6", "button 1 true", "button 1 false", "move 7,6", "button 4 true", "key 0x61 true", "key 0x61 false"}
	for range want {
		select {
		case <-in.got:
		case <-time.After(10 * time.Second):
			t.Fatalf("events: %q", in.events)
		}
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if !slices.Equal(in.events, want) {
		t.Errorf("events %q, want %q", in.events, want)
	}
}

// Nothing runs while nobody watches: the screen is opened by the first
// viewer, shared by the next, closed when the last leaves, and no
// goroutine is left behind.
func TestOnDemand(t *testing.T) {
	base := runtime.NumGoroutine()
	wd := newWorld(32, 32)
	var released atomic.Int32
	srv := newServer(t, wd, nil, func() { released.Add(1) })
	if opens, _, _ := wd.counts(); opens != 0 || runtime.NumGoroutine() > base {
		t.Fatalf("an idle server opened %d screens, runs %d goroutines (%d before)", opens, runtime.NumGoroutine(), base)
	}
	a, b := connect(t, srv), connect(t, srv)
	ca, cb := a.client(t), b.client(t)
	ca.Request(false)
	cb.Request(false)
	update(t, ca)
	update(t, cb)
	if opens, closes, open := wd.counts(); opens != 1 || closes != 0 || open != 1 || srv.Viewers() != 2 {
		t.Fatalf("two viewers: %d opens, %d closes, %d open, %d viewers", opens, closes, open, srv.Viewers())
	}
	a.end(t)
	if _, closes, _ := wd.counts(); closes != 0 {
		t.Fatal("the screen was closed while a viewer watched")
	}
	// The one left still gets updates.
	drain(wd)
	cb.Request(true)
	waitBlocked(t, wd)
	wd.fill(image.Rect(0, 0, 4, 4), color.RGBA{255, 255, 255, 255})
	update(t, cb)
	b.end(t)
	if opens, closes, open := wd.counts(); opens != 1 || closes != 1 || open != 0 || released.Load() != 1 || srv.Viewers() != 0 {
		t.Fatalf("all gone: %d opens, %d closes, %d open, %d released, %d viewers", opens, closes, open, released.Load(), srv.Viewers())
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines left, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := connect(t, srv).client(t)
	c.Request(false)
	update(t, c)
	if opens, _, _ := wd.counts(); opens != 2 {
		t.Errorf("a new viewer after all left: %d opens", opens)
	}
}

// A screen that changes size is sent as a DesktopSize and a whole frame.
func TestResize(t *testing.T) {
	wd := newWorld(32, 32)
	c := connect(t, newServer(t, wd, nil, nil)).client(t)
	c.Request(false)
	update(t, c)
	drain(wd)
	c.Request(true)
	waitBlocked(t, wd)
	wd.resize(40, 20)
	u := update(t, c)
	if !u.Resized || !slices.Equal(u.Rects, []image.Rectangle{image.Rect(0, 0, 40, 20)}) || !sameImage(c.FB, wd.img) {
		t.Errorf("after the resize: %+v, viewer's screen %v", u, c.FB.Rect)
	}
}

// Viewers of 3.3 and 3.7 get the RFC's handshakes for them.
func TestOldVersions(t *testing.T) {
	wd := newWorld(8, 8)
	srv := newServer(t, wd, nil, nil)
	for _, c := range []struct {
		version string
		talk    func(conn net.Conn) error
	}{
		{"RFB 003.003\n", func(conn net.Conn) error {
			var sec [4]byte
			if _, err := io.ReadFull(conn, sec[:]); err != nil || sec != [4]byte{0, 0, 0, 1} {
				return errors.New("3.3: want security None as a u32")
			}
			return nil
		}},
		{"RFB 003.007\n", func(conn net.Conn) error {
			var sec [2]byte
			if _, err := io.ReadFull(conn, sec[:]); err != nil || sec != [2]byte{1, 1} {
				return errors.New("3.7: want the list [None]")
			}
			_, err := conn.Write([]byte{1}) // and no SecurityResult after None
			return err
		}},
	} {
		s := connect(t, srv)
		io.ReadFull(s.conn, make([]byte, 12))
		s.conn.Write([]byte(c.version))
		if err := c.talk(s.conn); err != nil {
			t.Fatal(err)
		}
		s.conn.Write([]byte{1})
		init := make([]byte, 24)
		if _, err := io.ReadFull(s.conn, init); err != nil || init[1] != 8 || init[3] != 8 {
			t.Errorf("%q: ServerInit % x, %v", c.version, init, err)
		}
		s.end(t)
	}
}

// What the server cannot read ends the connection with ErrProtocol; a
// screen that cannot be opened ends it with the reason.
func TestRefusals(t *testing.T) {
	wd := newWorld(8, 8)
	srv := newServer(t, wd, nil, nil)
	for name, msg := range map[string][]byte{
		"unknown message": {99},
		"colour map":      append([]byte{0, 0, 0, 0, 8, 8, 0, 0}, make([]byte, 12)...),
		"24 bpp":          append([]byte{0, 0, 0, 0, 24, 24, 0, 1, 0, 255, 0, 255, 0, 255, 16, 8, 0}, 0, 0, 0),
	} {
		s := connect(t, srv)
		s.client(t)
		s.conn.Write(msg)
		select {
		case err := <-s.done:
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("%s: Serve returned %v", name, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: accepted", name)
		}
	}
	s := connect(t, srv)
	go io.Copy(io.Discard, s.conn)
	io.WriteString(s.conn, "HTTP/1.1 200\n")
	if err := <-s.done; !errors.Is(err, ErrProtocol) {
		t.Errorf("not RFB: %v", err)
	}

	wd.mu.Lock()
	wd.openErr = errors.New("no X")
	wd.mu.Unlock()
	s = connect(t, srv)
	go func() {
		io.ReadFull(s.conn, make([]byte, 12))
		s.conn.Write([]byte("RFB 003.008\n"))
		io.ReadFull(s.conn, make([]byte, 2))
		s.conn.Write([]byte{1})
		io.ReadFull(s.conn, make([]byte, 4))
		s.conn.Write([]byte{1})
	}()
	if err := <-s.done; err == nil || !errors.Is(err, wd.openErr) {
		t.Errorf("screen that cannot open: %v", err)
	}
}

// Raw pixels in the formats viewers ask for.
func TestAppendRaw(t *testing.T) {
	fb := image.NewRGBA(image.Rect(0, 0, 2, 1))
	copy(fb.Pix, []byte{0xff, 0x80, 0x00, 0xff, 0x10, 0x20, 0x30, 0xff})
	r := fb.Rect
	for _, c := range []struct {
		name string
		f    pixelFormat
		want []byte
	}{
		{"noVNC's (ours)", serverFormat, []byte{0xff, 0x80, 0x00, 0xff, 0x10, 0x20, 0x30, 0xff}},
		{"BGRX", pixelFormat{bpp: 32, depth: 24, trueColour: true, redMax: 255, greenMax: 255, blueMax: 255, redShift: 16, greenShift: 8},
			[]byte{0x00, 0x80, 0xff, 0xff, 0x30, 0x20, 0x10, 0xff}},
		{"XRGB big-endian", pixelFormat{bpp: 32, depth: 24, bigEndian: true, trueColour: true, redMax: 255, greenMax: 255, blueMax: 255,
			redShift: 16, greenShift: 8}, []byte{0, 0xff, 0x80, 0x00, 0, 0x10, 0x20, 0x30}},
		{"RGB565", pixelFormat{bpp: 16, depth: 16, trueColour: true, redMax: 31, greenMax: 63, blueMax: 31, redShift: 11, greenShift: 5},
			// 0xff,0x80,0x00 -> 31,32,0 = 0xfc00; 0x10,0x20,0x30 -> 2,8,6 = 0x1106
			[]byte{0x00, 0xfc, 0x06, 0x11}},
		{"BGR233", pixelFormat{bpp: 8, depth: 8, trueColour: true, redMax: 7, greenMax: 7, blueMax: 3, greenShift: 3, blueShift: 6},
			// 7,4,0 = 0x27; 0,1,1 = 0x48
			[]byte{0x27, 0x48}},
	} {
		if got := c.f.appendRaw(nil, fb, r); !bytes.Equal(got, c.want) {
			t.Errorf("%s: % x, want % x", c.name, got, c.want)
		}
		if _, err := parsePixelFormat(c.f.marshal()); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestAddRect(t *testing.T) {
	var rs []image.Rectangle
	rs = addRect(rs, image.Rect(0, 0, 10, 10))
	rs = addRect(rs, image.Rect(2, 2, 4, 4))   // inside: dropped
	rs = addRect(rs, image.Rect(20, 0, 25, 5)) // apart: kept
	rs = addRect(rs, image.Rect(0, 0, 12, 12)) // holds the first: replaces it
	if !slices.Equal(rs, []image.Rectangle{image.Rect(20, 0, 25, 5), image.Rect(0, 0, 12, 12)}) {
		t.Errorf("%v", rs)
	}
	for i := range 2 * maxPendingRects {
		rs = addRect(rs, image.Rect(i*2, 100, i*2+1, 101))
	}
	if len(rs) > maxPendingRects {
		t.Errorf("%d rectangles pending", len(rs))
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]int{"RFB 003.003\n": 3, "RFB 003.005\n": 3, "RFB 003.007\n": 7, "RFB 003.008\n": 8,
		"RFB 003.889\n": 8, "RFB 004.001\n": 8, "RFB 002.000\n": -1, "HTTP/1.1 200": -1} {
		got, err := parseVersion([]byte(in))
		if err != nil {
			got = -1
		}
		if got != want {
			t.Errorf("%q: %d, want %d", in, got, want)
		}
	}
}

// A viewer that stops reading is dropped after WriteTimeout, and Close
// ends a connection whose update is stuck on the way (a WebSocket's Close
// would wait for the blocked write): the screen is released either way.
func TestStuckViewer(t *testing.T) {
	for _, byClose := range []bool{false, true} {
		wd := newWorld(256, 256)
		timeout := 50 * time.Millisecond
		if byClose {
			timeout = time.Hour
		}
		srv := newServer(t, wd, nil, nil, func(o *Options) { o.WriteTimeout = timeout })
		s := connect(t, srv)
		c := s.client(t)
		c.Request(false) // and never read the 256 KiB it answers
		if byClose {
			deadline := time.Now().Add(10 * time.Second)
			for srv.Viewers() != 1 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			srv.Close()
		}
		select {
		case err := <-s.done:
			if byClose && !errors.Is(err, ErrClosed) || !byClose && err == nil {
				t.Errorf("close %v: Serve returned %v", byClose, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("close %v: a viewer that reads nothing is still served", byClose)
		}
		if _, closes, open := wd.counts(); closes != 1 || open != 0 {
			t.Errorf("close %v: %d closes, %d open", byClose, closes, open)
		}
	}
}
