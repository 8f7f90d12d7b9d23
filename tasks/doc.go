// Package tasks runs OSWorld task files on drums desktops and reports, task
// by task, whether drums can serve them: a runner over desktops leased from
// the provider daemon (or OSWorld's own DesktopEnv with --via-python), what
// each task requires, the reference solutions, the report, the built-in
// tasks and the `drums run` episode. OSWorld's own semantics (setup steps,
// getters, metrics) are package tasks/osworld. It talks to desktops only
// through the guest API and the provider client, never through sessions
// internals.
package tasks
