// Package guestd is OSWorld's guest HTTP API (the upstream Flask main.py)
// reimplemented in Go: command execution, screenshots and input, files,
// windows, recording, accessibility and the terminal, answered byte for byte
// as upstream answers them where clients can tell, except that it refuses
// what a web page could send (a foreign Origin, a Host that is a name; see
// origin.go), which upstream serves; and, on a listener of its own, the
// live view that OSWorld's docker provider has on port 8006 (live.go). It
// runs inside one desktop and knows nothing of namespaces, sessions or the
// provider daemon; the X server, the input injector, the accessibility
// source and the live view's RFB server come in through small interfaces.
package guestd
