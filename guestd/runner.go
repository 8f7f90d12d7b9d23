package guestd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// Children are started the way Python's subprocess starts them, so that a
// client sees the same errors: argv[0] is tried in every PATH directory of
// the child's environment (the first error other than "not found" wins),
// a bad working directory is reported with its own name, a NUL anywhere is
// "embedded null byte", an empty argv is "list index out of range".

var (
	errEmptyArgv = errors.New("list index out of range")
	errNulByte   = errors.New("embedded null byte")
)

// proc describes one child.
type proc struct {
	argv []string
	dir  string
	env  []string
	// stdout and stderr are inherited files; nil means /dev/null.
	stdout, stderr *os.File
}

// start starts p and returns the running command.
func (p proc) start() (*exec.Cmd, error) {
	if len(p.argv) == 0 {
		return nil, errEmptyArgv
	}
	for _, s := range append(append([]string{p.dir}, p.argv...), p.env...) {
		if strings.IndexByte(s, 0) >= 0 {
			return nil, errNulByte
		}
	}
	if p.dir != "" {
		// Python names the directory when the child's chdir fails; Go's
		// fork reports the same errno without saying which call failed.
		st, err := os.Stat(p.dir)
		switch {
		case err != nil:
			return nil, pyvalue.AsOSError(err, p.dir)
		case !st.IsDir():
			return nil, pyvalue.NewOSError(syscall.ENOTDIR, p.dir)
		}
	}
	var saved, last syscall.Errno
	for _, cand := range p.candidates() {
		var errno syscall.Errno
		// A candidate that stat says is missing would fail execve the
		// same way; skipping it saves a fork. Relative ones are relative
		// to the child's directory.
		where := cand
		if !strings.HasPrefix(cand, "/") && p.dir != "" {
			where = p.dir + "/" + cand
		}
		if _, err := os.Stat(where); err != nil && errors.As(err, &errno) &&
			(errno == syscall.ENOENT || errno == syscall.ENOTDIR) {
			last = errno
			continue
		}
		cmd := &exec.Cmd{Path: cand, Args: p.argv, Dir: p.dir, Env: p.env}
		// Left nil (not a nil *os.File) they mean /dev/null.
		if p.stdout != nil {
			cmd.Stdout = p.stdout
		}
		if p.stderr != nil {
			cmd.Stderr = p.stderr
		}
		err := cmd.Start()
		if err == nil {
			return cmd, nil
		}
		if !errors.As(err, &errno) {
			return nil, fmt.Errorf("start %s: %w", cand, err)
		}
		last = errno
		if errno != syscall.ENOENT && errno != syscall.ENOTDIR && saved == 0 {
			saved = errno
		}
	}
	if saved == 0 {
		saved = last
	}
	return nil, pyvalue.NewOSError(saved, p.argv[0])
}

// candidates are the paths execvp-style lookup tries for argv[0], in order.
func (p proc) candidates() []string {
	name := p.argv[0]
	if strings.Contains(name, "/") {
		return []string{name}
	}
	path, ok := lookupEnv(p.env, "PATH")
	if !ok {
		path = "/bin:/usr/bin" // os.defpath
	}
	var out []string
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			out = append(out, name) // os.path.join("", name)
		} else {
			out = append(out, strings.TrimSuffix(dir, "/")+"/"+name)
		}
	}
	return out
}

// lookupEnv finds key in an environment list; the last entry wins, as in
// the child.
func lookupEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// captured is what a blocking run collected.
type captured struct {
	stdout, stderr []byte
	code           int // Python's returncode: the exit status, or -N for signal N
}

// errTimedOut is returned by runCaptured when the timeout expired; callers
// word the message the way their endpoint does.
var errTimedOut = fmt.Errorf("child %w", ErrTimeout)

// runOptions tune a blocking run.
type runOptions struct {
	timeout   time.Duration
	noTimeout bool // wait for ever (run_bash_script with "timeout": null)
	merge     bool // stderr into the stdout pipe, as stderr=STDOUT
}

// runCaptured runs p to completion with stdout and stderr captured, like
// subprocess.run(capture_output=True, timeout=...): it returns only when
// the child has exited and every holder of the pipes (grandchildren
// included) has closed them, or when the timeout expires or ctx ends, in
// which case the child alone is killed (SIGKILL) and reaped, as Python
// does on a timeout. What a client asked to run (/execute, /run_python,
// /run_bash_script) gets a context without cancel and runs to its end as
// upstream's does, client gone or not; checks and polls whose only product
// is the answer get the request's context.
func runCaptured(ctx context.Context, p proc, opt runOptions) (captured, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return captured{}, fmt.Errorf("create stdout pipe: %w", err)
	}
	defer outR.Close()
	errR, errW := outR, outW
	if !opt.merge {
		if errR, errW, err = os.Pipe(); err != nil {
			outW.Close()
			return captured{}, fmt.Errorf("create stderr pipe: %w", err)
		}
		defer errR.Close()
	}
	p.stdout, p.stderr = outW, errW
	cmd, err := p.start()
	outW.Close()
	if !opt.merge {
		errW.Close()
	}
	if err != nil {
		return captured{}, err
	}

	var res captured
	var wg sync.WaitGroup
	read := func(dst *[]byte, r *os.File) {
		defer wg.Done()
		*dst, _ = io.ReadAll(r)
	}
	wg.Add(1)
	go read(&res.stdout, outR)
	if !opt.merge {
		wg.Add(1)
		go read(&res.stderr, errR)
	}
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	exited := make(chan error, 1)
	// The exit status is read from ProcessState; Wait's error adds nothing.
	go func() { exited <- cmd.Wait() }()

	var expired <-chan time.Time
	if !opt.noTimeout {
		t := time.NewTimer(opt.timeout)
		defer t.Stop()
		expired = t.C
	}
	// stop kills and reaps the child. Closing our read ends (deferred)
	// ends the readers; a grandchild that still holds the pipes gets EPIPE
	// later.
	stop := func(err error) (captured, error) {
		if exited != nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		return captured{}, err
	}
	for done := false; !done; {
		select {
		case <-drained:
			drained = nil
		case <-exited:
			exited = nil
		case <-expired:
			return stop(errTimedOut)
		case <-ctx.Done():
			return stop(fmt.Errorf("run %s: %w", p.argv[0], ctx.Err()))
		}
		done = drained == nil && exited == nil
	}
	res.code = exitCode(cmd)
	return res, nil
}

// exitCode is Popen.returncode: the exit status, or minus the signal.
func exitCode(cmd *exec.Cmd) int {
	st := cmd.ProcessState
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -int(ws.Signal())
	}
	return st.ExitCode()
}

// runInherited runs p to completion with its output on the server's own
// stdout and stderr (subprocess.run without capture) and returns its exit
// code.
func runInherited(p proc) (int, error) {
	cmd, err := p.start()
	if err != nil {
		return 0, err
	}
	_ = cmd.Wait() // a non-zero status is an exit code, not an error here
	return exitCode(cmd), nil
}

// startDetached starts p without waiting for it (subprocess.Popen) and
// reaps it in the background so no zombie is left.
func startDetached(p proc) error {
	cmd, err := p.start()
	if err != nil {
		return err
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
