package rfb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"strconv"
	"sync"
	"time"
)

// One viewer's connection (RFC 6143; versions 3.3 and 3.7 are answered as
// the RFC says, 3.8 is what noVNC and every current viewer speaks):
//
//	server                                      viewer
//	"RFB 003.008\n"                          →
//	                                         ←  "RFB 003.00x\n"
//	3.7, 3.8: [1 type: None]                 →
//	                                         ←  [None]
//	3.8: SecurityResult OK                   →
//	(3.3: the type None as a u32, unasked)
//	                                         ←  ClientInit [shared flag, ignored: always shared]
//	   the first viewer opens the screen; its first frame is taken
//	ServerInit [w h pixel-format name]       →
//	                                         ←  SetPixelFormat, SetEncodings,
//	                                            FramebufferUpdateRequest, Key/PointerEvent, ClientCutText
//	FramebufferUpdate [rects, Raw or Tight]  →  one per request: at once for a
//	                                            non-incremental request, once
//	                                            something changed for an incremental one
//
// A reader goroutine parses the viewer's messages; the connection's own
// goroutine writes the updates. Updates are pulled: the viewer asks for
// the next one after it drew the last, so a slow viewer gets fewer, larger
// updates and never a queue.

// Encodings this server sends (and encTight, tight.go).
const (
	encRaw         = 0
	encDesktopSize = -223
)

// Message types.
const (
	msgSetPixelFormat  = 0
	msgSetEncodings    = 2
	msgUpdateRequest   = 3
	msgKeyEvent        = 4
	msgPointerEvent    = 5
	msgClientCutText   = 6
	msgFramebufferUpd  = 0
	maxCutText         = 1 << 20 // larger clipboard texts end the connection
	maxPendingRects    = 64      // above this, a viewer's dirty rectangles merge into their bounding box
	handshakeDeadline  = 30 * time.Second
	maxSetEncodingsLen = 1024
	// defaultWriteTimeout is Options.WriteTimeout's default.
	defaultWriteTimeout = time.Minute
)

// deadliner is a connection whose blocked reads and writes can be cut
// short (a net.Conn, a WebSocket).
type deadliner interface {
	SetDeadline(t time.Time) error
	SetWriteDeadline(t time.Time) error
}

// viewer is one connection's state shared by its reader and writer.
type viewer struct {
	rw   io.ReadWriteCloser
	wake chan struct{} // one token: the writer has something to look at

	mu       sync.Mutex // guards the fields below
	err      error      // why the connection ends; set once
	format   pixelFormat
	resize   bool // DesktopSize is understood
	tight    bool // Tight is understood (tight.go)
	enc      *tightEncoder
	req      *request
	dirty    []image.Rectangle
	resized  bool        // the screen's size changed since the last update sent
	size     image.Point // the size the viewer knows
	stopOnce sync.Once
}

// request is a FramebufferUpdateRequest not yet answered.
type request struct {
	incremental bool
	area        image.Rectangle
}

func (v *viewer) signal() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// stop ends the connection with err (the first reason wins).
func (v *viewer) stop(err error) {
	v.mu.Lock()
	if v.err == nil {
		v.err = err
	}
	v.mu.Unlock()
	v.stopOnce.Do(func() {
		// A WebSocket's Close writes a close frame first, under the lock
		// a blocked write holds: the deadline ends that write.
		if d, ok := v.rw.(deadliner); ok {
			_ = d.SetDeadline(time.Now())
		}
		v.rw.Close()
	})
	v.signal()
}

// changed adds what the screen's last update changed.
func (v *viewer) changed(rects []image.Rectangle, resized bool) {
	if len(rects) == 0 && !resized {
		return
	}
	v.mu.Lock()
	if resized {
		v.resized = true
	}
	for _, r := range rects {
		v.dirty = addRect(v.dirty, r)
	}
	v.mu.Unlock()
	v.signal()
}

// addRect adds r to a set of rectangles to send: nothing if one of them
// holds it, dropping those it holds; a set grown past maxPendingRects
// becomes its bounding box (more pixels sent, fewer rectangles).
func addRect(rs []image.Rectangle, r image.Rectangle) []image.Rectangle {
	if r.Empty() {
		return rs
	}
	out := rs[:0]
	for _, q := range rs {
		if r.In(q) {
			return rs
		}
		if !q.In(r) {
			out = append(out, q)
		}
	}
	out = append(out, r)
	if len(out) > maxPendingRects {
		box := out[0]
		for _, q := range out[1:] {
			box = box.Union(q)
		}
		out = append(out[:0], box)
	}
	return out
}

// Serve speaks RFB with one viewer over rw until the viewer leaves, ctx
// ends or the server is closed; rw is closed when it returns. A viewer
// that leaves is not an error: Serve then returns nil.
func (s *Server) Serve(ctx context.Context, rw io.ReadWriteCloser) error {
	v := &viewer{rw: rw, wake: make(chan struct{}, 1), format: serverFormat}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		rw.Close()
		return ErrClosed
	}
	s.conns[v] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, v)
		s.mu.Unlock()
	}()
	stopCtx := context.AfterFunc(ctx, func() { v.stop(ctx.Err()) })
	defer stopCtx()
	defer v.stop(io.EOF)

	br := bufio.NewReader(rw)
	// A viewer that stalls in the handshake is dropped; the deadline ends
	// with the handshake (a watching viewer may stay silent for hours).
	hsTimer := time.AfterFunc(handshakeDeadline, func() { v.stop(errors.New("handshake timed out")) })
	if err := s.handshake(br, rw); err != nil {
		hsTimer.Stop()
		return v.result(err)
	}
	hsTimer.Stop()
	w, err := s.join(ctx, v)
	if err != nil {
		return v.result(err)
	}
	defer s.leave(w, v)
	s.log.Debug("viewer joined", "viewers", s.Viewers())
	defer func() { s.log.Debug("viewer left", "viewers", s.Viewers()-1) }()

	w.fbMu.RLock()
	size := w.fb.Rect.Size()
	w.fbMu.RUnlock()
	v.mu.Lock()
	v.size = size
	v.mu.Unlock()
	init := binary.BigEndian.AppendUint16(nil, uint16(size.X))
	init = binary.BigEndian.AppendUint16(init, uint16(size.Y))
	init = append(init, serverFormat.marshal()...)
	init = binary.BigEndian.AppendUint32(init, uint32(len(s.opts.Name)))
	init = append(init, s.opts.Name...)
	if _, err := rw.Write(init); err != nil {
		return v.result(err)
	}

	go func() {
		v.stop(s.read(ctx, br, v))
	}()
	return v.result(s.write(v, w))
}

// result is what Serve returns: nil when the viewer left (or ctx ended),
// else the first reason the connection ended.
func (v *viewer) result(err error) error {
	v.mu.Lock()
	if v.err != nil {
		err = v.err
	}
	v.mu.Unlock()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// handshake runs the protocol version, security and ClientInit steps.
func (s *Server) handshake(br *bufio.Reader, w io.Writer) error {
	if _, err := io.WriteString(w, "RFB 003.008\n"); err != nil {
		return err
	}
	var ver [12]byte
	if _, err := io.ReadFull(br, ver[:]); err != nil {
		return err
	}
	minor, err := parseVersion(ver[:])
	if err != nil {
		return err
	}
	switch {
	case minor < 7:
		if _, err := w.Write([]byte{0, 0, 0, 1}); err != nil {
			return err
		}
	default:
		if _, err := w.Write([]byte{1, 1}); err != nil {
			return err
		}
		t, err := br.ReadByte()
		if err != nil {
			return err
		}
		if t != 1 {
			if minor >= 8 {
				const reason = "only security type None is offered"
				msg := binary.BigEndian.AppendUint32([]byte{0, 0, 0, 1}, uint32(len(reason)))
				_, _ = w.Write(append(msg, reason...))
			}
			return fmt.Errorf("%w: security type %d asked for, None offered", ErrProtocol, t)
		}
		if minor >= 8 {
			if _, err := w.Write([]byte{0, 0, 0, 0}); err != nil {
				return err
			}
		}
	}
	_, err = br.ReadByte() // ClientInit's shared flag: every viewer shares
	return err
}

// parseVersion reads "RFB xxx.yyy\n" and returns the minor version this
// server speaks with it: 3 for 3.3 to 3.6, 7, or 8 for 3.8 and anything
// later (RFC 6143 7.1.1).
func parseVersion(b []byte) (int, error) {
	if len(b) != 12 || string(b[:4]) != "RFB " || b[7] != '.' || b[11] != '\n' {
		return 0, fmt.Errorf("%w: protocol version %q", ErrProtocol, b)
	}
	major, err1 := strconv.Atoi(string(b[4:7]))
	minor, err2 := strconv.Atoi(string(b[8:11]))
	if err1 != nil || err2 != nil || major < 3 {
		return 0, fmt.Errorf("%w: protocol version %q", ErrProtocol, b)
	}
	switch {
	case major > 3 || minor >= 8:
		return 8, nil
	case minor == 7:
		return 7, nil
	default:
		return 3, nil
	}
}

// read parses the viewer's messages until it leaves or sends something
// this server cannot read.
func (s *Server) read(ctx context.Context, br *bufio.Reader, v *viewer) error {
	var buf [20]byte
	var buttons uint8
	px, py := -1, -1
	for {
		t, err := br.ReadByte()
		if err != nil {
			return err
		}
		switch t {
		case msgSetPixelFormat:
			if _, err := io.ReadFull(br, buf[:19]); err != nil {
				return err
			}
			f, err := parsePixelFormat(buf[3:19])
			if err != nil {
				return err
			}
			v.mu.Lock()
			v.format = f
			v.mu.Unlock()
		case msgSetEncodings:
			if _, err := io.ReadFull(br, buf[:3]); err != nil {
				return err
			}
			n := int(binary.BigEndian.Uint16(buf[1:3]))
			if n > maxSetEncodingsLen {
				return fmt.Errorf("%w: %d encodings", ErrProtocol, n)
			}
			resize, tight := false, false
			for range n {
				if _, err := io.ReadFull(br, buf[:4]); err != nil {
					return err
				}
				switch int32(binary.BigEndian.Uint32(buf[:4])) {
				case encDesktopSize:
					resize = true
				case encTight:
					tight = true
				}
			}
			v.mu.Lock()
			v.resize, v.tight = resize, tight
			v.mu.Unlock()
		case msgUpdateRequest:
			if _, err := io.ReadFull(br, buf[:9]); err != nil {
				return err
			}
			x, y := int(binary.BigEndian.Uint16(buf[1:])), int(binary.BigEndian.Uint16(buf[3:]))
			r := image.Rect(x, y, x+int(binary.BigEndian.Uint16(buf[5:])), y+int(binary.BigEndian.Uint16(buf[7:])))
			v.mu.Lock()
			v.req = &request{incremental: buf[0] != 0, area: r}
			v.mu.Unlock()
			v.signal()
		case msgKeyEvent:
			if _, err := io.ReadFull(br, buf[:7]); err != nil {
				return err
			}
			if in := s.opts.Input; in != nil {
				if err := in.Key(ctx, binary.BigEndian.Uint32(buf[3:7]), buf[0] != 0); err != nil {
					s.log.Warn("live view key event", "error", err)
				}
			}
		case msgPointerEvent:
			if _, err := io.ReadFull(br, buf[:5]); err != nil {
				return err
			}
			if in := s.opts.Input; in != nil {
				mask := buf[0]
				x, y := int(binary.BigEndian.Uint16(buf[1:])), int(binary.BigEndian.Uint16(buf[3:]))
				if err := pointer(ctx, in, &buttons, &px, &py, mask, x, y); err != nil {
					s.log.Warn("live view pointer event", "error", err)
				}
			}
		case msgClientCutText:
			if _, err := io.ReadFull(br, buf[:7]); err != nil {
				return err
			}
			n := binary.BigEndian.Uint32(buf[3:7])
			if n > maxCutText {
				return fmt.Errorf("%w: clipboard text of %d bytes", ErrProtocol, n)
			}
			if _, err := br.Discard(int(n)); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: message type %d", ErrProtocol, t)
		}
	}
}

// pointer replays one PointerEvent: the motion, then each button whose
// bit changed (bit 0 is button 1, left; bits 3 and 4 the wheel).
func pointer(ctx context.Context, in Input, buttons *uint8, px, py *int, mask uint8, x, y int) error {
	if x != *px || y != *py {
		if err := in.MoveTo(ctx, x, y); err != nil {
			return err
		}
		*px, *py = x, y
	}
	for b := range 8 {
		bit := uint8(1) << b
		if (mask^*buttons)&bit == 0 {
			continue
		}
		if err := in.Button(ctx, b+1, mask&bit != 0); err != nil {
			return err
		}
		*buttons ^= bit
	}
	return nil
}

// write answers the viewer's update requests until the connection ends.
func (s *Server) write(v *viewer, w *watch) error {
	var out []byte
	for {
		<-v.wake
		v.mu.Lock()
		if v.err != nil {
			v.mu.Unlock()
			return v.err
		}
		msg, waiting := v.next(w, out[:0])
		v.mu.Unlock()
		if waiting {
			w.poke()
		}
		if msg == nil {
			continue
		}
		out = msg
		if d, ok := v.rw.(deadliner); ok {
			_ = d.SetWriteDeadline(time.Now().Add(s.writeTimeout))
		}
		if _, err := v.rw.Write(msg); err != nil {
			return err
		}
	}
}

// next builds the FramebufferUpdate that answers the pending request, if
// there is one to send now; waiting says an incremental request waits for
// a change. Called with v.mu held; takes w.fbMu for reading.
func (v *viewer) next(w *watch, dst []byte) (msg []byte, waiting bool) {
	if v.req == nil {
		return nil, false
	}
	w.fbMu.RLock()
	defer w.fbMu.RUnlock()
	fb := w.fb
	if fb == nil {
		return nil, false
	}
	var rects []image.Rectangle
	var newSize bool
	if v.resized && v.resize && fb.Rect.Size() != v.size {
		newSize = true
		v.size = fb.Rect.Size()
		rects = []image.Rectangle{fb.Rect}
		v.dirty = v.dirty[:0]
	} else {
		visible := image.Rectangle{Max: v.size}.Intersect(fb.Rect)
		area := v.req.area.Intersect(visible)
		if !v.req.incremental {
			rects = appendNonEmpty(rects, area)
		}
		keep := v.dirty[:0]
		for _, d := range v.dirty {
			switch {
			case !v.req.incremental:
				if d.In(area) {
					continue // sent whole just now
				}
			case d.Overlaps(area):
				rects = append(rects, d.Intersect(area))
				if d.In(area) {
					continue
				}
			}
			if d.Overlaps(visible) {
				keep = append(keep, d)
			}
		}
		v.dirty = keep
		if len(rects) == 0 && v.req.incremental {
			return nil, true
		}
	}
	v.resized = false
	v.req = nil
	// The count is known once Tight has cut the rectangles into pieces;
	// it stays far below 2^16 (at most maxPendingRects rectangles, each a
	// few hundred pieces at 7680x4320).
	at := len(dst)
	dst = append(dst, msgFramebufferUpd, 0, 0, 0)
	n := 0
	if newSize {
		dst = appendRectHeader(dst, image.Rectangle{Max: v.size}, encDesktopSize)
		n++
	}
	tight := v.tight && v.format.tightPixels()
	if tight && v.enc == nil {
		v.enc = newTightEncoder()
	}
	for _, r := range rects {
		if tight {
			var k int
			dst, k = v.enc.appendRects(dst, fb, r)
			n += k
			continue
		}
		dst = appendRectHeader(dst, r, encRaw)
		dst = v.format.appendRaw(dst, fb, r)
		n++
	}
	binary.BigEndian.PutUint16(dst[at+2:], uint16(n))
	return dst, false
}

func appendNonEmpty(rs []image.Rectangle, r image.Rectangle) []image.Rectangle {
	if r.Empty() {
		return rs
	}
	return append(rs, r)
}

func appendRectHeader(dst []byte, r image.Rectangle, enc int32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Min.X))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Min.Y))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Dx()))
	dst = binary.BigEndian.AppendUint16(dst, uint16(r.Dy()))
	return binary.BigEndian.AppendUint32(dst, uint32(enc))
}
