// Package x11 is guestd's one connection to its desktop's X server, over
// jezek/xgb: full-screen capture (MIT-SHM, core GetImage as fallback) with the
// cursor composited the way OSWorld's server draws it, encoded as a PNG that
// is kept and re-encoded only where the DAMAGE extension says the screen
// changed; pointer and window queries, and input through XTEST, including
// Unicode typing by remapping spare keycodes; and, for a live view, a
// Watcher on a connection of its own that follows the screen's changes. It
// never shells out (no scrot, no xdotool) and knows nothing of HTTP, RFB or
// pyautogui.
package x11
