package sessions

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/sessions/images"
)

// The apps of the osworld image, configured as on OSWorld's VM (the image's
// files are checked in images' TestConfigure).

// openTerminal presses Ctrl+Alt+T through XTEST as pyautogui.hotkey sends
// it, a round trip after each key (a GNOME desktop once lost the first
// shortcut sent so, never one sent at once), and waits for the window
// titled Terminal.
func openTerminal(t *testing.T, s *Session) {
	t.Helper()
	mustRun(t, s, "", pressCtrlAltT)
	waitFor(t, func() bool {
		out, _ := run(t, s, "", "wmctrl -l")
		return strings.Contains(out, "Terminal")
	})
}

const pressCtrlAltT = `/usr/bin/python3 -c "
from Xlib import display, X, XK
from Xlib.ext import xtest
d = display.Display()
codes = [d.keysym_to_keycode(XK.string_to_keysym(k)) for k in ('Control_L', 'Alt_L', 't')]
for c in codes:
    xtest.fake_input(d, X.KeyPress, c)
    d.sync()
for c in reversed(codes):
    xtest.fake_input(d, X.KeyRelease, c)
    d.sync()"`

func TestTerminalKeybinding(t *testing.T) {
	s := newSession(t, Request{})
	if out, code := run(t, s, "", "command -v gnome-terminal"); code != 0 {
		t.Fatalf("no gnome-terminal in the desktop (make deps installs it): %s", out)
	}
	openTerminal(t, s)
	mustRun(t, s, "", "wmctrl -a Terminal")
	// openbox runs without the Compose table (images.OpenboxEnv); the
	// shell of the terminal it started has the desktop's environment.
	if got := mustRun(t, s, "", `tr '\0' '\n' </proc/$(pgrep -x openbox)/environ | grep '^XCOMPOSEFILE='`); strings.TrimSpace(got) != images.OpenboxEnv[0] {
		t.Errorf("openbox's environment has %q, want %s", got, images.OpenboxEnv[0])
	}
	shellEnv := `for c in $(pgrep -P $(pgrep -x gnome-terminal-)); do tr '\0' '\n' </proc/$c/environ; done`
	waitFor(t, func() bool {
		out, _ := run(t, s, "", shellEnv)
		return strings.Contains(out, "DISPLAY=")
	})
	if out := mustRun(t, s, "", shellEnv); strings.Contains(out, "XCOMPOSEFILE") {
		t.Errorf("the terminal's shell inherited openbox's XCOMPOSEFILE:\n%s", out)
	}
}

// A fresh desktop's default video player is Ubuntu's (not VLC), and the
// agent's `xdg-mime default` changes it.
func TestVideoDefault(t *testing.T) {
	s := newSession(t, Request{Image: appsImage})
	for _, typ := range []string{"mp4", "x-matroska", "webm", "x-msvideo"} {
		if out := strings.TrimSpace(mustRun(t, s, "", "xdg-mime query default video/"+typ)); out != images.VideoDefault {
			t.Errorf("default for video/%s: %q, want %s", typ, out, images.VideoDefault)
		}
	}
	mustRun(t, s, "", "xdg-mime default vlc.desktop video/mp4")
	if out := strings.TrimSpace(mustRun(t, s, "", "xdg-mime query default video/mp4")); out != "vlc.desktop" {
		t.Errorf("after xdg-mime default: %q", out)
	}
}

// PulseAudio started in a desktop, as OSWorld's volume task starts it,
// has its null sink at the template's 40%, not at the maximum the task asks
// for.
func TestSinkVolume(t *testing.T) {
	s := newSession(t, Request{})
	out := mustRun(t, s, "", "pulseaudio --start && pactl list sinks | grep '^[[:space:]]Volume:' | head -n 1 | awk '{print $5}'; pulseaudio -k")
	if got := strings.TrimSpace(out); got != "40%" {
		t.Errorf("sink volume %q, want 40%%", got)
	}
}

// VLC started as OSWorld's tasks start it serves its HTTP interface where
// OSWorld's getters read it: port 8080, password "password".
func TestVLCHTTP(t *testing.T) {
	s := newSession(t, Request{Image: appsImage})
	mustRun(t, s, "", "VLC_VERBOSE=-1 setsid cvlc --no-audio --no-video-title-show >/dev/null 2>&1 &")
	url := fmt.Sprintf("http://%s:%d/requests/status.xml", s.Address, images.VLCHTTPPort)
	get := func(password string) (int, string) {
		req, _ := http.NewRequest("GET", url, nil)
		if password != "" {
			req.SetBasicAuth("", password)
		}
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// Nothing says when VLC listens: poll. Under CI's load VLC once
	// answered 404 (its own XML error page) before it served the page,
	// presumably while its Lua interface was still registering the
	// handlers (not reproduced alone or under a busy loop): a 404 is taken
	// as not yet ready too, within the same time.
	deadline := time.Now().Add(opTimeout)
	code, body := get(images.VLCHTTPPassword)
	for (code == 0 || code == http.StatusNotFound) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		code, body = get(images.VLCHTTPPassword)
	}
	if code != 200 || !strings.Contains(body, "<state>") {
		t.Errorf("GET %s with the password: %d %s", url, code, body)
	}
	if code, _ := get(""); code != 401 {
		t.Errorf("GET %s without the password: %d, want 401", url, code)
	}
	mustRun(t, s, "", "pkill -x vlc; while pgrep -x vlc >/dev/null; do sleep 0.1; done")
}

// google-chrome starts Chromium under Chrome's process name (tasks run
// `pkill chrome`), and its fresh profile has none of the settings that
// Debian's first-run preferences or Chromium's own migrations add.
func TestChromeProfile(t *testing.T) {
	s := newSession(t, Request{Image: appsImage})
	if _, code := run(t, s, "", "test -f /usr/local/bin/google-chrome"); code != 0 {
		t.Fatal("the osworld image has no google-chrome launcher")
	}
	// Started as task configs start it; ready once DevTools answers.
	mustRun(t, s, "", `setsid google-chrome --remote-debugging-port=1337 >/dev/null 2>&1 &
until /usr/bin/python3 -c 'import urllib.request; urllib.request.urlopen("http://127.0.0.1:1337/json/version")' 2>/dev/null; do sleep 0.1; done`)
	if out := mustRun(t, s, "", "ps -eo comm= | grep -c '^chromium$' || true"); strings.TrimSpace(out) != "0" {
		t.Errorf("%s processes are named chromium", strings.TrimSpace(out))
	}
	// Chromium writes a new profile's Preferences within seconds (and
	// again on a clean exit); then end it as a task's postconfig does.
	mustRun(t, s, "", `until test -s ~/.config/google-chrome/Default/Preferences; do sleep 0.1; done
pkill chrome; while pgrep chrome >/dev/null; do sleep 0.1; done`)
	raw := mustRun(t, s, "", "cat ~/.config/google-chrome/Default/Preferences")
	var prefs struct {
		Profile     map[string]any `json:"profile"`
		Homepage    any            `json:"homepage"`
		BookmarkBar any            `json:"bookmark_bar"`
	}
	if err := json.Unmarshal([]byte(raw), &prefs); err != nil {
		t.Fatalf("Preferences: %v", err)
	}
	// OSWorld's get_data_delete_automacally: "true" when the key exists.
	if v, ok := prefs.Profile["default_content_setting_values"]; ok {
		t.Errorf("a fresh profile has profile.default_content_setting_values = %v", v)
	}
	if prefs.Homepage != nil || prefs.BookmarkBar != nil {
		t.Errorf("a fresh profile has Debian's homepage %v or bookmark bar %v", prefs.Homepage, prefs.BookmarkBar)
	}
}
