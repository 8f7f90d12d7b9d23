package images

import (
	_ "embed"
	"fmt"
	"strings"
)

// System services. A recipe with SystemServices gives its desktops a
// system D-Bus that activates systemd's timedated, hostnamed and localed
// without systemd as PID 1 (the desktop's PID 1 is drums' init), so that
// timedatectl, hostnamectl and localectl work as in OSWorld's VM over
// the desktop's own files: its /etc is the overlay's upper layer and dies
// with it, nothing reaches the host's. The layer marks the desktop booted
// with systemd (/run/systemd/system, which the plan makes), the check
// systemd's tools make before they talk to the bus; systemctl then gets as
// far as asking for org.freedesktop.systemd1, which no desktop has (the
// README's fidelity table).

// SystemBusConf configures a desktop's system bus (drums' layer), for the
// images whose recipe has SystemServices.
const SystemBusConf = "/etc/drums/system-bus.conf"

// systemServiceDir holds the system bus's service files.
const systemServiceDir = "etc/drums/system-services"

// systemServices are the daemons the system bus activates: a D-Bus name
// and the program under /lib/systemd. Their own service files in
// /usr/share/dbus-1/system-services say Exec=/bin/false and hand the start
// to systemd (SystemdService=); drums' say Exec= the daemon itself. Each
// exits when idle (about 30 s) and is activated again by the next call.
var systemServices = []struct{ name, daemon string }{
	{"org.freedesktop.timedate1", "systemd-timedated"},
	{"org.freedesktop.hostname1", "systemd-hostnamed"},
	{"org.freedesktop.locale1", "systemd-localed"},
}

// recipe is the built-in recipe an image was built from; the zero Recipe
// for an import (and a recipe this drums no longer has).
func (im *Image) recipe() Recipe {
	if im.Source.Kind != "build" {
		return Recipe{}
	}
	return Recipes[im.Source.Recipe]
}

// SystemServices says whether desktops of the image run a system bus
// (SystemBusConf, as root of the desktop).
func (im *Image) SystemServices() bool { return im.recipe().SystemServices }

// Shell is the shell desktops of the image run (Recipe.Shell).
func (im *Image) Shell() Shell { return im.recipe().Shell }

// writeSystemServices writes the system bus's configuration and the
// service files of the daemons the image has.
func (t tree) writeSystemServices() error {
	if err := t.writeFile(strings.TrimPrefix(SystemBusConf, "/"), []byte(systemBusConfig), 0o644, 0, 0); err != nil {
		return err
	}
	if err := t.mkdir(systemServiceDir, 0o755, 0, 0); err != nil {
		return err
	}
	for _, s := range systemServices {
		exec := "/lib/systemd/" + s.daemon
		if !has(t.base, strings.TrimPrefix(exec, "/")) {
			continue
		}
		data := fmt.Sprintf("[D-BUS Service]\nName=%s\nExec=%s\nUser=root\n", s.name, exec)
		if err := t.writeFile(systemServiceDir+"/"+s.name+".service", []byte(data), 0o644, 0, 0); err != nil {
			return err
		}
	}
	return nil
}

// writeTimeZone makes zone the image's time zone, as the installer of
// OSWorld's VM left it: /etc/localtime, which glibc and timedated read,
// and Debian's /etc/timezone.
func (t tree) writeTimeZone(zone string) error {
	if !has(t.base, "usr/share/zoneinfo/"+zone) {
		return fmt.Errorf("time zone %s: the image has no usr/share/zoneinfo/%s", zone, zone)
	}
	if err := t.symlink("etc/localtime", "/usr/share/zoneinfo/"+zone); err != nil {
		return err
	}
	return t.writeFile("etc/timezone", []byte(zone+"\n"), 0o644, 0, 0)
}

// systemBusConfig is Debian's system bus policy (deny by default, each
// service's own policy from system.d) at the usual socket, activating
// only drums' service files (systemServiceDir), run by the desktop's root
// without the setuid activation helper: root of a desktop is an
// unprivileged host uid.
//
//go:embed system-bus.conf
var systemBusConfig string
