//go:build linux

// Command drums runs desktops for computer-use agents: the provider daemon,
// the session engine's CLI, the task-compat suite and the compat harness. The
// hidden "init" subcommand is the privileged child that becomes PID 1 of a
// session; it is dispatched before anything else.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand: run gets the arguments after its name.
type command struct {
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string) error
}

// commands lists every subcommand. Each lives in its own file.
var commands = map[string]command{}

func main() {
	dispatchInit() // first: a session's init must start with nothing else running
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		if len(os.Args) < 2 {
			os.Exit(2)
		}
		return
	}
	name := os.Args[1]
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "drums: unknown command %q\n\n", name)
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cmd.run(ctx, os.Args[2:])
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return // the command printed its usage, as asked
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "drums %s: %v\n", name, err)
		if errors.As(err, new(usageError)) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a bad command line: drums exits 2 for it, as for an
// unknown command, and 1 when a command fails.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// badUsage marks err, if any, as a bad command line.
func badUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageError{err}
}

func usage() {
	var b strings.Builder
	b.WriteString("drums: Linux desktops for computer-use agents, without virtual machines.\n\nUsage: drums COMMAND [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-10s %s\n", n, commands[n].summary)
	}
	b.WriteString("\nRun 'drums COMMAND --help' for a command's flags.\n")
	fmt.Fprint(os.Stderr, b.String())
}
