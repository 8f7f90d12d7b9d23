package childproc

import "syscall"

// SysProcAttr puts a child (the daemon, a Python worker) in its own
// process group, so a stop can kill all it started, and sends it sig when
// this process dies.
func SysProcAttr(sig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}
