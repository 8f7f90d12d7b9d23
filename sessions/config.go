package sessions

import (
	"debug/elf"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	"github.com/drums-dev/drums/sessions/images"
)

// Config configures an Engine. Zero values take the defaults in code
// (Defaults); the CLI's flags override them.
type Config struct {
	// Prefix is the host prefix that every host-global name carries (veths,
	// nftables tables, cgroups, session ids, the state directory): a lower-case
	// letter then up to 7 letters or digits. Engines with different prefixes
	// never touch each other's sessions; tests use a random one.
	Prefix string
	// StateDir holds one directory per prefix with the records of its
	// sessions, so that another process (the CLI, a restarted daemon) sees
	// them and a sweep finds what a crashed one left.
	StateDir string
	// ImageDir is the image store desktops run from (images.DefaultDir).
	ImageDir string
	// Image is the image a Request without one uses.
	Image string
	// IDBase is the first host uid (and gid) desktops map their ids to:
	// each desktop claims (IDClaimDir) a range of 65536 of its own from
	// IDBase on, IDRanges of them. The ranges must hold no host user and
	// no other tool's (Ubuntu's /etc/subuid hands out 100000 to about
	// 600100000; systemd-nspawn picks from 524288 to 1879048191 and checks
	// that nothing runs with them).
	IDBase   int
	IDRanges int
	// Network is the private IPv4 range session addresses come from; each
	// slot takes a /30 (network, gateway, session, broadcast). Zero takes
	// DefaultNetwork(Prefix, MaxSessions). Ranges of engines may overlap:
	// every /30 is claimed host-wide before use (AddrClaimDir), and a slot
	// overlapping a network of the host's addresses is skipped.
	Network netip.Prefix
	// MaxSessions bounds the number of sessions (and slots) of this prefix.
	MaxSessions int
	// Binary is drums-init, the executable a session's init runs
	// (cmd/drums-init: the engine's side of a desktop only, so that what
	// the rest of drums links costs no desktop any memory). Empty:
	// drums-init in $DRUMS_BIN, else next to this process's executable.
	Binary string
	// Guestd is the guestd executable bound read-only into every session.
	// Empty: guestd in $DRUMS_BIN, else next to this process's executable.
	Guestd string
	// Busybox is a statically linked busybox with the nsenter applet
	// (Debian's busybox-static), through which init starts every process
	// of a desktop in the desktop's user namespace. Empty: /usr/bin/busybox
	// or /bin/busybox, where Debian's and Ubuntu's put it.
	Busybox string
	// UpperOnDisk puts each session's upper layer under StateDir instead of
	// on a tmpfs private to the session.
	UpperOnDisk bool
	// TmpfsSize caps the tmpfs holding a session's upper layer (0: the
	// kernel's default, half of RAM); its pages are charged to the session's
	// memory cgroup either way.
	TmpfsSize int64
	// Limits are the defaults for Request.Limits.
	Limits Limits
	// MemoryMerge marks every process of a desktop for kernel same-page
	// merging (PR_SET_MEMORY_MERGE, Linux 6.4 and later; init sets it on
	// itself before its first fork, and the kernel keeps it across fork
	// and exec). Marked memory is merged only while the host runs ksmd
	// (/sys/kernel/mm/ksm/run = 1, the host's choice, not drums'). Off by
	// default: merged pages are shared across desktops, and the time a
	// write to one takes tells whether another desktop holds the same
	// page (SECURITY.md).
	MemoryMerge bool
	// HostPorts are the TCP ports a session may reach at its own gateway
	// (none by default: a session reaches nothing on the host).
	HostPorts []uint16
	// Publish, when its Address is set, makes each session's guest ports
	// reachable at Address, a host address other machines reach (a
	// Kubernetes node's): DNAT from Address:port to the session, four
	// ports per slot from FirstPort on (see PublishedPorts). Off by
	// default: clients then reach a session at its own private address.
	Publish Publish
	// DNS are the resolvers sessions with egress may query (port 53). nil
	// reads the host's /etc/resolv.conf.
	DNS []netip.Addr
	// ReadyTimeout bounds Create and Reset besides their context. It must
	// stay well above a start on a loaded 2-core machine (about 2 s when 100
	// sessions start at once).
	ReadyTimeout time.Duration
	// FreezeLimit bounds how long SaveUpper keeps a session frozen: a copy
	// that takes longer is abandoned and the session thawed. A freeze whose
	// maker died is thawed by whoever next takes the session's lock.
	FreezeLimit time.Duration
	// Standby keeps, for every session this engine made ready (created,
	// reset or adopted), its next incarnation started ahead: an init and
	// desktop of the same plan, up but with no network, which the
	// session's next reset takes over instead of starting one (the
	// stack's start is most of a reset). For a process that keeps its
	// engine (the daemon). Off by default: every session then holds about
	// twice its idle memory. Standbys start two at a time, the others
	// queued; a failed one is started again twice, after a backoff, then
	// left until the session's next reset (standby_linux.go).
	Standby bool
	// Spares is how many spare desktops of the default request
	// (Request{}) the engine keeps started ahead, with no network, for
	// creates of that desktop to take instead of starting one
	// (spare_linux.go). Each holds a slot (MaxSessions counts it) and an
	// idle desktop's memory. For a process that keeps its engine (the
	// daemon), which starts them with Engine.StartSpares. 0, the
	// default: none.
	Spares int
	Logger *slog.Logger
}

// Defaults.
const (
	DefaultPrefix      = "drums"
	DefaultStateDir    = "/var/lib/drums"
	DefaultImage       = "osworld"
	DefaultIDBase      = 0x40000000
	DefaultIDRanges    = 12288 // to 0x6fffffff, the top of systemd's container range
	DefaultMaxSessions = 512
	DefaultGuestPort   = 5000
	DefaultWidth       = 1920
	DefaultHeight      = 1080
	DefaultDepth       = 24
)

// DefaultNetwork is the range an engine of prefix uses when Config.Network
// is unset: the block of 10.0.0.0/8 just large enough for maxSessions slots
// (a /21 for the default 512; at most a /16, at least a /28) that a hash of
// the prefix picks. Engines of different prefixes (the daemon, the tasks
// daemon, compat runs, tests) so start from different ranges; a shared or
// overlapping range is still safe (see AddrClaimDir), only slower to fill.
func DefaultNetwork(prefix string, maxSessions int) netip.Prefix {
	bits := slotBits
	for n := 1; n < maxSessions && bits > 16; n <<= 1 {
		bits--
	}
	bits = min(bits, slotBits-2)
	h := fnv.New32a()
	h.Write([]byte(prefix))
	blocks := uint32(1) << (bits - 8) // blocks of that size in 10.0.0.0/8
	v := 10<<24 | (h.Sum32()%blocks)<<(32-bits)
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
}

// DefaultLimits: an OSWorld VM gets 4 GiB; pids.max counts threads, and
// Chromium or LibreOffice run hundreds.
var DefaultLimits = Limits{MemoryBytes: 4 << 30, Pids: 4096, CPUs: 2}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,7}$`)

// withDefaults fills zero fields and checks the result.
func (c Config) withDefaults() (Config, error) {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if !prefixRE.MatchString(c.Prefix) {
		return c, fmt.Errorf("prefix %q: want a lower-case letter then up to 7 letters or digits: %w", c.Prefix, ErrBadRequest)
	}
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	if c.ImageDir == "" {
		c.ImageDir = images.DefaultDir
	}
	if c.Image == "" {
		c.Image = DefaultImage
	}
	if c.IDBase == 0 {
		c.IDBase = DefaultIDBase
	}
	if c.IDRanges <= 0 {
		c.IDRanges = DefaultIDRanges
	}
	if c.IDBase < 65536 || int64(c.IDBase)+int64(c.IDRanges)*idRangeSize > 1<<32-1 {
		return c, fmt.Errorf("id ranges from %d, %d of %d: want them above 65535 and below 2^32-1: %w", c.IDBase, c.IDRanges, idRangeSize, ErrBadRequest)
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if !c.Network.IsValid() {
		c.Network = DefaultNetwork(c.Prefix, c.MaxSessions)
	}
	c.Network = c.Network.Masked()
	if err := checkNetwork(c.Network); err != nil {
		return c, err
	}
	if n := slotCount(c.Network); c.MaxSessions > n {
		c.MaxSessions = n
	}
	if err := c.Publish.check(); err != nil {
		return c, err
	}
	if n := c.Publish.Ports / portsPerSlot; c.Publish.Address.IsValid() && c.MaxSessions > n {
		c.MaxSessions = n
	}
	if c.Binary == "" || c.Guestd == "" {
		dir := os.Getenv("DRUMS_BIN")
		if dir == "" {
			exe, err := os.Executable()
			if err != nil {
				return c, fmt.Errorf("find this executable's directory: %w", err)
			}
			dir = filepath.Dir(exe)
		}
		if c.Binary == "" {
			c.Binary = filepath.Join(dir, InitBinary)
		}
		if c.Guestd == "" {
			c.Guestd = filepath.Join(dir, "guestd")
		}
	}
	if c.Busybox == "" {
		c.Busybox = defaultBusybox()
	}
	c.Limits = c.Limits.or(DefaultLimits)
	if c.Spares < 0 {
		return c, fmt.Errorf("spares %d: must not be negative: %w", c.Spares, ErrBadRequest)
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 60 * time.Second
	}
	if c.FreezeLimit <= 0 {
		c.FreezeLimit = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.Logger = c.Logger.With("component", "sessions")
	return c, nil
}

// InitBinary is the name of the executable a session's init runs.
const InitBinary = "drums-init"

// StaticBusybox is the host's static busybox, the engine's default
// (Config.Busybox), refused if it is missing or dynamically linked.
func StaticBusybox() (string, error) {
	p := defaultBusybox()
	return p, checkBusybox(p)
}

// checkBusybox refuses a busybox that is missing or dynamically linked:
// init runs it after the pivot, where a dynamic one would load its
// libraries from the desktop's root, which the desktop can write.
func checkBusybox(path string) error {
	const hint = "install Debian's busybox-static (make deps)"
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("busybox %s: %w (%s): %w", path, err, hint, ErrUnsupported)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("busybox %s is dynamically linked; desktops need a static one (%s): %w", path, hint, ErrUnsupported)
		}
	}
	return nil
}

func defaultBusybox() string {
	for _, p := range []string{"/usr/bin/busybox", "/bin/busybox"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "/usr/bin/busybox"
}

// or fills l's zero fields from d.
func (l Limits) or(d Limits) Limits {
	if l.MemoryBytes <= 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	if l.Pids <= 0 {
		l.Pids = d.Pids
	}
	if l.CPUs <= 0 {
		l.CPUs = d.CPUs
	}
	return l
}

// minMemory and minPids keep a session able to start its stack at all:
// Xvfb, the buses, openbox, guestd and init need about 60 MiB and 60 threads.
// The maxima are what the kernel takes (pid_max's limit, 2^22; a CFS quota
// is at most about 2^44 us, so CPUs times the period cannot overflow) and
// what a host can give: more CPUs than it has bound nothing.
const (
	minMemory = 128 << 20
	maxMemory = 1 << 50
	minPids   = 64
	maxPids   = 1 << 22
	minCPUs   = 0.05
)

// Check says whether the limits can be applied: a zero field takes the
// default (Config.Limits), any other must be in range. Every way limits
// enter drums (the daemon's API, the CLI, a Request) is checked here,
// before any arithmetic on them.
func (l Limits) Check() error {
	if l.MemoryBytes != 0 && (l.MemoryBytes < minMemory || l.MemoryBytes > maxMemory) {
		return fmt.Errorf("memory limit %d bytes: must be in [%d, %d]: %w", l.MemoryBytes, minMemory, int64(maxMemory), ErrBadRequest)
	}
	if l.Pids != 0 && (l.Pids < minPids || l.Pids > maxPids) {
		return fmt.Errorf("pids limit %d: must be in [%d, %d] (it counts threads): %w", l.Pids, minPids, maxPids, ErrBadRequest)
	}
	if cpus := float64(runtime.NumCPU()); l.CPUs != 0 && !(l.CPUs >= minCPUs && l.CPUs <= cpus) {
		return fmt.Errorf("cpu limit %g: must be in [%g, %g] (this host's CPUs): %w", l.CPUs, minCPUs, cpus, ErrBadRequest)
	}
	return nil
}
