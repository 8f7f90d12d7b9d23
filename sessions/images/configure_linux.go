package images

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// userGroups are the groups the user joins, as on an Ubuntu desktop.
var userGroups = []string{"adm", "cdrom", "sudo", "dip", "plugdev", "audio", "video", "users"}

// configure gives a root filesystem that mmdebstrap just built the
// configuration of an OSWorld guest, in place: the user with its password,
// groups and sudo; the en_US.UTF-8 locale; XDG folders and the
// applications' settings in its home; accessibility on in dconf;
// google-chrome served by Chromium; Ubuntu's default video player; VLC's
// HTTP interface; LibreOffice without its Tip of the Day; PulseAudio's
// null sink at 40%; Xvfb's keymap compiled once (xkbcomp); where the
// recipe's shell is GNOME Shell (as for writeLayer and the plan, the
// recipe decides, not whether the image happens to hold gnome-shell),
// Ubuntu 22.04's dock, themes and favourites (gnomeDefaults). What an
// application needs is written only when the image has the application.
func configure(rootfs string, r Recipe) error {
	t := tree{root: rootfs, base: rootfs}
	if err := t.users(); err != nil {
		return err
	}
	gnome := r.Shell == ShellGNOME
	files := []imageFile{
		{"etc/sudoers.d/drums-user", UserName + " ALL=(ALL:ALL) ALL\n", 0o440},
		{"etc/default/locale", "LANG=" + Locale + "\n", 0o644},
		{"etc/locale.gen", Locale + " UTF-8\n", 0o644},
		{"etc/dconf/profile/user", "user-db:user\nsystem-db:drums\n", 0o644},
		{"etc/dconf/db/drums.d/00-drums", dconfDefaults, 0o644},
		{"usr/share/applications/defaults.list", appDefaults(has(rootfs, "usr/bin/evince")), 0o644},
		{"etc/pulse/default.pa.d/drums.pa", pulseDefaults, 0o644},
	}
	if gnome {
		files = append(files, imageFile{"etc/dconf/db/drums.d/10-gnome", gnomeDefaults, 0o644})
		if has(rootfs, chromiumBinary) {
			files = append(files, imageFile{"usr/local/share/applications/google-chrome.desktop", chromeDesktopEntry, 0o644})
		}
	}
	for _, f := range files {
		if err := t.writeFile(f.path, []byte(f.data), f.mode, 0, 0); err != nil {
			return err
		}
	}
	if has(rootfs, "usr/bin/vlc") && !has(rootfs, "usr/bin/totem") {
		if err := t.writeFile("usr/local/etc/mailcap", []byte(vlcMailcap), 0o644, 0, 0); err != nil {
			return err
		}
	}
	if has(rootfs, chromiumBinary) {
		if err := t.chrome(); err != nil {
			return err
		}
	}
	if err := t.home(gnome); err != nil {
		return err
	}
	// locale-gen and dconf compile run inside the image: their output is
	// the image's own (its glibc, its dconf), and the host needs neither.
	if has(rootfs, "usr/sbin/locale-gen") {
		if err := inRoot(rootfs, "locale-gen"); err != nil {
			return err
		}
	}
	// Fontconfig's caches as the image's fonts are now: a package that
	// added fonts after the last fc-cache left one stale, and every
	// desktop would rebuild it in its home at each start (about 40 ms of
	// openbox's and 0.9 MiB each).
	if has(rootfs, "usr/bin/fc-cache") {
		if err := inRoot(rootfs, "fc-cache", "--system-only"); err != nil {
			return err
		}
	}
	if has(rootfs, "usr/bin/Xvfb") && has(rootfs, "usr/bin/xkbcomp") {
		if err := t.xkbcomp(); err != nil {
			return err
		}
	}
	if has(rootfs, "usr/bin/dconf") {
		if err := inRoot(rootfs, "dconf", "compile", "/etc/dconf/db/drums", "/etc/dconf/db/drums.d"); err != nil {
			return err
		}
		if err := os.Chmod(filepath.Join(rootfs, "etc/dconf/db/drums"), 0o644); err != nil {
			return fmt.Errorf("chmod dconf database: %w", err)
		}
	}
	return nil
}

// An imageFile is a file configure writes into the image, owned by root.
type imageFile struct {
	path string
	data string
	mode os.FileMode
}

// inRoot runs a command chrooted into a root filesystem, found on the
// image's PATH. Not through exec.Command, which looks the name up on the
// host's PATH first and fails where the host lacks it (dconf, on a host
// without any desktop package).
func inRoot(root string, argv ...string) error {
	cmd, err := rootCmd(root, []string{"LANG=C.UTF-8"}, argv...)
	if err != nil {
		return err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s in the image: %w: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// rootCmd is argv chrooted into root, found on the image's PATH, with
// the image's PATH and root's HOME, plus env.
func rootCmd(root string, env []string, argv ...string) (*exec.Cmd, error) {
	path, err := lookPathIn(root, argv[0])
	if err != nil {
		return nil, fmt.Errorf("%s in the image: %w", argv[0], err)
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Dir: "/", SysProcAttr: &syscall.SysProcAttr{Chroot: root}}
	cmd.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, env...)
	return cmd, nil
}

// chrome makes google-chrome run Debian's Chromium under Chrome's process
// name (see chromeLauncher), with Google Chrome's initial preferences.
func (t tree) chrome() error {
	if err := t.writeFile("usr/local/bin/google-chrome", []byte(chromeLauncher), 0o755, 0, 0); err != nil {
		return err
	}
	// A hard link, not a symlink: Chromium re-executes itself through
	// /proc/self/exe, which names the path it was started by.
	dst := filepath.Join(t.root, chromeInSession)
	os.Remove(dst)
	if err := os.Link(filepath.Join(t.root, chromiumBinary), dst); err != nil {
		return fmt.Errorf("link Chromium as chrome: %w", err)
	}
	if err := t.chromeName(); err != nil {
		return err
	}
	// Debian's Chromium reads its first-run preferences here (the first
	// name found wins); Debian's own set content settings and browser
	// options that a fresh Chrome profile does not have.
	for _, name := range []string{"initial_preferences", "master_preferences"} {
		if err := t.writeFile("etc/chromium/"+name, []byte(chromeInitialPrefs), 0o644, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

// users rewrites passwd, group, shadow and gshadow: the image's entries,
// minus any other uid 1000 or "user", plus the user and its group
// memberships.
// chromeName builds the library that makes Chromium's accessibility tree
// name its application "Google Chrome" (see chromeNameSource) with the
// host's C compiler (scripts/deps installs it), for an image of the host's
// architecture; an image of another one goes without it (the launcher
// preloads it only where it exists), and its browser answers as Chromium.
func (t tree) chromeName() error {
	if native, err := t.hostArch(chromiumBinary); err != nil || !native {
		return err
	}
	if err := t.mkdirs(filepath.Dir(chromeNameShim)); err != nil {
		return err
	}
	return buildC(chromeNameSource, filepath.Join(t.root, chromeNameShim), "-shared", "-fPIC")
}

// buildC compiles the C program src to out with the host's C compiler
// (scripts/deps installs it) and flags.
func buildC(src, out string, flags ...string) error {
	args := append(flags, "-O2", "-Wall", "-Werror", "-o", out, "-x", "c", "-")
	cmd := exec.Command("cc", args...)
	cmd.Stdin = strings.NewReader(src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s (a C compiler is needed: scripts/deps): %w: %s", filepath.Base(out), err, bytes.TrimSpace(b))
	}
	return nil
}

// hostArch says whether the image's binary at path is for the host's
// architecture (what the host's C compiler builds for).
func (t tree) hostArch(path string) (bool, error) {
	bin, err := elf.Open(filepath.Join(t.root, path))
	if err != nil {
		return false, fmt.Errorf("read the image's %s: %w", path, err)
	}
	defer bin.Close()
	return bin.Machine == hostMachine[runtime.GOARCH], nil
}

// hostMachine is the ELF machine of each architecture drums runs on.
var hostMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

func (t tree) users() error {
	read := func(name string) ([]string, error) {
		data, err := t.readFile("etc/" + name)
		if err != nil {
			return nil, err
		}
		var lines []string
		for _, l := range strings.Split(string(data), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		return lines, nil
	}
	var tables [4][]string
	for i, name := range []string{"passwd", "group", "shadow", "gshadow"} {
		var err error
		if tables[i], err = read(name); err != nil {
			return err
		}
	}
	passwd, group, shadow, gshadow := tables[0], tables[1], tables[2], tables[3]
	uid := strconv.Itoa(UserID)
	notUser := func(idField int) func(string) bool {
		return func(l string) bool {
			f := strings.Split(l, ":")
			return f[0] == UserName || (idField > 0 && len(f) > idField && f[idField] == uid)
		}
	}
	passwd = slices.DeleteFunc(passwd, notUser(2))
	group = slices.DeleteFunc(group, notUser(2))
	shadow = slices.DeleteFunc(shadow, notUser(0))
	gshadow = slices.DeleteFunc(gshadow, notUser(0))

	shadowGID := 0
	join := func(lines []string, membersField int) {
		for i, l := range lines {
			f := strings.Split(l, ":")
			if len(f) <= membersField || !slices.Contains(userGroups, f[0]) {
				continue
			}
			if f[membersField] == "" {
				f[membersField] = UserName
			} else {
				f[membersField] += "," + UserName
			}
			lines[i] = strings.Join(f, ":")
		}
	}
	for _, l := range group {
		if f := strings.Split(l, ":"); len(f) >= 3 && f[0] == "shadow" {
			shadowGID, _ = strconv.Atoi(f[2])
		}
	}
	join(group, 3)
	join(gshadow, 3)
	passwd = append(passwd, fmt.Sprintf("%s:x:%d:%d:%s,,,:/home/%s:/bin/bash", UserName, UserID, UserID, UserName, UserName))
	group = append(group, fmt.Sprintf("%s:x:%d:", UserName, UserID))
	// Days since the epoch of the last change: fixed, so builds are identical.
	shadow = append(shadow, fmt.Sprintf("%s:%s:20000:0:99999:7:::", UserName, sha512Crypt(userPassword, passwordSalt)))
	gshadow = append(gshadow, UserName+":!::")

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
		if err := t.writeFile("etc/"+f.name, []byte(strings.Join(f.lines, "\n")+"\n"), f.mode, 0, f.gid); err != nil {
			return err
		}
	}
	return nil
}

// home makes /home/user: the image's skeleton files, a .bashrc that keeps
// "Terminal" in the window title, the XDG folders and the applications'
// settings.
func (t tree) home(gnome bool) error {
	home := "home/" + UserName
	uid, gid := UserID, UserID
	if err := t.mkdir(home, 0o755, uid, gid); err != nil {
		return err
	}
	skel, err := resolve(t.base, "etc/skel")
	var entries []os.DirEntry
	if err == nil {
		entries, _ = os.ReadDir(skel)
	}
	var bashrc []byte
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
		if err := t.writeFile(filepath.Join(home, e.Name()), data, 0o644, uid, gid); err != nil {
			return err
		}
	}
	if err := t.writeFile(filepath.Join(home, ".bashrc"), append(bashrc, bashrcTitle...), 0o644, uid, gid); err != nil {
		return err
	}
	for _, d := range []string{"Desktop", "Documents", "Downloads", "Music", "Pictures", "Public", "Templates", "Videos",
		".config", ".cache", ".local", ".local/share"} {
		if err := t.mkdir(filepath.Join(home, d), 0o755, uid, gid); err != nil {
			return err
		}
	}
	var xdg strings.Builder
	for _, d := range [][2]string{{"DESKTOP", "Desktop"}, {"DOWNLOAD", "Downloads"}, {"TEMPLATES", "Templates"},
		{"PUBLICSHARE", "Public"}, {"DOCUMENTS", "Documents"}, {"MUSIC", "Music"}, {"PICTURES", "Pictures"}, {"VIDEOS", "Videos"}} {
		fmt.Fprintf(&xdg, "XDG_%s_DIR=\"$HOME/%s\"\n", d[0], d[1])
	}
	for _, f := range []struct{ path, data string }{
		{".config/user-dirs.dirs", xdg.String()},
		{".config/user-dirs.locale", "en_US\n"},
	} {
		if err := t.writeFile(filepath.Join(home, f.path), []byte(f.data), 0o644, uid, gid); err != nil {
			return err
		}
	}
	// GNOME Shell without GDM notifies "Screen Lock disabled" at its
	// first start unless this mark exists; the VM's shell, under GDM,
	// shows no such notification.
	if gnome {
		if err := t.mkdir(filepath.Join(home, ".local/share/gnome-shell"), 0o700, uid, gid); err != nil {
			return err
		}
		if err := t.writeFile(filepath.Join(home, ".local/share/gnome-shell/lock-warning-shown"), nil, 0o644, uid, gid); err != nil {
			return err
		}
	}
	for _, d := range []string{".config/vlc", ".config/libreoffice", ".config/libreoffice/4", ".config/libreoffice/4/user"} {
		if err := t.mkdir(filepath.Join(home, d), 0o700, uid, gid); err != nil {
			return err
		}
	}
	lo := libreofficeSettings
	if gnome {
		// Under GNOME LibreOffice picks its icon theme after the GTK
		// theme's name: Yaru's, which Debian does not package, and half its
		// toolbar icons come out blank. Ubuntu's VM has Yaru's; Debian's
		// own Colibre is what this image has.
		lo = strings.Replace(lo, "</oor:items>", libreofficeIcons+"</oor:items>", 1)
	}
	if err := t.writeFile(filepath.Join(home, ".config/libreoffice/4/user/registrymodifications.xcu"), []byte(lo), 0o644, uid, gid); err != nil {
		return err
	}
	return t.writeFile(filepath.Join(home, ".config/vlc/vlcrc"), []byte(vlcrc()), 0o644, uid, gid)
}

// dconfDefaults turn accessibility on for GNOME settings readers.
const dconfDefaults = `[org/gnome/desktop/interface]
toolkit-accessibility=true
`

// gnomeDefaults make GNOME Shell look as in OSWorld's Ubuntu 22.04 VM:
// Ubuntu's dock (Debian's dash-to-dock, which ubuntu-dock forks, with
// ubuntu-dock's defaults: on the left, the screen's height, always shown,
// 48-pixel icons in the shrunk theme, 70 pixels wide as the VM's dock,
// which OSWorld-G's annotations of VM screenshots put at x 0-70; the
// shell starts on the desktop, not in the overview),
// the Yaru GTK, icon and cursor themes, and OSWorld's applications as the
// dock's favourites (Google Chrome is Chromium's launcher, chrome's entry;
// VS Code, which the VM's dock has, is not a Debian package). No welcome
// dialog (gnome-tour is not installed either). Screen lock and idle keep
// GNOME's defaults, which tasks a4d98375 and bedcedc4 change before they
// ask for them back: without gnome-session and gnome-settings-daemon
// nothing dims, blanks or locks the screen.
const gnomeDefaults = `[org/gnome/shell]
favorite-apps=['google-chrome.desktop', 'thunderbird.desktop', 'vlc.desktop', 'libreoffice-writer.desktop', 'libreoffice-calc.desktop', 'libreoffice-impress.desktop', 'gimp.desktop', 'org.gnome.Nautilus.desktop', 'org.gnome.Terminal.desktop']
welcome-dialog-last-shown-version='4294967295'

[org/gnome/shell/extensions/dash-to-dock]
dock-position='LEFT'
extend-height=true
dock-fixed=true
dash-max-icon-size=48
custom-theme-shrink=true
disable-overview-on-startup=true

[org/gnome/desktop/interface]
gtk-theme='Yaru'
icon-theme='Yaru'
cursor-theme='Yaru'
`

// chromeDesktopEntry is Google Chrome's entry in GNOME's dock and
// application grid, as in the VM (favourite google-chrome.desktop): the
// launcher, with Chromium's icon (Debian has no Chrome icon). Its
// StartupWMClass is the class of Chromium's windows, so that GNOME Shell
// takes them for Google Chrome's (the top bar names the application, the
// favourite shows it running), not for chromium.desktop's.
const chromeDesktopEntry = `[Desktop Entry]
Version=1.0
Type=Application
Name=Google Chrome
GenericName=Web Browser
Comment=Access the Internet
Exec=/usr/local/bin/google-chrome %U
Icon=chromium
Terminal=false
Categories=Network;WebBrowser;
MimeType=text/html;text/xml;application/xhtml+xml;x-scheme-handler/http;x-scheme-handler/https;
StartupNotify=true
StartupWMClass=Chromium
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
