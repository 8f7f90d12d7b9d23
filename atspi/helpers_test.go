package atspi

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/xproto"

	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
)

// TestMain removes network namespaces that crashed runs of this package's
// differential test left behind (their names start with nsPrefix).
// Tier 1 runs in the osworld image: its X server, buses, GTK, Chromium and
// LibreOffice.
func TestMain(m *testing.M) {
	if testutil.Tier1Enabled() && os.Getenv(testimage.EnvInImage) == "" {
		testimage.MainInImage(m, "osworld")
	}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
			for _, line := range strings.Split(string(out), "\n") {
				if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, nsPrefix) {
					_ = exec.Command("ip", "netns", "delete", name).Run()
				}
			}
		}
	}
	os.Exit(m.Run())
}

// nsPrefix starts the name of every network namespace these tests create.
const nsPrefix = "drt-atspi-"

// newSource is a Source on desktop d, closed at cleanup.
func newSource(t testing.TB, d *testutil.Desktop, opts SourceOptions) *Source {
	t.Helper()
	opts.Display = d.X.Display
	if opts.BusAddress == "" {
		opts.BusAddress = d.A11yAddress
	}
	opts.SessionBusAddress = d.Bus.Address
	s := NewSource(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// pollInterval is how often waitTree reads the tree again. Applications
// register with the accessibility bus and fill in their trees in their own
// time and announce it only through AT-SPI events, which this package does
// not subscribe to, so readiness is polled.
const pollInterval = 150 * time.Millisecond

// appTimeout bounds a wait for an application: its first window, its
// tree. Applications start slower than testutil.ReadyTimeout's daemons:
// in CI, beside the other packages' tests, the first Chromium of this
// package twice printed nothing and mapped no window for 30 s.
const appTimeout = 90 * time.Second

// waitAppWindow waits for a window of class on d (testutil.WaitWindow)
// and returns it; when none comes it lists the desktop's processes, with
// what each waits on, and fails.
func waitAppWindow(t testing.TB, d *testutil.Desktop, class string) uint32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), appTimeout)
	defer cancel()
	win, err := testutil.WaitWindow(ctx, d.X.Display, class)
	if err != nil {
		ps, psErr := exec.Command("ps", "-eo", "pid,ppid,stat,wchan:32,etime,time,args").CombinedOutput()
		t.Fatalf("no %s window: %v; processes (%v):\n%s", class, err, psErr, ps)
	}
	return win
}

// waitTree reads s.Tree until ready accepts the parsed tree (it returns
// what is still missing, "" when nothing) and two successive reads are
// identical (applications settle after start-up), and returns that XML.
func waitTree(t testing.TB, s *Source, ready func(root *xnode) string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), appTimeout)
	defer cancel()
	// Each read has its own deadline so that the last one can still
	// report what was wrong.
	readCtx := context.Background()
	var last, prev, missing string
	for {
		x, err := s.Tree(readCtx)
		if err != nil {
			t.Fatalf("tree: %v", err)
		}
		missing = ready(parseTree(t, x))
		if x == last && missing == "" {
			return x
		}
		prev, last = last, x
		select {
		case <-ctx.Done():
			if prev != last {
				t.Fatalf("the tree never settled: %s", firstDifference(last, prev))
			}
			t.Fatalf("the tree never became ready: %s; last:\n%s", missing, last)
		case <-time.After(pollInterval):
		}
	}
}

// xnode is a parsed element of the output, attributes keyed "prefix:local".
type xnode struct {
	Tag      string
	Attr     map[string]string
	Text     string
	Children []*xnode
	Parent   *xnode
}

// parseTree parses the XML strictly (it must be well formed, every prefix
// declared on the root).
func parseTree(t testing.TB, s string) *xnode {
	t.Helper()
	prefixes := map[string]string{}
	for _, ns := range namespaces {
		prefixes[ns[1]] = ns[0]
	}
	dec := xml.NewDecoder(strings.NewReader(s))
	dec.Strict = true
	var stack []*xnode
	var root *xnode
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parse the tree: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xnode{Tag: tk.Name.Local, Attr: map[string]string{}}
			for _, a := range tk.Attr {
				switch {
				case a.Name.Space == "xmlns":
				case a.Name.Space == "":
					n.Attr[a.Name.Local] = a.Value
				default:
					p, ok := prefixes[a.Name.Space]
					if !ok {
						t.Fatalf("attribute in unknown namespace %q", a.Name.Space)
					}
					n.Attr[p+":"+a.Name.Local] = a.Value
				}
			}
			if len(stack) > 0 {
				n.Parent = stack[len(stack)-1]
				n.Parent.Children = append(n.Parent.Children, n)
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(tk)
			}
		}
	}
	if root == nil {
		t.Fatal("empty tree")
	}
	return root
}

// find returns the elements below n (n included) for which match is true,
// in document order.
func (n *xnode) find(match func(*xnode) bool) []*xnode {
	var out []*xnode
	if match(n) {
		out = append(out, n)
	}
	for _, c := range n.Children {
		out = append(out, c.find(match)...)
	}
	return out
}

func (n *xnode) count() int {
	c := 1
	for _, k := range n.Children {
		c += k.count()
	}
	return c
}

func tagged(tag, name string) func(*xnode) bool {
	return func(n *xnode) bool { return n.Tag == tag && (name == "" || n.Attr["name"] == name) }
}

// one returns the single element below n matching match, failing otherwise.
func (n *xnode) one(t testing.TB, what string, match func(*xnode) bool) *xnode {
	t.Helper()
	got := n.find(match)
	if len(got) != 1 {
		t.Fatalf("%d elements for %s, want 1", len(got), what)
	}
	return got[0]
}

// app is the application element named name, or nil.
func (n *xnode) app(name string) *xnode {
	for _, c := range n.Children {
		if c.Tag == "application" && c.Attr["name"] == name {
			return c
		}
	}
	return nil
}

type rect struct{ X, Y, W, H int }

func (r rect) String() string { return fmt.Sprintf("(%d, %d) %dx%d", r.X, r.Y, r.W, r.H) }

// extents reads cp:screencoord and cp:size the way agents do (a Python
// tuple).
func (n *xnode) extents(t testing.TB) rect {
	t.Helper()
	var r rect
	if _, err := fmt.Sscanf(n.Attr["cp:screencoord"], "(%d, %d)", &r.X, &r.Y); err != nil {
		t.Fatalf("%s %q: cp:screencoord %q: %v", n.Tag, n.Attr["name"], n.Attr["cp:screencoord"], err)
	}
	if _, err := fmt.Sscanf(n.Attr["cp:size"], "(%d, %d)", &r.W, &r.H); err != nil {
		t.Fatalf("%s: cp:size %q: %v", n.Tag, n.Attr["cp:size"], err)
	}
	return r
}

// windowRects is the X geometry of client window win: its own rectangle in
// root coordinates, and that of the window manager's frame around it (the
// top-level window it sits in).
func windowRects(t testing.TB, display string, win uint32) (client, frame rect) {
	t.Helper()
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	abs := func(w xproto.Window) rect {
		g, err := xproto.GetGeometry(conn, xproto.Drawable(w)).Reply()
		if err != nil {
			t.Fatalf("geometry of %#x: %v", w, err)
		}
		tr, err := xproto.TranslateCoordinates(conn, w, root, 0, 0).Reply()
		if err != nil {
			t.Fatalf("translate %#x: %v", w, err)
		}
		return rect{int(tr.DstX), int(tr.DstY), int(g.Width), int(g.Height)}
	}
	top := xproto.Window(win)
	for {
		q, err := xproto.QueryTree(conn, top).Reply()
		if err != nil {
			t.Fatalf("query tree of %#x: %v", top, err)
		}
		if q.Parent == root {
			break
		}
		top = q.Parent
	}
	return abs(xproto.Window(win)), abs(top)
}
