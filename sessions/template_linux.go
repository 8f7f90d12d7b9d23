package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The desktop's user, as OSWorld tasks assume it (they type its password
// into sudo).
const (
	userName     = "user"
	userID       = 1000
	userPassword = "password"
	// passwordSalt is fixed so that rebuilding a template changes nothing.
	passwordSalt = "drumsdrums"
	hostname     = "drums"
)

// userGroups are the host groups the user joins, as on an Ubuntu desktop.
var userGroups = []string{"adm", "cdrom", "sudo", "dip", "plugdev", "audio", "video", "users"}

// BuildTemplate makes (or remakes) the template layer that turns the host
// root into an OSWorld-like guest: the user with password and sudo, XDG
// folders, the session bus configuration, openbox's Ctrl+Alt+T, python and
// google-chrome commands, the locale and the accessibility settings. The
// host's own files are only read. It builds next to the old template and
// swaps it in, so it is idempotent and running sessions (which copied
// theirs) are unaffected.
func BuildTemplate(opts TemplateOptions) (*TemplateManifest, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("template directory not set: %w", ErrBadRequest)
	}
	if opts.Name == "" {
		opts.Name = DefaultTemplate
	}
	if !prefixRE.MatchString(strings.ReplaceAll(opts.Name, "-", "")) {
		return nil, fmt.Errorf("template name %q: want lower-case letters, digits and dashes: %w", opts.Name, ErrBadRequest)
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create template directory: %w", err)
	}
	tmp, err := os.MkdirTemp(opts.Dir, "."+opts.Name+".build-")
	if err != nil {
		return nil, fmt.Errorf("create template build directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("chmod template: %w", err)
	}
	b := &layerBuilder{root: filepath.Join(tmp, "rootfs"), host: "/"}
	m := &TemplateManifest{Version: templateVersion, Name: opts.Name, Built: time.Now().UTC()}
	if err := b.build(m); err != nil {
		return nil, err
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode template manifest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "manifest.json"), append(mb, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("write template manifest: %w", err)
	}
	root, _, _ := templatePaths(opts.Dir, opts.Name)
	if _, err := os.Lstat(root); err == nil {
		old := tmp + ".old"
		if err := os.Rename(root, old); err != nil {
			return nil, fmt.Errorf("move old template aside: %w", err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, root); err != nil {
		return nil, fmt.Errorf("install template: %w", err)
	}
	return m, nil
}

// layerBuilder writes files into a layer directory. Every directory it
// creates takes the mode and owner of the host's directory at the same
// path: in an overlay the topmost layer holding a directory decides its
// attributes, and a template must not turn /etc into 0700.
type layerBuilder struct {
	root string // the layer
	host string // the host root the layer sits on
}

func (b *layerBuilder) build(m *TemplateManifest) error {
	if err := os.Mkdir(b.root, 0o755); err != nil {
		return fmt.Errorf("create template rootfs: %w", err)
	}
	groups, err := b.users()
	if err != nil {
		return err
	}
	m.User = User{Name: userName, UID: userID, GID: userID, Groups: groups, Home: "/home/" + userName, Shell: "/bin/bash"}
	m.Locale = hostLocale()
	m.Found, m.Missing = findApps()

	m.Terminal = "gnome-terminal"
	if _, err := exec.LookPath("gnome-terminal"); err != nil {
		m.Terminal = "xterm -T Terminal -xrm 'XTerm*allowTitleOps: false'"
	}
	m.Chrome = "google-chrome"
	_, chromeErr := exec.LookPath("google-chrome")
	_, chromiumErr := os.Stat(filepath.Join(b.host, chromiumBinary))
	chromium := chromeErr != nil && chromiumErr == nil
	switch {
	case chromium:
		m.Chrome = "chromium (through /usr/local/bin/google-chrome, named chrome, with Google Chrome's initial preferences)"
	case chromeErr != nil:
		m.Chrome = "missing (neither google-chrome nor " + chromiumBinary + ")"
	}
	m.VideoDefault = videoDefault + " (GNOME Videos, as on Ubuntu)"
	_, totemErr := exec.LookPath("totem")
	_, vlcErr := exec.LookPath("vlc")
	switch {
	case totemErr == nil:
	case vlcErr == nil:
		m.VideoDefault += "; Totem is not on this host: xdg-open plays videos with VLC (/usr/local/etc/mailcap)"
	default:
		m.VideoDefault += "; no video player on this host"
	}
	m.VLC = fmt.Sprintf("~/.config/vlc/vlcrc: HTTP interface on port %d, password %q", vlcHTTPPort, vlcHTTPPassword)
	if vlcErr != nil {
		m.VLC += " (VLC is not on this host)"
	}

	files := []struct {
		path string
		data string
		mode os.FileMode
	}{
		{"etc/sudoers.d/drums-user", userName + " ALL=(ALL:ALL) ALL\n", 0o440},
		{"etc/hostname", hostname + "\n", 0o644},
		{"etc/default/locale", "LANG=" + m.Locale + "\n", 0o644},
		{strings.TrimPrefix(sessionBusConf, "/"), sessionBusConfig, 0o644},
		{"etc/xdg/openbox/rc.xml", strings.ReplaceAll(openboxRC, "@TERMINAL@", m.Terminal), 0o644},
		{"etc/dconf/profile/user", "user-db:user\nsystem-db:drums\n", 0o644},
		{"etc/dconf/db/drums.d/00-drums", dconfDefaults, 0o644},
		// The bind-mount target of guestd (an empty placeholder).
		{strings.TrimPrefix(guestdInSession, "/"), "", 0o755},
		{"usr/share/applications/defaults.list", videoDefaults(), 0o644},
		{"etc/pulse/default.pa.d/drums.pa", pulseDefaults, 0o644},
	}
	for _, f := range files {
		if err := b.writeFile(f.path, []byte(f.data), f.mode, 0, 0); err != nil {
			return err
		}
	}
	if totemErr != nil && vlcErr == nil {
		if err := b.writeFile("usr/local/etc/mailcap", []byte(vlcMailcap), 0o644, 0, 0); err != nil {
			return err
		}
	}
	hosts, err := os.ReadFile(filepath.Join(b.host, "etc/hosts"))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read host /etc/hosts: %w", err)
	}
	hosts = append(hosts, []byte("127.0.1.1\t"+hostname+"\n")...)
	if err := b.writeFile("etc/hosts", hosts, 0o644, 0, 0); err != nil {
		return err
	}
	if err := b.busServices(); err != nil {
		return err
	}
	if err := b.compileDconf(m); err != nil {
		return err
	}
	for _, l := range []struct{ path, target string }{
		// OSWorld sends every action as `python -c ...`; Debian has python3
		// only. /usr/local/bin comes first on the session's PATH.
		{"usr/local/bin/python", "/usr/bin/python3"},
		{"usr/local/bin/python3", "/usr/bin/python3"},
	} {
		if err := b.symlink(l.path, l.target); err != nil {
			return err
		}
	}
	if chromium {
		if err := b.writeFile("usr/local/bin/google-chrome", []byte(chromeLauncher), 0o755, 0, 0); err != nil {
			return err
		}
		// The bind-mount target of Chromium's binary, under Chrome's name.
		if err := b.writeFile(strings.TrimPrefix(chromeInSession, "/"), nil, 0o755, 0, 0); err != nil {
			return err
		}
		m.Binds = append(m.Binds, Bind{Source: chromiumBinary, Target: chromeInSession})
		// Debian's Chromium reads its first-run preferences here (the
		// first name found wins); Debian's own set content settings and
		// browser options that a fresh Chrome profile does not have.
		for _, name := range []string{"initial_preferences", "master_preferences"} {
			if err := b.writeFile("etc/chromium/"+name, []byte(chromeInitialPrefs), 0o644, 0, 0); err != nil {
				return err
			}
		}
	}
	if err := b.opaqueDir("root", 0o700); err != nil {
		return err
	}
	return b.home(m.User)
}

// users writes passwd, group, shadow and gshadow: the host's entries, minus
// any other uid 1000 or "user", plus the user and its group memberships. It
// returns the supplementary gids.
func (b *layerBuilder) users() ([]int, error) {
	read := func(name string) ([]string, error) {
		data, err := os.ReadFile(filepath.Join(b.host, "etc", name))
		if err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("read host /etc/%s: %w", name, err)
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		return lines, nil
	}
	passwd, err := read("passwd")
	if err != nil {
		return nil, err
	}
	group, err := read("group")
	if err != nil {
		return nil, err
	}
	shadow, err := read("shadow")
	if err != nil {
		return nil, err
	}
	gshadow, err := read("gshadow")
	if err != nil {
		return nil, err
	}
	uid := strconv.Itoa(userID)
	notUser := func(idField int) func(string) bool {
		return func(l string) bool {
			f := strings.Split(l, ":")
			return f[0] == userName || (idField > 0 && len(f) > idField && f[idField] == uid)
		}
	}
	passwd = slices.DeleteFunc(passwd, notUser(2))
	group = slices.DeleteFunc(group, notUser(2))
	shadow = slices.DeleteFunc(shadow, notUser(0))
	gshadow = slices.DeleteFunc(gshadow, notUser(0))

	var gids []int
	shadowGID := 0
	join := func(lines []string, membersField int) {
		for i, l := range lines {
			f := strings.Split(l, ":")
			if len(f) <= membersField || !slices.Contains(userGroups, f[0]) {
				continue
			}
			if f[membersField] == "" {
				f[membersField] = userName
			} else {
				f[membersField] += "," + userName
			}
			lines[i] = strings.Join(f, ":")
		}
	}
	for _, l := range group {
		f := strings.Split(l, ":")
		if len(f) < 3 {
			continue
		}
		gid, err := strconv.Atoi(f[2])
		if err != nil {
			continue
		}
		if slices.Contains(userGroups, f[0]) {
			gids = append(gids, gid)
		}
		if f[0] == "shadow" {
			shadowGID = gid
		}
	}
	join(group, 3)
	join(gshadow, 3)
	passwd = append(passwd, fmt.Sprintf("%s:x:%d:%d:%s,,,:/home/%s:/bin/bash", userName, userID, userID, userName, userName))
	group = append(group, fmt.Sprintf("%s:x:%d:", userName, userID))
	// Days since the epoch of the last change: fixed, so builds are identical.
	shadow = append(shadow, fmt.Sprintf("%s:%s:20000:0:99999:7:::", userName, sha512Crypt(userPassword, passwordSalt)))
	gshadow = append(gshadow, userName+":!::")

	for _, f := range []struct {
		name  string
		lines []string
		mode  os.FileMode
		gid   int
	}{
		{"passwd", passwd, 0o644, 0},
		{"group", group, 0o644, 0},
		{"shadow", shadow, 0o640, shadowGID},
		{"gshadow", gshadow, 0o640, shadowGID},
	} {
		if err := b.writeFile("etc/"+f.name, []byte(strings.Join(f.lines, "\n")+"\n"), f.mode, 0, f.gid); err != nil {
			return nil, err
		}
	}
	return gids, nil
}

// home makes /home/user: the host's skeleton files, a .bashrc that keeps
// "Terminal" in the window title, and the XDG folders.
func (b *layerBuilder) home(u User) error {
	home := strings.TrimPrefix(u.Home, "/")
	if err := b.mkdir(home, 0o755, u.UID, u.GID); err != nil {
		return err
	}
	skel := filepath.Join(b.host, "etc/skel")
	entries, err := os.ReadDir(skel)
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("read host /etc/skel: %w", err)
	}
	bashrc := []byte(nil)
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(skel, e.Name()))
		if err != nil {
			return fmt.Errorf("read skeleton file: %w", err)
		}
		if e.Name() == ".bashrc" {
			bashrc = data
			continue
		}
		if err := b.writeFile(filepath.Join(home, e.Name()), data, 0o644, u.UID, u.GID); err != nil {
			return err
		}
	}
	if err := b.writeFile(filepath.Join(home, ".bashrc"), append(bashrc, bashrcTitle...), 0o644, u.UID, u.GID); err != nil {
		return err
	}
	dirs := []string{"Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos",
		".config", ".cache", ".local", ".local/share"}
	for _, d := range dirs {
		if err := b.mkdir(filepath.Join(home, d), 0o755, u.UID, u.GID); err != nil {
			return err
		}
	}
	var xdg strings.Builder
	for _, d := range [][2]string{{"DESKTOP", "Desktop"}, {"DOWNLOAD", "Downloads"}, {"TEMPLATES", "Templates"},
		{"PUBLICSHARE", "Public"}, {"DOCUMENTS", "Documents"}, {"MUSIC", "Music"}, {"PICTURES", "Pictures"}, {"VIDEOS", "Videos"}} {
		fmt.Fprintf(&xdg, "XDG_%s_DIR=\"$HOME/%s\"\n", d[0], d[1])
	}
	if err := b.writeFile(filepath.Join(home, ".config/user-dirs.dirs"), []byte(xdg.String()), 0o644, u.UID, u.GID); err != nil {
		return err
	}
	if err := b.writeFile(filepath.Join(home, ".config/user-dirs.locale"), []byte("en_US\n"), 0o644, u.UID, u.GID); err != nil {
		return err
	}
	for _, d := range []string{".config/vlc", ".config/libreoffice", ".config/libreoffice/4", ".config/libreoffice/4/user"} {
		if err := b.mkdir(filepath.Join(home, d), 0o700, u.UID, u.GID); err != nil {
			return err
		}
	}
	if err := b.writeFile(filepath.Join(home, ".config/libreoffice/4/user/registrymodifications.xcu"), []byte(libreofficeSettings), 0o644, u.UID, u.GID); err != nil {
		return err
	}
	return b.writeFile(filepath.Join(home, ".config/vlc/vlcrc"), []byte(vlcrc), 0o644, u.UID, u.GID)
}

// busServices copies the host's service files that the session bus may
// activate: the terminal server and dconf. Portals and gvfs stay out: they
// FUSE-mount things and cost about 14 MiB per desktop (field notes §1.1).
func (b *layerBuilder) busServices() error {
	dir := "etc/drums/dbus-services"
	if err := b.mkdir(dir, 0o755, 0, 0); err != nil {
		return err
	}
	for _, name := range sessionServices {
		data, err := os.ReadFile(filepath.Join(b.host, "usr/share/dbus-1/services", name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read service file %s: %w", name, err)
		}
		if err := b.writeFile(filepath.Join(dir, name), data, 0o644, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

var sessionServices = []string{"org.gnome.Terminal.service", "ca.desrt.dconf.service"}

// compileDconf turns the keyfile defaults into the binary system database
// the dconf profile names (toolkit-accessibility on).
func (b *layerBuilder) compileDconf(m *TemplateManifest) error {
	if _, err := exec.LookPath("dconf"); err != nil {
		m.Missing = append(m.Missing, "dconf (accessibility default not compiled)")
		return nil
	}
	out := filepath.Join(b.root, "etc/dconf/db/drums")
	cmd := exec.Command("dconf", "compile", out, filepath.Join(b.root, "etc/dconf/db/drums.d"))
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dconf compile: %w: %s", err, bytes.TrimSpace(msg))
	}
	return os.Chmod(out, 0o644)
}

// mkdirs creates rel's parents like the host's.
func (b *layerBuilder) mkdirs(rel string) error {
	parts := strings.Split(filepath.Clean(rel), "/")
	for i := range parts {
		p := filepath.Join(parts[:i+1]...)
		if _, err := os.Lstat(filepath.Join(b.root, p)); err == nil {
			continue
		}
		mode, uid, gid := os.FileMode(0o755), 0, 0
		if st, err := os.Stat(filepath.Join(b.host, p)); err == nil && st.IsDir() {
			sys := st.Sys().(*syscall.Stat_t)
			mode, uid, gid = st.Mode().Perm()|st.Mode()&(fs.ModeSticky|fs.ModeSetgid), int(sys.Uid), int(sys.Gid)
		}
		if err := b.mkdir(p, mode, uid, gid); err != nil {
			return err
		}
	}
	return nil
}

func (b *layerBuilder) mkdir(rel string, mode os.FileMode, uid, gid int) error {
	if err := b.mkdirs(filepath.Dir(rel)); err != nil {
		return err
	}
	p := filepath.Join(b.root, rel)
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w", rel, err)
	}
	if err := os.Lchown(p, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", rel, err)
	}
	if err := os.Chmod(p, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", rel, err)
	}
	return nil
}

func (b *layerBuilder) writeFile(rel string, data []byte, mode os.FileMode, uid, gid int) error {
	if err := b.mkdirs(filepath.Dir(rel)); err != nil {
		return err
	}
	p := filepath.Join(b.root, rel)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.Lchown(p, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", rel, err)
	}
	if err := os.Chmod(p, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", rel, err)
	}
	return nil
}

func (b *layerBuilder) symlink(rel, target string) error {
	if err := b.mkdirs(filepath.Dir(rel)); err != nil {
		return err
	}
	if err := os.Symlink(target, filepath.Join(b.root, rel)); err != nil {
		return fmt.Errorf("symlink %s: %w", rel, err)
	}
	return nil
}

// opaqueDir makes an empty directory that hides the host's one: overlayfs
// does not look below a lower-layer directory marked opaque. The host's
// /root (its caches, keys and tokens) is hidden this way.
func (b *layerBuilder) opaqueDir(rel string, mode os.FileMode) error {
	if err := b.mkdir(rel, mode, 0, 0); err != nil {
		return err
	}
	if err := unix.Lsetxattr(filepath.Join(b.root, rel), "trusted.overlay.opaque", []byte("y"), 0); err != nil {
		return fmt.Errorf("mark %s opaque: %w", rel, err)
	}
	return nil
}

// hostLocale is en_US.UTF-8 when the host generated it (OSWorld's guest
// runs it), else C.UTF-8, which glibc always has.
func hostLocale() string {
	out, err := exec.Command("locale", "-a").Output()
	if err == nil {
		for _, l := range strings.Fields(string(out)) {
			if strings.EqualFold(l, "en_US.utf8") || strings.EqualFold(l, "en_US.UTF-8") {
				return "en_US.UTF-8"
			}
		}
	}
	return "C.UTF-8"
}

func findApps() (found, missing []string) {
	for _, a := range osworldApps {
		ok := false
		for _, bin := range a.bins {
			if _, err := exec.LookPath(bin); err == nil {
				ok = true
				break
			}
		}
		if ok {
			found = append(found, a.name)
		} else {
			missing = append(missing, a.name+" ("+strings.Join(a.bins, " or ")+")")
		}
	}
	for _, t := range guestTools {
		if _, err := exec.LookPath(t); err == nil {
			found = append(found, filepath.Base(t))
		} else {
			missing = append(missing, filepath.Base(t))
		}
	}
	return found, missing
}

// sessionBusConfig is the session bus: at /run/user/1000/bus where tasks
// hard-code it, activating only the services in /etc/drums/dbus-services.
// Root may connect too: init waits on it for the accessibility bus.
const sessionBusConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=/run/user/1000/bus</listen>
  <auth>EXTERNAL</auth>
  <servicedir>/etc/drums/dbus-services</servicedir>
  <policy context="default">
    <allow user="root"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// dconfDefaults turn accessibility on for GNOME settings readers.
const dconfDefaults = `[org/gnome/desktop/interface]
toolkit-accessibility=true
`

// bashrcTitle keeps "Terminal" in the terminal's title: a dozen OSWorld
// tasks press Ctrl+Alt+T and then run `wmctrl -a Terminal`, and Debian's
// .bashrc would set the title to user@host alone.
const bashrcTitle = `
# drums: keep "Terminal" in the window title (tasks run wmctrl -a Terminal).
case "$TERM" in
xterm*|vte*|rxvt*) PS1='\[\e]0;Terminal: \u@\h: \w\a\]${debian_chroot:+($debian_chroot)}\u@\h:\w\$ ' ;;
esac
`

// chromeLauncher runs Debian's Chromium as google-chrome. Chromium refuses
// to run as root without --no-sandbox and, since version 136, ignores
// --remote-debugging-port with its default profile; OSWorld tasks start it
// with --remote-debugging-port=1337 and read the profile where Chrome keeps
// it, so the profile is ~/.config/google-chrome. DevTools clients from other
// origins (socat 9222 -> 1337, playwright) need --remote-allow-origins.
// Chromium 139 and later migrate a fresh profile to Local Network Access by
// writing profile.default_content_setting_values, which the Chrome of
// OSWorld's VM predates and one task's getter takes for "the user changed a
// content setting": the checks stay off, as in that Chrome.
//
// Tasks end the browser with `pkill chrome` (then relaunch it and read the
// profile it wrote on exit), which matches a process named chrome, as
// Google Chrome's are, and not chromium: the launcher runs Chromium's
// binary from chromeInSession (bound there by the plan; a symlink would
// not do, Chromium re-executes itself through /proc/self/exe), with the
// flags Debian's /usr/bin/chromium reads from /etc/chromium.d.
const chromeLauncher = `#!/bin/sh
# drums: google-chrome for OSWorld tasks, served by Debian's Chromium under
# Chrome's process name.
profile=
devtools=
for a in "$@"; do
	case "$a" in
	--user-data-dir=*) profile=1 ;;
	--remote-debugging-port=*) devtools=1 ;;
	esac
done
[ -n "$profile" ] || set -- --user-data-dir="$HOME/.config/google-chrome" "$@"
[ -z "$devtools" ] || set -- --remote-allow-origins='*' "$@"
[ "$(id -u)" != 0 ] || set -- --no-sandbox "$@"
CHROMIUM_FLAGS=""
for f in /etc/chromium.d/*; do
	case "$f" in
	/etc/chromium.d/README | *.dpkg*) ;;
	*) . "$f" ;;
	esac
done
export CHROME_WRAPPER=/usr/local/bin/google-chrome CHROME_DESKTOP=chromium.desktop
exec ` + chromeInSession + ` $CHROMIUM_FLAGS --no-first-run --no-default-browser-check \
	--password-store=basic --disable-features=LocalNetworkAccessChecks "$@"
`

// Debian's Chromium binary, and where sessions see it under Chrome's name.
const (
	chromiumBinary  = "/usr/lib/chromium/chromium"
	chromeInSession = "/usr/lib/chromium/chrome"
)

// openboxRC is the window manager's configuration: click to focus, one
// desktop, Ctrl+Alt+T for a terminal, the usual window mouse actions.
const openboxRC = `<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <resistance><strength>10</strength><screen_edge_strength>20</screen_edge_strength></resistance>
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse><focusLast>yes</focusLast></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <theme><name>Clearlooks</name><titleLayout>NLIMC</titleLayout></theme>
  <desktops><number>1</number></desktops>
  <keyboard>
    <keybind key="C-A-t"><action name="Execute"><command>@TERMINAL@</command></action></keybind>
    <keybind key="A-F4"><action name="Close"/></keybind>
    <keybind key="A-Tab"><action name="NextWindow"/></keybind>
    <keybind key="A-S-Tab"><action name="PreviousWindow"/></keybind>
  </keyboard>
  <mouse>
    <dragThreshold>1</dragThreshold>
    <doubleClickTime>500</doubleClickTime>
    <context name="Frame">
      <mousebind button="A-Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="A-Left" action="Drag"><action name="Move"/></mousebind>
      <mousebind button="A-Right" action="Drag"><action name="Resize"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
      <mousebind button="Left" action="DoubleClick"><action name="ToggleMaximize"/></mousebind>
    </context>
    <context name="Top"><mousebind button="Left" action="Drag"><action name="Resize"><edge>top</edge></action></mousebind></context>
    <context name="Left"><mousebind button="Left" action="Drag"><action name="Resize"><edge>left</edge></action></mousebind></context>
    <context name="Right"><mousebind button="Left" action="Drag"><action name="Resize"><edge>right</edge></action></mousebind></context>
    <context name="Bottom"><mousebind button="Left" action="Drag"><action name="Resize"><edge>bottom</edge></action></mousebind></context>
    <context name="TRCorner BRCorner TLCorner BLCorner">
      <mousebind button="Left" action="Drag"><action name="Resize"/></mousebind>
    </context>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Middle" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Right" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
    <context name="Close"><mousebind button="Left" action="Click"><action name="Close"/></mousebind></context>
    <context name="Maximize"><mousebind button="Left" action="Click"><action name="ToggleMaximize"/></mousebind></context>
    <context name="Iconify"><mousebind button="Left" action="Click"><action name="Iconify"/></mousebind></context>
  </mouse>
</openbox_config>
`
