package sessions

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/drums-dev/drums/sessions/images"
)

// Plan is everything a session's init needs, as data: the root it builds,
// the network slot, the cgroups, the user and the desktop stack. NewPlan
// derives it from a request without touching the host, so it is printable
// (`drums session plan`) and tested without root. The engine applies the
// host-side parts (cgroups, nftables); init applies the rest.
type Plan struct {
	ID        string   `json:"id"`
	Prefix    string   `json:"prefix"`
	Slot      int      `json:"slot"`
	Hostname  string   `json:"hostname"`
	User      User     `json:"user"`
	Display   string   `json:"display"`
	Screen    Screen   `json:"screen"`
	GuestPort int      `json:"guest_port"`
	Env       []string `json:"env"` // every user process's environment
	// RootEnv is added to Env for the processes that run as the
	// desktop's root.
	RootEnv []string   `json:"root_env,omitempty"`
	Root    RootPlan   `json:"root"`
	Net     NetPlan    `json:"net"`
	Cgroup  CgroupPlan `json:"cgroup"`
	// Stack is the desktop, in start order; init starts a process as soon
	// as the ones it Needs are ready, so independent ones start together.
	Stack []Proc `json:"stack"`
	// IDs maps the desktop's users and groups to host ones: root in a
	// desktop is an unprivileged host uid no other desktop or host user
	// has (IDClaimDir).
	IDs IDMap `json:"ids"`
	// Busybox is the host's static busybox, which starts every process of
	// the desktop in its user namespace (enter_linux.go).
	Busybox string `json:"busybox"`
	// MemoryMerge marks the desktop's memory for same-page merging
	// (Config.MemoryMerge).
	MemoryMerge bool `json:"memory_merge,omitempty"`
}

// IDMap maps ids 0..Size-1 of a desktop's user namespace to host ids
// Host..Host+Size-1, the same for users and groups.
type IDMap struct {
	Host int `json:"host"`
	Size int `json:"size"`
}

// ToHost is the host id of a desktop id.
func (m IDMap) ToHost(id int) int { return m.Host + id }

// User is the desktop's user, as the image says (uid 1000, "user", as
// OSWorld tasks assume it).
type User = images.User

// Screen is Xvfb's screen.
type Screen struct {
	Width  int  `json:"width"`
	Height int  `json:"height"`
	Depth  int  `json:"depth"`
	GLX    bool `json:"glx"`
}

// RootPlan is the session's root filesystem: an overlay whose lower layers
// are an image and drums' layer for it (read-only, shared by every desktop
// of the image, mapped to the desktop's ids) and whose upper layer is
// private to the session, with private /proc, /dev, /tmp, /run and a
// read-only /sys. Nothing of the host's filesystem is in it but the binds
// listed in Mounts.
type RootPlan struct {
	// SessionDir is the host directory of the session's record, log and
	// control socket (and upper layer when on disk).
	SessionDir string `json:"session_dir"`
	// Base is where init mounts the session's private tmpfs (in its own
	// mount namespace only): the image's idmapped mount, the merged root
	// and, unless on disk, the upper and work directories.
	Base string `json:"base"`
	// Image is the image's directory on the host; init mounts it, mapped
	// to the desktop's ids, and stacks Layers (relative to it, topmost
	// first) as the overlay's lower layers.
	Image  string   `json:"image"`
	Layers []string `json:"layers"`
	// Snapshot is copied into the upper layer before the overlay is
	// mounted, its ids mapped to the desktop's (SaveUpper stores them
	// unmapped).
	Snapshot string `json:"snapshot,omitempty"`
	// UpperDir and WorkDir are host directories when the upper layer is on
	// disk, "" when it is on the tmpfs.
	UpperDir  string `json:"upper_dir,omitempty"`
	WorkDir   string `json:"work_dir,omitempty"`
	TmpfsSize int64  `json:"tmpfs_size,omitempty"`
	// Mounts are made inside the merged root, in order, before pivot_root.
	Mounts []Mount `json:"mounts"`
	Dirs   []Dir   `json:"dirs"`
	// Devices are the nodes of the minimal /dev.
	Devices []Device `json:"devices"`
	Links   []Link   `json:"links"`
	// ReadOnly are session paths bound onto themselves read-only.
	ReadOnly []string `json:"read_only"`
	// Masks are hidden: files under /dev/null, directories under an empty
	// read-only tmpfs: kernel files a desktop must not read (runc's and
	// Docker's list, and the page-frame side channels).
	Masks []string `json:"masks"`
	// Control is the host path of init's control socket (exec, status).
	Control string `json:"control"`
}

// Mount is one mount inside the session. Source is a host path for binds:
// drums' guestd, and what a Request binds on purpose (compat binds
// upstream's tree); every bind is read-only, nosuid and nodev.
type Mount struct {
	Type   string   `json:"type"` // a filesystem type, or "bind"
	Source string   `json:"source,omitempty"`
	Target string   `json:"target"`
	Flags  []string `json:"flags,omitempty"` // ro nosuid nodev noexec
	Data   string   `json:"data,omitempty"`
}

// Dir is a directory init creates after the mounts.
type Dir struct {
	Path string `json:"path"`
	Mode uint32 `json:"mode"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
}

// Device is a character device node.
type Device struct {
	Path  string `json:"path"`
	Major uint32 `json:"major"`
	Minor uint32 `json:"minor"`
	Mode  uint32 `json:"mode"`
}

// Link is a symlink.
type Link struct {
	Path   string `json:"path"`
	Target string `json:"target"`
}

// NetPlan is the session's network slot. Init creates the veth pair from
// inside the session's namespace; the engine installs the nftables table.
type NetPlan struct {
	HostVeth  string       `json:"host_veth"`
	GuestVeth string       `json:"guest_veth"`
	Gateway   netip.Prefix `json:"gateway"` // the host's end
	Address   netip.Prefix `json:"address"` // the session's end
	Table     string       `json:"table"`   // nftables table, family inet
	Egress    bool         `json:"egress"`
	DNS       []netip.Addr `json:"dns,omitempty"`
	HostPorts []uint16     `json:"host_ports,omitempty"`
	// Published, when set, is where the session's guest ports are
	// reachable from outside the host (Config.Publish).
	Published *Published `json:"published,omitempty"`
}

// CgroupPlan is the session's cgroup in every hierarchy the engine uses.
type CgroupPlan struct {
	Version int `json:"version"` // 1 or 2
	// Dirs maps a v1 controller (memory, pids, cpu, freezer) to the
	// session's directory; v2 has one entry, "".
	Dirs        map[string]string `json:"dirs"`
	MemoryBytes int64             `json:"memory_bytes"`
	Pids        int               `json:"pids"`
	CPUQuotaUS  int64             `json:"cpu_quota_us"`
	CPUPeriodUS int64             `json:"cpu_period_us"`
	// Delegated, when set, hands cgroups under the session's cgroup2
	// directory (unified) to the desktop, as systemd delegates a cgroup
	// to a user's manager (its CGROUP_DELEGATION.md): the engine creates
	// each directory (Path relative to it) and gives it and its
	// cgroup.procs, cgroup.subtree_control and cgroup.threads to the
	// host ids UID, GID; the session's directory itself stays the host
	// root's. Init mounts cgroup2 at /sys/fs/cgroup in the desktop,
	// rooted there by the desktop's cgroup namespace.
	Delegated []Dir `json:"delegated,omitempty"`
}

// Proc is one process of the desktop stack, run as the session's user.
type Proc struct {
	Name  string   `json:"name"`
	Argv  []string `json:"argv"`
	Env   []string `json:"env,omitempty"` // added to the plan's environment
	Needs []string `json:"needs,omitempty"`
	// Ready is how the process says it is ready:
	//   displayfd      Xvfb writes its display number on fd 3
	//   print-address  dbus-daemon writes its address on fd 3
	//   a11y           org.a11y.Bus answers on the session bus and the
	//                  registry is activated on the accessibility bus
	//   log            the process prints a line containing ReadyLine:
	//                  guestd "msg=listening" once it accepts connections
	//                  (the engine then checks that it answers GET
	//                  /screenshot with a PNG); openbox the line its
	//                  --startup command prints, which it runs once it has
	//                  grabbed its keys (its _NET_SUPPORTING_WM_CHECK comes
	//                  before that: a Ctrl+Alt+T pressed then is lost)
	//   notify         the process sends a datagram with a line containing
	//                  ReadyLine to $NOTIFY_SOCKET, an abstract socket init
	//                  listens on, as sd_notify(3) does (systemd --user)
	Ready     string `json:"ready"`
	ReadyLine string `json:"ready_line,omitempty"`
	// Socket, where set, is a Unix socket the process listens on before
	// it is ready: the processes that need it start as soon as it accepts
	// a connection. Xvfb listens before it builds its screen and compiles
	// its keymap; an X client that connects then waits in the connection
	// setup, so its own start (loading its libraries) overlaps Xvfb's.
	Socket string `json:"socket,omitempty"`
	// Essential processes fail the session when they exit.
	Essential bool `json:"essential"`
	// Root runs the process as the desktop's root instead of its user.
	Root bool `json:"root,omitempty"`
	// Manager runs the process, as the desktop's root, as PID 1 of a PID
	// namespace of its own, with mount and cgroup namespaces of its own
	// rooted at Cgroup, and with Env as its whole environment: the
	// desktop's systemd (addSystemManager, RunSystemManager).
	Manager bool `json:"manager,omitempty"`
	// Cgroup, where set, is the cgroup (a path under the desktop's
	// /sys/fs/cgroup, one of CgroupPlan.Delegated) the process starts in:
	// init, as host root, moves it there before it runs its program.
	Cgroup string `json:"cgroup,omitempty"`
}

// planInput is everything NewPlan reads; the engine gathers the host facts.
type planInput struct {
	cfg     Config
	req     Request
	id      string
	slot    int
	image   imageInfo
	idBase  int // the host id range the engine claimed
	cgroups cgroupLayout
	dns     []netip.Addr
}

// imageInfo is what a plan takes of an image.
type imageInfo struct {
	dir     string // images.Image.Dir: mounted, idmapped, as a whole
	layer   string // drums' layer under dir (images.Image.LayerDir)
	id      string
	desktop images.Desktop
	// systemBus: the desktop runs a system bus (images.SystemBusConf).
	systemBus bool
	shell     images.Shell
}

func infoOf(im *images.Image) imageInfo {
	return imageInfo{dir: im.Dir(), layer: im.LayerDir(), id: im.ShortID(), desktop: im.Desktop, systemBus: im.SystemServices(), shell: im.Shell()}
}

// Session paths fixed by OSWorld.
const (
	sessionPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	displayName = ":0"
)

// ttyGroup is Debian's tty group, devpts' gid=5.
const ttyGroup = 5

// idRangeSize is how many ids a desktop maps: 0..65535, nobody (65534)
// included, as an image's files use them.
const idRangeSize = 65536

func newPlan(in planInput) (*Plan, error) {
	req, cfg := in.req.withDefaults(in.cfg), in.cfg
	if req.Width < 64 || req.Height < 64 || req.Width > 8192 || req.Height > 8192 {
		return nil, fmt.Errorf("screen %dx%d: want 64..8192 on each side: %w", req.Width, req.Height, ErrBadRequest)
	}
	if req.Depth != 16 && req.Depth != 24 {
		return nil, fmt.Errorf("screen depth %d: want 16 or 24: %w", req.Depth, ErrBadRequest)
	}
	if req.GuestPort < 1 || req.GuestPort > 65535 {
		return nil, fmt.Errorf("guest port %d: %w", req.GuestPort, ErrBadRequest)
	}
	if req.Snapshot != "" && !filepath.IsAbs(req.Snapshot) {
		return nil, fmt.Errorf("snapshot %q: want an absolute directory: %w", req.Snapshot, ErrBadRequest)
	}
	// Checked as requested: the defaults are Config's.
	if err := in.req.Limits.Check(); err != nil {
		return nil, err
	}
	lim := req.Limits
	if in.slot < 0 || in.slot >= cfg.MaxSessions {
		return nil, fmt.Errorf("slot %d outside 0..%d: %w", in.slot, cfg.MaxSessions-1, ErrBadRequest)
	}
	im := in.image
	if im.dir == "" {
		return nil, fmt.Errorf("plan without an image: %w", ErrBadRequest)
	}
	if problems := im.desktop.Problems(); len(problems) > 0 {
		return nil, fmt.Errorf("image %s cannot run a desktop (drums image check %s): %s: %w", im.id, im.id, strings.Join(problems, "; "), ErrBadRequest)
	}
	u := im.desktop.User
	launcher := im.desktop.Path("at-spi-bus-launcher")
	binds, err := checkBinds(req.Binds)
	if err != nil {
		return nil, err
	}
	gw, addr := slotAddrs(cfg.Network, in.slot)
	sessionDir := filepath.Join(cfg.StateDir, cfg.Prefix, "sessions", in.id)

	user := *u
	p := &Plan{
		ID:          in.id,
		Prefix:      cfg.Prefix,
		Slot:        in.slot,
		Hostname:    images.Hostname,
		User:        user,
		Display:     displayName,
		Screen:      Screen{Width: req.Width, Height: req.Height, Depth: req.Depth, GLX: req.GLX},
		GuestPort:   req.GuestPort,
		Env:         userEnv(user, im.desktop.Locale),
		IDs:         IDMap{Host: in.idBase, Size: idRangeSize},
		Busybox:     cfg.Busybox,
		MemoryMerge: cfg.MemoryMerge,
		Net: NetPlan{
			HostVeth:  hostVeth(cfg.Prefix, in.slot),
			GuestVeth: "eth0",
			Gateway:   gw,
			Address:   addr,
			Table:     tableName(cfg.Prefix, in.slot),
			Egress:    !req.NoEgress,
			HostPorts: cfg.HostPorts,
		},
		Cgroup: in.cgroups.plan(in.id, lim),
	}
	if p.Net.Egress {
		p.Net.DNS = in.dns
	}
	p.Net.Published = cfg.Publish.ports(in.slot, req.GuestPort)
	p.Root = RootPlan{
		SessionDir: sessionDir,
		Base:       filepath.Join(sessionDir, "base"),
		Image:      im.dir,
		Layers:     []string{im.layer, "rootfs"},
		Snapshot:   req.Snapshot,
		TmpfsSize:  cfg.TmpfsSize,
		Control:    filepath.Join(sessionDir, "control.sock"),
	}
	if cfg.UpperOnDisk {
		p.Root.UpperDir = filepath.Join(sessionDir, "upper")
		p.Root.WorkDir = filepath.Join(sessionDir, "work")
	}
	p.Root.Mounts, p.Root.Dirs, p.Root.Devices, p.Root.Links = rootMounts(user, p.IDs, cfg.Guestd, binds)
	p.Root.ReadOnly = procReadOnly
	p.Root.Masks = maskedPaths
	if im.shell == images.ShellGNOME {
		// Mutter composites with OpenGL: Xvfb's GLX, on Mesa's llvmpipe.
		p.Screen.GLX = true
		p.Env = append(p.Env, images.GNOMEEnv...)
	}
	p.Stack = stack(p, launcher, im.shell)
	// The GNOME profile runs the image's systemd, as the VM does: the
	// system manager, which serves the system bus, and the user's manager,
	// as the VM's user@1000.service. The light one runs neither (they
	// cost memory in every desktop, and nothing of openbox's desktop uses
	// them), only the system bus its recipe asks for. Both managers need a
	// cgroup2 hierarchy to delegate: a host with only v1 ones gets the
	// system bus alone.
	switch {
	case im.shell == images.ShellGNOME && p.Cgroup.unified() != "":
		addSystemManager(p)
		addUserManager(p)
	case im.systemBus:
		addSystemBus(p)
	}
	return p, nil
}

// systemdBinary is the image's systemd: the user's manager with --user,
// the system manager without.
const systemdBinary = "/lib/systemd/systemd"

// addUserManager gives the desktop the user's systemd manager, as the VM
// runs it: in the cgroup the VM's systemd gives it,
// /user.slice/user-UID.slice/user@UID.service, delegated to the user
// (it makes init.scope, app.slice, a cgroup per unit under it), with
// the desktop's root owning the slices above, as the VM's root does; the
// desktop's cgroup root stays the host root's (its processes, init's
// among them, are the host's to move), and init moves the manager into
// its cgroup. It starts once the session bus is up (its
// units use it) and is ready when it says its startup finished (sd_notify,
// as user@.service is Type=notify). systemd 252 sends READY=1 twice: with
// "STATUS=Reached basic.target." before default.target's units have
// started, while `systemctl --user is-system-running` says "starting",
// and with "STATUS=Ready." once its startup is done and it says
// "running". Its exit does not end the desktop.
//
// It must not take drums' session bus: the image's dbus.socket (Debian's
// dbus-user-session) listens on $XDG_RUNTIME_DIR/bus, where systemd
// unlinks drums' bus socket to bind its own, and a second bus daemon
// then owns the address every process of the desktop uses. A runtime mask
// (/run/systemd/user, below /etc/systemd/user) keeps it and its service
// down; the manager then never joins the session bus either (it does once
// dbus.socket runs), and `systemctl --user` reaches it on its private
// socket. tracker-extract-3 (default.target.wants) is masked too: it
// starts the Tracker indexer, 40 MiB and a crawl of the home directory
// in every desktop, which the VM starts from gnome-session's target, not
// reached here. pipewire and pulseaudio, the VM's sound servers, run.
func addUserManager(p *Plan) {
	u, ids := p.User, p.IDs
	uid := strconv.Itoa(u.UID)
	slice := "user.slice/user-" + uid + ".slice"
	service := slice + "/user@" + uid + ".service"
	p.Cgroup.Delegated = append(p.Cgroup.Delegated,
		rootDir(ids, "user.slice", 0o755), rootDir(ids, slice, 0o755),
		Dir{Path: service, Mode: 0o755, UID: ids.ToHost(u.UID), GID: ids.ToHost(u.GID)})
	p.Root.Dirs = append(p.Root.Dirs, rootDir(ids, "/run/systemd/user", 0o755))
	maskUnits(p, "/run/systemd/user", userUnitsMasked)
	p.Stack = append(p.Stack, Proc{Name: "systemd-user", Argv: []string{systemdBinary, "--user"},
		Needs: []string{"dbus", "systemd"}, Ready: "notify", ReadyLine: "STATUS=Ready.", Cgroup: "/" + service})
}

// userUnitsMasked are the image's user units the user manager must not
// start (addUserManager says why).
var userUnitsMasked = []string{"dbus.socket", "dbus.service", "tracker-extract-3.service"}

// systemManagerCgroup is the system manager's cgroup, delegated to the
// desktop's root: the root of the manager's cgroup namespace, where it
// makes init.scope and system.slice as the VM's systemd does at /.
const systemManagerCgroup = "systemd"

// systemBusSocket is where the system bus listens.
const systemBusSocket = "/run/dbus/system_bus_socket"

// addSystemManager gives the desktop the image's systemd as its system
// manager, in place of drums' system bus (addSystemBus): it serves the
// system bus from the image's dbus.socket and activates timedated,
// hostnamed, localed and logind on it as the VM's does, and answers
// systemctl. It runs as PID 1 of a PID namespace of its own (systemd
// runs as a system manager only as PID 1), under the desktop's root and
// seccomp filter, with mount and cgroup namespaces of its own
// (RunSystemManager): its cgroup namespace is rooted at a cgroup
// delegated to the desktop's root, beside the user manager's slices, and
// its mounts are made by init before it runs (it can mount nothing
// itself). It brings up basic.target, less what masks below keep down.
// The processes that use the system bus (GNOME Shell) start once its
// socket accepts; it is ready when it says its startup finished
// (sd_notify, READY=1). It is essential: `systemctl poweroff` ends the
// desktop, as it ends the VM.
//
// The desktop's other processes are not in its PID namespace, and
// systemd refuses connections to its private socket from processes it
// cannot see (their pid reads 0 there): root's systemctl, which uses that
// socket, would fail with "No data available". images.SystemctlEnv has
// it go over the system bus, as every other user's does: in the
// environment of root's processes, and of what sudo runs as root (drums'
// layer).
func addSystemManager(p *Plan) {
	ids := p.IDs
	p.Cgroup.Delegated = append(p.Cgroup.Delegated, rootDir(ids, systemManagerCgroup, 0o755))
	addSystemBusDirs(p)
	maskUnits(p, "/run/systemd/system", systemUnitsMasked)
	p.Root.Dirs = append(p.Root.Dirs, rootDir(ids, "/run/systemd/system-generators", 0o755))
	maskUnits(p, "/run/systemd/system-generators", systemGeneratorsMasked)
	p.RootEnv = append(p.RootEnv, images.SystemctlEnv)
	p.Stack = append(p.Stack, Proc{Name: "systemd", Argv: []string{systemdBinary, "--unit=basic.target"},
		Env: []string{"container=drums"}, Ready: "notify", ReadyLine: "READY=1", Socket: systemBusSocket,
		Essential: true, Root: true, Manager: true, Cgroup: "/" + systemManagerCgroup})
	for i := range p.Stack {
		if p.Stack[i].Name == "gnome-shell" {
			p.Stack[i].Needs = append(p.Stack[i].Needs, "systemd")
		}
	}
}

// maskUnits masks systemd units or generators at runtime: links to
// /dev/null in dir, a runtime unit directory (/run/systemd/system or
// /run/systemd/user) or generator directory.
func maskUnits(p *Plan, dir string, units []string) {
	for _, unit := range units {
		p.Root.Links = append(p.Root.Links, Link{Path: dir + "/" + unit, Target: "/dev/null"})
	}
}

// addSystemBusDirs makes the directories of a system bus, whichever runs
// it: its socket's, and /run/systemd/system (which says the desktop was
// booted with systemd: sd_booted()).
func addSystemBusDirs(p *Plan) {
	for _, d := range []string{"/run/dbus", "/run/systemd", "/run/systemd/system"} {
		p.Root.Dirs = append(p.Root.Dirs, rootDir(p.IDs, d, 0o755))
	}
}

// systemUnitsMasked are the image's system units the system manager must
// not start:
//   - the timers (apt, man-db, e2scrub, fstrim: package updates and
//     filesystem work in every desktop, which the host does for itself);
//   - what would load kernel modules or make their device nodes
//     (modprobe@ instances, systemd-modules-load, kmod-static-nodes):
//     kernel state outside the desktop, refused to it anyway;
//   - what sets up a machine's own devices and mounts, which in a desktop
//     are drums' (systemd-tmpfiles-setup-dev, systemd-remount-fs), and
//     the tracing filesystem's mount, which a desktop may not make and
//     whose failure would leave the manager "degraded";
//   - systemd-sysusers, which ran when the image was built and has no
//     user to add.
//
// Those on the way to basic.target also delay the system bus, which GNOME
// Shell waits for.
var systemUnitsMasked = []string{
	"timers.target", "sys-kernel-tracing.mount",
	"modprobe@.service", "systemd-modules-load.service", "kmod-static-nodes.service",
	"systemd-tmpfiles-setup-dev.service", "systemd-remount-fs.service", "systemd-sysusers.service",
}

// systemGeneratorsMasked are systemd 252's system generators, none of
// which has anything to generate in a desktop: block devices and their
// encryption (cryptsetup, integritysetup, veritysetup, gpt-auto,
// hibernate-resume), /etc/fstab (the image's lists nothing), consoles
// (getty), the kernel command line (debug, run), offline updates
// (system-update), /etc/rc.local (none) and SysV scripts (the image's
// have units, or are the host's work: hwclock.sh). The manager runs them
// all at every start, and starts its units only after.
var systemGeneratorsMasked = []string{
	"systemd-cryptsetup-generator", "systemd-debug-generator", "systemd-fstab-generator",
	"systemd-getty-generator", "systemd-gpt-auto-generator", "systemd-hibernate-resume-generator",
	"systemd-integritysetup-generator", "systemd-rc-local-generator", "systemd-run-generator",
	"systemd-system-update-generator", "systemd-sysv-generator", "systemd-veritysetup-generator",
}

// addSystemBus gives the desktop its system bus, run by its root: the
// bus's socket directory, /run/systemd/system (sd_booted(), which
// timedatectl and its kind check before they use the bus), and the bus
// itself: nothing Needs it, it starts beside Xvfb, and ready waits for
// its printed address as for every process of the stack.
func addSystemBus(p *Plan) {
	addSystemBusDirs(p)
	p.Stack = append(p.Stack, Proc{Name: "system-bus",
		Argv:  []string{"dbus-daemon", "--config-file=" + images.SystemBusConf, "--nofork", "--print-address=3"},
		Ready: "print-address", Root: true})
}

// userEnv is the environment of every process of the desktop.
func userEnv(u User, locale string) []string {
	if locale == "" {
		locale = "C.UTF-8"
	}
	runtime := "/run/user/" + strconv.Itoa(u.UID)
	return []string{
		"PATH=" + sessionPath,
		"HOME=" + u.Home,
		"USER=" + u.Name,
		"LOGNAME=" + u.Name,
		"SHELL=" + u.Shell,
		"LANG=" + locale,
		"DISPLAY=" + displayName,
		"XDG_RUNTIME_DIR=" + runtime,
		"DBUS_SESSION_BUS_ADDRESS=unix:path=" + runtime + "/bus",
		"XDG_SESSION_TYPE=x11",
		// The accessibility switches: GTK2/3 load the AT-SPI bridge, Chromium
		// and Electron expose their tree, Qt registers.
		"GTK_MODULES=gail:atk-bridge",
		"ACCESSIBILITY_ENABLED=1",
		"QT_ACCESSIBILITY=1",
		"QT_LINUX_ACCESSIBILITY_ALWAYS_ON=1",
		"NO_AT_BRIDGE=0",
		// GTK4's GL renderer never registers with AT-SPI under Xvfb and
		// burns CPU (field notes §7).
		"GSK_RENDERER=cairo",
	}
}

// procReadOnly are the parts of /proc a desktop reads but may not write.
var procReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys"}

// maskedPaths are runc's and Docker's masked paths, with the page-frame
// files (/proc/kpage*: which physical pages are in use, a host-wide side
// channel), the sysrq trigger and the host's kernel command line (how the
// host booted: its console, its hypervisor's options and addresses) added.
// Most are also root-only on the host (root in a desktop is not host
// root); the masks hide them anyway.
var maskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/cmdline", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/sysrq-trigger",
	"/sys/firmware", "/sys/devices/virtual/powercap", "/sys/kernel/debug", "/sys/kernel/security",
}

// rootDir is a directory of the desktop's root owned by its root.
func rootDir(ids IDMap, path string, mode uint32) Dir {
	return Dir{Path: path, Mode: mode, UID: ids.ToHost(0), GID: ids.ToHost(0)}
}

// rootMounts lists the mounts, directories, devices and links of a root.
// What init creates is owned by the desktop's ids (ids.ToHost), so that
// root in the desktop owns /tmp and /dev as in a VM.
func rootMounts(u User, ids IDMap, guestd string, binds []Bind) ([]Mount, []Dir, []Device, []Link) {
	runtime := "/run/user/" + strconv.Itoa(u.UID)
	root := fmt.Sprintf("uid=%d,gid=%d", ids.ToHost(0), ids.ToHost(0))
	mounts := []Mount{
		{Type: "proc", Target: "/proc", Flags: []string{"nosuid", "nodev", "noexec"}},
		{Type: "tmpfs", Target: "/dev", Flags: []string{"nosuid", "noexec"}, Data: "mode=755,size=64k," + root},
		{Type: "devpts", Target: "/dev/pts", Flags: []string{"nosuid", "noexec"},
			Data: fmt.Sprintf("newinstance,ptmxmode=0666,mode=0620,gid=%d", ids.ToHost(ttyGroup))},
		{Type: "tmpfs", Target: "/dev/shm", Flags: []string{"nosuid", "nodev"}, Data: "mode=1777," + root},
		{Type: "mqueue", Target: "/dev/mqueue", Flags: []string{"nosuid", "nodev", "noexec"}},
		{Type: "sysfs", Target: "/sys", Flags: []string{"ro", "nosuid", "nodev", "noexec"}},
		{Type: "tmpfs", Target: "/tmp", Flags: []string{"nosuid", "nodev"}, Data: "mode=1777," + root},
		{Type: "tmpfs", Target: "/run", Flags: []string{"nosuid", "nodev"}, Data: "mode=755," + root},
		{Type: "tmpfs", Target: runtime, Flags: []string{"nosuid", "nodev"},
			Data: fmt.Sprintf("mode=700,uid=%d,gid=%d", ids.ToHost(u.UID), ids.ToHost(u.GID))},
	}
	if guestd != "" {
		mounts = append(mounts, Mount{Type: "bind", Source: guestd, Target: images.GuestdPath, Flags: []string{"ro", "nosuid", "nodev"}})
	}
	for _, b := range binds {
		mounts = append(mounts, Mount{Type: "bind", Source: b.Source, Target: b.Target, Flags: []string{"ro", "nosuid", "nodev"}})
	}
	dirs := []Dir{rootDir(ids, "/tmp/.X11-unix", 0o1777), rootDir(ids, "/tmp/.ICE-unix", 0o1777), rootDir(ids, "/run/lock", 0o1777)}
	devices := []Device{
		{Path: "/dev/null", Major: 1, Minor: 3, Mode: 0o666},
		{Path: "/dev/zero", Major: 1, Minor: 5, Mode: 0o666},
		{Path: "/dev/full", Major: 1, Minor: 7, Mode: 0o666},
		{Path: "/dev/random", Major: 1, Minor: 8, Mode: 0o666},
		{Path: "/dev/urandom", Major: 1, Minor: 9, Mode: 0o666},
		{Path: "/dev/tty", Major: 5, Minor: 0, Mode: 0o666},
	}
	links := []Link{
		{Path: "/dev/ptmx", Target: "pts/ptmx"},
		{Path: "/dev/fd", Target: "/proc/self/fd"},
		{Path: "/dev/stdin", Target: "/proc/self/fd/0"},
		{Path: "/dev/stdout", Target: "/proc/self/fd/1"},
		{Path: "/dev/stderr", Target: "/proc/self/fd/2"},
	}
	return mounts, dirs, devices, links
}

// checkBinds checks what a request binds into its desktop: absolute,
// existing host paths, at absolute targets outside what init mounts itself.
func checkBinds(binds []Bind) ([]Bind, error) {
	var out []Bind
	for _, b := range binds {
		src, dst := filepath.Clean(b.Source), filepath.Clean(b.Target)
		if !filepath.IsAbs(src) || !filepath.IsAbs(dst) || dst == "/" {
			return nil, fmt.Errorf("bind %s on %s: want absolute paths, not /: %w", b.Source, b.Target, ErrBadRequest)
		}
		for _, own := range []string{"/proc", "/dev", "/sys", "/run", "/tmp"} {
			if dst == own || strings.HasPrefix(dst, own+"/") {
				return nil, fmt.Errorf("bind on %s: %s is the desktop's own: %w", dst, own, ErrBadRequest)
			}
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fmt.Errorf("bind %s: %w: %w", src, err, ErrBadRequest)
		}
		out = append(out, Bind{Source: src, Target: dst})
	}
	return out, nil
}

// stack is the desktop: Xvfb and the session bus first (together), then the
// window manager (the image's shell), the accessibility bus and guestd,
// each as soon as what it needs is ready (Xvfb: listening). launcher is
// where the image has at-spi-bus-launcher.
func stack(p *Plan, launcher string, shell images.Shell) []Proc {
	xvfb := []string{"Xvfb", p.Display, "-displayfd", "3", "-noreset", "-nolisten", "tcp",
		"-screen", "0", fmt.Sprintf("%dx%dx%d", p.Screen.Width, p.Screen.Height, p.Screen.Depth)}
	if !p.Screen.GLX {
		xvfb = append(xvfb, "-extension", "GLX")
	}
	return []Proc{
		{Name: "xvfb", Argv: xvfb, Ready: "displayfd", Socket: "/tmp/.X11-unix/X" + strings.TrimPrefix(p.Display, ":"), Essential: true},
		{Name: "dbus", Argv: []string{"dbus-daemon", "--config-file=" + images.SessionBusConf, "--nofork", "--print-address=3"},
			Ready: "print-address", Essential: true},
		windowManager(shell),
		{Name: "at-spi", Argv: []string{launcher, "--launch-immediately", "--a11y=1"},
			Needs: []string{"xvfb", "dbus"}, Ready: "a11y"},
		{Name: "guestd", Argv: []string{images.GuestdPath, "--listen", fmt.Sprintf("0.0.0.0:%d", p.GuestPort), "--vnc-listen", "0.0.0.0:8006"},
			Needs: []string{"xvfb", "dbus"}, Ready: "log", ReadyLine: "msg=listening", Essential: true},
	}
}

// wmReadyLine is what openbox's --startup command prints.
const wmReadyLine = "drums: window manager ready"

// windowManager is the desktop's shell. openbox for the light images.
// GNOME Shell for the GNOME profile: in X11 mode (mutter as Xvfb's
// compositing window manager, no logind or display server of its own),
// without a session manager (gnome-session would want systemd's user
// instance on the session bus, and logind; the user manager runs, off
// the bus: addUserManager), in Ubuntu's session mode; it also needs the session bus,
// where it owns org.gnome.Shell. It is ready when drums' extension logs
// images.GNOMEReadyLine: the startup animation over and the dock in
// place. Owning org.gnome.Shell (about 1 s sooner) or "GNOME Shell
// started" are not enough: a screenshot then shows no top bar, or no
// dock. Neither window manager is essential: when it exits, as when a
// task replaces it (gnome-shell --replace), Xvfb, guestd and the
// applications go on. Unlike the VM, where gnome-session starts GNOME
// Shell again when it exits, nothing here restarts a window manager that
// exits: the desktop has none until a task starts one or the session is
// reset.
func windowManager(shell images.Shell) Proc {
	if shell == images.ShellGNOME {
		return Proc{Name: "gnome-shell", Argv: []string{"gnome-shell", "--x11", "--sm-disable", "--mode=" + images.GNOMESessionMode},
			Needs: []string{"xvfb", "dbus"}, Ready: "log", ReadyLine: images.GNOMEReadyLine}
	}
	return Proc{Name: "openbox", Argv: []string{"openbox", "--sm-disable", "--startup", "/bin/sh -c 'echo " + wmReadyLine + "'"},
		Env: images.OpenboxEnv, Needs: []string{"xvfb"}, Ready: "log", ReadyLine: wmReadyLine}
}

// String renders the plan as indented JSON.
func (p *Plan) String() string {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Sprintf("plan %s: %v", p.ID, err)
	}
	return string(b)
}
