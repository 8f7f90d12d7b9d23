package tasks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/drums-dev/drums/internal/childproc"
	"github.com/drums-dev/drums/provider/client"
)

// Daemon is a provider daemon a command talks to: one that was already
// running, or `drums serve` started by this process (then Stop ends it).
type Daemon struct {
	Client  *client.Client
	Socket  string
	Started bool   // this process started it
	Log     string // its log, when started here
	cmd     *exec.Cmd
	exited  chan struct{}
}

// daemonReadyTimeout bounds a started daemon's start (adopting and sweeping
// leftovers, then listening). It must stay above a sweep of a crashed run's
// desktops on a loaded machine (~30 s).
const daemonReadyTimeout = 2 * time.Minute

// healthTimeout bounds the probe of an existing daemon.
const healthTimeout = 3 * time.Second

// EnsureDaemon returns the daemon answering on socket, or starts one with
// `exe serve --socket SOCKET args...` (its output going to logPath) and
// waits until it says it is ready.
func EnsureDaemon(ctx context.Context, exe, socket string, args []string, logPath string) (*Daemon, error) {
	c, err := client.New(socket, "")
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, healthTimeout)
	_, herr := c.Health(hctx)
	cancel()
	if herr == nil {
		return &Daemon{Client: c, Socket: socket}, nil
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, fmt.Errorf("create daemon log dir: %w", err)
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open daemon log: %w", err)
	}
	cmd := exec.Command(exe, append([]string{"serve", "--socket", socket}, args...)...)
	cmd.Stderr = logf
	// The daemon must outlive nothing of ours: it dies with this process.
	cmd.SysProcAttr = childproc.SysProcAttr(syscall.SIGTERM)
	// A pipe of our own rather than StdoutPipe: Wait must not close it
	// while the ready line is still being read.
	out, w, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("daemon stdout: %w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		out.Close()
		logf.Close()
		return nil, fmt.Errorf("start %s serve: %w", exe, err)
	}
	d := &Daemon{Client: c, Socket: socket, Started: true, Log: logPath, cmd: cmd, exited: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		// The daemon's stdout is copied into its log; the log closes when
		// the daemon does.
		defer logf.Close()
		defer out.Close()
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !said && strings.HasPrefix(sc.Text(), "drums serve: ready") {
				said = true
				close(ready)
			}
		}
	}()
	go func() { _ = cmd.Wait(); close(d.exited) }()
	t := time.NewTimer(daemonReadyTimeout)
	defer t.Stop()
	select {
	case <-ready:
		return d, nil
	case <-d.exited:
		return nil, fmt.Errorf("drums serve exited before it was ready (%s): %s", cmd.ProcessState, tail(logPath, 800))
	case <-t.C:
		_ = d.Stop()
		return nil, fmt.Errorf("drums serve not ready within %s (log %s)", daemonReadyTimeout, logPath)
	case <-ctx.Done():
		_ = d.Stop()
		return nil, ctx.Err()
	}
}

// daemonStopTimeout bounds a started daemon's drain on SIGTERM (removing its
// desktops); it must stay above removing a full pool (~10 s).
const daemonStopTimeout = time.Minute

// Stop ends a daemon this process started (SIGTERM, then SIGKILL); for one
// that was already running it does nothing.
func (d *Daemon) Stop() error {
	d.Client.Close()
	if !d.Started {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(daemonStopTimeout):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.exited
		return errors.New("drums serve did not stop on SIGTERM; killed")
	}
}

// tail is the end of a log file, for an error message.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}
