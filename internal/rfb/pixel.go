package rfb

import (
	"encoding/binary"
	"fmt"
	"image"
)

// pixelFormat is RFB's PIXEL_FORMAT (RFC 6143 7.4):
//
//	bits-per-pixel depth big-endian true-colour
//	red-max(2) green-max(2) blue-max(2) red-shift green-shift blue-shift pad(3)
type pixelFormat struct {
	bpp, depth            uint8
	bigEndian, trueColour bool
	redMax, greenMax      uint16
	blueMax               uint16
	redShift, greenShift  uint8
	blueShift             uint8
}

// serverFormat is what ServerInit offers: 32-bit true colour laid out as
// the copy of the screen is (image.RGBA's bytes R, G, B, then one ignored),
// which is also what noVNC asks for, so that Raw rectangles are the rows
// of the copy as they are.
var serverFormat = pixelFormat{bpp: 32, depth: 24, trueColour: true,
	redMax: 255, greenMax: 255, blueMax: 255, redShift: 0, greenShift: 8, blueShift: 16}

func (f pixelFormat) marshal() []byte {
	b := make([]byte, 16)
	b[0], b[1] = f.bpp, f.depth
	if f.bigEndian {
		b[2] = 1
	}
	if f.trueColour {
		b[3] = 1
	}
	binary.BigEndian.PutUint16(b[4:], f.redMax)
	binary.BigEndian.PutUint16(b[6:], f.greenMax)
	binary.BigEndian.PutUint16(b[8:], f.blueMax)
	b[10], b[11], b[12] = f.redShift, f.greenShift, f.blueShift
	return b
}

// parsePixelFormat reads the 16 bytes of a PIXEL_FORMAT and checks that
// the server can send it: true colour at 8, 16 or 32 bits per pixel.
// Colour maps (which no current viewer asks for) are refused.
func parsePixelFormat(b []byte) (pixelFormat, error) {
	f := pixelFormat{bpp: b[0], depth: b[1], bigEndian: b[2] != 0, trueColour: b[3] != 0,
		redMax: binary.BigEndian.Uint16(b[4:]), greenMax: binary.BigEndian.Uint16(b[6:]),
		blueMax: binary.BigEndian.Uint16(b[8:]), redShift: b[10], greenShift: b[11], blueShift: b[12]}
	switch {
	case !f.trueColour:
		return f, fmt.Errorf("%w: colour-map pixel formats are not supported", ErrProtocol)
	case f.bpp != 8 && f.bpp != 16 && f.bpp != 32:
		return f, fmt.Errorf("%w: %d bits per pixel is not supported", ErrProtocol, f.bpp)
	case f.redMax == 0 || f.greenMax == 0 || f.blueMax == 0:
		return f, fmt.Errorf("%w: a colour maximum of 0", ErrProtocol)
	case int(f.redShift) >= int(f.bpp) || int(f.greenShift) >= int(f.bpp) || int(f.blueShift) >= int(f.bpp):
		return f, fmt.Errorf("%w: a colour shift beyond %d bits", ErrProtocol, f.bpp)
	}
	return f, nil
}

// layout is how appendRaw writes f: as the copy's rows (rgbx), with red
// and blue swapped (bgrx), or pixel by pixel (generic).
type layout int

const (
	generic layout = iota
	rgbx
	bgrx
)

func (f pixelFormat) layout() layout {
	if f.bpp != 32 || f.redMax != 255 || f.greenMax != 255 || f.blueMax != 255 {
		return generic
	}
	switch {
	case !f.bigEndian && f.redShift == 0 && f.greenShift == 8 && f.blueShift == 16,
		f.bigEndian && f.redShift == 24 && f.greenShift == 16 && f.blueShift == 8:
		return rgbx
	case !f.bigEndian && f.redShift == 16 && f.greenShift == 8 && f.blueShift == 0,
		f.bigEndian && f.redShift == 8 && f.greenShift == 16 && f.blueShift == 24:
		return bgrx
	}
	return generic
}

// appendRaw appends the pixels of r (inside fb) in format f, row by row:
// a Raw rectangle's data.
func (f pixelFormat) appendRaw(dst []byte, fb *image.RGBA, r image.Rectangle) []byte {
	w := r.Dx()
	switch f.layout() {
	case rgbx:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			i := fb.PixOffset(r.Min.X, y)
			dst = append(dst, fb.Pix[i:i+4*w]...)
		}
		return dst
	case bgrx:
		for y := r.Min.Y; y < r.Max.Y; y++ {
			i := fb.PixOffset(r.Min.X, y)
			row := fb.Pix[i : i+4*w]
			n := len(dst)
			dst = append(dst, row...)
			out := dst[n:]
			for x := 0; x+4 <= len(out); x += 4 {
				out[x], out[x+2] = out[x+2], out[x]
			}
		}
		return dst
	}
	bytes := int(f.bpp / 8)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		i := fb.PixOffset(r.Min.X, y)
		row := fb.Pix[i : i+4*w]
		for x := 0; x < len(row); x += 4 {
			v := scale(row[x], f.redMax)<<f.redShift | scale(row[x+1], f.greenMax)<<f.greenShift |
				scale(row[x+2], f.blueMax)<<f.blueShift
			for k := range bytes {
				shift := 8 * k
				if f.bigEndian {
					shift = 8 * (bytes - 1 - k)
				}
				dst = append(dst, byte(v>>shift))
			}
		}
	}
	return dst
}

// scale maps an 8-bit channel onto 0..max, rounding.
func scale(c byte, max uint16) uint32 {
	return (uint32(c)*uint32(max) + 127) / 255
}
