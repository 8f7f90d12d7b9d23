package sessions

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter every process of a desktop runs under (init installs
// it on its forking thread; children inherit it through fork and exec). It is
// a deny list: the kernel interfaces a desktop has no use for, which are
// where container escapes and kernel exploits start. Most are refused by
// the kernel already (root in a desktop is root of a user namespace that
// owns nothing); the filter refuses them before any kernel code runs, and
// keeps a kernel bug in them out of reach. Each entry says why it is here.
// A refused call fails with EPERM, as under Docker's default profile, so
// programs that probe for a feature fall back.
var deniedSyscalls = []deniedSyscall{
	{unix.SYS_KEYCTL, "keyctl", "kernel keyrings are shared by uid across the host"},
	{unix.SYS_ADD_KEY, "add_key", "kernel keyrings are shared by uid across the host"},
	{unix.SYS_REQUEST_KEY, "request_key", "reads keys of the host's keyrings (the issue's keyctl read)"},
	{unix.SYS_BPF, "bpf", "eBPF programs and maps: verifier bugs are kernel exploits"},
	{unix.SYS_PERF_EVENT_OPEN, "perf_event_open", "performance counters: side channels and a large kernel surface"},
	{unix.SYS_USERFAULTFD, "userfaultfd", "lets an exploit stall the kernel mid-copy to win races"},
	{unix.SYS_IO_URING_SETUP, "io_uring_setup", "io_uring: a large, often exploited surface (Docker refuses it too)"},
	{unix.SYS_IO_URING_ENTER, "io_uring_enter", "io_uring"},
	{unix.SYS_IO_URING_REGISTER, "io_uring_register", "io_uring"},
	{unix.SYS_KEXEC_LOAD, "kexec_load", "loads a new kernel"},
	{unix.SYS_KEXEC_FILE_LOAD, "kexec_file_load", "loads a new kernel"},
	{unix.SYS_INIT_MODULE, "init_module", "loads kernel modules"},
	{unix.SYS_FINIT_MODULE, "finit_module", "loads kernel modules"},
	{unix.SYS_DELETE_MODULE, "delete_module", "unloads kernel modules"},
	{unix.SYS_OPEN_BY_HANDLE_AT, "open_by_handle_at", "opens any inode of a filesystem by handle, past the mount tree (the Shocker escape)"},
	{unix.SYS_MOUNT, "mount", "the mount family: a desktop's mounts are made by its init, never by it"},
	{unix.SYS_UMOUNT2, "umount2", "would uncover masked paths"},
	{unix.SYS_PIVOT_ROOT, "pivot_root", "the mount family"},
	{unix.SYS_OPEN_TREE, "open_tree", "the mount family (new mount API)"},
	{unix.SYS_MOVE_MOUNT, "move_mount", "the mount family (new mount API)"},
	{unix.SYS_FSOPEN, "fsopen", "the mount family (new mount API)"},
	{unix.SYS_FSCONFIG, "fsconfig", "the mount family (new mount API)"},
	{unix.SYS_FSMOUNT, "fsmount", "the mount family (new mount API)"},
	{unix.SYS_FSPICK, "fspick", "the mount family (new mount API)"},
	{unix.SYS_MOUNT_SETATTR, "mount_setattr", "the mount family (new mount API)"},
	{unix.SYS_SWAPON, "swapon", "host-wide swap"},
	{unix.SYS_SWAPOFF, "swapoff", "host-wide swap"},
	{unix.SYS_ACCT, "acct", "host-wide process accounting"},
	{unix.SYS_REBOOT, "reboot", "would end the desktop from inside, or the host"},
	{unix.SYS_SYSLOG, "syslog", "reads the host's kernel log"},
	{unix.SYS_QUOTACTL, "quotactl", "host filesystem quotas"},
	{unix.SYS_VHANGUP, "vhangup", "hangs up the terminal of others"},
	{unix.SYS_SETTIMEOFDAY, "settimeofday", "the clock is the host's"},
	{unix.SYS_CLOCK_SETTIME, "clock_settime", "the clock is the host's"},
	{unix.SYS_CLOCK_ADJTIME, "clock_adjtime", "the clock is the host's"},
	{unix.SYS_ADJTIMEX, "adjtimex", "the clock is the host's"},
	{unix.SYS_LOOKUP_DCOOKIE, "lookup_dcookie", "profiling interface that names host paths"},
}

// deniedSyscall is one entry of the deny list.
type deniedSyscall struct {
	nr     uintptr
	name   string
	reason string
}

// Arguments checked rather than refused outright: clone and unshare are
// how every process and thread starts, and only their namespace flags are
// refused. Creating namespaces is how an agent with root would get a user
// namespace that owns a mount or network namespace (mount cgroup2, nftables
// in the kernel); nothing in a desktop needs it (Chromium's own sandbox
// wants it and is off, see images' chromeLauncher). clone3 passes its flags
// in memory a filter cannot read: it fails with ENOSYS, and glibc falls
// back to clone.
//
// setns is allowed into a user namespace only (nstype CLONE_NEWUSER; 0,
// "any type", is refused): that is how every process enters the desktop's
// (enter_linux.go), after the filter is on. Nothing else can come of it:
// joining its own namespace fails with EINVAL, the host's namespaces need
// capabilities there that no process of a desktop has, and it cannot make
// another (the flags above).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// seccompFilter assembles the filter for this architecture.
func seccompFilter() ([]bpf.RawInstruction, error) {
	const (
		offNr   = 0
		offArch = 4
		offArg0 = 16 // the low 32 bits of args[0] on little-endian machines
		offArg1 = 24 // and of args[1]
	)
	if nativeArch == 0 {
		return nil, fmt.Errorf("seccomp filter: not defined for this architecture: %w", ErrUnsupported)
	}
	var prog []bpf.Instruction
	// Jumps to the return blocks at the end are patched once their
	// positions are known.
	type fixup struct {
		at    int
		label string
	}
	var fixups []fixup
	jumpTo := func(cond bpf.JumpTest, val uint32, label string) {
		fixups = append(fixups, fixup{len(prog), label})
		prog = append(prog, bpf.JumpIf{Cond: cond, Val: val})
	}
	prog = append(prog, bpf.LoadAbsolute{Off: offArch, Size: 4})
	jumpTo(bpf.JumpNotEqual, nativeArch, "enosys") // a foreign ABI (i386 on amd64, arm on arm64)
	prog = append(prog, bpf.LoadAbsolute{Off: offNr, Size: 4})
	if x32Bit != 0 {
		jumpTo(bpf.JumpGreaterOrEqual, x32Bit, "enosys") // the x32 ABI's numbers bypass any list
	}
	for _, d := range append(deniedSyscalls, archDenied...) {
		jumpTo(bpf.JumpEqual, uint32(d.nr), "eperm")
	}
	jumpTo(bpf.JumpEqual, unix.SYS_CLONE3, "enosys")
	jumpTo(bpf.JumpEqual, unix.SYS_CLONE, "nsflags")
	jumpTo(bpf.JumpEqual, unix.SYS_UNSHARE, "nsflags")
	jumpTo(bpf.JumpEqual, unix.SYS_SETNS, "setns")
	labels := map[string]int{}
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	labels["nsflags"] = len(prog)
	prog = append(prog, bpf.LoadAbsolute{Off: offArg0, Size: 4})
	jumpTo(bpf.JumpBitsSet, nsFlags, "eperm")
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	labels["setns"] = len(prog)
	prog = append(prog, bpf.LoadAbsolute{Off: offArg1, Size: 4})
	jumpTo(bpf.JumpNotEqual, unix.CLONE_NEWUSER, "eperm")
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	labels["eperm"] = len(prog)
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)})
	labels["enosys"] = len(prog)
	prog = append(prog, bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)})
	for _, f := range fixups {
		skip := labels[f.label] - f.at - 1
		if skip > 255 {
			return nil, fmt.Errorf("seccomp filter: jump of %d too long", skip)
		}
		j := prog[f.at].(bpf.JumpIf)
		j.SkipTrue = uint8(skip)
		prog[f.at] = j
	}
	return bpf.Assemble(prog)
}

// installSeccomp loads the filter on the calling thread only (init's
// forking thread, locked to it for good), without no_new_privs: sudo must
// still gain the desktop's root. That needs CAP_SYS_ADMIN in the thread's
// user namespace, which init has in the host's.
func installSeccomp() error {
	raw, err := seccompFilter()
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("install the seccomp filter: %w", errno)
	}
	return nil
}
