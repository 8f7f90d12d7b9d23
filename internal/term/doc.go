// Package term is the host's side of an interactive shell inside a desktop
// (drums session shell): it tells a terminal from a pipe, puts a terminal in
// raw mode and back, and reports its size as the user resizes it. It knows
// nothing of sessions; the caller carries the sizes to the desktop's pty.
package term
