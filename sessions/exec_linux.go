package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// status asks init how the stack processes are.
func (e *Engine) status(ctx context.Context, rec *record) (map[string]string, error) {
	conn, err := dialControl(rec.Plan.Root.Control, rec.Session.InitPID)
	if err != nil {
		return nil, err
	}
	defer conn.close()
	stop := context.AfterFunc(ctx, conn.close)
	defer stop()
	if err := conn.send(ctlMsg{Op: "status"}); err != nil {
		return nil, err
	}
	m, fds, err := conn.recv()
	closeFds(fds)
	if err != nil {
		return nil, err
	}
	return m.Procs, nil
}

// copyWait bounds how long Exec waits, after the process exited, for its
// output to drain: a background child that inherited stdout would otherwise
// hold Exec forever (as exec.Cmd's WaitDelay does).
const copyWait = 2 * time.Second

// Exec runs argv inside a ready session, as the user or root, and returns
// when it exits. Cancelling ctx kills its process group.
func (e *Engine) Exec(ctx context.Context, id string, argv []string, opts ExecOptions) (ExecResult, error) {
	if len(argv) == 0 {
		return ExecResult{}, fmt.Errorf("exec: empty command: %w", ErrBadRequest)
	}
	rec, lk, err := e.ready(ctx, id)
	if err != nil {
		return ExecResult{}, err
	}
	control, pid := rec.Plan.Root.Control, rec.Session.InitPID
	lk.unlock() // a reset or removal may proceed: the process dies with the session
	conn, err := dialControl(control, pid)
	if err != nil {
		return ExecResult{}, err
	}
	defer conn.close()
	// Cancelling closes the connection; init then kills what it started.
	stop := context.AfterFunc(ctx, conn.close)
	defer stop()

	req := ctlMsg{Op: "exec", Argv: argv, Env: opts.Env, Dir: opts.Dir, User: opts.User, TTY: opts.TTY}
	var fds []int
	var copies sync.WaitGroup
	var closeAfter []*os.File
	defer func() {
		for _, f := range closeAfter {
			f.Close()
		}
	}()
	if !opts.TTY {
		files, err := stdioFiles(opts, &copies, &closeAfter)
		if err != nil {
			return ExecResult{}, err
		}
		for _, f := range files {
			fds = append(fds, int(f.Fd()))
		}
	}
	if err := conn.send(req, fds...); err != nil {
		return ExecResult{}, err
	}
	// The child has its copies now; ours must close for EOF to reach readers.
	for _, f := range closeAfter {
		f.Close()
	}
	closeAfter = nil
	reply, got, err := conn.recv()
	if err != nil {
		closeFds(got)
		if ctx.Err() != nil {
			return ExecResult{}, fmt.Errorf("exec %s in %s: %w", argv[0], id, ctx.Err())
		}
		return ExecResult{}, err
	}
	if reply.Error != "" {
		closeFds(got)
		return ExecResult{}, fmt.Errorf("exec %s in %s: %s", argv[0], id, reply.Error)
	}
	if opts.TTY {
		if len(got) != 1 {
			closeFds(got)
			return ExecResult{}, fmt.Errorf("exec %s in %s: no terminal received", argv[0], id)
		}
		master := os.NewFile(uintptr(got[0]), "ptmx")
		defer master.Close()
		copies.Add(1)
		go func() { defer copies.Done(); copyOut(opts.Stdout, master) }()
		if opts.Stdin != nil {
			go io.Copy(master, opts.Stdin)
		}
		if opts.Resize != nil {
			go func() {
				for sz := range opts.Resize {
					unix.IoctlSetWinsize(int(master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: sz.Rows, Col: sz.Cols})
				}
			}()
		}
	}

	type result struct {
		m   ctlMsg
		err error
	}
	end := make(chan result, 1)
	go func() {
		m, fds, err := conn.recv()
		closeFds(fds)
		end <- result{m, err}
	}()
	select {
	case r := <-end:
		if r.err != nil || !r.m.Exited {
			return ExecResult{}, fmt.Errorf("exec %s in %s: the session ended: %v", argv[0], id, r.err)
		}
		waitCopies(&copies)
		return ExecResult{ExitCode: r.m.ExitCode, Signal: r.m.SigName}, nil
	case <-ctx.Done():
		// Hanging up makes init kill the process group.
		return ExecResult{}, fmt.Errorf("exec %s in %s: %w", argv[0], id, ctx.Err())
	}
}

// stdioFiles turns opts' streams into the three descriptors the process
// gets: *os.File values pass as they are, other readers and writers
// through pipes copied here, missing ones are /dev/null.
func stdioFiles(opts ExecOptions, copies *sync.WaitGroup, closeAfter *[]*os.File) ([]*os.File, error) {
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open /dev/null: %w", err)
	}
	*closeAfter = append(*closeAfter, devnull)
	var files []*os.File
	if f, ok := opts.Stdin.(*os.File); ok {
		files = append(files, f)
	} else if opts.Stdin == nil {
		files = append(files, devnull)
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		*closeAfter = append(*closeAfter, r)
		go func() { io.Copy(w, opts.Stdin); w.Close() }()
		files = append(files, r)
	}
	for _, out := range []io.Writer{opts.Stdout, opts.Stderr} {
		if f, ok := out.(*os.File); ok {
			files = append(files, f)
			continue
		}
		if out == nil {
			files = append(files, devnull)
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("output pipe: %w", err)
		}
		*closeAfter = append(*closeAfter, w)
		copies.Add(1)
		go func() { defer copies.Done(); copyOut(out, r); r.Close() }()
		files = append(files, w)
	}
	return files, nil
}

// copyOut copies until EOF; a terminal's master reads EIO once the last
// process holding the terminal is gone, which is its EOF.
func copyOut(w io.Writer, r io.Reader) {
	if w == nil {
		w = io.Discard
	}
	if _, err := io.Copy(w, r); err != nil && !errors.Is(err, unix.EIO) {
		return
	}
}

func waitCopies(copies *sync.WaitGroup) {
	done := make(chan struct{})
	go func() { copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(copyWait):
	}
}
