// Package rfb is the server side of the remote framebuffer protocol (RFB
// 3.8, RFC 6143) as a live view of one desktop needs it: security type
// None, what changed in Raw or, for viewers that ask as noVNC does,
// lossless Tight (tight.go), DesktopSize, and pointer and key events
// passed to an input injector or dropped (view-only). It serves any
// number of viewers from one copy of the screen, which it opens when the
// first viewer arrives and closes when the last one leaves. It knows
// nothing of X, WebSockets or HTTP: the screen and the input come in
// through small interfaces, the viewer as a byte stream.
package rfb
