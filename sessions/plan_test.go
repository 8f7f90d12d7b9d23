package sessions

import (
	"errors"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/drums-dev/drums/sessions/images"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testInput is a plan input for a fixed, made-up host.
func testInput(t *testing.T, req Request, slot int) planInput {
	t.Helper()
	cfg, err := Config{Prefix: "t", StateDir: "/var/lib/drums", Binary: "/usr/bin/drums", Guestd: "/usr/bin/guestd",
		Network: netip.MustParsePrefix("10.213.0.0/16"), DNS: []netip.Addr{netip.MustParseAddr("10.255.255.53")}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	mounts := []mountInfo{
		{Point: "/", FSType: "ext4"},
		{Point: "/proc", FSType: "proc"},
		{Point: "/sys/fs/cgroup/memory", FSType: "cgroup", Super: "rw,memory"},
		{Point: "/sys/fs/cgroup/pids", FSType: "cgroup", Super: "rw,pids"},
		{Point: "/sys/fs/cgroup/cpu,cpuacct", FSType: "cgroup", Super: "rw,cpu,cpuacct"},
		{Point: "/sys/fs/cgroup/freezer", FSType: "cgroup", Super: "rw,freezer"},
		{Point: "/sys/fs/cgroup/devices", FSType: "cgroup", Super: "rw,devices"},
		{Point: "/sys/fs/cgroup/cpuset", FSType: "cgroup", Super: "rw,cpuset,clone_children"},
		{Point: "/sys/fs/cgroup/systemd", FSType: "cgroup", Super: "rw,xattr,name=systemd"},
		{Point: "/sys/fs/cgroup/unified", FSType: "cgroup2", Super: "rw"},
		{Point: "/usr", FSType: "xfs"},
		{Point: "/home", FSType: "ext4"},
		{Point: "/run/user/0", FSType: "tmpfs"},
	}
	own := map[string]string{"memory": "/daemon", "pids": "/", "cpu": "/", "cpuacct": "/", "freezer": "/",
		"devices": "/", "cpuset": "/", "name=systemd": "/", "": "/"}
	layout, err := layoutV1(cfg.Prefix, mounts, own)
	if err != nil {
		t.Fatal(err)
	}
	return planInput{cfg: cfg, req: req, id: "t-" + strconv.Itoa(slot) + "-abcdef", slot: slot,
		image: testImage(), idBase: DefaultIDBase + 7*idRangeSize, cgroups: layout, dns: cfg.DNS}
}

// testImage is an image that has what a desktop needs.
func testImage() imageInfo {
	d := images.Desktop{Locale: "en_US.UTF-8",
		User: &images.User{Name: "user", UID: 1000, GID: 1000, Groups: []int{27}, Home: "/home/user", Shell: "/bin/bash"}}
	for _, p := range []struct{ name, path string }{
		{"Xvfb", "/usr/bin/Xvfb"}, {"dbus-daemon", "/usr/bin/dbus-daemon"}, {"openbox", "/usr/bin/openbox"},
		{"at-spi-bus-launcher", "/usr/libexec/at-spi-bus-launcher"}, {"python3", "/usr/bin/python3"}, {"bash", "/usr/bin/bash"},
	} {
		d.Parts = append(d.Parts, images.Part{Name: p.name, Required: true, Path: p.path})
	}
	return imageInfo{dir: "/var/lib/drums/images/store/" + strings.Repeat("ab", 32), layer: "layer-v9", id: "abababababab", desktop: d}
}

func TestPlan(t *testing.T) {
	p, err := newPlan(testInput(t, Request{}, 3))
	if err != nil {
		t.Fatal(err)
	}
	if p.Screen != (Screen{Width: 1920, Height: 1080, Depth: 24}) || p.GuestPort != 5000 || p.Display != ":0" {
		t.Errorf("defaults: screen %+v port %d display %s", p.Screen, p.GuestPort, p.Display)
	}
	if p.Net.HostVeth != "th3" || p.Net.Table != "t_3" || p.Net.GuestVeth != "eth0" {
		t.Errorf("names: %+v", p.Net)
	}
	if p.Net.Gateway.String() != "10.213.0.13/30" || p.Net.Address.String() != "10.213.0.14/30" {
		t.Errorf("addresses: gateway %s, session %s", p.Net.Gateway, p.Net.Address)
	}
	if !p.Net.Egress || len(p.Net.DNS) != 1 {
		t.Errorf("egress %v dns %v", p.Net.Egress, p.Net.DNS)
	}
	// Every mounted hierarchy, not only those with limits: the session's
	// cgroup namespace is rooted at its own cgroup in all of them.
	wantCg := map[string]string{
		"memory":       "/sys/fs/cgroup/memory/daemon/t/t-3-abcdef",
		"pids":         "/sys/fs/cgroup/pids/t/t-3-abcdef",
		"cpu,cpuacct":  "/sys/fs/cgroup/cpu,cpuacct/t/t-3-abcdef",
		"freezer":      "/sys/fs/cgroup/freezer/t/t-3-abcdef",
		"devices":      "/sys/fs/cgroup/devices/t/t-3-abcdef",
		"cpuset":       "/sys/fs/cgroup/cpuset/t/t-3-abcdef",
		"name=systemd": "/sys/fs/cgroup/systemd/t/t-3-abcdef",
		"unified":      "/sys/fs/cgroup/unified/t/t-3-abcdef",
	}
	if len(p.Cgroup.Dirs) != len(wantCg) {
		t.Errorf("cgroups %v, want %v", p.Cgroup.Dirs, wantCg)
	}
	for c, d := range wantCg {
		if p.Cgroup.Dirs[c] != d {
			t.Errorf("cgroup %s: %s, want %s", c, p.Cgroup.Dirs[c], d)
		}
	}
	if p.Cgroup.dir("cpuacct") != wantCg["cpu,cpuacct"] || p.Cgroup.dir("freezer") != wantCg["freezer"] {
		t.Errorf("dir of a controller: cpuacct %s, freezer %s", p.Cgroup.dir("cpuacct"), p.Cgroup.dir("freezer"))
	}
	if p.IDs != (IDMap{Host: DefaultIDBase + 7*idRangeSize, Size: 65536}) {
		t.Errorf("ids %+v", p.IDs)
	}
	if p.Cgroup.MemoryBytes != DefaultLimits.MemoryBytes || p.Cgroup.Pids != DefaultLimits.Pids || p.Cgroup.CPUQuotaUS != 200000 {
		t.Errorf("limits: %+v", p.Cgroup)
	}
	for _, want := range []string{"DISPLAY=:0", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus",
		"XDG_RUNTIME_DIR=/run/user/1000", "HOME=/home/user", "GTK_MODULES=gail:atk-bridge", "ACCESSIBILITY_ENABLED=1",
		"QT_ACCESSIBILITY=1", "GSK_RENDERER=cairo", "LANG=en_US.UTF-8"} {
		if !slices.Contains(p.Env, want) {
			t.Errorf("env lacks %s", want)
		}
	}
	var targets []string
	for _, m := range p.Root.Mounts {
		targets = append(targets, m.Target)
	}
	// The desktop's own mounts, guestd, and nothing else of the host.
	want := []string{"/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/tmp", "/run", "/run/user/1000", images.GuestdPath}
	if !slices.Equal(targets, want) {
		t.Errorf("mounts on %v, want %v", targets, want)
	}
	for _, m := range p.Root.Mounts {
		if m.Type == "bind" && m.Source != "/usr/bin/guestd" {
			t.Errorf("host path %s bound into the desktop", m.Source)
		}
		if m.Target == "/sys" && !slices.Contains(m.Flags, "ro") {
			t.Error("/sys is not read-only")
		}
		if m.Type == "devpts" && (!strings.Contains(m.Data, "newinstance") || !strings.Contains(m.Data, "gid="+strconv.Itoa(p.IDs.ToHost(5)))) {
			t.Errorf("devpts: %s, want a private instance with the desktop's tty group", m.Data)
		}
		if m.Target == "/tmp" && !strings.Contains(m.Data, "uid="+strconv.Itoa(p.IDs.Host)) {
			t.Errorf("/tmp: %s, want the desktop's root as owner", m.Data)
		}
		if m.Target != "/dev" && !slices.Contains(m.Flags, "nodev") && m.Type != "bind" && m.Type != "devpts" {
			t.Errorf("%s is not nodev", m.Target)
		}
	}
	for _, mask := range []string{"/proc/cmdline", "/proc/kcore", "/proc/keys", "/proc/kpageflags", "/proc/kpagecount", "/proc/kpagecgroup", "/proc/sysrq-trigger", "/sys/firmware"} {
		if !slices.Contains(p.Root.Masks, mask) {
			t.Errorf("%s is not masked: %v", mask, p.Root.Masks)
		}
	}
	if p.Root.Image != testImage().dir || !slices.Equal(p.Root.Layers, []string{"layer-v9", "rootfs"}) {
		t.Errorf("image %s layers %v", p.Root.Image, p.Root.Layers)
	}
	if p.Root.UpperDir != "" || p.Root.Base != "/var/lib/drums/t/sessions/t-3-abcdef/base" {
		t.Errorf("root: upper %q base %q", p.Root.UpperDir, p.Root.Base)
	}
	var names []string
	for _, s := range p.Stack {
		names = append(names, s.Name)
		for _, n := range s.Needs {
			if !slices.Contains(names, n) {
				t.Errorf("%s needs %s, which is not started before it", s.Name, n)
			}
		}
	}
	if want := []string{"xvfb", "dbus", "openbox", "at-spi", "guestd"}; !slices.Equal(names, want) {
		t.Errorf("stack %v, want %v", names, want)
	}
	if x := p.Stack[0].Argv; !slices.Contains(x, "-noreset") || !slices.Contains(x, "-displayfd") || !strings.Contains(strings.Join(x, " "), "-extension GLX") {
		t.Errorf("Xvfb argv %v: want GLX off for a light image", x)
	}
	// A light image's window manager is openbox, whole, and nothing of
	// GNOME's environment reaches its desktop.
	openbox := Proc{Name: "openbox", Argv: []string{"openbox", "--sm-disable", "--startup", "/bin/sh -c 'echo drums: window manager ready'"},
		Env: []string{"XCOMPOSEFILE=/dev/null"}, Needs: []string{"xvfb"}, Ready: "log", ReadyLine: "drums: window manager ready"}
	if wm := p.Stack[2]; !reflect.DeepEqual(wm, openbox) {
		t.Errorf("window manager %+v, want %+v", wm, openbox)
	}
	for _, e := range p.Env {
		if strings.HasPrefix(e, "XDG_CURRENT_DESKTOP=") {
			t.Errorf("light image's env has %s", e)
		}
	}
	if g := p.Stack[4].Argv; !slices.Equal(g, []string{images.GuestdPath, "--listen", "0.0.0.0:5000", "--vnc-listen", "0.0.0.0:8006"}) {
		t.Errorf("guestd argv %v", g)
	}
	if p.Stack[3].Argv[0] != "/usr/libexec/at-spi-bus-launcher" {
		t.Errorf("at-spi argv %v: want the image's launcher", p.Stack[3].Argv)
	}
}

func TestPlanOptions(t *testing.T) {
	in := testInput(t, Request{Width: 1280, Height: 720, GuestPort: 5001, NoEgress: true, GLX: true,
		Limits: Limits{MemoryBytes: 1 << 30, Pids: 512, CPUs: 0.5}}, 0)
	in.cfg.UpperOnDisk = true
	in.image.systemBus = true
	p, err := newPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.Net.Egress || p.Net.DNS != nil {
		t.Errorf("no egress: %+v", p.Net)
	}
	if slices.Contains(p.Stack[0].Argv, "GLX") || !slices.Contains(p.Stack[0].Argv, "1280x720x24") {
		t.Errorf("Xvfb argv %v", p.Stack[0].Argv)
	}
	if p.Cgroup.MemoryBytes != 1<<30 || p.Cgroup.Pids != 512 || p.Cgroup.CPUQuotaUS != 50000 {
		t.Errorf("limits %+v", p.Cgroup)
	}
	if p.Root.UpperDir != "/var/lib/drums/t/sessions/t-0-abcdef/upper" {
		t.Errorf("upper on disk: %q", p.Root.UpperDir)
	}
	if p.Net.Gateway.String() != "10.213.0.1/30" || p.Net.Address.String() != "10.213.0.2/30" {
		t.Errorf("slot 0 addresses %s %s", p.Net.Gateway, p.Net.Address)
	}
	// An image with system services: its system bus, run by the desktop's
	// root, waited for by nothing, and systemd's booted mark.
	bus := p.Stack[len(p.Stack)-1]
	if bus.Name != "system-bus" || !bus.Root || bus.Essential || !slices.Contains(bus.Argv, "--config-file="+images.SystemBusConf) {
		t.Errorf("system bus %+v", bus)
	}
	for _, s := range p.Stack {
		if slices.Contains(s.Needs, bus.Name) {
			t.Errorf("%s waits for the system bus", s.Name)
		}
	}
	if !slices.ContainsFunc(p.Root.Dirs, func(d Dir) bool { return d.Path == "/run/systemd/system" && d.UID == p.IDs.ToHost(0) }) {
		t.Errorf("dirs %+v: no /run/systemd/system of the desktop's root", p.Root.Dirs)
	}
}

// An image whose shell is GNOME runs gnome-shell in openbox's place,
// with Xvfb's GLX whatever the request says, and the session's GNOME
// environment for every process.
func TestPlanGNOME(t *testing.T) {
	in := testInput(t, Request{}, 1)
	in.image.shell = images.ShellGNOME
	p, err := newPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range p.Stack {
		names = append(names, s.Name)
	}
	if want := []string{"xvfb", "dbus", "gnome-shell", "at-spi", "guestd", "systemd", "systemd-user"}; !slices.Equal(names, want) {
		t.Errorf("stack %v, want %v", names, want)
	}
	wm := p.Stack[2]
	if wm.Argv[0] != "gnome-shell" || !slices.Contains(wm.Argv, "--x11") || !slices.Contains(wm.Argv, "--mode="+images.GNOMESessionMode) ||
		wm.Ready != "log" || wm.ReadyLine != images.GNOMEReadyLine || !slices.Contains(wm.Needs, "dbus") {
		t.Errorf("gnome-shell %+v", wm)
	}
	if !p.Screen.GLX || slices.Contains(p.Stack[0].Argv, "GLX") {
		t.Errorf("screen %+v, Xvfb argv %v: want GLX", p.Screen, p.Stack[0].Argv)
	}
	for _, e := range images.GNOMEEnv {
		if !slices.Contains(p.Env, e) {
			t.Errorf("env %v: no %s", p.Env, e)
		}
	}
}

func TestPlanBadRequests(t *testing.T) {
	for _, req := range []Request{
		{Width: 10, Height: 10},
		{Depth: 8},
		{GuestPort: 70000},
		{Snapshot: "relative/dir"},
		{Limits: Limits{MemoryBytes: 1 << 20}},
		{Limits: Limits{Pids: 10}},
	} {
		if _, err := newPlan(testInput(t, req, 0)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: err %v, want ErrBadRequest", req, err)
		}
	}
	in := testInput(t, Request{}, 0)
	in.slot = in.cfg.MaxSessions
	if _, err := newPlan(in); !errors.Is(err, ErrBadRequest) {
		t.Errorf("slot out of range: %v", err)
	}
	for _, b := range [][]Bind{
		{{Source: "relative", Target: "/x"}},
		{{Source: "/etc", Target: "relative"}},
		{{Source: "/etc", Target: "/"}},
		{{Source: "/etc", Target: "/proc/x"}},
		{{Source: "/etc", Target: "/tmp"}},
		{{Source: "/nonexistent-drums-bind", Target: "/x"}},
	} {
		if _, err := newPlan(testInput(t, Request{Binds: b}, 0)); !errors.Is(err, ErrBadRequest) {
			t.Errorf("binds %+v: err %v, want ErrBadRequest", b, err)
		}
	}
	// An image without what a desktop needs says what it lacks.
	in = testInput(t, Request{}, 0)
	in.image.desktop.User = nil
	in.image.desktop.Parts = slices.Clone(in.image.desktop.Parts)
	in.image.desktop.Parts[0].Path = ""
	_, err := newPlan(in)
	if !errors.Is(err, ErrBadRequest) || !strings.Contains(err.Error(), "Xvfb is missing") || !strings.Contains(err.Error(), "no user") {
		t.Errorf("image without Xvfb and user: %v", err)
	}
}

func TestNames(t *testing.T) {
	for _, slot := range []int{0, 7, 99999} {
		id := newID("abcdefgh", slot)
		if s, ok := parseID("abcdefgh", id); !ok || s != slot {
			t.Errorf("parseID(%s) = %d %v", id, s, ok)
		}
		v := hostVeth("abcdefgh", slot)
		if len(v) > 15 {
			t.Errorf("veth %s longer than IFNAMSIZ-1", v)
		}
		if s, ok := vethSlot("abcdefgh", v); !ok || s != slot {
			t.Errorf("vethSlot(%s) = %d %v", v, s, ok)
		}
		if s, ok := tableSlot("abcdefgh", tableName("abcdefgh", slot)); !ok || s != slot {
			t.Errorf("tableSlot = %d %v", s, ok)
		}
	}
	for _, bad := range []string{"d-1", "d-01-abcdef", "d-1-abcdeg", "dd-1-abcdef", "d-1-abc", "d-x-abcdef"} {
		if _, ok := parseID("d", bad); ok {
			t.Errorf("parseID(%q) accepted", bad)
		}
	}
	// Another prefix's names are never ours, even when they share a start.
	if _, ok := vethSlot("d", "dh1h2"); ok {
		t.Error("vethSlot took another prefix's veth")
	}
	if _, ok := tableSlot("d", "d_x_1"); ok {
		t.Error("tableSlot took another prefix's table")
	}
}

func TestConfig(t *testing.T) {
	for _, c := range []Config{
		{Prefix: "Bad"}, {Prefix: "toolongprefix"}, {Prefix: "1a"},
		{IDBase: 1000}, {IDBase: 1 << 31, IDRanges: 1 << 16},
		{Network: netip.MustParsePrefix("8.8.0.0/16")},
		{Network: netip.MustParsePrefix("10.0.0.0/30")},
	} {
		c.Binary = "/bin/true"
		if _, err := c.withDefaults(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: err %v", c, err)
		}
	}
	c, err := Config{Binary: "/bin/true", Network: netip.MustParsePrefix("192.168.8.0/24")}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxSessions != 64 || c.Prefix != DefaultPrefix || c.Guestd == "" || c.ImageDir != images.DefaultDir || c.Image != "osworld" {
		t.Errorf("defaults: %+v", c)
	}
	// Without a network, the range derives from the prefix.
	c, err = Config{Binary: "/bin/true", Prefix: "abc"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Network != DefaultNetwork("abc", DefaultMaxSessions) || c.MaxSessions != DefaultMaxSessions {
		t.Errorf("default network %s, max sessions %d", c.Network, c.MaxSessions)
	}
}

func TestDefaultNetwork(t *testing.T) {
	ten := netip.MustParsePrefix("10.0.0.0/8")
	for _, c := range []struct{ max, bits int }{{512, 21}, {1, 28}, {4, 28}, {5, 27}, {64, 24}, {1 << 20, 16}} {
		n := DefaultNetwork("drums", c.max)
		if n.Bits() != c.bits || n != n.Masked() || !ten.Contains(n.Addr()) || checkNetwork(n) != nil {
			t.Errorf("DefaultNetwork(drums, %d) = %s: want a valid /%d of 10/8", c.max, n, c.bits)
		}
		if slotCount(n) < min(c.max, 1<<14) {
			t.Errorf("DefaultNetwork(drums, %d) = %s has %d slots", c.max, n, slotCount(n))
		}
	}
	// Prefixes get different ranges (not guaranteed for every pair: the
	// host-wide claims keep a shared one safe), and always the same one.
	seen := map[netip.Prefix]string{}
	for _, p := range []string{"drums", "drumst", "zt00001", "zt00002", "compat", "tasks", "p1", "p2"} {
		n := DefaultNetwork(p, DefaultMaxSessions)
		if other, ok := seen[n]; ok {
			t.Errorf("prefixes %s and %s share %s", p, other, n)
		}
		seen[n] = p
		if DefaultNetwork(p, DefaultMaxSessions) != n {
			t.Errorf("DefaultNetwork(%s) is not stable", p)
		}
	}
}

func TestParseMountInfo(t *testing.T) {
	const in = `22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 27 8:1 / /srv/my\040data rw shared:1 - xfs /dev/sdb1 rw
`
	ms, err := parseMountInfo(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || ms[3].Point != "/srv/my data" || ms[3].FSType != "xfs" || ms[2].Super != "rw,memory" {
		t.Fatalf("parsed %+v", ms)
	}
	if got := hostBinds(ms); !slices.Equal(got, []string{"/srv/my data"}) {
		t.Errorf("hostBinds %v", got)
	}
	if _, err := parseMountInfo(strings.NewReader("garbage\n")); err == nil {
		t.Error("garbage parsed")
	}
}

func TestParseProcCgroup(t *testing.T) {
	own, err := parseProcCgroup(strings.NewReader("4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/user.slice\n"))
	if err != nil {
		t.Fatal(err)
	}
	if own["memory"] != "/process_api/x" || own["cpu"] != "/" || own["cpuacct"] != "/" || own[""] != "/user.slice" {
		t.Errorf("parsed %v", own)
	}
	l, err := layoutV2("p", "/sys/fs/cgroup", own)
	if err != nil || l.Bases[""] != "/sys/fs/cgroup/user.slice/p" {
		t.Errorf("v2 layout %+v %v", l, err)
	}
	if _, err := layoutV1("p", nil, own); !errors.Is(err, ErrUnsupported) {
		t.Errorf("v1 without mounts: %v", err)
	}
}

// testPublish publishes on a documentation address (RFC 5737).
var testPublish = Publish{Address: netip.MustParseAddr("192.0.2.7"), FirstPort: 30000, Ports: 400}

func TestPublishPorts(t *testing.T) {
	p := testPublish.ports(3, 5001)
	want := [4]PortMap{{30012, 5001}, {30013, 9222}, {30014, 8006}, {30015, 8080}}
	if p == nil || p.Address != testPublish.Address || p.Ports != want {
		t.Errorf("slot 3: %+v, want %v on %s", p, want, testPublish.Address)
	}
	if p := (Publish{}).ports(3, 5000); p != nil {
		t.Errorf("unpublished: %+v", p)
	}
	for _, bad := range []Publish{
		{Address: netip.MustParseAddr("2001:db8::1"), FirstPort: 30000, Ports: 8},
		{Address: testPublish.Address, FirstPort: 30000, Ports: 3},
		{Address: testPublish.Address, FirstPort: 65534, Ports: 8},
	} {
		if _, err := (Config{Prefix: "t", Publish: bad}).withDefaults(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	c, err := Config{Prefix: "t", Publish: testPublish}.withDefaults()
	if err != nil || c.MaxSessions != 100 {
		t.Errorf("400 ports: %d sessions, %v; want 100", c.MaxSessions, err)
	}
}

func TestRulesetGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		req  Request
		cfg  func(*Config)
	}{
		{"ruleset.golden", Request{}, func(c *Config) { c.HostPorts = []uint16{8000} }},
		{"ruleset-noegress.golden", Request{NoEgress: true}, func(*Config) {}},
		{"ruleset-published.golden", Request{}, func(c *Config) { c.Publish = testPublish }},
	} {
		in := testInput(t, c.req, 3)
		c.cfg(&in.cfg)
		p, err := newPlan(in)
		if err != nil {
			t.Fatal(err)
		}
		got := sessionRuleset(p.Prefix, p.Net).render()
		golden(t, c.name, got)
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update after review):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// The GNOME profile's managers: the system manager, as the desktop's
// root, PID 1 of its own namespaces, in a delegated cgroup of its own and
// in place of drums' system bus; the user's, in the VM's cgroup,
// delegated, with the cgroup2 hierarchy's session directory as the
// desktop's root; on a v1 hybrid host (the "unified" mount) and a v2 one.
// A host without cgroup2 gets neither (drums' system bus instead), and
// neither does the light profile.
func TestPlanManagers(t *testing.T) {
	in := testInput(t, Request{}, 1)
	in.image.systemBus = true
	light, err := newPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(light.Cgroup.Delegated) != 0 || slices.ContainsFunc(light.Stack, func(p Proc) bool { return p.Name == "systemd-user" }) {
		t.Errorf("the light profile runs a user manager: %+v %v", light.Cgroup.Delegated, light.Stack)
	}
	in.image.shell = images.ShellGNOME
	hybrid := in.cgroups
	v2, err := layoutV2("t", "/sys/fs/cgroup", map[string]string{"": "/system.slice/drums.service"})
	if err != nil {
		t.Fatal(err)
	}
	onlyV1 := cgroupLayout{Version: 1, Bases: map[string]string{}}
	for h, b := range hybrid.Bases {
		if h != "unified" {
			onlyV1.Bases[h] = b
		}
	}
	for _, c := range []struct {
		name    string
		layout  cgroupLayout
		unified string
	}{
		{"v1 hybrid", hybrid, "/sys/fs/cgroup/unified/t/t-1-abcdef"},
		{"v2", v2, "/sys/fs/cgroup/system.slice/drums.service/t/t-1-abcdef"},
		{"v1 only", onlyV1, ""},
	} {
		in.cgroups = c.layout
		p, err := newPlan(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Cgroup.unified(); got != c.unified {
			t.Errorf("%s: cgroup2 directory %q, want %q", c.name, got, c.unified)
		}
		index := func(name string) int { return slices.IndexFunc(p.Stack, func(p Proc) bool { return p.Name == name }) }
		i, sm, bus := index("systemd-user"), index("systemd"), index("system-bus")
		if c.unified == "" {
			if i >= 0 || sm >= 0 || len(p.Cgroup.Delegated) != 0 || bus < 0 {
				t.Errorf("%s: managers without a cgroup2 hierarchy, or no system bus: %+v %v", c.name, p.Cgroup.Delegated, p.Stack)
			}
			continue
		}
		if i < 0 || sm < 0 || bus >= 0 {
			t.Fatalf("%s: no user or system manager, or drums' system bus too, in %v", c.name, p.Stack)
		}
		um := p.Stack[i]
		const service = "/user.slice/user-1000.slice/user@1000.service"
		if um.Argv[0] != systemdBinary || um.Argv[1] != "--user" || um.Ready != "notify" || um.ReadyLine != "STATUS=Ready." ||
			um.Cgroup != service || um.Essential || um.Root || um.Manager || !slices.Equal(um.Needs, []string{"dbus", "systemd"}) {
			t.Errorf("%s: user manager %+v", c.name, um)
		}
		m := p.Stack[sm]
		if m.Argv[0] != systemdBinary || len(m.Argv) != 2 || m.Ready != "notify" || m.ReadyLine != "READY=1" || m.Socket != systemBusSocket ||
			m.Cgroup != "/"+systemManagerCgroup || !m.Essential || !m.Root || !m.Manager || len(m.Needs) != 0 ||
			!slices.Equal(m.Env, []string{"container=drums"}) {
			t.Errorf("%s: system manager %+v", c.name, m)
		}
		if wm := p.Stack[index("gnome-shell")]; !slices.Contains(wm.Needs, "systemd") {
			t.Errorf("%s: gnome-shell does not wait for the system bus: %+v", c.name, wm)
		}
		if slices.Contains(p.Env, images.SystemctlEnv) || !slices.Contains(p.RootEnv, images.SystemctlEnv) {
			t.Errorf("%s: env %v, root's %v: want %s for root only", c.name, p.Env, p.RootEnv, images.SystemctlEnv)
		}
		for _, unit := range systemUnitsMasked {
			if !slices.Contains(p.Root.Links, Link{Path: "/run/systemd/system/" + unit, Target: "/dev/null"}) {
				t.Errorf("%s: %s is not masked: %v", c.name, unit, p.Root.Links)
			}
		}
		root, user := p.IDs.ToHost(0), p.IDs.ToHost(1000)
		want := []Dir{
			{Path: systemManagerCgroup, Mode: 0o755, UID: root, GID: root},
			{Path: "user.slice", Mode: 0o755, UID: root, GID: root},
			{Path: "user.slice/user-1000.slice", Mode: 0o755, UID: root, GID: root},
			{Path: strings.TrimPrefix(service, "/"), Mode: 0o755, UID: user, GID: user},
		}
		if !reflect.DeepEqual(p.Cgroup.Delegated, want) {
			t.Errorf("%s: delegated %+v, want %+v", c.name, p.Cgroup.Delegated, want)
		}
		for _, unit := range []string{"dbus.socket", "dbus.service"} {
			if !slices.Contains(p.Root.Links, Link{Path: "/run/systemd/user/" + unit, Target: "/dev/null"}) {
				t.Errorf("%s: %s is not masked: it would take the session bus's socket: %v", c.name, unit, p.Root.Links)
			}
		}
	}
}
