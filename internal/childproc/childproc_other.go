//go:build !linux

package childproc

import "syscall"

// SysProcAttr: drums runs on Linux; elsewhere there is no parent-death
// signal and a process group is all that is offered.
func SysProcAttr(syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
