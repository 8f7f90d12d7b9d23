package sessions

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/ready"
)

// stackProc is a running process of the desktop stack.
type stackProc struct {
	name      string
	pid       int
	essential bool
	log       *procLog
	exited    chan struct{} // closed when the reaper reported its end
	status    unix.WaitStatus
}

func (p *stackProc) err(what string) error {
	return fmt.Errorf("%s %s: %s: %w", p.name, what, p.log.tail(), ErrStack)
}

// procOpts say how init starts a process in the session.
type procOpts struct {
	argv    []string
	root    bool     // run as root instead of the user
	env     []string // replaces the plan's environment when set
	dir     string
	files   []*os.File // fds 0, 1, 2, 3...; nil entries are /dev/null
	setctty bool
	self    bool // argv are arguments of init's own binary (drums-init)
	// cgroup, where set, is the cgroup (a path under the desktop's
	// /sys/fs/cgroup) init moves the process into before it runs its
	// program (inCgroup).
	cgroup string
	// manager starts the process as the desktop's system manager
	// (Proc.Manager, spawnManager).
	manager bool
}

// spawn starts a process of the desktop, in the desktop's user namespace
// (enter_linux.go), and arranges for its end to be recorded. The caller
// closes its copies of files.
func (in *initProc) spawn(o procOpts) (int, <-chan unix.WaitStatus, error) {
	if len(o.argv) == 0 {
		return 0, nil, errors.New("spawn without a command")
	}
	// ForkExec moves descriptors up from len(files): they must stay below
	// busybox's.
	if len(o.files) > highFD/3 {
		return 0, nil, fmt.Errorf("%s: %d descriptors, at most %d", o.argv[0], len(o.files), highFD/3)
	}
	u := in.plan.User
	uid, gid, groups, dir := u.UID, u.GID, u.Groups, u.Home
	if o.root {
		uid, gid, groups, dir = 0, 0, nil, "/root"
	}
	if o.dir != "" {
		dir = o.dir
	}
	env := o.env
	if env == nil {
		env = in.plan.Env
	}
	files := make([]uintptr, 0, len(o.files)+1)
	for _, f := range o.files {
		if f == nil {
			f = in.devNull
		}
		files = append(files, f.Fd())
	}
	if o.manager {
		pid, done, err := in.spawnManager(o.argv, env, files, o.cgroup)
		runtime.KeepAlive(o.files)
		return pid, done, err
	}
	if o.root {
		env = append(slices.Clip(env), in.plan.RootEnv...)
	}
	var path string
	argv := o.argv
	if o.self {
		// init's own binary: an inherited descriptor, the last one.
		path, argv = procFD(len(files)), append([]string{InitBinary}, o.argv...)
		files = append(files, uintptr(in.exe))
	} else {
		p, err := lookPath(o.argv[0])
		if err != nil {
			return 0, nil, err
		}
		path = p
	}
	if o.cgroup != "" {
		// The process waits, before it runs path, until init has moved it
		// into its cgroup (forker.fork): the image's /bin/sh, as the
		// process's user, reads a pipe until init closes its end, then
		// execs path in the same process. Init moves it as host root from
		// the desktop's cgroup root, which stays the host's: the desktop
		// can move no process out of the root itself. (clone3's
		// CLONE_INTO_CGROUP would do it in one step, but the desktop's
		// seccomp filter, on init's forking thread, refuses clone3.)
		fd := len(files)
		if fd > 9 { // sh's redirections take one digit
			return 0, nil, fmt.Errorf("%s: %d descriptors, at most 9 for a process started in a cgroup", o.argv[0], fd)
		}
		r, w, err := os.Pipe()
		if err != nil {
			return 0, nil, fmt.Errorf("%s: pipe: %w", o.argv[0], err)
		}
		defer r.Close()
		defer w.Close() // the process's go: the fork has moved it (or killed it) by then
		files = append(files, r.Fd())
		n := strconv.Itoa(fd)
		path, argv = "/bin/sh", append([]string{"sh", "-c", "read _ <&" + n + "; exec " + n + `<&-; exec "$0" "$@"`, path}, argv[1:]...)
	}
	attr := &syscall.ProcAttr{Dir: dir, Env: env, Files: files,
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: o.setctty, Credential: enterCredential(in.plan.IDs, gid, groups)}}
	pid, done, err := in.forker.start(o.argv[0], procFD(in.busybox), enterArgv(uid, path, argv[1:]), attr, o.cgroup)
	runtime.KeepAlive(o.files)
	return pid, done, err
}

// untilExit returns ctx, also cancelled when p exits: a wait for what p
// should do then ends at once.
func (p *stackProc) untilExit(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// startProc starts a stack process whose output goes to the log, with
// extra descriptors from fd 3 on; its log's seen closes at the first line
// containing proc.ReadyLine when its readiness is "log".
func (in *initProc) startProc(proc Proc, extra ...*os.File) (*stackProc, error) {
	name, readyLine := proc.Name, ""
	if proc.Ready == "log" {
		readyLine = proc.ReadyLine
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe for %s: %w", name, err)
	}
	files := append([]*os.File{nil, w, w}, extra...)
	var env []string
	switch {
	case proc.Manager:
		env = proc.Env
	case len(proc.Env) > 0:
		env = append(slices.Clip(in.plan.Env), proc.Env...)
	}
	pid, done, err := in.spawn(procOpts{argv: proc.Argv, root: proc.Root, env: env, files: files, cgroup: proc.Cgroup, manager: proc.Manager})
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("%w: %w", err, ErrStack)
	}
	p := &stackProc{name: name, pid: pid, essential: proc.Essential, log: newProcLog(name, readyLine, in.log), exited: make(chan struct{})}
	go p.log.copy(r)
	go func() {
		p.status = <-done
		close(p.exited)
		fmt.Fprintf(in.log, "%s init: %s (pid %d) %s\n", time.Now().Format("15:04:05.000"), name, pid, describeString(p.status))
	}()
	in.mu.Lock()
	in.procs[name] = p
	in.mu.Unlock()
	return p, nil
}

// startStack brings the desktop up: each process starts as soon as the ones
// it needs are ready or listen on their Socket (up[name] is closed then),
// so Xvfb and the session bus start together, then openbox, the
// accessibility bus and guestd together.
func (in *initProc) startStack(ctx context.Context) error {
	up := map[string]chan struct{}{}
	for _, p := range in.plan.Stack {
		up[p.Name] = make(chan struct{})
	}
	errc := make(chan error, len(in.plan.Stack))
	for _, proc := range in.plan.Stack {
		go func() {
			for _, n := range proc.Needs {
				select {
				case <-up[n]:
				case <-ctx.Done():
					return
				}
			}
			var once sync.Once
			open := func() { once.Do(func() { close(up[proc.Name]) }) }
			if err := in.startReady(ctx, proc, open); err != nil {
				errc <- err
				return
			}
			in.step(proc.Name)
			open()
			errc <- nil
		}()
	}
	for range in.plan.Stack {
		if err := <-errc; err != nil {
			return err
		}
	}
	return nil
}

// startReady starts proc and waits until it says it is ready; listening
// calls listening first when proc has a Socket and it accepts before then (a
// step "NAME-socket").
func (in *initProc) startReady(ctx context.Context, proc Proc, listening func()) error {
	if proc.Socket != "" {
		w, err := watchSocket(proc.Socket)
		if err != nil {
			return fmt.Errorf("%s: %w: %w", proc.Name, err, ErrStack)
		}
		defer w.Close()
		go func() {
			if w.wait() == nil {
				in.step(proc.Name + "-socket")
				listening()
			}
		}()
	}
	switch proc.Ready {
	case "displayfd", "print-address":
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("pipe for %s: %w", proc.Name, err)
		}
		defer r.Close()
		p, err := in.startProc(proc, w)
		w.Close()
		if err != nil {
			return err
		}
		line, err := ready.Line(ctx, r, p.exited)
		if errors.Is(err, ready.ErrExited) {
			return p.err(describeString(p.status) + " before it was ready")
		}
		if err != nil {
			return err
		}
		if proc.Ready == "displayfd" {
			if _, err := strconv.Atoi(line); err != nil {
				return p.err(fmt.Sprintf("printed %q as its display", line))
			}
		}
		return nil
	case "a11y":
		p, err := in.startProc(proc)
		if err != nil {
			return err
		}
		return in.waitA11y(ctx, p)
	case "log":
		p, err := in.startProc(proc)
		if err != nil {
			return err
		}
		return p.waitSeen(ctx, p.log.seen)
	case "notify":
		conn, addr, err := listenNotify(proc.Name)
		if err != nil {
			return err
		}
		defer conn.Close()
		proc.Env = append(slices.Clip(proc.Env), "NOTIFY_SOCKET="+addr)
		p, err := in.startProc(proc)
		if err != nil {
			return err
		}
		msgs := newProcLog(proc.Name+"-notify", proc.ReadyLine, in.log)
		go msgs.copy(datagramLines(conn))
		return p.waitSeen(ctx, msgs.seen)
	}
	return fmt.Errorf("%s: unknown readiness %q: %w", proc.Name, proc.Ready, ErrInit)
}

// waitSeen waits until seen is closed (the process said it is ready).
func (p *stackProc) waitSeen(ctx context.Context, seen <-chan struct{}) error {
	select {
	case <-seen:
		return nil
	case <-p.exited:
		return p.err(describeString(p.status) + " before it said it was ready")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listenNotify makes the socket a process's sd_notify(3) messages come to:
// a datagram socket in the desktop's abstract namespace (its network
// namespace's), which a process of any uid can send to, so the user's
// systemd reaches host root's init. Only the desktop's own processes can,
// and none of an agent runs before the desktop is ready.
func listenNotify(name string) (*net.UnixConn, string, error) {
	addr := "@drums-notify-" + name
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return nil, "", fmt.Errorf("%s: listen for its notifications on %s: %w: %w", name, addr, err, ErrStack)
	}
	return conn, addr, nil
}

// datagramLines reads conn's datagrams as lines (each ends with one), until
// conn is closed.
func datagramLines(conn *net.UnixConn) io.ReadCloser {
	r, w := io.Pipe()
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				w.CloseWithError(err)
				return
			}
			if _, err := w.Write(append(buf[:n:n], '\n')); err != nil {
				return
			}
		}
	}()
	return r
}

// waitA11y waits until the launcher owns org.a11y.Bus on the session bus
// and the accessibility bus has activated the registry. A process of the
// desktop asks (init's own binary as `drums-init a11y-ready BUS`, RunA11yReady):
// the buses run in the desktop's user namespace, where init, the host's
// root, is nobody and not let in.
func (in *initProc) waitA11y(ctx context.Context, p *stackProc) error {
	ctx, cancel := p.untilExit(ctx)
	defer cancel()
	bus := envValue(in.plan.Env, "DBUS_SESSION_BUS_ADDRESS")
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("pipe for the accessibility check: %w", err)
	}
	defer r.Close()
	pid, done, err := in.spawn(procOpts{argv: []string{A11yCommand, bus}, files: []*os.File{nil, nil, w}, self: true})
	w.Close()
	if err != nil {
		return fmt.Errorf("%s: %w: %w", p.name, err, ErrStack)
	}
	out := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 4096))
		out <- strings.TrimSpace(string(b))
	}()
	select {
	case ws := <-done:
		if ws.Exited() && ws.ExitStatus() == 0 {
			return nil
		}
		select {
		case <-p.exited:
			return p.err(describeString(p.status))
		default:
		}
		return fmt.Errorf("%s: accessibility check %s: %s: %w", p.name, describeString(ws), <-out, ErrStack)
	case <-ctx.Done():
		unix.Kill(pid, unix.SIGKILL)
		<-done
		select {
		case <-p.exited:
			return p.err(describeString(p.status))
		default:
		}
		return fmt.Errorf("%s: %w: %w", p.name, ctx.Err(), ErrStack)
	}
}

// A11yCommand is the subcommand of drums-init that runs RunA11yReady.
const A11yCommand = "a11y-ready"

// RunA11yReady is `drums-init a11y-ready BUS`, run by init in the desktop as
// its user: it waits, at most a11yTimeout, until the accessibility bus is
// up on the session bus at BUS (a11yReady). It returns the exit status.
func RunA11yReady(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: drums-init a11y-ready BUS")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), a11yTimeout)
	defer cancel()
	if err := a11yReady(ctx, args[0]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// a11yTimeout bounds the check's wait for the accessibility bus; it must
// stay above a start on a loaded machine (Config.ReadyTimeout's default).
const a11yTimeout = 60 * time.Second

// a11yReady waits until org.a11y.Bus is owned on the session bus at bus,
// then has the accessibility bus start the registry.
func a11yReady(ctx context.Context, bus string) error {
	conn, err := dbus.Connect(bus, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the session bus: %w", err)
	}
	defer conn.Close()
	if err := ready.NameOwner(ctx, conn, "org.a11y.Bus"); err != nil {
		return fmt.Errorf("session bus: %w", err)
	}
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		return fmt.Errorf("org.a11y.Bus.GetAddress: %w", err)
	}
	a11y, err := dbus.Connect(addr, dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("connect to the accessibility bus: %w", err)
	}
	defer a11y.Close()
	var started uint32
	if err := a11y.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.StartServiceByName", 0,
		"org.a11y.atspi.Registry", uint32(0)).Store(&started); err != nil {
		return fmt.Errorf("start the registry: %w", err)
	}
	return nil
}

func envValue(env []string, key string) string {
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, key+"="); ok {
			return v
		}
	}
	return ""
}

// procLog copies a process's output into init's log, each line prefixed
// with its name, and keeps the last lines for error messages. A process
// that writes more than logCap bytes is cut off (its pipe still drains).
type procLog struct {
	name string
	out  io.Writer
	mu   sync.Mutex
	last []string
	// seen is closed at the first line containing mark.
	mark     string
	seen     chan struct{}
	seenOnce sync.Once
}

// logCap bounds what one process may write to the session's log; logTail
// is how many lines an error message quotes.
const (
	logCap  = 1 << 20
	logTail = 8
)

func newProcLog(name, mark string, out io.Writer) *procLog {
	return &procLog{name: name, mark: mark, out: out, seen: make(chan struct{})}
}

func (l *procLog) copy(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	written := 0
	for sc.Scan() {
		line := sc.Text()
		if l.mark != "" && strings.Contains(line, l.mark) {
			l.seenOnce.Do(func() { close(l.seen) })
		}
		l.mu.Lock()
		l.last = append(l.last, line)
		if len(l.last) > logTail {
			l.last = l.last[1:]
		}
		l.mu.Unlock()
		if written < logCap {
			n, _ := fmt.Fprintf(l.out, "%s %s: %s\n", time.Now().Format("15:04:05.000"), l.name, line)
			written += n
			if written >= logCap {
				fmt.Fprintf(l.out, "%s: log cut off after %d bytes\n", l.name, logCap)
			}
		}
	}
	io.Copy(io.Discard, r)
}

func (l *procLog) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return "(no output)"
	}
	return strings.Join(l.last, " | ")
}
