package sessions

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/sessions/images"
)

// A desktop of the osworld image has the VM's system services over its
// own files: timedatectl reports the VM's time zone in the lines OSWorld's
// is_utc_0 reads, the desktop's root and its user through sudo change it,
// the user alone is refused (the VM asks for the password), hostnamectl
// and localectl answer; systemctl gets as far as the system bus. The
// host's time zone and host name stay as they were.
func TestSystemServices(t *testing.T) {
	hostZone, _ := os.Readlink("/etc/localtime")
	hostTime, err := os.ReadFile("/etc/localtime")
	if err != nil {
		t.Fatal(err)
	}
	hostName, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	s := newSession(t, Request{Image: appsImage})
	// zoneLine is the line is_utc_0 scores: the fourth of the status.
	zoneLine := func() string {
		t.Helper()
		lines := strings.Split(mustRun(t, s, "", "timedatectl status"), "\n")
		if len(lines) < 4 {
			t.Fatalf("timedatectl status: %q", lines)
		}
		return strings.TrimSpace(lines[3])
	}
	if l := zoneLine(); !strings.HasPrefix(l, "Time zone: "+images.OSWorldTimeZone+" (") || strings.HasSuffix(l, "+0000)") {
		t.Errorf("fresh desktop: %q, want %s, not +0000", l, images.OSWorldTimeZone)
	}
	mustRun(t, s, "root", "timedatectl set-timezone UTC")
	if l := zoneLine(); l != "Time zone: UTC (UTC, +0000)" {
		t.Errorf("after root's set-timezone UTC: %q", l)
	}
	mustRun(t, s, "", "echo password | sudo -S timedatectl set-timezone Europe/Paris")
	if l := zoneLine(); !strings.HasPrefix(l, "Time zone: Europe/Paris (") {
		t.Errorf("after the user's sudo set-timezone: %q", l)
	}
	if out, code := run(t, s, "", "timedatectl set-timezone UTC"); code == 0 || !strings.Contains(out, "Access denied") {
		t.Errorf("the user's set-timezone without sudo exited %d: %s", code, out)
	}
	// The clock is the host's: root of a desktop cannot set it.
	if out, code := run(t, s, "root", "timedatectl set-time '2020-01-01 00:00:00'"); code == 0 {
		t.Errorf("set-time exited 0: %s", out)
	}
	if out := mustRun(t, s, "", "readlink -f /etc/localtime; date +%Z"); out != "/usr/share/zoneinfo/Europe/Paris\nCET\n" && out != "/usr/share/zoneinfo/Europe/Paris\nCEST\n" {
		t.Errorf("the desktop's /etc/localtime and date: %q", out)
	}
	if out := mustRun(t, s, "", "hostnamectl hostname; hostnamectl --static"); out != images.Hostname+"\n"+images.Hostname+"\n" {
		t.Errorf("hostnamectl: %q, want %s", out, images.Hostname)
	}
	if out := mustRun(t, s, "", "localectl status"); !strings.Contains(out, "System Locale: LANG="+images.Locale) {
		t.Errorf("localectl: %s", out)
	}
	if out, code := run(t, s, "", "systemctl is-system-running"); code == 0 || !strings.Contains(out, "org.freedesktop.systemd1") {
		t.Errorf("systemctl exited %d: %s (the README says it finds no systemd1 on the bus)", code, out)
	}
	// hostnamed writes the desktop's /etc/hostname; the kernel's host
	// name it may not set (the desktop's UTS namespace is not its root's).
	run(t, s, "root", "hostnamectl set-hostname "+hostName+"x")
	if z, _ := os.Readlink("/etc/localtime"); z != hostZone {
		t.Errorf("host /etc/localtime -> %q, was %q", z, hostZone)
	}
	if b, _ := os.ReadFile("/etc/localtime"); !bytes.Equal(b, hostTime) {
		t.Error("the host's /etc/localtime changed")
	}
	if time.Now().Year() < 2025 {
		t.Errorf("the host's clock says %s", time.Now())
	}
	if h, _ := os.Hostname(); h != hostName {
		t.Errorf("host name %q, was %q", h, hostName)
	}
}

// A desktop of an image without system services has no system bus and
// does not pass for booted with systemd.
func TestNoSystemServices(t *testing.T) {
	s := newSession(t, Request{Image: coreImage})
	if out, code := run(t, s, "", "test -e /run/systemd/system || test -e /run/dbus/system_bus_socket"); code == 0 {
		t.Errorf("a core desktop has a system bus or /run/systemd/system: %s", out)
	}
}
