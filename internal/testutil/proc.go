package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/ready"
)

// ReadyTimeout bounds how long a daemon may take to say it is ready. It must
// stay well above Xvfb's worst start on a loaded 2-core CI machine (~1 s)
// and below the test timeout.
const ReadyTimeout = 30 * time.Second

// Proc is a process started for a test. It runs in its own process group and
// dies with the test binary (Pdeathsig); Start registers a cleanup that kills
// the group and reaps it.
type Proc struct {
	Cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start runs name with args and env (added to a minimal environment) and
// registers its removal. Output goes to the test log only on failure.
func Start(t testing.TB, env []string, name string, args ...string) *Proc {
	t.Helper()
	return StartCmd(t, Command(env, name, args...))
}

// Command builds an *exec.Cmd with the conventions of Start, for callers that
// need extra files or pipes before starting it.
func Command(env []string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(baseEnv(), env...)
	cmd.SysProcAttr = sysProcAttr()
	return cmd
}

// StartCmd starts a prepared command (see Command) and registers its removal.
func StartCmd(t testing.TB, cmd *exec.Cmd) *Proc {
	t.Helper()
	log := &lockedBuffer{}
	if cmd.Stdout == nil {
		cmd.Stdout = log
	}
	if cmd.Stderr == nil {
		cmd.Stderr = log
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	p := &Proc{Cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() && log.Len() > 0 {
			t.Logf("output of %s:\n%s", strings.Join(cmd.Args, " "), log.String())
		}
	})
	return p
}

// Kill kills the process group and waits for the process. Idempotent.
func (p *Proc) Kill() {
	if p.Cmd.Process != nil {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the process's exit error once Done is closed.
func (p *Proc) Err() error { <-p.done; return p.err }

// readyLine is the first line the process prints on r (see ready.Line),
// with its exit status in the error when it exits first.
func (p *Proc) readyLine(ctx context.Context, r io.Reader) (string, error) {
	line, err := ready.Line(ctx, r, p.done)
	if errors.Is(err, ready.ErrExited) {
		return "", fmt.Errorf("%s exited before it was ready: %v", p.Cmd.Path, p.err)
	}
	return line, err
}

// baseEnv is the environment every test process starts from: enough to find
// programs and nothing from the ambient desktop (no DISPLAY, no session bus).
func baseEnv() []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		"LANG=C.UTF-8",
		"HOME=" + os.Getenv("HOME"),
		"NO_AT_BRIDGE=0",
	}
}

// WithTimeout returns a context bounded by ReadyTimeout and the test deadline.
func WithTimeout(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	t.Cleanup(cancel)
	return ctx
}
