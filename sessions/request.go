package sessions

import "reflect"

// withDefaults is r with what its zero fields take on an engine of cfg:
// the screen, the guest port, the image's name and the limits. A plan is
// made from it, and requests are compared by it (sameDesktop).
func (r Request) withDefaults(cfg Config) Request {
	if r.Width == 0 && r.Height == 0 {
		r.Width, r.Height = DefaultWidth, DefaultHeight
	}
	if r.Depth == 0 {
		r.Depth = DefaultDepth
	}
	if r.GuestPort == 0 {
		r.GuestPort = DefaultGuestPort
	}
	r.Image = r.image(cfg)
	r.Limits = r.Limits.or(cfg.Limits)
	if len(r.Binds) == 0 {
		r.Binds = nil
	}
	return r
}

// image is the name of the image r asks for: the engine's default when
// it names none.
func (r Request) image(cfg Config) string {
	if r.Image == "" {
		return cfg.Image
	}
	return r.Image
}

// sameDesktop reports whether requests a and b ask an engine of cfg for
// the same desktop, the image aside: a name and an id (or two names) may
// be the same image, which only the store can say, and a name may point
// at another image by now. The spares' request (spare_linux.go) is
// compared so, not their plan: a plan differs from any other in its id,
// slot, addresses, ids and paths, and masking them all is a list that
// would have to follow every field added to Plan, where Request's fields
// are the choices a caller has.
func sameDesktop(cfg Config, a, b Request) bool {
	a, b = a.withDefaults(cfg), b.withDefaults(cfg)
	a.Image, b.Image = "", ""
	return reflect.DeepEqual(a, b)
}
