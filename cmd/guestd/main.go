// Command guestd serves OSWorld's guest HTTP API (upstream's
// desktop_env/server/main.py) for the X display it is given: inside a drums
// desktop, or dropped into a real OSWorld VM in place of main.py. It is
// internal/guestdcli's Main.
package main

import (
	"os"

	"github.com/drums-dev/drums/internal/guestdcli"
)

func main() { os.Exit(guestdcli.Main(os.Args[1:], os.Getenv, os.Stdout, os.Stderr)) }
