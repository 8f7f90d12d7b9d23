package sessions

import (
	"fmt"
	"image/png"
	"net/http"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/sessions/images"
)

// gnomeImage is the GNOME profile's image (make images builds it).
const gnomeImage = "osworld-gnome"

// typeTouchTyped types "touch typed" and Return through XTEST, as
// pyautogui.write sends it, to the focused window.
const typeTouchTyped = `/usr/bin/python3 -c "
from Xlib import display, X, XK
from Xlib.ext import xtest
d = display.Display()
for k in [c if c != ' ' else 'space' for c in 'touch typed'] + ['Return']:
    c = d.keysym_to_keycode(XK.string_to_keysym(k))
    xtest.fake_input(d, X.KeyPress, c)
    xtest.fake_input(d, X.KeyRelease, c)
d.sync()"`

// A desktop of the GNOME image shows what an agent trained on OSWorld's
// VM sees: GNOME Shell as the window manager (not openbox), a top bar and
// the dock on the left as struts of the work area, a maximised window
// filling that area, the dock's and themes' settings, the favourites,
// Ctrl+Alt+T's terminal, the VM's time zone through timedatectl, and a
// wallpaper instead of a black screen.
func TestGNOME(t *testing.T) {
	testimage.NeedImages(t, gnomeImage)
	s := newSession(t, Request{Image: gnomeImage})
	if out := mustRun(t, s, "", "wmctrl -m"); !strings.Contains(out, "Name: GNOME Shell") {
		t.Fatalf("window manager: %s", out)
	}
	if out, code := run(t, s, "", "pgrep -x openbox"); code == 0 {
		t.Errorf("openbox runs in a GNOME desktop: %s", out)
	}
	for _, ext := range []string{"dash-to-dock@micxgx.gmail.com", "drums@drums"} {
		out := mustRun(t, s, "", "gdbus call --session --dest org.gnome.Shell --object-path /org/gnome/Shell "+
			"--method org.gnome.Shell.Extensions.GetExtensionInfo "+ext)
		if !strings.Contains(out, "'state': <1.0>") {
			t.Errorf("extension %s is not enabled: %s", ext, out)
		}
	}
	var x, y, w, h int
	area := mustRun(t, s, "", "xprop -root _NET_WORKAREA")
	if _, err := fmt.Sscanf(strings.TrimSpace(area), "_NET_WORKAREA(CARDINAL) = %d, %d, %d, %d", &x, &y, &w, &h); err != nil {
		t.Fatalf("work area %q: %v", area, err)
	}
	// The dock on the left, 70 pixels wide as the VM's (OSWorld-G's
	// annotations of its screenshots), the full height below the top bar.
	if x != 70 || y < 24 || x+w != DefaultWidth || y+h != DefaultHeight {
		t.Errorf("work area (%d,%d) %dx%d: want the dock's strut on the left and the top bar's above", x, y, w, h)
	}
	for _, c := range []struct{ key, want string }{
		{"org.gnome.shell.extensions.dash-to-dock dock-position", "'LEFT'"},
		{"org.gnome.shell.extensions.dash-to-dock extend-height", "true"},
		{"org.gnome.shell.extensions.dash-to-dock dock-fixed", "true"},
		{"org.gnome.shell.extensions.dash-to-dock dash-max-icon-size", "48"},
		{"org.gnome.desktop.interface gtk-theme", "'Yaru'"},
		{"org.gnome.desktop.interface icon-theme", "'Yaru'"},
		{"org.gnome.desktop.interface toolkit-accessibility", "true"},
	} {
		if got := strings.TrimSpace(mustRun(t, s, "", "gsettings get "+c.key)); got != c.want {
			t.Errorf("gsettings get %s = %s, want %s", c.key, got, c.want)
		}
	}
	if fav := mustRun(t, s, "", "gsettings get org.gnome.shell favorite-apps"); !strings.HasPrefix(fav, "['google-chrome.desktop', 'thunderbird.desktop'") {
		t.Errorf("favourites %s", fav)
	}
	if zone := mustRun(t, s, "", "timedatectl status | sed -n 4p"); !strings.Contains(zone, "Time zone: "+images.OSWorldTimeZone) {
		t.Errorf("timedatectl: %q", zone)
	}
	// Ctrl+Alt+T (drums' extension) opens a terminal with the focus: what
	// a task types next, as soon as the window is there, runs in it.
	// Maximised, the terminal fills the work area.
	openTerminal(t, s)
	mustRun(t, s, "", typeTouchTyped)
	waitFor(t, func() bool {
		_, code := run(t, s, "", "test -e ~/typed")
		return code == 0
	})
	mustRun(t, s, "", "wmctrl -r Terminal -b add,maximized_vert,maximized_horz")
	// GTK's client-side decorations: wmctrl -lG misreports the window;
	// xwininfo gives its place, and _GTK_FRAME_EXTENTS its shadow (none
	// when maximised).
	geom := "W=$(wmctrl -l | awk '/Terminal/ {print $1; exit}'); xprop -id $W _NET_WM_STATE; " +
		"xwininfo -id $W | awk '/Absolute upper-left X/ {x=$4} /Absolute upper-left Y/ {y=$4} /Width:/ {w=$2} /Height:/ {h=$2} END {print x, y, w, h}'"
	var wx, wy, ww, wh int
	waitFor(t, func() bool {
		out := mustRun(t, s, "", geom)
		state, place, _ := strings.Cut(out, "\n")
		if !strings.Contains(state, "_NET_WM_STATE_MAXIMIZED_HORZ") || !strings.Contains(state, "_NET_WM_STATE_MAXIMIZED_VERT") {
			return false
		}
		_, err := fmt.Sscan(place, &wx, &wy, &ww, &wh)
		return err == nil && wx == x && wy == y && ww == w && wh == h
	})
	t.Logf("work area and maximised terminal: (%d,%d) %dx%d", x, y, w, h)
	// What guestd's screenshot shows: the wallpaper, not openbox's black.
	resp, err := http.Get(fmt.Sprintf("http://%s:%d/screenshot", s.Address, s.GuestPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	img, err := png.Decode(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r, g, b, _ := img.At(DefaultWidth-40, DefaultHeight-40).RGBA(); r == 0 && g == 0 && b == 0 {
		t.Error("the screenshot's bottom right is black: no wallpaper")
	}
}
