package atspi

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/drums-dev/drums/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// Tier-1 tests on real applications, each on its own desktop (Xvfb,
// openbox, session bus, AT-SPI bus). They check content: roles, names,
// states, text, values, actions, and extents against the X server's own
// window geometry.

func desktop(t *testing.T) *testutil.Desktop {
	t.Helper()
	testutil.Tier1(t, "Xvfb", "openbox", "dbus-daemon")
	return testutil.StartDesktop(t, testutil.DesktopOptions{WM: true, A11y: true})
}

// startFixedWindow starts testdata/window.py and returns its X window.
func startFixedWindow(t testing.TB, d *testutil.Desktop) uint32 {
	t.Helper()
	script, err := filepath.Abs("testdata/window.py")
	if err != nil {
		t.Fatal(err)
	}
	d.StartApp(t, "/usr/bin/python3", script)
	return waitAppWindow(t, d, "drums-fixed")
}

func fixedWindowReady(root *xnode) string {
	if a := root.app("window.py"); a == nil || len(a.find(tagged("text", ""))) != 2 {
		return "window.py"
	}
	return ""
}

// appReady checks that application name is there with at least nodes
// elements.
func appReady(name string, nodes int) func(root *xnode) string {
	return func(root *xnode) string {
		if a := root.app(name); a == nil || a.count() < nodes {
			return name
		}
		return ""
	}
}

// allReady joins readiness checks.
func allReady(checks ...func(*xnode) string) func(*xnode) string {
	return func(root *xnode) string {
		var missing []string
		for _, c := range checks {
			if m := c(root); m != "" {
				missing = append(missing, m)
			}
		}
		return strings.Join(missing, ", ")
	}
}

func TestFixedWindowGolden(t *testing.T) {
	d := desktop(t)
	win := startFixedWindow(t, d)
	s := newSource(t, d, SourceOptions{})
	x := waitTree(t, s, fixedWindowReady)

	golden := filepath.Join("testdata", "window.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(x+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if x+"\n" != string(want) {
		t.Errorf("XML differs from %s (review, then -update):\n got %s\nwant %s", golden, x, want)
	}

	// Content, independent of the golden file.
	root := parseTree(t, x)
	app := root.app("window.py")
	frame := app.one(t, "frame", tagged("frame", "Drums Fixed Window"))
	for _, st := range []string{"st:active", "st:showing", "st:visible", "st:resizable"} {
		if frame.Attr[st] != "true" {
			t.Errorf("frame lacks %s", st)
		}
	}
	button := app.one(t, "button", tagged("push-button", "Press me"))
	if button.Attr["st:focused"] != "true" || button.Attr["act:click_desc"] != "Clicks the button" || button.Attr["st:has_tooltip"] != "true" {
		t.Errorf("button %v", button.Attr)
	}
	if c := app.one(t, "check box", tagged("check-box", "Checked option")); c.Attr["st:checked"] != "true" {
		t.Errorf("check box %v", c.Attr)
	}
	if r := app.one(t, "radio A", tagged("radio-button", "Radio A")); r.Attr["st:checked"] != "" {
		t.Errorf("radio A checked: %v", r.Attr)
	}
	if tg := app.one(t, "toggle", tagged("toggle-button", "Toggle")); tg.Attr["st:sensitive"] != "" || tg.Attr["st:enabled"] != "" {
		t.Errorf("insensitive toggle %v", tg.Attr)
	}
	if e := app.one(t, "entry", tagged("text", "Name field")); e.Text != "typed text\u00e9" || e.Attr["st:single_line"] != "true" {
		t.Errorf("entry %q %v", e.Text, e.Attr)
	}
	spin := app.one(t, "spin button", tagged("spin-button", ""))
	if spin.Text != "42.5" || spin.Attr["val:value"] != "42.5" || spin.Attr["val:max"] != "100.0" || spin.Attr["val:step"] != "0.5" {
		t.Errorf("spin button %q %v", spin.Text, spin.Attr)
	}
	if sl := app.one(t, "slider", tagged("slider", "")); sl.Attr["val:value"] != "0.25" || sl.Attr["val:step"] != "0.0001" {
		t.Errorf("slider %v", sl.Attr)
	}
	combo := app.one(t, "combo box", tagged("combo-box", "Second"))
	if combo.Attr["selection"] != "true" || len(combo.find(tagged("menu-item", ""))) != 3 {
		t.Errorf("combo box %v", combo.Attr)
	}
	if img := app.one(t, "icon", tagged("icon", "Open icon")); img.Attr["image"] != "true" {
		t.Errorf("icon %v", img.Attr)
	}
	view := app.one(t, "text view", func(n *xnode) bool { return n.Tag == "text" && n.Attr["st:multi_line"] == "true" })
	if view.Text != "line one\nline two\twith tab\n" {
		t.Errorf("text view %q", view.Text)
	}
	if l := app.one(t, "label", tagged("label", "Tom & Jerry <3")); l.Text != "Tom & Jerry <3" {
		t.Errorf("label text %q", l.Text)
	}

	// Extents against the X server: the frame is the window manager's
	// frame window; the content box sits at the client window's origin
	// plus the 8-pixel border.
	client, wmFrame := windowRects(t, d.X.Display, win)
	if got := frame.extents(t); got != wmFrame {
		t.Errorf("frame extents %v, X frame window %v", got, wmFrame)
	}
	box := frame.Children[0]
	if got, want := box.extents(t), (rect{client.X + 8, client.Y + 8, client.W - 16, client.H - 16}); got != want {
		t.Errorf("content box %v, want %v (client window %v)", got, want, client)
	}
}

// TestFastPathsAgree checks that the Cache interface, the peer-to-peer
// sockets and the concurrency change nothing: the same desktop read every
// way gives the same bytes.
func TestFastPathsAgree(t *testing.T) {
	d := desktop(t)
	def := newSource(t, d, SourceOptions{})
	ref := fullDesktop(t, d, def)
	for name, opts := range map[string]SourceOptions{
		"no cache":            {NoCache: true},
		"no p2p":              {NoP2P: true},
		"neither":             {NoCache: true, NoP2P: true},
		"one worker":          {Workers: 1},
		"without LibreOffice": {LibreOffice: "/nonexistent/libreoffice"},
	} {
		s := newSource(t, d, opts)
		for attempt := 1; ; attempt++ {
			x, err := s.Tree(context.Background())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if x == ref {
				break
			}
			// Tell a difference of reading from a change of the desktop.
			again, err := def.Tree(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if again == ref || attempt == 3 {
				t.Errorf("%s: the XML differs from the default read: %s", name, firstDifference(ref, x))
				break
			}
			ref = again
		}
	}
}

func TestGTK3WidgetFactory(t *testing.T) {
	d := desktop(t)
	d.StartApp(t, "gtk3-widget-factory")
	win := waitAppWindow(t, d, "gtk3-widget-factory")
	s := newSource(t, d, SourceOptions{})
	x := waitTree(t, s, appReady("gtk3-widget-factory", 200))
	app := parseTree(t, x).app("gtk3-widget-factory")
	frame := app.one(t, "frame", tagged("frame", ""))
	if frame.Attr["st:active"] != "true" || frame.Attr["attr:window-type"] != "normal" {
		t.Errorf("frame %v", frame.Attr)
	}
	_, wmFrame := windowRects(t, d.X.Display, win)
	if got := frame.extents(t); got != wmFrame {
		t.Errorf("frame extents %v, X frame window %v", got, wmFrame)
	}
	// Every showing element lies within the frame.
	for _, n := range frame.find(func(n *xnode) bool { return n.Attr["cp:size"] != "" }) {
		r := n.extents(t)
		if r.W > 0 && r.H > 0 && (r.X < wmFrame.X || r.Y < wmFrame.Y || r.X+r.W > wmFrame.X+wmFrame.W || r.Y+r.H > wmFrame.Y+wmFrame.H) {
			t.Errorf("%s %q at %v lies outside the frame %v", n.Tag, n.Attr["name"], r, wmFrame)
		}
	}
	// Widgets of the first page, with GTK 3's role names.
	for _, want := range []struct{ tag, name string }{
		{"page-tab", "page 1"}, {"page-tab", "page 3"}, {"check-box", "checkbutton"},
		{"radio-button", "radiobutton"}, {"toggle-button", "Menu"}, {"push-button", "link button"},
		{"spin-button", ""}, {"slider", ""}, {"progress-bar", ""}, {"level-bar", ""}, {"table-cell", ""},
	} {
		if len(app.find(tagged(want.tag, want.name))) == 0 {
			t.Errorf("no %s named %q", want.tag, want.name)
		}
	}
	if len(app.find(func(n *xnode) bool { return n.Tag == "text" && n.Text != "" && n.Attr["st:editable"] == "true" })) == 0 {
		t.Error("no editable text with content")
	}
	if p := app.one(t, "checked page button", func(n *xnode) bool {
		return n.Tag == "radio-button" && n.Attr["st:checked"] == "true" && strings.HasPrefix(n.Attr["name"], "Page")
	}); p.Attr["name"] != "Page 1" {
		t.Errorf("page %q is selected", p.Attr["name"])
	}
	if len(app.find(func(n *xnode) bool { return n.Tag == "slider" && n.Attr["val:max"] != "" })) == 0 {
		t.Error("no slider with a value")
	}
}

func TestGTK4WidgetFactory(t *testing.T) {
	d := desktop(t)
	d.StartApp(t, "gtk4-widget-factory")
	win := waitAppWindow(t, d, "gtk4-widget-factory")
	s := newSource(t, d, SourceOptions{})
	x := waitTree(t, s, appReady("gtk4-widget-factory", 500))
	app := parseTree(t, x).app("gtk4-widget-factory")
	frame := app.one(t, "frame", tagged("frame", "GTK Widget Factory"))
	// GTK 4's own GetRoleName says "button", "group", "window"; pyatspi's
	// names (libatspi's table) must win.
	for _, gtkName := range []string{"button", "group", "window", "text-box", "widget"} {
		if n := app.find(tagged(gtkName, "")); len(n) > 0 {
			t.Errorf("%d elements tagged %q (GTK's own role name)", len(n), gtkName)
		}
	}
	for _, tag := range []string{"push-button", "panel", "check-box", "radio-button", "page-tab", "text", "label"} {
		if len(app.find(tagged(tag, ""))) == 0 {
			t.Errorf("no %s", tag)
		}
	}
	// GTK 4.8 places its accessibles relative to the window (it warns
	// "Screen coordinates not supported"), so only the size can be
	// checked: the client window is the frame plus the invisible resize
	// border of GTK's client-side decorations, the same on every side.
	client, _ := windowRects(t, d.X.Display, win)
	got := frame.extents(t)
	if dw, dh := client.W-got.W, client.H-got.H; dw != dh || dw < 0 || dw > 64 {
		t.Errorf("frame extents %v, X client window %v", got, client)
	}
	entries := app.find(func(n *xnode) bool { return n.Tag == "text" && n.Text == "entry" })
	if len(entries) == 0 {
		t.Error("no entry with its text")
	}
	if b := app.find(tagged("push-button", "")); len(b) > 0 && b[0].Attr["act:click_desc"] != "Clicks the button" {
		t.Errorf("button actions %v", b[0].Attr)
	}
}

// chromiumPage is the page Chromium shows, served from loopback.
const chromiumPage = `<!doctype html><html><head><title>Drums page</title></head><body>
<h1>Hello drums</h1><p>A paragraph with <a href="#x">a link</a>.</p>
<button id="b1" class="big">Press me</button>
<input type="text" value="typed text" aria-label="Field">
<input type="range" min="0" max="10" value="3" aria-label="Level">
<ul><li>one</li><li>two</li></ul></body></html>`

// startChromium starts Chromium with renderer accessibility on a page
// served by a loopback server and returns its X window.
func startChromium(t testing.TB, d *testutil.Desktop) uint32 {
	t.Helper()
	testutil.Tier1(t, "chromium")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, chromiumPage)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	d.StartApp(t, "chromium", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--force-renderer-accessibility", "--user-data-dir="+t.TempDir(), "http://"+ln.Addr().String()+"/")
	return waitAppWindow(t, d, "chromium")
}

func chromiumReady(root *xnode) string {
	if a := root.app("Chromium"); a != nil {
		docs := a.find(tagged("document-web", "Drums page"))
		if len(docs) == 1 && len(docs[0].find(tagged("list-item", ""))) == 2 {
			return ""
		}
	}
	return "Chromium's page"
}

func TestChromium(t *testing.T) {
	d := desktop(t)
	win := startChromium(t, d)
	s := newSource(t, d, SourceOptions{})
	x := waitTree(t, s, chromiumReady)
	app := parseTree(t, x).app("Chromium")
	doc := app.one(t, "document", tagged("document-web", "Drums page"))
	heading := doc.one(t, "heading", tagged("heading", "Hello drums"))
	if heading.Attr["attr:tag"] != "h1" || heading.Text != "Hello drums" {
		t.Errorf("heading %q %v", heading.Text, heading.Attr)
	}
	button := doc.one(t, "button", tagged("push-button", "Press me"))
	if button.Attr["attr:id"] != "b1" || button.Attr["attr:class"] != "big" || button.Attr["st:focusable"] != "true" {
		t.Errorf("button %v", button.Attr)
	}
	entry := doc.one(t, "entry", tagged("entry", "Field"))
	if entry.Text != "typed text" || entry.Attr["st:editable"] != "true" {
		t.Errorf("entry %q %v", entry.Text, entry.Attr)
	}
	slider := doc.one(t, "slider", tagged("slider", "Level"))
	if slider.Attr["val:value"] != "3.0" || slider.Attr["val:min"] != "0.0" || slider.Attr["val:max"] != "10.0" {
		t.Errorf("slider %v", slider.Attr)
	}
	if link := doc.one(t, "link", tagged("link", "a link")); link.Attr["st:focusable"] != "true" {
		t.Errorf("link %v", link.Attr)
	}
	// Everything showing in the page lies within Chromium's X window, and
	// the document is as wide as the window's content.
	client, _ := windowRects(t, d.X.Display, win)
	docRect := doc.extents(t)
	if docRect.X < client.X || docRect.Y < client.Y || docRect.X+docRect.W > client.X+client.W || docRect.Y+docRect.H > client.Y+client.H {
		t.Errorf("document %v outside the window %v", docRect, client)
	}
	for _, n := range doc.find(func(n *xnode) bool { return n.Attr["cp:size"] != "" && n != doc }) {
		r := n.extents(t)
		if r.X < docRect.X || r.Y < docRect.Y || r.X+r.W > docRect.X+docRect.W || r.Y+r.H > docRect.Y+docRect.H {
			t.Errorf("%s %q at %v lies outside the document %v", n.Tag, n.Attr["name"], r, docRect)
		}
	}
	if r := button.extents(t); r.W < 20 || r.H < 10 {
		t.Errorf("button extents %v", r)
	}
}

// startTerminal opens a gnome-terminal window (the server is D-Bus
// activated on the desktop's session bus) that prints marker and waits at a
// shell prompt, and returns its X window.
func startTerminal(t testing.TB, d *testutil.Desktop, marker string) uint32 {
	t.Helper()
	testutil.Tier1(t, "gnome-terminal", "bash")
	d.StartApp(t, "gnome-terminal", "--", "bash", "--norc", "--noprofile", "-c",
		"echo "+marker+"; PS1='prompt$ ' exec bash --norc --noprofile -i")
	return waitAppWindow(t, d, "gnome-terminal-server")
}

// fullDesktop starts every test application on d and waits until all of
// them are in the tree and the terminal's window is the active one:
// Chromium first and alone (started together with the others on a loaded
// machine it sometimes never attaches its page to the tree), the terminal
// last and activated explicitly.
func fullDesktop(t testing.TB, d *testutil.Desktop, s *Source) string {
	t.Helper()
	testutil.Tier1(t, "wmctrl")
	startChromium(t, d)
	waitTree(t, s, chromiumReady)
	startFixedWindow(t, d)
	for _, app := range []string{"gtk3-widget-factory", "gtk4-widget-factory"} {
		d.StartApp(t, app)
		waitAppWindow(t, d, app)
	}
	win := startTerminal(t, d, "FULL-DESKTOP")
	if out, err := testutil.Command(d.Env(), "wmctrl", "-i", "-a", fmt.Sprint(win)).CombinedOutput(); err != nil {
		t.Fatalf("wmctrl: %v %s", err, out)
	}
	return waitTree(t, s, allReady(fixedWindowReady, appReady("gtk3-widget-factory", 200),
		appReady("gtk4-widget-factory", 500), chromiumReady, terminalReady))
}

// terminalReady checks for a gnome-terminal whose focused terminal in the
// active frame shows the shell prompt startTerminal sets.
func terminalReady(root *xnode) string {
	if a := root.app(terminalApp); a != nil {
		for _, f := range a.find(func(n *xnode) bool { return n.Tag == "frame" && n.Attr["st:active"] == "true" }) {
			if len(f.find(func(n *xnode) bool {
				return n.Tag == "terminal" && n.Attr["st:focused"] == "true" && strings.HasSuffix(pyvalue.Rstrip(n.Text), "prompt$")
			})) == 1 {
				return ""
			}
		}
	}
	return "gnome-terminal's prompt"
}

func TestGnomeTerminal(t *testing.T) {
	d := desktop(t)
	s := newSource(t, d, SourceOptions{})
	if got, err := s.Terminal(context.Background()); err != nil || got != nil {
		t.Fatalf("no terminal yet: %v, %v", got, err)
	}
	marker := fmt.Sprintf("MARKER-%08x", rand.Uint32())
	startTerminal(t, d, marker)
	ctx, cancel := context.WithTimeout(context.Background(), appTimeout)
	defer cancel()
	var text string
	for {
		got, err := s.Terminal(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != nil && strings.HasSuffix(*got, "prompt$") {
			text = *got
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("terminal text never showed the prompt; last %v", got)
		case <-time.After(pollInterval):
		}
	}
	if want := marker + "\nprompt$"; text != want {
		t.Errorf("terminal text %q, want %q", text, want)
	}
	// The same terminal in the full tree: an active frame of
	// gnome-terminal-server holding a focused terminal with that text.
	x, err := s.Tree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	app := parseTree(t, x).app(terminalApp)
	if app == nil {
		t.Fatalf("no %s application in\n%s", terminalApp, x)
	}
	frame := app.one(t, "active frame", func(n *xnode) bool { return n.Tag == "frame" && n.Attr["st:active"] == "true" })
	term := frame.one(t, "focused terminal", func(n *xnode) bool { return n.Tag == "terminal" && n.Attr["st:focused"] == "true" })
	if pyvalue.Rstrip(term.Text) != text {
		t.Errorf("terminal element text %q, /terminal %q", term.Text, text)
	}
}
