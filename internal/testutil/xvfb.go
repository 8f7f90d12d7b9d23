package testutil

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// X is a private X server started for one test.
type X struct {
	Display string // ":N"
	Width   int
	Height  int
	Proc    *Proc
}

// Env is the environment entry that points a client at this server.
func (x *X) Env() string { return "DISPLAY=" + x.Display }

// StartXvfb starts Xvfb on a free display at width×height×24. It is ready when
// Xvfb writes its display number to -displayfd, which it does only after it
// accepts connections. -noreset keeps root-window properties (the AT-SPI bus
// address among them) when the last client leaves.
func StartXvfb(t testing.TB, width, height int) *X {
	t.Helper()
	return StartXvfbOn(t, nil, "", width, height)
}

// StartXvfbOn is StartXvfb under the command prefix wrap (such as unshare
// --ipc, which execs Xvfb), on display when it is not empty (to restart a
// server in place).
func StartXvfbOn(t testing.TB, wrap []string, display string, width, height int) *X {
	t.Helper()
	Tier1(t, "Xvfb")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("pipe: %v", err)
	}
	args := append(append([]string{}, wrap...), "Xvfb")
	if display != "" {
		args = append(args, display)
	}
	args = append(args, "-displayfd", "3", "-noreset", "-nolisten", "tcp",
		"-screen", "0", fmt.Sprintf("%dx%dx24", width, height))
	cmd := Command(nil, args[0], args[1:]...)
	cmd.ExtraFiles = []*os.File{w}
	p := StartCmd(t, cmd)
	w.Close()
	defer r.Close()
	line, err := p.readyLine(WithTimeout(t), r)
	if err != nil {
		t.Fatalf("Xvfb: %v", err)
	}
	if _, err := strconv.Atoi(line); err != nil {
		t.Fatalf("Xvfb printed %q as its display", line)
	}
	return &X{Display: ":" + line, Width: width, Height: height, Proc: p}
}
