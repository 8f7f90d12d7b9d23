// Package ready waits for a daemon to say that it is ready: the first line
// it prints on a descriptor (Xvfb's -displayfd, dbus-daemon's
// --print-address) or a D-Bus name gaining an owner. Every wait ends on
// what the daemon does, on its exit or on the context, never after a sleep.
// sessions' init and internal/testutil share it; it knows neither.
package ready
