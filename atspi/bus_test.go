package atspi

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/drums-dev/drums/internal/ready"
	"github.com/drums-dev/drums/internal/testutil"
)

// clearBusEnv makes sure nothing from the test's own environment points the
// Source at a bus.
func clearBusEnv(t *testing.T) {
	for _, v := range []string{"AT_SPI_BUS_ADDRESS", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY"} {
		t.Setenv(v, "")
	}
}

func hasApp(t *testing.T, x, name string) bool {
	t.Helper()
	return parseTree(t, x).app(name) != nil
}

func TestDiscovery(t *testing.T) {
	clearBusEnv(t)
	d := desktop(t)
	startFixedWindow(t, d)
	waitTree(t, newSource(t, d, SourceOptions{}), fixedWindowReady)

	for name, opts := range map[string]SourceOptions{
		"session bus":         {SessionBusAddress: d.Bus.Address},
		"X root property":     {Display: d.X.Display},
		"explicit address":    {BusAddress: d.A11yAddress},
		"address wins":        {BusAddress: d.A11yAddress, SessionBusAddress: "unix:path=/nonexistent", Display: ":9999"},
		"session before root": {SessionBusAddress: d.Bus.Address, Display: ":9999"},
	} {
		s := NewSource(opts)
		x, err := s.Tree(context.Background())
		s.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if !hasApp(t, x, "window.py") {
			t.Errorf("%s: window.py missing", name)
		}
	}

	s := NewSource(SourceOptions{})
	defer s.Close()
	if _, err := s.Tree(context.Background()); !errors.Is(err, ErrNoBus) {
		t.Errorf("no bus anywhere: Tree error %v, want ErrNoBus", err)
	}
	if _, err := s.Terminal(context.Background()); !errors.Is(err, ErrNoBus) {
		t.Errorf("no bus anywhere: Terminal error %v, want ErrNoBus", err)
	}
}

func TestEnablesAccessibility(t *testing.T) {
	clearBusEnv(t)
	d := desktop(t)
	conn := d.Bus.Connect(t)
	obj := conn.Object(a11yBusName, a11yBusPath)
	ctx := testutil.WithTimeout(t)
	if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Set", 0, "org.a11y.Status", "IsEnabled", dbus.MakeVariant(false)).Err; err != nil {
		t.Fatal(err)
	}
	s := NewSource(SourceOptions{SessionBusAddress: d.Bus.Address})
	defer s.Close()
	if _, err := s.Tree(ctx); err != nil {
		t.Fatal(err)
	}
	var on bool
	if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, "org.a11y.Status", "IsEnabled").Store(&on); err != nil {
		t.Fatal(err)
	}
	if !on {
		t.Fatal("org.a11y.Status.IsEnabled is still false")
	}
}

// TestReconnect replaces the accessibility bus under a Source: the next
// request finds the new bus and reads the applications registered there.
func TestReconnect(t *testing.T) {
	clearBusEnv(t)
	const launcher = "/usr/libexec/at-spi-bus-launcher"
	testutil.Tier1(t, "Xvfb", "openbox", "dbus-daemon", launcher)
	d := testutil.StartDesktop(t, testutil.DesktopOptions{WM: true})
	conn := d.Bus.Connect(t)
	startBus := func() *testutil.Proc {
		p := testutil.Start(t, d.Env(), launcher, "--launch-immediately", "--a11y=1")
		if err := ready.NameOwner(testutil.WithTimeout(t), conn, a11yBusName); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := startBus()
	s := NewSource(SourceOptions{SessionBusAddress: d.Bus.Address})
	defer s.Close()
	startFixedWindow(t, d)
	waitTree(t, s, fixedWindowReady)

	first.Kill()
	<-first.Done()
	startBus()
	// GTK finds the bus through the root window's AT_SPI_BUS, which the
	// new launcher sets after it owns its name (later on a loaded
	// machine): until then the property names the dead bus's socket.
	if err := testutil.WaitRootProperty(testutil.WithTimeout(t), d.X.Display, "AT_SPI_BUS", func(addr string) bool {
		_, path, ok := strings.Cut(addr, "path=")
		if !ok {
			return addr != "" // an abstract socket: nothing to stat
		}
		path, _, _ = strings.Cut(path, ",")
		_, err := os.Stat(path)
		return err == nil
	}); err != nil {
		t.Fatalf("AT_SPI_BUS never named the new bus: %v", err)
	}
	// The first window lost its bus; a new one registers on the new bus.
	d.StartApp(t, "gtk3-widget-factory")
	waitTree(t, s, appReady("gtk3-widget-factory", 200))
}

// TestStoppedApplication stops one application (SIGSTOP): a request costs
// about one call timeout and leaves that application out; the others are
// read in full, and it is back once it runs again.
func TestStoppedApplication(t *testing.T) {
	d := desktop(t)
	startFixedWindow(t, d)
	factory := d.StartApp(t, "gtk3-widget-factory")
	s := newSource(t, d, SourceOptions{CallTimeout: time.Second})
	before := waitTree(t, s, allReady(fixedWindowReady, appReady("gtk3-widget-factory", 200)))

	if err := syscall.Kill(factory.Cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			_ = syscall.Kill(factory.Cmd.Process.Pid, syscall.SIGCONT)
		}
	}
	defer resume()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	x, err := s.Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tree with a stopped application: %v", time.Since(start))
	if hasApp(t, x, "gtk3-widget-factory") || !hasApp(t, x, "window.py") {
		t.Errorf("want window.py only:\n%s", x)
	}
	if got, err := s.Terminal(ctx); err != nil || got != nil {
		t.Errorf("terminal with a stopped application: %v, %v", got, err)
	}
	// A Source meeting the stopped application for the first time (no
	// peer connection yet) leaves it out the same way.
	start = time.Now()
	x, err = newSource(t, d, SourceOptions{CallTimeout: time.Second}).Tree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first tree of a new Source with a stopped application: %v", time.Since(start))
	if hasApp(t, x, "gtk3-widget-factory") || !hasApp(t, x, "window.py") {
		t.Errorf("new Source: want window.py only:\n%s", x)
	}

	resume()
	if got := waitTree(t, s, appReady("gtk3-widget-factory", 200)); got != before {
		t.Errorf("after SIGCONT: %s", firstDifference(before, got))
	}
}

// TestDeadApplication kills an application that is still registered.
func TestDeadApplication(t *testing.T) {
	d := desktop(t)
	startFixedWindow(t, d)
	factory := d.StartApp(t, "gtk3-widget-factory")
	s := newSource(t, d, SourceOptions{})
	waitTree(t, s, allReady(fixedWindowReady, appReady("gtk3-widget-factory", 200)))
	factory.Kill()
	x, err := s.Tree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hasApp(t, x, "gtk3-widget-factory") || !hasApp(t, x, "window.py") {
		t.Errorf("want window.py only:\n%s", x)
	}
}
