// Package client talks to a desktop's guest server (guestd, or OSWorld's
// own main.py) over HTTP, as OSWorld's PythonController and
// SetupController do: screenshot, execute, accessibility, files, uploads,
// window and setup calls, each with that call's retries, plus Do for a raw
// request and its whole answer. It knows nothing of guestd's server code
// (a dependency test keeps it so), which is why the host side (provider,
// tasks, compat, drums run) may use it.
package client
