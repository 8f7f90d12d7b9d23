package rfb

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"image"
	"io"
	"slices"
)

// Client is a minimal viewer: RFB 3.8 with security None, Raw, Tight's
// fill and basic forms (as this server sends them) and DesktopSize, in
// this server's pixel format. The tests and the live-view benchmarks use
// it to see what a viewer sees.
type Client struct {
	rw   io.ReadWriter
	br   *bufio.Reader
	Name string
	// FB is the screen as the updates read so far drew it.
	FB *image.RGBA
	// zlib is Tight's stream 0: its compressed bytes, and its inflater
	// over them, for the connection's life.
	zsrc bytes.Buffer
	zlib io.Reader
	px   []byte
}

// Update is what one FramebufferUpdate carried.
type Update struct {
	Rects   []image.Rectangle // the Raw and Tight rectangles, in order
	Tight   int               // how many of them were Tight
	Resized bool              // it carried a DesktopSize
	Bytes   int               // the message's length
}

// Encoding is an encoding a Client may ask for besides Raw.
type Encoding int32

// Tight is Tight's fill and basic compression (tight.go).
const Tight Encoding = encTight

// NewClient runs the handshake over rw and asks for the encodings given,
// in that order of preference, then Raw and DesktopSize.
func NewClient(rw io.ReadWriter, encodings ...Encoding) (*Client, error) {
	c := &Client{rw: rw, br: bufio.NewReader(rw)}
	var ver [12]byte
	if _, err := io.ReadFull(c.br, ver[:]); err != nil {
		return nil, fmt.Errorf("read server version: %w", err)
	}
	if string(ver[:]) != "RFB 003.008\n" {
		return nil, fmt.Errorf("%w: server version %q", ErrProtocol, ver)
	}
	if _, err := io.WriteString(rw, "RFB 003.008\n"); err != nil {
		return nil, err
	}
	n, err := c.br.ReadByte()
	if err != nil {
		return nil, err
	}
	types := make([]byte, n)
	if _, err := io.ReadFull(c.br, types); err != nil {
		return nil, err
	}
	if n != 1 || types[0] != 1 {
		return nil, fmt.Errorf("%w: security types %v", ErrProtocol, types)
	}
	if _, err := rw.Write([]byte{1}); err != nil {
		return nil, err
	}
	var res [4]byte
	if _, err := io.ReadFull(c.br, res[:]); err != nil {
		return nil, err
	}
	if binary.BigEndian.Uint32(res[:]) != 0 {
		return nil, fmt.Errorf("%w: security result %v", ErrProtocol, res)
	}
	if _, err := rw.Write([]byte{1}); err != nil { // ClientInit, shared
		return nil, err
	}
	var init [24]byte
	if _, err := io.ReadFull(c.br, init[:]); err != nil {
		return nil, fmt.Errorf("read ServerInit: %w", err)
	}
	w, h := int(binary.BigEndian.Uint16(init[0:])), int(binary.BigEndian.Uint16(init[2:]))
	if f, err := parsePixelFormat(init[4:20]); err != nil || f != serverFormat {
		return nil, fmt.Errorf("%w: ServerInit pixel format %+v (%v)", ErrProtocol, f, err)
	}
	name := make([]byte, binary.BigEndian.Uint32(init[20:]))
	if _, err := io.ReadFull(c.br, name); err != nil {
		return nil, err
	}
	c.Name, c.FB = string(name), image.NewRGBA(image.Rect(0, 0, w, h))
	msg := append([]byte{msgSetPixelFormat, 0, 0, 0}, serverFormat.marshal()...)
	encs := append(slices.Clone(encodings), encRaw, encDesktopSize)
	msg = append(msg, msgSetEncodings, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(len(encs)))
	for _, enc := range encs {
		msg = binary.BigEndian.AppendUint32(msg, uint32(enc))
	}
	if _, err := rw.Write(msg); err != nil {
		return nil, err
	}
	return c, nil
}

// Request asks for an update of the whole screen.
func (c *Client) Request(incremental bool) error {
	msg := []byte{msgUpdateRequest, 0}
	if incremental {
		msg[1] = 1
	}
	b := c.FB.Rect.Size()
	msg = binary.BigEndian.AppendUint32(msg, 0)
	msg = binary.BigEndian.AppendUint16(msg, uint16(b.X))
	msg = binary.BigEndian.AppendUint16(msg, uint16(b.Y))
	_, err := c.rw.Write(msg)
	return err
}

// Pointer sends a PointerEvent.
func (c *Client) Pointer(buttons uint8, x, y int) error {
	msg := []byte{msgPointerEvent, buttons}
	msg = binary.BigEndian.AppendUint16(msg, uint16(x))
	msg = binary.BigEndian.AppendUint16(msg, uint16(y))
	_, err := c.rw.Write(msg)
	return err
}

// Key sends a KeyEvent.
func (c *Client) Key(keysym uint32, down bool) error {
	msg := []byte{msgKeyEvent, 0, 0, 0}
	if down {
		msg[1] = 1
	}
	_, err := c.rw.Write(binary.BigEndian.AppendUint32(msg, keysym))
	return err
}

// ReadUpdate reads the next FramebufferUpdate and draws it into FB.
func (c *Client) ReadUpdate() (Update, error) {
	var u Update
	var hdr [4]byte
	if _, err := io.ReadFull(c.br, hdr[:]); err != nil {
		return u, err
	}
	if hdr[0] != msgFramebufferUpd {
		return u, fmt.Errorf("%w: server message type %d", ErrProtocol, hdr[0])
	}
	u.Bytes = 4
	for range int(binary.BigEndian.Uint16(hdr[2:])) {
		var rh [12]byte
		if _, err := io.ReadFull(c.br, rh[:]); err != nil {
			return u, err
		}
		u.Bytes += 12
		x, y := int(binary.BigEndian.Uint16(rh[0:])), int(binary.BigEndian.Uint16(rh[2:]))
		r := image.Rect(x, y, x+int(binary.BigEndian.Uint16(rh[4:])), y+int(binary.BigEndian.Uint16(rh[6:])))
		switch enc := int32(binary.BigEndian.Uint32(rh[8:])); enc {
		case encDesktopSize:
			u.Resized = true
			c.FB = image.NewRGBA(image.Rectangle{Max: r.Size()})
		case encRaw:
			if !r.In(c.FB.Rect) {
				return u, fmt.Errorf("%w: rectangle %v outside the screen %v", ErrProtocol, r, c.FB.Rect)
			}
			for y := r.Min.Y; y < r.Max.Y; y++ {
				i := c.FB.PixOffset(r.Min.X, y)
				if _, err := io.ReadFull(c.br, c.FB.Pix[i:i+4*r.Dx()]); err != nil {
					return u, err
				}
			}
			u.Bytes += 4 * r.Dx() * r.Dy()
			u.Rects = append(u.Rects, r)
		case encTight:
			if !r.In(c.FB.Rect) {
				return u, fmt.Errorf("%w: rectangle %v outside the screen %v", ErrProtocol, r, c.FB.Rect)
			}
			n, err := c.readTight(r)
			if err != nil {
				return u, err
			}
			u.Bytes += n
			u.Rects = append(u.Rects, r)
			u.Tight++
		default:
			return u, fmt.Errorf("%w: encoding %d", ErrProtocol, enc)
		}
	}
	return u, nil
}

// readTight reads one Tight rectangle's data into FB and returns its
// length: a fill, or basic compression with the copy filter; the other
// forms (JPEG, palette and gradient filters, streams 1-3) this server
// never sends.
func (c *Client) readTight(r image.Rectangle) (int, error) {
	ctl, err := c.br.ReadByte()
	if err != nil {
		return 0, err
	}
	n := 1
	if ctl&1 != 0 { // reset stream 0
		c.zsrc.Reset()
		c.zlib = nil
	}
	switch ctl >> 4 {
	case tightFill >> 4:
		var p [3]byte
		if _, err := io.ReadFull(c.br, p[:]); err != nil {
			return n, err
		}
		c.px = c.px[:0]
		for range r.Dx() * r.Dy() {
			c.px = append(c.px, p[:]...)
		}
		c.draw(r, c.px)
		return n + 3, nil
	case tightBasic >> 4:
	default:
		return n, fmt.Errorf("%w: Tight control byte %#x", ErrProtocol, ctl)
	}
	size := 3 * r.Dx() * r.Dy()
	c.px = slices.Grow(c.px[:0], size)[:size]
	if size < tightMinCompress {
		if _, err := io.ReadFull(c.br, c.px); err != nil {
			return n, err
		}
		c.draw(r, c.px)
		return n + size, nil
	}
	length, k, err := c.compactLength()
	if err != nil {
		return n, err
	}
	n += k
	if _, err := io.CopyN(&c.zsrc, c.br, int64(length)); err != nil {
		return n, err
	}
	n += length
	if c.zlib == nil {
		// The stream's header came with its first rectangle.
		if c.zlib, err = zlib.NewReader(&c.zsrc); err != nil {
			return n, fmt.Errorf("%w: Tight zlib stream: %v", ErrProtocol, err)
		}
	}
	if _, err := io.ReadFull(c.zlib, c.px); err != nil {
		return n, fmt.Errorf("%w: Tight zlib data: %v", ErrProtocol, err)
	}
	c.draw(r, c.px)
	return n, nil
}

// compactLength reads Tight's compact length and how many bytes it took.
func (c *Client) compactLength() (int, int, error) {
	v := 0
	for k := range 3 {
		b, err := c.br.ReadByte()
		if err != nil {
			return 0, k, err
		}
		if k == 2 {
			return v | int(b)<<14, 3, nil
		}
		v |= int(b&0x7f) << (7 * k)
		if b&0x80 == 0 {
			return v, k + 1, nil
		}
	}
	return v, 3, nil
}

// draw writes px, R G B a pixel, into FB's r (opaque).
func (c *Client) draw(r image.Rectangle, px []byte) {
	j := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		row := c.FB.Pix[c.FB.PixOffset(r.Min.X, y):][:4*r.Dx()]
		for x := 0; x < len(row); x += 4 {
			row[x], row[x+1], row[x+2], row[x+3] = px[j], px[j+1], px[j+2], 0xff
			j += 3
		}
	}
}
