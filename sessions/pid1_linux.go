package sessions

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// reaper is init's wait loop (PID 1 of the session). It alone calls wait
// in init: every zombie of the session is reaped here (orphans included),
// and a process started through the forker gets its status on the channel
// the forker registered. No one may also
// wait on a child (the loop would steal the status).
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	sigs    chan os.Signal
}

func newReaper() *reaper {
	r := &reaper{waiters: map[int]chan unix.WaitStatus{}, sigs: make(chan os.Signal, 16)}
	signal.Notify(r.sigs, syscall.SIGCHLD)
	go r.loop()
	return r
}

func (r *reaper) loop() {
	for range r.sigs {
		r.reap()
	}
}

// reap collects every exited child without blocking.
func (r *reaper) reap() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		r.mu.Lock()
		ch := r.waiters[pid]
		delete(r.waiters, pid)
		r.mu.Unlock()
		if ch != nil {
			ch <- ws
		}
	}
}

// forker starts every process of the desktop from one locked OS thread of
// init. That thread, and only it, has unshared a cgroup namespace rooted at
// the session's cgroup and loaded the desktop's seccomp filter: a forked
// child inherits the forking thread's namespaces and filter. The thread
// stays locked for good, so the Go runtime never runs anything else on it.
type forker struct {
	reqs chan forkReq
	r    *reaper
}

type forkReq struct {
	name  string // for errors: the program, not busybox
	argv0 string
	argv  []string
	attr  *syscall.ProcAttr
	// cgroup, where set, is the cgroup (under /sys/fs/cgroup, the
	// thread's view) the child is moved into once forked; it waits for
	// that (spawn).
	cgroup string
	reply  chan forkResult
}

type forkResult struct {
	pid  int
	done <-chan unix.WaitStatus
	err  error
}

// startForker prepares the forking thread: a cgroup namespace of its own
// (rooted where init is by then: the session's cgroups) and the seccomp
// filter. With mountCgroup it also mounts the cgroup2 hierarchy at
// /sys/fs/cgroup in the desktop (CgroupPlan.Delegated): a cgroup2 mount
// is rooted at the mounting thread's cgroup namespace's root, so only
// this thread, once it has unshared, mounts the session's own subtree
// (init's other threads are, on a v1 host, in the namespace init was
// born with, rooted at the engine's cgroup).
func startForker(r *reaper, mountCgroup bool) (*forker, error) {
	f := &forker{reqs: make(chan forkReq), r: r}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread's namespace and filter differ
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			ready <- fmt.Errorf("unshare cgroup namespace: %w", err)
			return
		}
		if mountCgroup {
			if err := unix.Mount("cgroup2", cgroupRoot, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
				ready <- fmt.Errorf("mount cgroup2 on %s: %w", cgroupRoot, err)
				return
			}
		}
		if err := installSeccomp(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for req := range f.reqs {
			req.reply <- f.fork(req)
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	return f, nil
}

// fork runs on the forking thread. It holds the reaper's lock from before
// the fork until the child is registered, so a child that exits at once is
// still matched to its waiter.
func (f *forker) fork(req forkReq) forkResult {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	pid, err := syscall.ForkExec(req.argv0, req.argv, req.attr)
	if err != nil {
		return forkResult{err: fmt.Errorf("start %s: %w", req.name, err)}
	}
	ch := make(chan unix.WaitStatus, 1)
	f.r.waiters[pid] = ch
	if req.cgroup != "" {
		// On this thread: with nsdelegate (v2 hosts with systemd) the
		// kernel moves a process only within the writer's cgroup
		// namespace, this thread's, rooted at the session's cgroup.
		procs := filepath.Join(cgroupRoot, filepath.Clean("/"+req.cgroup), "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(pid)), 0); err != nil {
			unix.Kill(pid, unix.SIGKILL)
			return forkResult{err: fmt.Errorf("start %s: move it into %s: %w", req.name, procs, err)}
		}
	}
	return forkResult{pid: pid, done: ch}
}

// start execs argv0 as argv with attr from the forking thread; name is
// the program it is for.
func (f *forker) start(name, argv0 string, argv []string, attr *syscall.ProcAttr, cgroup string) (int, <-chan unix.WaitStatus, error) {
	reply := make(chan forkResult, 1)
	f.reqs <- forkReq{name: name, argv0: argv0, argv: argv, attr: attr, cgroup: cgroup, reply: reply}
	res := <-reply
	return res.pid, res.done, res.err
}

// lookPath finds name on the session's PATH (init's own environment is not
// the session's).
func lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range strings.Split(sessionPath, ":") {
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: not found on the session's PATH", name)
}

// describe says how a process ended, as a shell would.
func describe(ws unix.WaitStatus) (code int, sig string) {
	if ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return ws.ExitStatus(), ""
}

func describeString(ws unix.WaitStatus) string {
	code, sig := describe(ws)
	if sig != "" {
		return "killed by " + sig
	}
	return "exited with status " + strconv.Itoa(code)
}
