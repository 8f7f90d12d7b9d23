package provider

import (
	"fmt"
	"net"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// peerProcess is "pid N (COMM) uid U" of the process that connected to a
// unix socket (SO_PEERCRED), or "unix socket" when the kernel does not say.
func peerProcess(c *net.UnixConn) string {
	raw, err := c.SyscallConn()
	if err != nil {
		return "unix socket"
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil || cerr != nil {
		return "unix socket"
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cred.Pid))
	return fmt.Sprintf("pid %d (%s) uid %d", cred.Pid, strings.TrimSpace(string(comm)), cred.Uid)
}
