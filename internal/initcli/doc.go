// Package initcli is drums-init's command line: the session's init and
// the accessibility check it runs inside the desktop (sessions.RunInit,
// sessions.RunA11yReady), dispatched before anything else. It links the
// session engine only, and no more: every desktop carries a drums-init
// process, and whatever a package initialises when linked (the daemon's
// HTTP, metrics, templates, the task suite) would be heap in each of them.
package initcli
