package atspi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/godbus/dbus/v5"
)

// The D-Bus wire format for the per-node calls of the walk: method calls
// with string, int32 and uint32 arguments, and replies of the few
// signatures AT-SPI answers them with. Messages are written little-endian;
// replies are read in either byte order.
//
// Message layout (offsets from the message start):
//
//	0  endianness 'l'/'B'  1 type  2 flags  3 version (1)
//	4  body length (u32)   8 serial (u32)
//	12 header fields a(yv): (code byte, variant) structs, each 8-aligned
//	then padding to 8, then the body
//
// Header fields used: 1 PATH (o), 2 INTERFACE (s), 3 MEMBER (s),
// 4 ERROR_NAME (s), 5 REPLY_SERIAL (u), 6 DESTINATION (s), 8 SIGNATURE (g).

const (
	msgMethodCall   = 1
	msgMethodReturn = 2
	msgError        = 3

	fieldPath        = 1
	fieldInterface   = 2
	fieldMember      = 3
	fieldErrorName   = 4
	fieldReplySerial = 5
	fieldDestination = 6
	fieldSignature   = 8

	// maxMessage is the specification's limit on a message (128 MiB).
	maxMessage = 1 << 27
)

// callError is an error reply: the D-Bus error name and its message.
type callError struct{ name, msg string }

func (e *callError) Error() string { return e.name + ": " + e.msg }

// errSignature is a reply of another signature than the call promises
// (libatspi treats it as a failed call).
var errSignature = errors.New("reply with an unexpected signature")

// encoder appends little-endian D-Bus data to buf; offsets (for alignment)
// count from start, where the message starts in buf.
type encoder struct {
	buf   []byte
	start int // where the message starts in buf
}

func (e *encoder) align(n int) {
	for (len(e.buf)-e.start)%n != 0 {
		e.buf = append(e.buf, 0)
	}
}

func (e *encoder) u32(v uint32) {
	e.align(4)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, v)
}

func (e *encoder) str(s string) {
	e.u32(uint32(len(s)))
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0)
}

func (e *encoder) sig(s string) {
	e.buf = append(e.buf, byte(len(s)))
	e.buf = append(e.buf, s...)
	e.buf = append(e.buf, 0)
}

// field appends a header field whose value is a string-like of type typ
// ('s', 'o' or 'g').
func (e *encoder) field(code byte, typ byte, v string) {
	e.align(8)
	e.buf = append(e.buf, code, 1, typ, 0)
	if typ == 'g' {
		e.sig(v)
		return
	}
	e.str(v)
}

// appendCall appends a method call to buf. Messages follow each other on
// the stream without padding; alignment counts from each message's start.
// args are strings, int32s and uint32s.
func appendCall(buf []byte, serial uint32, dest string, path dbus.ObjectPath, iface, member string, args ...any) []byte {
	e := encoder{buf: buf, start: len(buf)}
	e.buf = append(e.buf, 'l', msgMethodCall, 0, 1)
	e.buf = append(e.buf, 0, 0, 0, 0) // body length, set below
	e.buf = binary.LittleEndian.AppendUint32(e.buf, serial)
	e.buf = append(e.buf, 0, 0, 0, 0) // header fields length, set below
	fields := len(e.buf)
	e.field(fieldPath, 'o', string(path))
	e.field(fieldInterface, 's', iface)
	e.field(fieldMember, 's', member)
	if dest != "" {
		e.field(fieldDestination, 's', dest)
	}
	var sig []byte
	for _, a := range args {
		switch a.(type) {
		case string:
			sig = append(sig, 's')
		case int32:
			sig = append(sig, 'i')
		case uint32:
			sig = append(sig, 'u')
		default:
			panic(fmt.Sprintf("atspi: argument of type %T", a))
		}
	}
	if len(sig) > 0 {
		e.field(fieldSignature, 'g', string(sig))
	}
	binary.LittleEndian.PutUint32(e.buf[e.start+12:], uint32(len(e.buf)-fields))
	e.align(8)
	body := len(e.buf)
	for _, a := range args {
		switch v := a.(type) {
		case string:
			e.str(v)
		case int32:
			e.u32(uint32(v))
		case uint32:
			e.u32(v)
		}
	}
	binary.LittleEndian.PutUint32(e.buf[e.start+4:], uint32(len(e.buf)-body))
	return e.buf
}

// header is what the demultiplexer needs from a received message.
type header struct {
	order       binary.ByteOrder
	typ         byte
	replySerial uint32
	hasReply    bool
	errorName   string
	signature   string
	body        []byte
}

func byteOrder(b byte) (binary.ByteOrder, error) {
	switch b {
	case 'l':
		return binary.LittleEndian, nil
	case 'B':
		return binary.BigEndian, nil
	}
	return nil, fmt.Errorf("d-bus message with endianness byte %#x", b)
}

func align(n, to int) int { return (n + to - 1) &^ (to - 1) }

// parseHeader reads the fixed header and the fields of one whole message.
func parseHeader(msg []byte) (header, error) {
	var h header
	if len(msg) < 16 {
		return h, errors.New("short d-bus message")
	}
	order, err := byteOrder(msg[0])
	if err != nil {
		return h, err
	}
	h.order, h.typ = order, msg[1]
	end := 16 + int(order.Uint32(msg[12:]))
	bodyLen := int(order.Uint32(msg[4:]))
	if end > len(msg) || align(end, 8)+bodyLen != len(msg) {
		return h, errors.New("malformed d-bus message")
	}
	d := decoder{b: msg[:end], off: 16, order: order}
	for d.off < end {
		d.align(8)
		code := d.byte()
		sig := d.sig()
		switch {
		case sig == "s" || sig == "o":
			v := d.str()
			if code == fieldErrorName {
				h.errorName = v
			}
		case sig == "g":
			v := d.sig()
			if code == fieldSignature {
				h.signature = v
			}
		case sig == "u":
			v := d.u32()
			if code == fieldReplySerial {
				h.replySerial, h.hasReply = v, true
			}
		default:
			return h, fmt.Errorf("header field of type %q", sig)
		}
		if d.err != nil {
			return h, d.err
		}
	}
	h.body = msg[align(end, 8):]
	return h, nil
}

// decoder reads D-Bus data from b; offsets count from the start of the
// message (or body: bodies start 8-aligned). A read past the end sets err
// and yields zero values.
type decoder struct {
	b     []byte
	off   int
	order binary.ByteOrder
	err   error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("truncated d-bus data")
	}
	d.off = len(d.b)
}

func (d *decoder) align(n int) {
	d.off = align(d.off, n)
	if d.off > len(d.b) {
		d.fail()
	}
}

func (d *decoder) byte() byte {
	if d.off+1 > len(d.b) {
		d.fail()
		return 0
	}
	d.off++
	return d.b[d.off-1]
}

func (d *decoder) u32() uint32 {
	d.align(4)
	if d.off+4 > len(d.b) {
		d.fail()
		return 0
	}
	d.off += 4
	return d.order.Uint32(d.b[d.off-4:])
}

func (d *decoder) f64() float64 {
	d.align(8)
	if d.off+8 > len(d.b) {
		d.fail()
		return 0
	}
	d.off += 8
	return math.Float64frombits(d.order.Uint64(d.b[d.off-8:]))
}

func (d *decoder) str() string { return d.text(int(d.u32())) }

func (d *decoder) sig() string { return d.text(int(d.byte())) }

// text reads the n bytes of a string or signature and the NUL after them.
func (d *decoder) text(n int) string {
	if d.err != nil || d.off+n+1 > len(d.b) {
		d.fail()
		return ""
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n + 1
	return s
}

// array calls elem for each element of an array whose elements align to
// elemAlign.
func (d *decoder) array(elemAlign int, elem func()) {
	n := int(d.u32())
	d.align(elemAlign)
	end := d.off + n
	if d.err != nil || end > len(d.b) {
		d.fail()
		return
	}
	for d.off < end && d.err == nil {
		elem()
	}
}

// reply is the outcome of one fast call: an error, or the reply's header
// and body.
type reply struct {
	err error
	h   header
}

// body returns a decoder over the reply's body after checking that the
// reply succeeded with signature sig.
func (r *reply) body(sig string) (*decoder, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.h.signature != sig {
		return nil, fmt.Errorf("%w: %q, want %q", errSignature, r.h.signature, sig)
	}
	return &decoder{b: r.h.body, order: r.h.order}, nil
}

// done checks that d read its value cleanly.
func done[T any](v T, d *decoder) (T, error) {
	if d.err != nil {
		var zero T
		return zero, d.err
	}
	return v, nil
}

func (r *reply) string() (string, error) {
	d, err := r.body("s")
	if err != nil {
		return "", err
	}
	return done(d.str(), d)
}

func (r *reply) uint32() (uint32, error) {
	d, err := r.body("u")
	if err != nil {
		return 0, err
	}
	return done(d.u32(), d)
}

// variant reads a Properties.Get reply holding a value of type typ ('s',
// 'i' or 'd').
func (r *reply) variant(typ string) (any, error) {
	d, err := r.body("v")
	if err != nil {
		return nil, err
	}
	if got := d.sig(); got != typ {
		return nil, fmt.Errorf("%w: property of type %q, want %q", errSignature, got, typ)
	}
	var v any
	switch typ {
	case "s":
		v = d.str()
	case "i":
		v = int32(d.u32())
	case "d":
		v = d.f64()
	}
	return done(v, d)
}
