// Command drums-init is what a drums desktop's init runs: the session
// engine re-executes it, with a hidden subcommand, as each desktop's PID 1,
// and init runs it inside the desktop for the accessibility check. It is
// internal/initcli's Main.
package main

import (
	"os"

	"github.com/drums-dev/drums/internal/initcli"
)

func main() { os.Exit(initcli.Main(os.Args[1:])) }
