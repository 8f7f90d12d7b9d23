// Command drums runs desktops for computer-use agents: the provider daemon,
// the session engine's CLI, the task-compat suite and the compat harness.
// It is internal/drumscli's Main, which dispatches the hidden command that
// drums image run re-executes drums as before anything else (a desktop's
// init is cmd/drums-init).
package main

import (
	"os"

	"github.com/drums-dev/drums/internal/drumscli"
)

func main() { os.Exit(drumscli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
