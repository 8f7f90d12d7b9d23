package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/drums-dev/drums/internal/ready"
)

// Desktop is a private desktop for one test: Xvfb, a session bus, optionally
// the AT-SPI bus and an EWMH window manager, and a home directory.
type Desktop struct {
	X       *X
	Bus     *Bus
	Home    string
	Runtime string // XDG_RUNTIME_DIR
	// Tmp is TMPDIR: what the desktop's programs leave there when the test
	// kills them (guestd's callback socket, Chromium's singleton) goes with
	// the test. It is short, as unix socket paths inside it must be.
	Tmp string
	// A11yAddress is the AT-SPI bus address, when the desktop has one.
	A11yAddress string
}

// DesktopOptions selects what StartDesktop brings up.
type DesktopOptions struct {
	Width, Height int  // default 1280×720
	WM            bool // openbox, ready when _NET_SUPPORTING_WM_CHECK is set
	A11y          bool // at-spi-bus-launcher + registry, accessibility on
}

// StartDesktop brings up the parts in opts, each ready when it says so.
func StartDesktop(t testing.TB, opts DesktopOptions) *Desktop {
	t.Helper()
	if opts.Width == 0 {
		opts.Width, opts.Height = 1280, 720
	}
	d := &Desktop{Home: t.TempDir(), Runtime: t.TempDir()}
	if err := os.Chmod(d.Runtime, 0o700); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp("", "dt")
	if err != nil {
		t.Fatal(err)
	}
	// Registered before any process starts, so it runs after they are gone.
	t.Cleanup(func() { os.RemoveAll(tmp) })
	d.Tmp = tmp
	for _, sub := range []string{"Desktop", ".config", ".cache"} {
		if err := os.MkdirAll(filepath.Join(d.Home, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d.X = StartXvfb(t, opts.Width, opts.Height)
	d.Bus = StartDBus(t, d.commonEnv()...)
	if opts.WM {
		Tier1(t, "openbox")
		Start(t, d.Env(), "openbox", "--sm-disable")
		if err := WaitWM(WithTimeout(t), d.X.Display); err != nil {
			t.Fatalf("openbox: %v", err)
		}
	}
	if opts.A11y {
		d.A11yAddress = startA11y(t, d)
	}
	return d
}

// commonEnv is what every process of the desktop sees, bus excepted.
func (d *Desktop) commonEnv() []string {
	return []string{
		d.X.Env(),
		"HOME=" + d.Home,
		"XDG_RUNTIME_DIR=" + d.Runtime,
		"TMPDIR=" + d.Tmp,
		"XDG_CONFIG_HOME=" + filepath.Join(d.Home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(d.Home, ".cache"),
		// GTK4's GL renderer never registers with AT-SPI under Xvfb and
		// burns CPU (field notes §7).
		"GSK_RENDERER=cairo",
		"GTK_A11Y=atspi",
		"NO_AT_BRIDGE=0",
	}
}

// Env is the full environment for a client of this desktop.
func (d *Desktop) Env() []string {
	env := d.commonEnv()
	if d.Bus != nil {
		env = append(env, d.Bus.Env())
	}
	if d.A11yAddress != "" {
		env = append(env, "AT_SPI_BUS_ADDRESS="+d.A11yAddress)
	}
	return env
}

// StartApp starts an application on the desktop; it is killed at cleanup.
func (d *Desktop) StartApp(t testing.TB, name string, args ...string) *Proc {
	t.Helper()
	Tier1(t, name)
	return Start(t, d.Env(), name, args...)
}

// startA11y starts the AT-SPI bus launcher with accessibility forced on and
// returns the accessibility bus address once org.a11y.Bus answers.
func startA11y(t testing.TB, d *Desktop) string {
	t.Helper()
	const launcher = "/usr/libexec/at-spi-bus-launcher"
	Tier1(t, launcher)
	conn := d.Bus.Connect(t)
	ctx := WithTimeout(t)
	Start(t, d.Env(), launcher, "--launch-immediately", "--a11y=1")
	if err := ready.NameOwner(ctx, conn, "org.a11y.Bus"); err != nil {
		t.Fatalf("at-spi-bus-launcher: %v", err)
	}
	var addr string
	if err := conn.Object("org.a11y.Bus", "/org/a11y/bus").CallWithContext(ctx, "org.a11y.Bus.GetAddress", 0).Store(&addr); err != nil {
		t.Fatalf("org.a11y.Bus.GetAddress: %v", err)
	}
	return addr
}
