package rfb

import (
	"bytes"
	"compress/zlib"
	"image"
)

// Tight (encoding 7), lossless. It is what Debian 12's noVNC (1.3) can
// decode that compresses: it has decoders for Raw, CopyRect, RRE,
// Hextile, Tight and TightPNG, none for zlib or ZRLE. Only two of Tight's
// forms are sent, never JPEG, so a viewer's pixels are the screen's:
//
//	fill:  [0x80] [R G B]                          a one-colour rectangle
//	basic: [0x00] [compact length] [zlib data]     the pixels as R G B,
//	       (data under 12 bytes: [0x00] [R G B …])  copy filter, stream 0
//
// Stream 0 is one zlib stream for the connection's life, flushed (not
// ended) after each rectangle, as the viewer's inflater expects. A
// viewer gets Tight only when it lists it in SetEncodings and its pixel
// format has Tight's 3-byte pixels (32 bits, depth 24, 8 bits a colour:
// noVNC's); anyone else gets Raw.
const encTight = 7

const (
	// tightMaxWidth is the protocol's bound on a Tight rectangle's width.
	tightMaxWidth = 2048
	// tightMaxPixels bounds a piece of a larger rectangle (TightVNC's
	// figure): a frame goes out as pieces, each a fill where it can be,
	// and the compressed size always fits the 22-bit compact length.
	tightMaxPixels = 1 << 16
	// tightMinCompress: data shorter than this is sent as it is.
	tightMinCompress = 12
	tightFill        = 0x80
	tightBasic       = 0x00
	// tightLevel is zlib's fastest: on a loaded 2-core host CPU is what
	// is short, and level 1 already takes a desktop's frame to a few
	// percent of Raw.
	tightLevel = zlib.BestSpeed
)

// tightPixels reports whether f has Tight's 3-byte pixels (TPIXEL).
func (f pixelFormat) tightPixels() bool {
	return f.bpp == 32 && f.depth == 24 && f.trueColour && f.redMax == 255 && f.greenMax == 255 && f.blueMax == 255
}

// tightEncoder is one viewer's Tight state: its zlib stream 0.
type tightEncoder struct {
	out bytes.Buffer
	z   *zlib.Writer
	px  []byte
}

func newTightEncoder() *tightEncoder {
	e := &tightEncoder{}
	e.z, _ = zlib.NewWriterLevel(&e.out, tightLevel) // the level is valid
	return e
}

// appendRects appends r (inside fb) as Tight rectangles, headers included,
// and returns how many it wrote.
func (e *tightEncoder) appendRects(dst []byte, fb *image.RGBA, r image.Rectangle) ([]byte, int) {
	n := 0
	rows := max(1, tightMaxPixels/min(r.Dx(), tightMaxWidth))
	for y := r.Min.Y; y < r.Max.Y; y += rows {
		for x := r.Min.X; x < r.Max.X; x += tightMaxWidth {
			piece := image.Rect(x, y, min(x+tightMaxWidth, r.Max.X), min(y+rows, r.Max.Y))
			dst = appendRectHeader(dst, piece, encTight)
			dst = e.appendRect(dst, fb, piece)
			n++
		}
	}
	return dst, n
}

// appendRect appends one Tight rectangle's data.
func (e *tightEncoder) appendRect(dst []byte, fb *image.RGBA, r image.Rectangle) []byte {
	i0 := fb.PixOffset(r.Min.X, r.Min.Y)
	c0, c1, c2 := fb.Pix[i0], fb.Pix[i0+1], fb.Pix[i0+2]
	if solid(fb, r, c0, c1, c2) {
		return append(dst, tightFill, c0, c1, c2)
	}
	e.px = e.px[:0]
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := fb.PixOffset(r.Min.X, y)
		row := fb.Pix[i : i+4*r.Dx()]
		for x := 0; x < len(row); x += 4 {
			e.px = append(e.px, row[x], row[x+1], row[x+2])
		}
	}
	dst = append(dst, tightBasic)
	if len(e.px) < tightMinCompress {
		return append(dst, e.px...)
	}
	e.out.Reset()
	// Writes to a bytes.Buffer do not fail.
	_, _ = e.z.Write(e.px)
	_ = e.z.Flush()
	dst = appendCompactLength(dst, e.out.Len())
	return append(dst, e.out.Bytes()...)
}

// solid reports whether every pixel of r is c0 c1 c2; it stops at the
// first that is not.
func solid(fb *image.RGBA, r image.Rectangle, c0, c1, c2 byte) bool {
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := fb.PixOffset(r.Min.X, y)
		row := fb.Pix[i : i+4*r.Dx()]
		for x := 0; x < len(row); x += 4 {
			if row[x] != c0 || row[x+1] != c1 || row[x+2] != c2 {
				return false
			}
		}
	}
	return true
}

// appendCompactLength is Tight's length: 7 bits a byte, low bits first,
// the top bit set on every byte but the last. The protocol's third byte
// carries 8 bits; n stays below 2^21 here (a piece is at most 192 KiB
// before compression), where 7 are enough.
func appendCompactLength(dst []byte, n int) []byte {
	for n >= 0x80 {
		dst = append(dst, byte(n)|0x80)
		n >>= 7
	}
	return append(dst, byte(n))
}
