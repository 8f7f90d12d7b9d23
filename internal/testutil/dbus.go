package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/godbus/dbus/v5"
)

// Bus is a private session dbus-daemon.
type Bus struct {
	Address string
	Dir     string
}

// Env is the environment entry that points a client at this bus.
func (b *Bus) Env() string { return "DBUS_SESSION_BUS_ADDRESS=" + b.Address }

// sessionServices are the only services the test bus may activate: the
// terminal server and dconf (gsettings). Portals, gvfs and the like are left
// out on purpose; they would FUSE-mount things and outlive the test.
var sessionServices = []string{
	"/usr/share/dbus-1/services/org.gnome.Terminal.service",
	"/usr/share/dbus-1/services/ca.desrt.dconf.service",
}

const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <servicedir>%s</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// StartDBus starts a session bus from a generated config under t.TempDir().
// It is ready when dbus-daemon prints its address.
func StartDBus(t testing.TB, env ...string) *Bus {
	t.Helper()
	Tier1(t, "dbus-daemon")
	dir := t.TempDir()
	svc := filepath.Join(dir, "services")
	if err := os.Mkdir(svc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range sessionServices {
		if _, err := os.Stat(s); err == nil {
			if err := os.Symlink(s, filepath.Join(svc, filepath.Base(s))); err != nil {
				t.Fatal(err)
			}
		}
	}
	conf := filepath.Join(dir, "session.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(dir, "bus"), svc), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := Command(env, "dbus-daemon", "--config-file="+conf, "--nofork", "--print-address=3")
	cmd.ExtraFiles = []*os.File{w}
	p := StartCmd(t, cmd)
	w.Close()
	defer r.Close()
	addr, err := p.readyLine(WithTimeout(t), r)
	if err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	return &Bus{Address: addr, Dir: dir}
}

// Connect opens a private connection to the bus, closed at cleanup.
func (b *Bus) Connect(t testing.TB) *dbus.Conn {
	t.Helper()
	conn, err := dbus.Connect(b.Address)
	if err != nil {
		t.Fatalf("connect to %s: %v", b.Address, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
