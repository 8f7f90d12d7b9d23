package images

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// layerVersion changes whenever drums' layer changes; a store makes the
// layer of this version beside older ones the first time an image is used,
// without touching the image.
const layerVersion = 7

// ensureLayer makes drums' layer of this version for im if it is missing:
// in a temporary directory, renamed into place, so a crash leaves no half
// layer.
func (s *Store) ensureLayer(im *Image) error {
	final := filepath.Join(im.dir, im.LayerDir())
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	lk, err := lockFile(filepath.Join(s.dir, "lock"), true)
	if err != nil {
		return err
	}
	defer lk.Close()
	if _, err := os.Stat(final); err == nil {
		return nil
	}
	tmp := final + ".new"
	if err := removeAll(tmp); err != nil {
		return err
	}
	if err := writeLayer(tmp, im.RootFS(), im.Desktop, im.recipe()); err != nil {
		return errors.Join(err, removeAll(tmp))
	}
	if err := os.Rename(tmp, final); err != nil {
		return errors.Join(fmt.Errorf("install drums layer: %w", err), removeAll(tmp))
	}
	// Layers of older drums go once no desktop runs from the image (a
	// running one has its layer as a lower layer of its root).
	use, free, err := claimUnused(filepath.Join(im.dir, "use"))
	if err != nil || !free {
		return err
	}
	defer use.Close()
	old, _ := filepath.Glob(filepath.Join(im.dir, "layer-v*"))
	var errs []error
	for _, d := range old {
		if d != final {
			errs = append(errs, removeAll(d))
		}
	}
	return errors.Join(errs...)
}

// writeLayer writes drums' layer for a root filesystem into dir: the
// session bus configuration and the services it may activate, openbox's
// configuration (Ctrl+Alt+T opens the image's terminal), the placeholder
// guestd is bound over, the host name, `python` where the image has only
// python3 (OSWorld sends every action as `python -c ...`), and what the
// image's recipe asks for of the VM's system: its system services, its
// time zone and its shell (gnome.go).
func writeLayer(dir, rootfs string, d Desktop, r Recipe) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create drums layer: %w", err)
	}
	t := tree{root: dir, base: rootfs}
	terminal := "x-terminal-emulator"
	switch {
	case d.has("gnome-terminal"):
		terminal = "gnome-terminal"
	case d.has("xterm"):
		terminal = "xterm -T Terminal -xrm 'XTerm*allowTitleOps: false'"
	}
	hosts, err := t.readFile("etc/hosts")
	if err != nil {
		return err
	}
	if len(hosts) == 0 {
		// mmdebstrap (and many container images) make none; without it
		// localhost does not resolve (socat tcp:localhost:1337, as OSWorld's
		// Chrome tasks forward the debugging port, fails).
		hosts = []byte(defaultHosts)
	}
	if !strings.HasSuffix(string(hosts), "\n") {
		hosts = append(hosts, '\n')
	}
	hosts = append(hosts, "127.0.1.1\t"+Hostname+"\n"...)
	files := []struct {
		path string
		data string
		mode os.FileMode
	}{
		{strings.TrimPrefix(SessionBusConf, "/"), sessionBusConfig, 0o644},
		{"etc/xdg/openbox/rc.xml", strings.ReplaceAll(openboxRC, "@TERMINAL@", terminal), 0o644},
		{strings.TrimPrefix(GuestdPath, "/"), "", 0o755},
		{"etc/hostname", Hostname + "\n", 0o644},
		{"etc/hosts", string(hosts), 0o644},
	}
	for _, f := range files {
		if err := t.writeFile(f.path, []byte(f.data), f.mode, 0, 0); err != nil {
			return err
		}
	}
	if err := t.mkdir("etc/drums/dbus-services", 0o755, 0, 0); err != nil {
		return err
	}
	for _, name := range sessionServices {
		data, err := t.readFile("usr/share/dbus-1/services/" + name)
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		if err := t.writeFile("etc/drums/dbus-services/"+name, data, 0o644, 0, 0); err != nil {
			return err
		}
	}
	if r.SystemServices {
		if err := t.writeSystemServices(); err != nil {
			return err
		}
	}
	if r.TimeZone != "" {
		if err := t.writeTimeZone(r.TimeZone); err != nil {
			return err
		}
	}
	if r.Shell == ShellGNOME {
		if err := t.writeGNOME(terminal); err != nil {
			return err
		}
	}
	if !has(rootfs, "usr/bin/python") && !has(rootfs, "usr/local/bin/python") && has(rootfs, "usr/bin/python3") {
		if err := t.symlink("usr/local/bin/python", "/usr/bin/python3"); err != nil {
			return err
		}
	}
	return nil
}

// defaultHosts is Debian's installer's /etc/hosts, less the host name
// (the layer adds drums').
const defaultHosts = `127.0.0.1	localhost

# The following lines are desirable for IPv6 capable hosts
::1     localhost ip6-localhost ip6-loopback
ff02::1 ip6-allnodes
ff02::2 ip6-allrouters
`

// sessionServices are the session bus services a desktop may activate:
// the terminal server and dconf. Portals and gvfs stay out: they
// FUSE-mount things and cost about 14 MiB per desktop (field notes §1.1).
var sessionServices = []string{"org.gnome.Terminal.service", "ca.desrt.dconf.service"}

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

// OpenboxEnv is what openbox runs with beyond the desktop's environment.
// It reads no composed input (its menus take single keys), and without
// the locale's Compose table (thousands of sequences, parsed at each
// start) it is ready about 12 ms of CPU sooner. What it starts must not
// inherit that: the terminal of Ctrl+Alt+T goes without (openboxRC; the
// layer binds nothing else that starts a program).
var OpenboxEnv = []string{"XCOMPOSEFILE=/dev/null"}

// openboxRC is the window manager's configuration: click to focus, one
// desktop, Ctrl+Alt+T for a terminal (without OpenboxEnv), the usual
// window mouse actions.
const openboxRC = `<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <resistance><strength>10</strength><screen_edge_strength>20</screen_edge_strength></resistance>
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse><focusLast>yes</focusLast></focus>
  <placement><policy>Smart</policy><center>yes</center></placement>
  <theme><name>Clearlooks</name><titleLayout>NLIMC</titleLayout></theme>
  <desktops><number>1</number></desktops>
  <keyboard>
    <keybind key="C-A-t"><action name="Execute"><command>env -u XCOMPOSEFILE @TERMINAL@</command></action></keybind>
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
