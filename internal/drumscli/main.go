//go:build linux

package drumscli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// Main runs drums with args (the command line after the program name) and
// returns its exit status: 0 when the command succeeded or printed the
// usage asked for, 2 for a bad command line, 1 when the command failed, or
// the status of the command that drums session exec or drums image run ran.
// The hidden command (drums image run's init) returns its own.
func Main(args []string, stdin, stdout, stderr *os.File) int {
	cmds := commands()
	// First: drums image run's init must start with no signal
	// handler and no goroutine of ours.
	if len(args) > 0 {
		if c := find(cmds, args[0]); c != nil && c.child != nil {
			return c.child(args[1:])
		}
	}
	if len(args) == 0 || isHelp(args[0]) {
		printUsage(stderr, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c := find(cmds, args[0])
	if c == nil {
		fmt.Fprintf(stderr, "drums: unknown command %q\n\n", args[0])
		printUsage(stderr, cmds)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return exitStatus(stderr, c.name, c.exec(ctx, args[1:], stdio{in: stdin, out: stdout, err: stderr}))
}

// stdio is a command's standard streams: files, which a command run in a
// desktop gets, and a shell's terminal is.
type stdio struct{ in, out, err *os.File }

// command is one of drums' commands, which gets the arguments after its
// name: run does it, or it has subcommands (group). A hidden command has a
// child instead: a process the engine starts by re-executing drums, which
// exits with what child returns.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, s stdio) error
	group         *group
	child         func(args []string) int
}

func (c *command) exec(ctx context.Context, args []string, s stdio) error {
	if c.group != nil {
		return c.group.run(ctx, args, s)
	}
	return c.run(ctx, args, s)
}

func find(cmds []command, name string) *command {
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	return &cmds[i]
}

func isHelp(arg string) bool { return arg == "-h" || arg == "--help" || arg == "help" }

func printUsage(w io.Writer, cmds []command) {
	var b strings.Builder
	b.WriteString("drums: Linux desktops for computer-use agents, without virtual machines.\n\nUsage: drums COMMAND [flags]\n\nCommands:\n")
	var listed []command
	for _, c := range cmds {
		if c.child == nil {
			listed = append(listed, c)
		}
	}
	slices.SortFunc(listed, func(a, b command) int { return strings.Compare(a.name, b.name) })
	for _, c := range listed {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'drums COMMAND --help' for a command's flags.\n")
	fmt.Fprint(w, b.String())
}

// usageError is a bad command line: drums exits 2 for it, as for an
// unknown command, and 1 when a command fails.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitError is the exit status, not 0, of the program that drums session
// exec or drums image run ran: drums exits with it and adds nothing.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// exitStatus is the status drums exits with after command name returned
// err, which it reports on stderr.
func exitStatus(stderr io.Writer, name string, err error) int {
	var exit exitError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp): // the usage asked for is printed
		return 0
	case errors.As(err, &exit):
		return int(exit)
	}
	fmt.Fprintf(stderr, "drums %s: %v\n", name, err)
	if errors.As(err, new(usageError)) {
		return 2
	}
	return 1
}

// leaf is a command that reads its command line into a config, then runs
// it. An error from parse is a bad command line.
func leaf[C any](parse func(args []string, stderr io.Writer) (C, error), run func(context.Context, C, stdio) error) func(context.Context, []string, stdio) error {
	return func(ctx context.Context, args []string, s stdio) error {
		cfg, err := parse(args, s.err)
		if err != nil {
			return usageError{err}
		}
		return run(ctx, cfg, s)
	}
}

// group is a command of subcommands (drums session ls). Its usage is printed
// when asked for, with no subcommand and with an unknown one.
type group struct {
	usage string
	subs  []command
	// none is the error for no subcommand; unknown, the format of the one
	// for an unknown subcommand (%q: its name), after which usage is not
	// printed when terse.
	none, unknown string
	terse         bool
}

func (g group) run(ctx context.Context, args []string, s stdio) error {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(s.err, g.usage)
		if len(args) == 0 {
			return usageError{errors.New(g.none)}
		}
		return nil
	}
	c := find(g.subs, args[0])
	if c == nil {
		if !g.terse {
			fmt.Fprint(s.err, g.usage)
		}
		return usageError{fmt.Errorf(g.unknown, args[0])}
	}
	return c.exec(ctx, args[1:], s)
}

// newFlags is a command's flag set, writing its usage and errors to stderr.
func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}
