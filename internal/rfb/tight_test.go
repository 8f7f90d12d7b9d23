package rfb

import (
	"image"
	"image/color"
	"math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"
)

// noise paints r with pseudo-random pixels (opaque): what compresses
// worst.
func (wd *world) noise(r image.Rectangle, seed uint64) {
	wd.mu.Lock()
	rng := rand.New(rand.NewPCG(seed, 1))
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			wd.img.SetRGBA(x, y, color.RGBA{uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32()), 255})
		}
	}
	for s := range wd.open {
		s.pending = append(s.pending, r)
		s.signal()
	}
	wd.mu.Unlock()
}

// A viewer that asks for Tight gets it and draws exactly the screen a Raw
// viewer draws, over several updates of one zlib stream: one colour, a
// gradient, noise, pieces wider than Tight's 2048 and smaller than its 12
// bytes; a viewer that does not ask gets Raw.
func TestTight(t *testing.T) {
	wd := newWorld(2100, 70)
	for x := range 2100 {
		for y := range 70 {
			wd.img.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y * 3), uint8(x / 9), 255})
		}
	}
	srv := newServer(t, wd, nil, nil)
	rs := connect(t, srv)
	raw := rs.client(t)
	s := connect(t, srv)
	tight, err := NewClient(s.conn, Tight)
	if err != nil {
		t.Fatal(err)
	}
	// read takes c's updates until its screen is the world's. The server
	// may answer a request with a region it had marked as changed before
	// it took in the change the test just made, and it answers a request
	// with the frame its watch has taken in so far, which lags the change
	// by as long as the watch takes to run (under the race detector,
	// thousands of whole-screen answers): an update too many, never one
	// too few (TestIncrementalSendsChanges checks that changes are sent).
	// So a screen that differs asks for what changed since, which the
	// watch answers once it has taken the change in; a change that never
	// comes fails the read after 10 s.
	conns := map[*Client]net.Conn{raw: rs.conn, tight: s.conn}
	read := func(step, name string, c *Client) (u Update) {
		t.Helper()
		conns[c].SetReadDeadline(time.Now().Add(10 * time.Second))
		defer conns[c].SetReadDeadline(time.Time{})
		for i := 1; ; i++ {
			next, err := c.ReadUpdate()
			if err != nil {
				t.Fatalf("%s: the %s viewer's screen differs from the screen after %d updates: %v", step, name, i-1, err)
			}
			u.Tight += next.Tight
			u.Bytes += next.Bytes
			u.Rects = append(u.Rects, next.Rects...)
			if sameImage(c.FB, wd.img) {
				return u
			}
			c.Request(true)
		}
	}
	check := func(step string) {
		t.Helper()
		ur, ut := read(step, "Raw", raw), read(step, "Tight", tight)
		if ur.Tight != 0 {
			t.Errorf("%s: %d Tight rectangles to a viewer that did not ask", step, ur.Tight)
		}
		if ut.Tight == 0 {
			t.Errorf("%s: no Tight rectangle of %d", step, len(ut.Rects))
		}
		t.Logf("%s: Raw %d bytes, Tight %d bytes in %d rectangles", step, ur.Bytes, ut.Bytes, len(ut.Rects))
	}
	raw.Request(false)
	tight.Request(false)
	check("first frame")
	for i, change := range []func(){
		func() { wd.fill(image.Rect(0, 0, 2100, 70), color.RGBA{0, 255, 0, 255}) },
		func() { wd.noise(image.Rect(100, 10, 400, 60), 1) },
		func() { wd.noise(image.Rect(5, 5, 7, 6), 2) },     // 6 bytes: sent as they are
		func() { wd.noise(image.Rect(0, 0, 2100, 70), 3) }, // wider than 2048
		func() { wd.fill(image.Rect(2000, 0, 2100, 70), color.RGBA{9, 8, 7, 255}) },
	} {
		// A change before a request is sent with it: no need to wait.
		change()
		raw.Request(true)
		tight.Request(true)
		check("change " + string(rune('1'+i)))
	}
}

// Tight cuts a rectangle into pieces at most 2048 wide and 2^16 pixels
// large, covering it exactly once, and sends a one-colour piece as a fill.
func TestTightPieces(t *testing.T) {
	fb := image.NewRGBA(image.Rect(0, 0, 5000, 100))
	e := newTightEncoder()
	r := image.Rect(10, 3, 4500, 97)
	out, n := e.appendRects(nil, fb, r)
	area := 0
	var pieces []image.Rectangle
	for i := 0; i < len(out); {
		x, y := int(out[i])<<8|int(out[i+1]), int(out[i+2])<<8|int(out[i+3])
		p := image.Rect(x, y, x+(int(out[i+4])<<8|int(out[i+5])), y+(int(out[i+6])<<8|int(out[i+7])))
		if p.Dx() > tightMaxWidth || p.Dx()*p.Dy() > tightMaxPixels || !p.In(r) {
			t.Errorf("piece %v", p)
		}
		if out[i+12] != tightFill || len(out) < i+16 {
			t.Fatalf("piece %v of a black screen is not a fill: % x", p, out[i+12:min(len(out), i+16)])
		}
		for _, q := range pieces {
			if q.Overlaps(p) {
				t.Errorf("pieces %v and %v overlap", q, p)
			}
		}
		pieces = append(pieces, p)
		area += p.Dx() * p.Dy()
		i += 16
	}
	if n != len(pieces) || area != r.Dx()*r.Dy() {
		t.Errorf("%d pieces (said %d) covering %d pixels of %d", len(pieces), n, area, r.Dx()*r.Dy())
	}
}

func TestCompactLength(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{{0, []byte{0}}, {127, []byte{0x7f}}, {128, []byte{0x80, 1}}, {16383, []byte{0xff, 0x7f}}, {16384, []byte{0x80, 0x80, 1}}, {1<<21 - 1, []byte{0xff, 0xff, 0x7f}}} {
		if got := appendCompactLength(nil, c.n); !slices.Equal(got, c.want) {
			t.Errorf("%d: % x, want % x", c.n, got, c.want)
		}
	}
}

// Only a pixel format with Tight's 3-byte pixels gets Tight.
func TestTightPixels(t *testing.T) {
	if !serverFormat.tightPixels() {
		t.Error("noVNC's format (the server's) has no Tight pixels")
	}
	f16 := pixelFormat{bpp: 16, depth: 16, trueColour: true, redMax: 31, greenMax: 63, blueMax: 31, redShift: 11, greenShift: 5}
	if f16.tightPixels() {
		t.Error("a 16-bit format has Tight's 3-byte pixels")
	}
}
