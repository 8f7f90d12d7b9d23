package rfb

import "errors"

var (
	// ErrProtocol means the viewer sent something RFB does not allow, or
	// that this server does not support (a colour map, an unknown
	// message); the connection ends.
	ErrProtocol = errors.New("rfb protocol error")
	// ErrClosed is returned by Serve after Close.
	ErrClosed = errors.New("rfb server closed")
)
