package sessions

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter run in x/net/bpf's VM over seccomp_data as the kernel lays it
// out (nr, arch, instruction pointer, six arguments, each argument's low
// word first as on a little-endian machine). The VM loads words in network
// order where the kernel loads them in the machine's: each word is written
// big-endian so that both read the same value.
func TestSeccompFilterVerdicts(t *testing.T) {
	raw, err := seccompFilter()
	if err != nil {
		t.Skip(err)
	}
	prog, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	verdict := func(nr uintptr, args ...uint64) uint32 {
		data := make([]byte, 64)
		binary.BigEndian.PutUint32(data[0:], uint32(nr))
		binary.BigEndian.PutUint32(data[4:], nativeArch)
		for i, a := range args {
			binary.BigEndian.PutUint32(data[16+8*i:], uint32(a))
			binary.BigEndian.PutUint32(data[20+8*i:], uint32(a>>32))
		}
		v, err := vm.Run(data)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	allow, eperm := uint32(unix.SECCOMP_RET_ALLOW), uint32(unix.SECCOMP_RET_ERRNO|uint32(unix.EPERM))
	for _, c := range []struct {
		name string
		nr   uintptr
		args []uint64
		want uint32
	}{
		{"getpid", unix.SYS_GETPID, nil, allow},
		{"setns into a user namespace", unix.SYS_SETNS, []uint64{3, unix.CLONE_NEWUSER}, allow},
		{"setns of any type", unix.SYS_SETNS, []uint64{3, 0}, eperm},
		{"setns into a network namespace", unix.SYS_SETNS, []uint64{3, unix.CLONE_NEWNET}, eperm},
		{"setns into a mount namespace", unix.SYS_SETNS, []uint64{3, unix.CLONE_NEWNS}, eperm},
		{"clone of a thread", unix.SYS_CLONE, []uint64{unix.CLONE_VM | unix.CLONE_THREAD}, allow},
		{"clone of a user namespace", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER}, eperm},
		{"unshare of a network namespace", unix.SYS_UNSHARE, []uint64{unix.CLONE_NEWNET}, eperm},
		{"keyctl", unix.SYS_KEYCTL, nil, eperm},
		{"mount", unix.SYS_MOUNT, nil, eperm},
	} {
		if got := verdict(c.nr, c.args...); got != c.want {
			t.Errorf("%s: verdict %#x, want %#x", c.name, got, c.want)
		}
	}
}
