//go:build linux

package initcli

import (
	"fmt"
	"os"

	"github.com/drums-dev/drums/sessions"
)

// Main runs drums-init with args (the command line after the program name)
// and returns its exit status: the subcommand's own, or 2 for a command
// line that names none.
func Main(args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case sessions.InitCommand:
			return sessions.RunInit(args[1:])
		case sessions.A11yCommand:
			return sessions.RunA11yReady(args[1:])
		case sessions.SystemManagerCommand:
			return sessions.RunSystemManager(args[1:])
		}
	}
	fmt.Fprintf(os.Stderr, "drums-init: the session engine runs this for each desktop (subcommands %s, %s, %s); make one with drums session create\n",
		sessions.InitCommand, sessions.A11yCommand, sessions.SystemManagerCommand)
	return 2
}
