package testutil

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
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
	// Runs before StartCmd's cleanup (cleanups run last-in first-out).
	t.Cleanup(func() {
		p.Kill()
		removeDisplayFiles(line, p.Cmd.Process.Pid)
	})
	return &X{Display: ":" + line, Width: width, Height: height, Proc: p}
}

// removeDisplayFiles removes the socket (and, without -displayfd, the lock
// file) that a killed Xvfb (pid) leaves for display n, unless another server
// has taken the display over since: its lock then names another pid, and it
// listens on the display's abstract socket too.
func removeDisplayFiles(n string, pid int) {
	lock := "/tmp/.X" + n + "-lock"
	if data, err := os.ReadFile(lock); err == nil {
		if strings.TrimSpace(string(data)) != strconv.Itoa(pid) {
			return
		}
		os.Remove(lock)
	}
	if c, err := net.Dial("unix", "@/tmp/.X11-unix/X"+n); err == nil {
		c.Close()
		return
	}
	os.Remove("/tmp/.X11-unix/X" + n)
}
