//go:build linux && !amd64 && !arm64

package sessions

// Desktops run on amd64 and arm64, where the seccomp filter is defined;
// elsewhere init refuses to start one (installSeccomp fails on an
// unknown architecture).
const (
	nativeArch = 0
	x32Bit     = 0
)

var archDenied []deniedSyscall
