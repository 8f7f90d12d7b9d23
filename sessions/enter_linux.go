package sessions

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// How a process gets into the desktop's user namespace, which maps the
// desktop's ids 0..65535 to the session's host range (Plan.IDs), so that
// root in a desktop is root of that namespace only, which owns nothing: the
// mount, network, UTS, IPC, PID and cgroup namespaces belong to the
// host's, so no capability it has mounts, configures the network or sets
// the host name. Init stays host root in those namespaces to build the
// root and the network and to answer the engine; nothing of the desktop
// can reach it (another uid, more capabilities, not dumpable).
//
// Go cannot join a user namespace (setns needs a single-threaded caller),
// and a Go process kept in the namespace to fork for init costs every
// desktop a second Go runtime (2.2 MiB). So the join is made by the host's
// static busybox (Debian's busybox-static), between init's fork and the
// program's exec:
//
//	init (host root), its forking thread: cgroup namespace, seccomp filter
//	  fork; setgroups, setgid: the process's ids, as host ids; setuid: the
//	  namespace's owner (host uid of the desktop's root): no capability on
//	  the host is left; chdir
//	  exec busybox (by descriptor, close-on-exec: the desktop never has it)
//	busybox nsenter -U/run/drums-userns --preserve-credentials [-S UID] -F -- PROG
//	  setns: allowed, its effective uid owns the namespace; uid, exec PROG
//
// The process is init's own child, so init's reaper gets its end. Until
// the setns it is a host process of the namespace owner's uid with no
// capability on the host, under the desktop's seccomp filter: it can do
// no more than root in the desktop can. A start costs one more exec,
// busybox's (under a millisecond), and no memory once the program runs.
//
// Joining a user namespace gives the joiner every capability of it and a
// full bounding set (the kernel's set_cred_user_ns), and busybox cannot
// lower it again: root in a desktop holds every capability of the
// desktop's user namespace. Those act on what that namespace owns, which
// is nothing but itself: every other namespace, the mounts, the IPC
// objects and the cgroups are the host user namespace's, the seccomp
// filter refuses making new namespaces, and the kernel checks the host's
// namespace for what would touch the host (modules, the clock, raw I/O,
// devices). So a capability root has inside reaches its own processes and
// files only, as root in a VM does.
//
// The namespace is made once per session by a short-lived holder (busybox
// cat, cloned into it by a thread of init that has taken the owner's uid,
// so the kernel counts the namespace's per-uid limits against that uid,
// not host root's), bound at usernsPath before any process of the desktop
// exists, and kept by that mount: no process of the session stands for it.
// The mount point is a file in /run, itself a mount point, so the desktop
// can neither rename nor replace it; opening it gives the desktop nothing
// more than its own /proc/self/ns/user.
const usernsPath = "/run/drums-userns"

// highFD is the lowest descriptor init keeps busybox at: above any that
// syscall.ForkExec uses to shuffle a child's descriptors (it takes them
// from len(Files) upwards), so the close-on-exec copy survives until
// busybox is exec'd. spawn refuses more files than leave room.
const highFD = 100

// openHigh opens path (a host path: before the pivot) for init's life, at
// highFD or above, close-on-exec.
func openHigh(what, path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", what, err)
	}
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, highFD)
	if err != nil {
		return -1, fmt.Errorf("keep %s open: %w", what, err)
	}
	return fd, nil
}

// procFD is the path by which a child execs descriptor fd of its own.
func procFD(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// holder is the short-lived process that makes the desktop's user
// namespace: busybox cat on a pipe that only init writes to.
type holder struct {
	pid  int
	hold *os.File // the pipe's write end: closing it ends the holder
	done <-chan unix.WaitStatus
}

// startHolder clones the holder into a new user namespace mapped by ids,
// owned by ids.Host, with init's reaper waiting for it.
func startHolder(r *reaper, ids IDMap, busybox int) (*holder, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("holder pipe: %w", err)
	}
	defer pr.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		pw.Close()
		return nil, fmt.Errorf("open %s: %w", os.DevNull, err)
	}
	defer null.Close()
	m := []syscall.SysProcIDMap{{ContainerID: 0, HostID: ids.Host, Size: ids.Size}}
	attr := &syscall.ProcAttr{
		Dir:   "/",
		Env:   []string{},
		Files: []uintptr{pr.Fd(), null.Fd(), null.Fd()},
		Sys: &syscall.SysProcAttr{
			Cloneflags:  unix.CLONE_NEWUSER,
			UidMappings: m, GidMappings: m, GidMappingsEnableSetgroups: true,
			// Root of the new namespace, not the host's root seen from it
			// (which would be its overflow uid).
			Credential: &syscall.Credential{Uid: 0, Gid: 0},
			Setsid:     true,
		},
	}
	type started struct {
		pid  int
		done chan unix.WaitStatus
		err  error
	}
	c := make(chan started, 1)
	go func() {
		// The new user namespace is owned by the thread that clones it,
		// and the kernel counts its per-uid limits (inotify instances,
		// processes) against that owner in the host's namespace: owned by
		// root, every desktop would share root's. This thread clones it as
		// the desktop's own host root (ids.Host), keeping its capabilities
		// (no setuid fixup) to write the whole id map; it is never unlocked,
		// so it dies with its changed credentials.
		runtime.LockOSThread()
		if err := ownerThread(ids.Host); err != nil {
			c <- started{err: err}
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		pid, err := syscall.ForkExec(procFD(busybox), []string{"busybox", "cat"}, attr)
		if err != nil {
			c <- started{err: err}
			return
		}
		done := make(chan unix.WaitStatus, 1)
		r.waiters[pid] = done
		c <- started{pid: pid, done: done}
	}()
	st := <-c
	if st.err != nil {
		pw.Close()
		return nil, fmt.Errorf("start the user namespace's holder: %w", st.err)
	}
	return &holder{pid: st.pid, hold: pw, done: st.done}, nil
}

// userns opens the holder's user namespace (init has the session's /proc
// on /proc by then, so the pid is the session's).
func (h *holder) userns() (*os.File, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/ns/user", h.pid))
	if err != nil {
		return nil, fmt.Errorf("open the desktop's user namespace: %w", err)
	}
	return f, nil
}

// end has the holder exit, once the namespace is bound.
func (h *holder) end() error {
	h.hold.Close()
	ws := <-h.done
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return fmt.Errorf("the user namespace's holder %s: %w", describeString(ws), ErrInit)
	}
	return nil
}

// secbitNoSetuidFixup keeps a thread's capabilities when its uids change
// (linux/securebits.h).
const secbitNoSetuidFixup = 1 << 2

// ownerThread makes the calling (locked) thread's effective uid and gid
// host, keeping its capabilities. Only this thread changes: the system
// calls are made raw, not through Go's all-threads setuid.
func ownerThread(host int) error {
	if _, _, e := unix.RawSyscall6(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, secbitNoSetuidFixup, 0, 0, 0, 0); e != 0 {
		return fmt.Errorf("keep capabilities across the id change: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, ^uintptr(0), uintptr(host), ^uintptr(0)); e != 0 {
		return fmt.Errorf("set the namespace's owner gid %d: %w", host, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, ^uintptr(0), uintptr(host), ^uintptr(0)); e != 0 {
		return fmt.Errorf("set the namespace's owner uid %d: %w", host, e)
	}
	return nil
}

// bindUserns keeps the namespace of the descriptor userns at usernsPath
// under the root being built at merged.
func bindUserns(merged string, userns int) error {
	target := merged + usernsPath
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return fmt.Errorf("create %s: %w", usernsPath, err)
	}
	f.Close()
	if err := unix.Mount(procFD(userns), target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the user namespace on %s: %w", usernsPath, err)
	}
	return nil
}

// enterArgv is busybox's command line that runs path with args in the
// desktop's user namespace as uid; the gid and groups are set before, as
// host ids (enterCredential), and joining keeps them.
func enterArgv(uid int, path string, args []string) []string {
	out := []string{"busybox", "nsenter", "-U" + usernsPath, "--preserve-credentials"}
	if uid != 0 {
		out = append(out, "-S", strconv.Itoa(uid))
	}
	return append(append(out, "-F", "--", path), args...)
}

// enterCredential is what the forked child takes before it execs busybox:
// the namespace owner's uid (its root's host uid), without which setns
// into the namespace is refused, and the process's gid and groups as host
// ids.
func enterCredential(ids IDMap, gid int, groups []int) *syscall.Credential {
	c := &syscall.Credential{Uid: uint32(ids.Host), Gid: uint32(ids.ToHost(gid)), Groups: []uint32{}}
	for _, g := range groups {
		c.Groups = append(c.Groups, uint32(ids.ToHost(g)))
	}
	return c
}
