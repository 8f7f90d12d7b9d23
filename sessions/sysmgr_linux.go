package sessions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// How the desktop's system manager starts (Proc.Manager, addSystemManager).
// systemd runs as a system manager only as PID 1, so it gets a PID
// namespace of its own, a child of the desktop's; what it needs before it
// can run there takes host root, which nothing of the desktop may hold:
//
//	init, a thread of its own (not the forking one: no seccomp filter yet),
//	  its cgroup namespace rooted at the session's cgroup, as the forker's
//	  clone: new PID and mount namespaces (the host user namespace's:
//	  nothing in them can mount or unmount), host root
//	  exec drums-init system-manager (RunSystemManager), which
//	    mounts the new PID namespace's /proc, with the desktop's masks
//	    moves itself into the delegated cgroup, unshares a cgroup namespace
//	    rooted there, mounts cgroup2 at /sys/fs/cgroup from it
//	    makes /run/lock a mount point (systemd mounts a tmpfs on it else,
//	    and ends when it cannot)
//	    loads the desktop's seccomp filter, takes the namespace owner's
//	    host uid (no capability on the host is left)
//	  exec busybox nsenter -U/run/drums-userns (enter_linux.go): root of
//	  the desktop
//	exec systemd, PID 1 of its namespace
//
// From its exec on it is a process of the desktop's root like any other:
// its mounts are refused (the filter, and namespaces it does not own),
// so are the namespaces its units' sandboxing asks for, which systemd
// then goes without ("assuming containerized execution").

// SystemManagerCommand is the subcommand of drums-init that runs
// RunSystemManager.
const SystemManagerCommand = "system-manager"

// spawnManager starts argv as the desktop's system manager with env as
// its whole environment and files as its descriptors, in cgroup (a path
// under the desktop's /sys/fs/cgroup).
func (in *initProc) spawnManager(argv, env []string, files []uintptr, cgroup string) (int, <-chan unix.WaitStatus, error) {
	busybox, exe := len(files), len(files)+1
	files = append(files, uintptr(in.busybox), uintptr(in.exe))
	args := append([]string{InitBinary, SystemManagerCommand, strconv.Itoa(in.plan.IDs.Host), strconv.Itoa(busybox), cgroup, "--"}, argv...)
	attr := &syscall.ProcAttr{Dir: "/", Env: env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true, Cloneflags: unix.CLONE_NEWPID | unix.CLONE_NEWNS}}
	return in.forker.startUnfiltered(argv[0], procFD(exe), args, attr)
}

// startUnfiltered forks argv0 as argv from a new thread of init, with a
// cgroup namespace of its own rooted at the session's cgroup as the
// forking thread's is, but without the seccomp filter: for the system
// manager's start, which mounts before it loads the filter itself. The
// thread is never unlocked: it dies with its namespace.
func (f *forker) startUnfiltered(name, argv0 string, argv []string, attr *syscall.ProcAttr) (int, <-chan unix.WaitStatus, error) {
	c := make(chan forkResult, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			c <- forkResult{err: fmt.Errorf("start %s: unshare cgroup namespace: %w", name, err)}
			return
		}
		c <- f.fork(forkReq{name: name, argv0: argv0, argv: argv, attr: attr})
	}()
	res := <-c
	return res.pid, res.done, res.err
}

// RunSystemManager is `drums-init system-manager HOSTUID BUSYBOXFD CGROUP
// -- PROG ARG...`, which init starts as host root, PID 1 of new PID and
// mount namespaces: it prepares them for the desktop's system manager and
// execs PROG in the desktop's user namespace as its root (HOSTUID, the
// namespace's owner) through the busybox at descriptor BUSYBOXFD, in
// CGROUP. It returns only on failure, with the exit status.
func RunSystemManager(args []string) int {
	// Every step that is the thread's own (the cgroup namespace, the
	// mount rooted at it, the filter, the ids) is made on the thread
	// that execs.
	runtime.LockOSThread()
	err := startSystemManager(args)
	fmt.Fprintf(os.Stderr, "drums-init %s: %v\n", SystemManagerCommand, err)
	return 1
}

func startSystemManager(args []string) error {
	if len(args) < 5 || args[3] != "--" {
		return fmt.Errorf("usage: drums-init %s HOSTUID BUSYBOXFD CGROUP -- PROG [ARG...]", SystemManagerCommand)
	}
	host, err1 := strconv.Atoi(args[0])
	busybox, err2 := strconv.Atoi(args[1])
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	cgroup, prog := filepath.Clean("/"+args[2]), args[4:]
	if os.Getpid() != 1 {
		return fmt.Errorf("not PID 1 of a new PID namespace (pid %d): init starts this", os.Getpid())
	}
	// Nothing init passed may reach the manager; the busybox descriptor
	// is exec'd by its path, which close-on-exec leaves.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fmt.Errorf("mark descriptors close-on-exec: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := managerProc(); err != nil {
		return err
	}
	if err := managerCgroup(cgroup); err != nil {
		return err
	}
	if err := unix.Mount("/run/lock", "/run/lock", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind /run/lock: %w", err)
	}
	if err := installSeccomp(); err != nil {
		return err
	}
	// This thread's ids only: it execs next, and the exec ends the others.
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("drop supplementary groups: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(host), uintptr(host), uintptr(host)); e != 0 {
		return fmt.Errorf("set gid %d: %w", host, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(host), uintptr(host), uintptr(host)); e != 0 {
		return fmt.Errorf("set uid %d: %w", host, e)
	}
	if err := unix.Exec(procFD(busybox), enterArgv(0, prog[0], prog[1:]), os.Environ()); err != nil {
		return fmt.Errorf("exec %s: %w", prog[0], err)
	}
	return nil
}

// managerProc mounts the new PID namespace's /proc over the desktop's,
// with the same read-only parts and masks (plan.go).
func managerProc() error {
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	for _, path := range procReadOnly {
		if err := bindReadOnly(path, path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("make %s read-only: %w", path, err)
		}
	}
	for _, path := range maskedPaths {
		if strings.HasPrefix(path, "/proc/") {
			if err := mask("/", path); err != nil {
				return err
			}
		}
	}
	return nil
}

// managerCgroup moves the process into cgroup, then mounts cgroup2 at
// /sys/fs/cgroup rooted there, by a cgroup namespace of its own. A
// cgroup2 mount shows the mounting thread's cgroup namespace from its
// root; the one init's forker made is another view of the same
// hierarchy, so it is detached first (a mount of a filesystem on its own
// root is refused).
func managerCgroup(cgroup string) error {
	remount := func() error {
		if err := unix.Unmount(cgroupRoot, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("detach %s: %w", cgroupRoot, err)
		}
		if err := unix.Mount("cgroup2", cgroupRoot, "cgroup2", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount cgroup2 on %s: %w", cgroupRoot, err)
		}
		return nil
	}
	if err := remount(); err != nil {
		return err
	}
	procs := filepath.Join(cgroupRoot, cgroup, "cgroup.procs")
	if err := os.WriteFile(procs, []byte("0"), 0); err != nil {
		return fmt.Errorf("move into %s: %w", procs, err)
	}
	if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
		return fmt.Errorf("unshare cgroup namespace: %w", err)
	}
	return remount()
}
