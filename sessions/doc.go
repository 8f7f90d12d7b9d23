// Package sessions turns "give me a desktop" into an isolated Linux desktop:
// a plan as data (an image, mounts, network slot, cgroups, ids, display,
// user), a privileged init child that applies it in new namespaces over a
// copy-on-write root, the desktop's processes in a user namespace of their
// own (joined through the host's busybox), the desktop stack inside, reset,
// removal and the sweep of leftovers. It imports no X11 or HTTP package:
// its one HTTP request is a raw HTTP/1.0 GET /screenshot (probeGuest).
package sessions
