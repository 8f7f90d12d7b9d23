package x11

import "errors"

var (
	// ErrNoDisplay is returned by Open for an empty display name.
	ErrNoDisplay = errors.New("no X display given")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("x11 display closed")
	// ErrNoClientList means the root window has no _NET_CLIENT_LIST (no
	// EWMH window manager); upstream answers /window_size with a 500 then.
	ErrNoClientList = errors.New("_NET_CLIENT_LIST is not set on the root window")
	// ErrNoXTest means the X server lacks the XTEST extension, so no input
	// can be sent.
	ErrNoXTest = errors.New("X server lacks the XTEST extension")
	// ErrNoSpareKeycode means every keycode is bound and held, so a keysym
	// the keymap lacks cannot be typed.
	ErrNoSpareKeycode = errors.New("no spare keycode to bind a keysym to")
	// ErrPixelFormat means the screen's pixel format is not one Capture
	// converts (it handles 16, 24 and 32 bits per pixel with channel masks).
	ErrPixelFormat = errors.New("unsupported X pixel format")
	// ErrNoDamage means the X server lacks the DAMAGE or XFixes
	// extension, which a Watcher follows the screen by.
	ErrNoDamage = errors.New("X server lacks the DAMAGE or XFixes extension")
	// ErrCoordinate means a pointer coordinate does not fit the protocol's
	// signed 16-bit field.
	ErrCoordinate = errors.New("pointer coordinate outside the X protocol's 16-bit range")
)
