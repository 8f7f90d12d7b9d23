// Command drums runs desktops for computer-use agents: the provider daemon,
// the session engine's CLI, the task-compat suite and the compat harness.
// It is internal/drumscli's Main, which dispatches the hidden commands the
// engine re-executes drums as (a session's init, its accessibility check)
// before anything else.
package main

import (
	"os"

	"github.com/drums-dev/drums/internal/drumscli"
)

func main() { os.Exit(drumscli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
