package sessions

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/drums-dev/drums/sessions/images"
	"golang.org/x/sys/unix"
)

// The escape suite: from root inside a desktop (what an agent gets with
// OSWorld's `echo password | sudo -S ...`), everything an agent could use
// to reach the host or another desktop is tried, and each must be refused.
// SECURITY.md lists the vectors (TestSecurityDocListsVectors keeps it and
// this list together).

// vector is one attempt. Script runs in desktop A as root (as user with
// asUser) and prints what it reached; refused says whether its output and
// status show the attempt failed.
type vector struct {
	name    string
	script  string
	asUser  bool
	refused func(out string, code int) bool
}

// syscallErrno runs one system call with Python's ctypes and prints its
// errno ("ok" when it succeeded): the calls the filter refuses have no
// command of their own.
func syscallErrno(nr uintptr, args ...string) string {
	return fmt.Sprintf(`/usr/bin/python3 -c 'import ctypes
l = ctypes.CDLL(None, use_errno=True)
r = l.syscall(%d%s)
print("ok" if r >= 0 else "errno=%%d" %% ctypes.get_errno())'`, nr, prefixEach(", ", args))
}

func prefixEach(sep string, args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString(sep + a)
	}
	return b.String()
}

func errnoIs(want ...unix.Errno) func(string, int) bool {
	return func(out string, code int) bool {
		for _, e := range want {
			if strings.TrimSpace(out) == "errno="+strconv.Itoa(int(e)) {
				return true
			}
		}
		return false
	}
}

// failed: the command exited non-zero.
func failed(out string, code int) bool { return code != 0 }

// printsNothing: the command found nothing to print.
func printsNothing(out string, code int) bool { return strings.TrimSpace(out) == "" }

// escapeVectors are the attempts that run inside desktop A. host is a map
// of the host-side names the scripts refer to (canaries, other desktops).
func escapeVectors(h escapeHost) []vector {
	x32 := ""
	if x32Bit != 0 {
		x32 = fmt.Sprintf("%d", x32Bit|unix.SYS_GETPID)
	}
	v := []vector{
		// Files of the host.
		{name: "host-canary-var-tmp", script: "cat " + h.varTmpCanary, refused: failed},
		{name: "host-canary-beside-checkout", script: "cat " + h.checkoutCanary, refused: failed},
		{name: "host-paths-absent", script: "for p in " + strings.Join(h.hostOnly, " ") + "; do test -e $p && echo $p; done", refused: printsNothing},
		{name: "host-block-device-node", script: "ls -l " + h.blockNode + " 2>/dev/null; dd if=" + h.blockNode + " bs=1 count=1 2>/dev/null", refused: printsNothing},
		{name: "os-release-is-the-image's", script: "cat /etc/os-release", refused: func(out string, _ int) bool { return out == h.imageOSRelease }},
		// Mount points are the desktop's own; a bind's source shows its
		// host path name (guestd's, the one bind), nothing else does.
		{name: "mountinfo-shows-no-host-path", script: "grep -E ' (" + strings.Join(h.hostOnly, "|") + ")(/| )' /proc/self/mountinfo | grep -v ' " + images.GuestdPath + " '", refused: printsNothing},
		{name: "proc-1-root", script: "ls /proc/1/root/", refused: failed},
		{name: "proc-1-exe", script: "head -c1 /proc/1/exe", refused: failed},
		{name: "proc-1-environ", script: "cat /proc/1/environ", refused: failed},
		// The bind that keeps the desktop's user namespace, which every
		// process is started into: it cannot be moved, removed or
		// replaced, and joining it is joining the namespace it is in.
		{name: "userns-bind-replace", script: "mv /run/drums-userns /run/x 2>/dev/null && exit 0; rm -f /run/drums-userns 2>/dev/null && exit 0; (echo x > /run/drums-userns) 2>/dev/null && exit 0; exit 1", refused: failed},
		{name: "userns-bind-join", script: "nsenter --user=/run/drums-userns true", refused: failed},
		// The classic escape: chroot into a directory while the working
		// directory stays outside it, then walk up. It ends at the
		// desktop's root, which is its whole world.
		{name: "chroot-breakout", script: `mkdir -p /tmp/jail && cd / && /usr/bin/python3 -c '
import os
os.chroot("/tmp/jail")
for _ in range(64): os.chdir("..")
os.chroot(".")
print(os.path.exists("` + h.hostOnly[0] + `"), os.path.exists("/etc/os-release"))'`,
			refused: func(out string, _ int) bool { return strings.TrimSpace(out) == "False True" }},
		{name: "open-by-handle-at", script: syscallErrno(unix.SYS_OPEN_BY_HANDLE_AT, "-100", "0", "0"), refused: errnoIs(unix.EPERM)},
		// Devices.
		{name: "mknod-block", script: "mknod /tmp/sda b 8 0", refused: failed},
		{name: "mknod-char-mem", script: "mknod /tmp/mem c 1 1", refused: failed},
		{name: "dev-holds-only-its-own", script: "ls /dev | grep -vxE 'null|zero|full|random|urandom|tty|ptmx|pts|shm|mqueue|fd|stdin|stdout|stderr'", refused: printsNothing},
		// Mounts and namespaces.
		{name: "mount-tmpfs", script: "mount -t tmpfs x /mnt", refused: failed},
		{name: "mount-cgroup2", script: "mkdir -p /tmp/cg && mount -t cgroup2 none /tmp/cg", refused: failed},
		{name: "mount-proc-again", script: "mkdir -p /tmp/p && mount -t proc proc /tmp/p", refused: failed},
		{name: "umount-mask", script: "umount /proc/kcore", refused: failed},
		{name: "unshare-user", script: "unshare -U -r true", refused: failed},
		{name: "unshare-user-mount-cgroup", script: "unshare -U -r -m -C true", refused: failed},
		{name: "unshare-net", script: "unshare -n true", refused: failed},
		{name: "unshare-pid", script: "unshare -p -f true", refused: failed},
		{name: "setns-init-mount", script: "nsenter -t 1 -m true", refused: failed},
		// The filter lets setns through for a user namespace only.
		{name: "setns-any-type", script: strings.Replace(syscallErrno(unix.SYS_SETNS, `os.open("/proc/self/ns/net", 0)`, "0"), "import ctypes", "import ctypes, os", 1), refused: errnoIs(unix.EPERM)},
		{name: "clone3", script: syscallErrno(unix.SYS_CLONE3, "0", "0"), refused: errnoIs(unix.ENOSYS)},
		{name: "pivot-root", script: syscallErrno(unix.SYS_PIVOT_ROOT, "0", "0"), refused: errnoIs(unix.EPERM)},
		{name: "fsopen", script: syscallErrno(unix.SYS_FSOPEN, "0", "0"), refused: errnoIs(unix.EPERM)},
		// cgroups and limits.
		{name: "cgroup-namespace-rooted", script: "grep -v ':/$' /proc/self/cgroup", refused: printsNothing},
		{name: "no-cgroup-files", script: "ls /sys/fs/cgroup/ 2>/dev/null; find / -xdev -name cgroup.procs 2>/dev/null | head -1", refused: printsNothing},
		// Kernel identities.
		{name: "keyctl", script: syscallErrno(unix.SYS_KEYCTL, "0", "-4"), refused: errnoIs(unix.EPERM)},
		{name: "request-key", script: syscallErrno(unix.SYS_REQUEST_KEY, `b"user"`, `b"drums-host-key"`, "0", "-4"), refused: errnoIs(unix.EPERM)},
		{name: "add-key", script: syscallErrno(unix.SYS_ADD_KEY, `b"user"`, `b"x"`, `b"y"`, "1", "-4"), refused: errnoIs(unix.EPERM)},
		{name: "uid-is-not-the-host's", script: "cat /proc/self/uid_map", refused: func(out string, _ int) bool {
			f := strings.Fields(out)
			return len(f) == 3 && f[0] == "0" && f[1] != "0" && f[1] != "1000" && f[2] == "65536"
		}},
		// Kernel interfaces.
		{name: "proc-kpageflags", script: "head -c8 /proc/kpageflags 2>/dev/null | wc -c", refused: func(out string, _ int) bool { return strings.TrimSpace(out) == "0" }},
		{name: "proc-kcore", script: "head -c8 /proc/kcore 2>/dev/null | wc -c", refused: func(out string, _ int) bool { return strings.TrimSpace(out) == "0" }},
		{name: "proc-cmdline", script: "cat /proc/cmdline 2>/dev/null", refused: printsNothing},
		{name: "proc-keys", script: "cat /proc/keys 2>/dev/null", refused: printsNothing},
		{name: "proc-timer-list", script: "cat /proc/timer_list 2>/dev/null", refused: printsNothing},
		{name: "proc-sched-debug", script: "cat /proc/sched_debug 2>/dev/null", refused: printsNothing},
		{name: "sysrq-trigger", script: "echo h > /proc/sysrq-trigger", refused: failed},
		{name: "proc-sys-write", script: "echo 1 > /proc/sys/kernel/sysrq", refused: failed},
		{name: "sys-write", script: "echo 1 > /sys/kernel/mm/ksm/run", refused: failed},
		{name: "sys-firmware", script: "ls /sys/firmware", refused: printsNothing},
		{name: "init-module", script: syscallErrno(unix.SYS_FINIT_MODULE, "0", `b""`, "0"), refused: errnoIs(unix.EPERM)},
		{name: "bpf", script: syscallErrno(unix.SYS_BPF, "0", "0", "0"), refused: errnoIs(unix.EPERM)},
		{name: "perf-event-open", script: syscallErrno(unix.SYS_PERF_EVENT_OPEN, "0", "-1", "0", "-1", "0"), refused: errnoIs(unix.EPERM)},
		{name: "userfaultfd", script: syscallErrno(unix.SYS_USERFAULTFD, "0"), refused: errnoIs(unix.EPERM)},
		{name: "io-uring-setup", script: syscallErrno(unix.SYS_IO_URING_SETUP, "1", "0"), refused: errnoIs(unix.EPERM)},
		{name: "kexec-load", script: syscallErrno(unix.SYS_KEXEC_LOAD, "0", "0", "0", "0"), refused: errnoIs(unix.EPERM)},
		{name: "settimeofday", script: "date -s '2001-01-01'", refused: failed},
		{name: "sethostname", script: "hostname escaped", refused: failed},
		{name: "reboot", script: syscallErrno(unix.SYS_REBOOT, "0", "0", "0", "0"), refused: errnoIs(unix.EPERM)},
		{name: "syslog", script: "dmesg", refused: failed},
		{name: "swapon", script: syscallErrno(unix.SYS_SWAPON, `b"/tmp/x"`, "0"), refused: errnoIs(unix.EPERM)},
		// Processes.
		{name: "kill-init", script: "kill -9 1", refused: failed},
		{name: "ptrace-init", script: syscallErrno(unix.SYS_PTRACE, "16", "1", "0", "0"), refused: errnoIs(unix.EPERM)},
		{name: "process-vm-readv-init", script: fmt.Sprintf(`/usr/bin/python3 -c 'import ctypes
class iovec(ctypes.Structure): _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.addressof(buf), 8), iovec(0x400000, 8)
l = ctypes.CDLL(None, use_errno=True)
r = l.syscall(%d, 1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("ok" if r >= 0 else "errno=%%d" %% ctypes.get_errno())'`, unix.SYS_PROCESS_VM_READV), refused: errnoIs(unix.EPERM)},
		{name: "host-processes-invisible", script: "ps -eo pid= | wc -l; test -e /proc/" + strconv.Itoa(os.Getpid()) + "/status && echo host-pid", refused: func(out string, _ int) bool {
			return !strings.Contains(out, "host-pid")
		}},
		// Network configuration.
		{name: "ip-addr-add", script: "ip addr add 10.99.99.99/32 dev eth0", refused: failed},
		{name: "ip-route-change", script: "ip route replace default via 10.99.99.1", refused: failed},
		{name: "nft-add-table", script: "nft add table inet escape", refused: failed},
		{name: "raw-packet-socket", script: `/usr/bin/python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)'`, refused: failed},
		// Desktops of other sessions.
		{name: "other-desktop-x11", script: "echo | socat - ABSTRACT-CONNECT:/tmp/.X11-unix/X0 >/dev/null && xprop -display :0 -root " + h.bMark, asUser: true,
			refused: func(out string, _ int) bool { return !strings.Contains(out, h.bMark+"(STRING)") }},
		{name: "guestd-foreign-origin", script: fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}' -H 'Origin: http://evil.example' http://127.0.0.1:%d/platform`, DefaultGuestPort), asUser: true,
			refused: func(out string, _ int) bool { return strings.TrimSpace(out) == "403" }},
		{name: "guestd-rebinding-host", script: fmt.Sprintf(`curl -s -o /dev/null -w '%%{http_code}' -H 'Host: evil.example:5000' http://127.0.0.1:%d/platform`, DefaultGuestPort), asUser: true,
			refused: func(out string, _ int) bool { return strings.TrimSpace(out) == "403" }},
	}
	if x32 != "" {
		v = append(v, vector{name: "x32-abi", script: syscallErrno(uintptr(x32Bit | unix.SYS_GETPID)), refused: errnoIs(unix.ENOSYS)})
	}
	return v
}

// escapeHost is what the host side of the suite placed or knows.
type escapeHost struct {
	varTmpCanary, checkoutCanary, blockNode string
	hostOnly                                []string // host paths the image has not
	imageOSRelease                          string
	bMark                                   string // a root-window property set on desktop B
}

// netVectors are connections from A that must be dropped.
func netVectors(a, b *Session, hostPort int) []struct {
	name, addr string
	port       int
} {
	gw := a.Plan.Net.Gateway.Addr().String()
	return []struct {
		name, addr string
		port       int
	}{
		{"other-desktop-guestd", b.Address, DefaultGuestPort},
		{"other-desktop-chrome-devtools", b.Address, 9222},
		{"other-desktop-gateway", b.Plan.Net.Gateway.Addr().String(), hostPort},
		{"host-service-at-gateway", gw, hostPort},
		{"host-ssh-at-gateway", gw, 22},
		{"metadata-service", "169.254.169.254", 80},
		{"link-local", "169.254.1.1", 80},
		{"cgnat", "100.64.0.1", 80},
		{"private-10", "10.255.255.254", 80},
		{"private-192-168", "192.168.1.1", 80},
		{"private-172-16", "172.16.0.1", 80},
	}
}

func TestEscape(t *testing.T) {
	w := needWorld(t)
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	h := escapeHost{bMark: "DRUMS_ESCAPE_" + randomName(6)}
	im, err := w.eng.images.Get(coreImage)
	if err != nil {
		t.Fatal(err)
	}
	osr, err := os.ReadFile(filepath.Join(im.RootFS(), "usr/lib/os-release"))
	if err != nil {
		t.Fatal(err)
	}
	h.imageOSRelease = string(osr)
	// Canaries: a root-only file in /var/tmp and one beside the checkout,
	// and a block device node on the host's root filesystem.
	secret := "drums-canary-" + randomName(12)
	h.varTmpCanary = filepath.Join("/var/tmp", secret)
	root, _ := filepath.Abs("..")
	h.checkoutCanary = filepath.Join(filepath.Dir(root), secret)
	h.blockNode = filepath.Join("/var/tmp", secret+"-sda")
	for _, f := range []string{h.varTmpCanary, h.checkoutCanary} {
		if err := os.WriteFile(f, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f) })
	}
	if err := unix.Mknod(h.blockNode, unix.S_IFBLK|0o666, int(unix.Mkdev(8, 0))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(h.blockNode) })
	// Host paths the image has not: the checkout, the Go toolchain, the
	// state directory, every top-level directory of the host's.
	entries, _ := os.ReadDir("/")
	for _, e := range entries {
		if _, err := os.Lstat(filepath.Join(im.RootFS(), e.Name())); err != nil {
			h.hostOnly = append(h.hostOnly, "/"+e.Name())
		}
	}
	h.hostOnly = append([]string{root}, append(h.hostOnly, "/usr/local/go", DefaultStateDir, AddrClaimDir, "/var/lib/drums")...)
	mustRun(t, b, "", "xprop -root -f "+h.bMark+" 8s -set "+h.bMark+" secret")

	for _, v := range escapeVectors(h) {
		t.Run(v.name, func(t *testing.T) {
			user := "root"
			if v.asUser {
				user = ""
			}
			out, code := run(t, a, user, v.script)
			if !v.refused(out, code) {
				t.Errorf("not refused: %s\n(status %d) %s", v.script, code, out)
			}
		})
	}

	// The network: every connection dropped, tried together (a dropped
	// SYN takes 3 s to give up on).
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	var wg sync.WaitGroup
	for _, n := range netVectors(a, b, port) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(n.name, func(t *testing.T) {
				if connects(t, a, n.addr, n.port, false) {
					t.Errorf("desktop A reached %s:%d", n.addr, n.port)
				}
			})
		}()
	}
	wg.Wait()

	// Per-uid limits: root in A takes all of an unused uid's inotify
	// instances; the same uid on the host and in B still gets one.
	const uid = "4242"
	hog := `/usr/bin/python3 -c 'import ctypes, time
l = ctypes.CDLL(None, use_errno=True)
n = 0
while l.inotify_init() >= 0: n += 1
print(n, flush=True)
time.sleep(60)'`
	take := "setpriv --reuid=" + uid + " --regid=" + uid + " --clear-groups "
	one := `/usr/bin/python3 -c 'import ctypes; print("ok" if ctypes.CDLL(None).inotify_init() >= 0 else "refused")'`
	mustRun(t, a, "root", take+hog+" > /tmp/hog & until test -s /tmp/hog; do sleep 0.05; done; cat /tmp/hog")
	t.Run("per-uid-inotify", func(t *testing.T) {
		host, err := exec.Command("setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", "/usr/bin/python3", "-c",
			`import ctypes; print("ok" if ctypes.CDLL(None).inotify_init() >= 0 else "refused")`).CombinedOutput()
		if strings.TrimSpace(string(host)) != "ok" || err != nil {
			t.Errorf("host uid %s: %s %v", uid, host, err)
		}
		if out := mustRun(t, b, "root", take+one); strings.TrimSpace(out) != "ok" {
			t.Errorf("desktop B's uid %s: %s", uid, out)
		}
	})
	t.Run("cgroup-every-hierarchy", func(t *testing.T) {
		pid := strconv.Itoa(a.InitPID)
		b, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.HasSuffix(l, "/"+w.prefix+"/"+a.ID) {
				t.Errorf("desktop A's init is outside its cgroup in %s", l)
			}
		}
	})
	t.Run("desktops-are-different-host-uids", func(t *testing.T) {
		ua, ub := hostUID(t, a, "Xvfb"), hostUID(t, b, "Xvfb")
		if ua == ub || ua < DefaultIDBase || ub < DefaultIDBase {
			t.Errorf("the desktops' users are host uids %d and %d", ua, ub)
		}
	})

	// Writes everywhere the desktop's root can: none reaches the host.
	t.Run("writes-everywhere", func(t *testing.T) {
		mark := ".drums-escape-" + randomName(8)
		mustRun(t, a, "root", "find / -xdev -type d 2>/dev/null | while read d; do : > \"$d/"+mark+"\" 2>/dev/null; done; ls /etc/"+mark)
		out, _ := exec.Command("find", "/", "-xdev", "-name", mark, "-print", "-quit").Output()
		if len(out) > 0 {
			t.Errorf("the desktop's write reached the host: %s", out)
		}
		if b, _ := os.ReadFile(h.varTmpCanary); string(b) != secret {
			t.Errorf("the canary changed: %q", b)
		}
	})
}

// hostUID is the host uid a desktop's process runs as.
func hostUID(t *testing.T, s *Session, comm string) int {
	t.Helper()
	pids, _ := cgroupProcs(s.Plan.Cgroup.dir("pids"))
	for _, pid := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) != comm {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/%d", pid), &st); err == nil {
			return int(st.Uid)
		}
	}
	t.Fatalf("no %s in %s", comm, s.ID)
	return 0
}

// SECURITY.md's table has a row for every vector.
func TestSecurityDocListsVectors(t *testing.T) {
	doc, err := os.ReadFile("../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range escapeVectors(escapeHost{hostOnly: []string{"/x"}}) {
		names = append(names, v.name)
	}
	for _, n := range netVectors(&Session{Plan: &Plan{}}, &Session{Plan: &Plan{}}, 0) {
		names = append(names, n.name)
	}
	names = append(names, "per-uid-inotify", "cgroup-every-hierarchy", "desktops-are-different-host-uids", "writes-everywhere", "x32-abi")
	for _, n := range names {
		if !strings.Contains(string(doc), "| `"+n+"` |") {
			t.Errorf("SECURITY.md has no row for %s", n)
		}
	}
}
