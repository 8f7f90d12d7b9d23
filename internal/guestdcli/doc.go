// Package guestdcli is the guestd command: its flags, read into one config,
// and the server they describe, which wires the real X connection
// (internal/x11), the native pyautogui (internal/pyauto) and the AT-SPI
// reader (atspi) into package guestd, and gives memory back while no
// request is in flight. cmd/guestd is Main and nothing else.
package guestdcli
