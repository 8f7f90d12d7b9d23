package x11

import (
	"context"
	"errors"
	"fmt"
	"image"

	"github.com/jezek/xgb/shm"
	"github.com/jezek/xgb/xproto"
)

// errSHM marks a failure of the MIT-SHM path that core GetImage can stand in
// for (no segment, BadAccess from another IPC namespace, a failed shm
// GetImage); a lost connection or an ended context is not one.
var errSHM = errors.New("MIT-SHM capture failed")

// Capture grabs the whole screen without the cursor, as pyautogui.screenshot
// does, into a new image that belongs to the caller: a frame-sized
// allocation, converted into from the captured bytes in one pass.
func (d *Display) Capture(ctx context.Context) (*image.RGBA, error) {
	return with(d, func(c *conn) (*image.RGBA, error) {
		return c.capture(ctx)
	})
}

func (c *conn) capture(ctx context.Context) (*image.RGBA, error) {
	if c.formatErr != nil {
		return nil, c.formatErr
	}
	w, h, err := c.rootSize(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.lockFrame(ctx); err != nil {
		return nil, err
	}
	defer c.unlockFrame()
	src, stride, err := c.grab(ctx, w, h)
	if err != nil {
		return nil, err
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	c.format.toRGBA(img, src, stride)
	return img, nil
}

// lockFrame takes the capture lock, or gives up when ctx ends first.
func (c *conn) lockFrame(ctx context.Context) error {
	select {
	case c.capLock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) unlockFrame() { <-c.capLock }

// ReleaseFrame gives back the frame kept between captures: the MIT-SHM
// segment (8 MB at 1920x1080, half of it counted in the X server, which
// detaches when it reads our ShmDetach) or the RGBA buffer of a pixel
// format screenshots cannot read as it is, and the last screenshot's PNG
// (0.1-4 MB). The next capture makes them again, which costs it about 10
// ms at 1920x1080 (both sides fault the segment's pages in anew) and a
// whole encode, so callers release only after a while without captures.
// While a capture runs it does nothing: the Display is not idle.
func (d *Display) ReleaseFrame() {
	d.mu.Lock()
	c := d.cur
	d.mu.Unlock()
	if c != nil {
		c.releaseFrame()
	}
}

func (c *conn) releaseFrame() {
	select {
	case c.capLock <- struct{}{}:
	default:
		return
	}
	defer func() { <-c.capLock }()
	if c.dead.Load() {
		return // close, on the next call, detaches what is left
	}
	if c.seg != nil {
		c.seg.release(c.x)
		c.seg = nil
	}
	c.rgba = nil
	c.shot.forget()
}

// grab captures the screen's top-left w x h pixels (the whole screen) as
// a ZPixmap of stride bytes per row; see grabArea.
func (c *conn) grab(ctx context.Context, w, h int) ([]byte, int, error) {
	return c.grabArea(ctx, image.Rect(0, 0, w, h))
}

// grabArea captures r (inside the screen) as a ZPixmap of stride bytes
// per row, through MIT-SHM when the server can attach our segment and core
// GetImage otherwise. The bytes are valid until the next grab or
// ReleaseFrame. Called with the capture lock held.
func (c *conn) grabArea(ctx context.Context, r image.Rectangle) ([]byte, int, error) {
	stride := c.format.stride(r.Dx())
	if !c.shmOff {
		src, err := c.grabSHM(ctx, r, stride)
		switch {
		case err == nil:
			return src, stride, nil
		case errors.Is(err, errSHM):
			// Remembered for this connection: the X server will not
			// change its IPC namespace while we talk to it.
			c.shmOff = true
		default:
			return nil, 0, err
		}
	}
	src, err := c.grabCore(ctx, r, stride)
	return src, stride, err
}

// screenFrame is a grabbed ZPixmap as the screenshot path reads it: the
// bytes themselves on the common pixel format, otherwise converted into
// the connection's reused RGBA buffer. Called with the capture lock held.
func (c *conn) screenFrame(src []byte, stride, w, h int) frame {
	if c.format.readsBGRX() {
		return frame{pix: src, stride: stride, w: w, h: h, bgr: true}
	}
	if cap(c.rgba) < 4*w*h {
		c.rgba = make([]byte, 4*w*h)
	}
	img := &image.RGBA{Pix: c.rgba[: 4*w*h : 4*w*h], Stride: 4 * w, Rect: image.Rect(0, 0, w, h)}
	c.format.toRGBA(img, src, stride)
	return rgbaFrame(img)
}

// grabSHM captures into the connection's shared-memory segment. Called
// with the capture lock held.
func (c *conn) grabSHM(ctx context.Context, r image.Rectangle, stride int) ([]byte, error) {
	size := stride * r.Dy()
	if c.seg != nil && len(c.seg.data) < size {
		c.seg.release(c.x)
		c.seg = nil
	}
	if c.seg == nil {
		seg, err := newSHMSegment(ctx, c.x, size)
		if err != nil {
			if c.lost(err) || ctx.Err() != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errSHM, err)
		}
		c.seg = seg
	}
	cookie := shm.GetImage(c.x, xproto.Drawable(c.root), int16(r.Min.X), int16(r.Min.Y), uint16(r.Dx()), uint16(r.Dy()),
		0xffffffff, xproto.ImageFormatZPixmap, c.seg.seg, 0)
	if _, err := await(ctx, cookie.Reply); err != nil {
		if isXError(err) {
			return nil, fmt.Errorf("%w: shm get image: %w", errSHM, err)
		}
		return nil, fmt.Errorf("shm get image: %w", err)
	}
	return c.seg.data[:size:size], nil
}

// grabCore captures through core GetImage: the whole image travels over the
// socket (8 MB for 1920x1080), about 9 ms instead of 1.5, into a buffer xgb
// allocates for every reply.
func (c *conn) grabCore(ctx context.Context, r image.Rectangle, stride int) ([]byte, error) {
	h := r.Dy()
	cookie := xproto.GetImage(c.x, xproto.ImageFormatZPixmap, xproto.Drawable(c.root),
		int16(r.Min.X), int16(r.Min.Y), uint16(r.Dx()), uint16(h), 0xffffffff)
	// The raw reply avoids xgb copying 8 MB into a second slice: a GetImage
	// reply is a 32-byte header followed by the pixels.
	raw, err := await(ctx, cookie.Cookie.Reply)
	if err != nil {
		return nil, fmt.Errorf("get image: %w", err)
	}
	if len(raw) < 32+stride*h {
		return nil, fmt.Errorf("get image: reply of %d bytes for %dx%d", len(raw), r.Dx(), h)
	}
	return raw[32 : 32+stride*h], nil
}
