// Package drumscli is the drums command: the table of its commands, each
// one's flags read into a config and the run of that config, usage and exit
// statuses. The work is the other packages' (sessions, provider, tasks,
// compat, internal/mainjob); cmd/drums is Main and nothing else. Commands
// exist on Linux only, where desktops do.
package drumscli
