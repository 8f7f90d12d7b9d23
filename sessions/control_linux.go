package sessions

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxCtlMsg bounds one control packet (an exec request with its argv and
// environment); it must stay above any command line a caller passes.
const maxCtlMsg = 1 << 20

// maxCtlFds bounds the descriptors one packet carries: a process's stdio
// and Xvfb's -displayfd pipe.
const maxCtlFds = 8

// listenControl binds init's control socket at path (a host path: it is
// bound before pivot_root) for the engine alone (mode 0600, in a 0700
// directory).
func listenControl(path string) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale control socket: %w", err)
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod control socket: %w", err)
	}
	return ln, nil
}

func (in *initProc) serveControl() {
	for {
		conn, err := in.root.control.AcceptUnix()
		if err != nil {
			fmt.Fprintf(in.log, "init: control socket: %v\n", err)
			return
		}
		go in.handleControl(&ctlConn{conn})
	}
}

func (in *initProc) handleControl(conn *ctlConn) {
	defer conn.close()
	defer in.trim.Reset(initTrimAfter)
	req, fds, err := conn.recv()
	if err != nil {
		return
	}
	switch req.Op {
	case "status":
		procs := map[string]string{}
		in.mu.Lock()
		for name, p := range in.procs {
			select {
			case <-p.exited:
				procs[name] = describeString(p.status)
			default:
				procs[name] = "running"
			}
		}
		in.mu.Unlock()
		conn.send(ctlMsg{Procs: procs})
	case "exec":
		in.exec(conn, req, fds)
	default:
		closeFds(fds)
		conn.send(ctlMsg{Error: fmt.Sprintf("unknown operation %q", req.Op)})
	}
}

// exec runs a process for the engine and reports its end. The connection
// closing first kills the process's group.
func (in *initProc) exec(conn *ctlConn, req ctlMsg, fds []int) {
	fail := func(err error) {
		closeFds(fds)
		conn.send(ctlMsg{Error: err.Error()})
	}
	if len(req.Argv) == 0 {
		fail(errors.New("empty command"))
		return
	}
	if req.User != "" && req.User != "user" && req.User != "root" {
		fail(fmt.Errorf("user %q: want user or root", req.User))
		return
	}
	root := req.User == "root"
	env := append([]string(nil), in.plan.Env...)
	if root {
		env = setEnv(env, "HOME=/root", "USER=root", "LOGNAME=root")
	}
	env = setEnv(env, req.Env...)
	o := procOpts{argv: req.Argv, root: root, env: env, dir: req.Dir}
	var master *os.File
	if req.TTY {
		m, slave, err := openPTY(req.Rows, req.Cols)
		if err != nil {
			fail(err)
			return
		}
		defer slave.Close()
		if !root { // the user owns the terminal it runs on, as after a login
			u := in.plan.User
			if err := slave.Chown(in.plan.IDs.ToHost(u.UID), in.plan.IDs.ToHost(ttyGroup)); err != nil {
				m.Close()
				fail(fmt.Errorf("chown pty: %w", err))
				return
			}
		}
		master = m
		defer master.Close()
		o.files = []*os.File{slave, slave, slave}
		o.setctty = true
	} else {
		if len(fds) != 3 {
			fail(fmt.Errorf("exec wants 3 descriptors, got %d", len(fds)))
			return
		}
		for i, fd := range fds {
			f := os.NewFile(uintptr(fd), "stdio"+strconv.Itoa(i))
			defer f.Close()
			o.files = append(o.files, f)
		}
	}
	pid, done, err := in.spawn(o)
	if err != nil {
		conn.send(ctlMsg{Error: err.Error()})
		return
	}
	var pass []int
	if master != nil {
		pass = []int{int(master.Fd())}
	}
	if err := conn.send(ctlMsg{Pid: pid}, pass...); err != nil {
		unix.Kill(-pid, unix.SIGKILL)
		<-done
		return
	}
	// Requests (signals) until the client hangs up. The reader ends before
	// the connection is closed (conn.close waits for it).
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			m, fds, err := conn.recv()
			closeFds(fds)
			if err != nil {
				return
			}
			if m.Op == "signal" && m.Signal > 0 {
				unix.Kill(-pid, unix.Signal(m.Signal))
			}
		}
	}()
	select {
	case ws := <-done:
		code, sig := describe(ws)
		conn.send(ctlMsg{Exited: true, ExitCode: code, SigName: sig})
	case <-gone:
		unix.Kill(-pid, unix.SIGKILL)
		<-done
	}
}

// openPTY opens a new pseudo-terminal in the session's devpts.
func openPTY(rows, cols uint16) (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	if rows > 0 && cols > 0 {
		if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			master.Close()
			return nil, nil, fmt.Errorf("pty size: %w", err)
		}
	}
	sfd, err := unix.Open("/dev/pts/"+strconv.Itoa(int(n)), unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open pty %d: %w", n, err)
	}
	return master, os.NewFile(uintptr(sfd), "pts"), nil
}

// setEnv overrides or adds KEY=VALUE entries.
func setEnv(env []string, kv ...string) []string {
	for _, e := range kv {
		key, _, _ := strings.Cut(e, "=")
		replaced := false
		for i, old := range env {
			if strings.HasPrefix(old, key+"=") {
				env[i] = e
				replaced = true
				break
			}
		}
		if !replaced {
			env = append(env, e)
		}
	}
	return env
}

// ctlConn is one control connection. It is a net.UnixConn, not a raw
// descriptor, so that closing it while another goroutine reads is safe: the
// read ends, and the descriptor number is not reused under it.
type ctlConn struct{ c *net.UnixConn }

// dialControl connects to init's control socket at path, which must be
// served by init pid, read from the record with path: a
// standby binds the same path long before a reset makes it the session,
// and a request read before that reset must not wait in its backlog to
// act on the next episode. The kernel names the listener's process
// (SO_PEERCRED, in this process's PID namespace).
func dialControl(path string, pid int) (*ctlConn, error) {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("connect to init at %s: %w", path, err)
	}
	var cred *unix.Ucred
	raw, err := c.SyscallConn()
	if err == nil {
		cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
		err = errors.Join(err, cerr)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("peer of control socket %s: %w", path, err)
	}
	if int(cred.Pid) != pid {
		c.Close()
		return nil, fmt.Errorf("control socket %s is served by pid %d, not the session's init %d (reset meanwhile): %w", path, cred.Pid, pid, ErrNotReady)
	}
	return &ctlConn{c}, nil
}

func (c *ctlConn) close() { c.c.Close() }

// send writes one packet, m as JSON, with fds attached.
func (c *ctlConn) send(m any, fds ...int) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode control message: %w", err)
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.c.WriteMsgUnix(b, oob, nil); err != nil {
		return fmt.Errorf("send control message: %w", err)
	}
	return nil
}

// recv reads one control packet and the descriptors it carries.
func (c *ctlConn) recv() (ctlMsg, []int, error) {
	var m ctlMsg
	fds, err := c.recvInto(&m)
	return m, fds, err
}

// recvInto reads one packet into m and returns the descriptors it carries.
// It peeks at the packet's size first, so a small message costs a small
// buffer.
func (c *ctlConn) recvInto(m any) ([]int, error) {
	rc, err := c.c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("receive control message: %w", err)
	}
	var size int
	var perr error
	if err := rc.Read(func(fd uintptr) bool {
		size, _, perr = unix.Recvfrom(int(fd), nil, unix.MSG_PEEK|unix.MSG_TRUNC)
		return !errors.Is(perr, unix.EAGAIN)
	}); err != nil {
		return nil, fmt.Errorf("receive control message: %w", err)
	}
	if perr != nil {
		return nil, fmt.Errorf("receive control message: %w", perr)
	}
	if size > maxCtlMsg {
		return nil, fmt.Errorf("control message of %d bytes: more than %d", size, maxCtlMsg)
	}
	buf := make([]byte, max(size, 1))
	oob := make([]byte, unix.CmsgSpace(maxCtlFds*4))
	n, oobn, _, _, err := c.c.ReadMsgUnix(buf, oob) // sets MSG_CMSG_CLOEXEC
	if err != nil {
		return nil, fmt.Errorf("receive control message: %w", err)
	}
	var fds []int
	if oobn > 0 {
		cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return nil, fmt.Errorf("parse control message: %w", err)
		}
		for _, c := range cmsgs {
			got, err := unix.ParseUnixRights(&c)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if n == 0 {
		closeFds(fds)
		return nil, errors.New("control connection closed")
	}
	if err := json.Unmarshal(buf[:n], m); err != nil {
		closeFds(fds)
		return nil, fmt.Errorf("decode control message: %w", err)
	}
	return fds, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
