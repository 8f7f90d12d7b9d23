package browsertest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/cdp"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
)

// Options say where Chromium runs.
type Options struct {
	// Image, when set, runs Chromium in that image through `drums image
	// run` (Drums), in network, PID and mount namespaces of its own:
	// loopback only, Binds seen at their host paths. "" runs the chromium
	// on PATH, for a test that already runs in an image.
	Image string
	Drums string
	Binds []string
	// Before is a shell command started in the background beside
	// Chromium, in its namespaces (drums ui, say, to reach a daemon's
	// unix socket from the browser's loopback); its output goes to
	// Chromium's stderr (Browser.WaitLine).
	Before string
}

// Browser is one headless Chromium and its DevTools connection: the
// browser target over --remote-debugging-pipe (fd 3 in, fd 4 out, one
// JSON message per NUL), which, unlike a DevTools port, works unchanged
// across `drums image run`'s namespaces: the pipe is its stdin and
// stdout.
//
//	test --stdin--> sh (3<&0) --fd 3--> chromium
//	test <-stdout-- sh (4>&1) <-fd 4--- chromium
type Browser struct {
	conn  *cdp.Conn
	lines chan string // stderr, line by line; closed at exit
	proc  *testutil.Proc
	image bool
}

// Start starts Chromium; it is killed, with every process beside it, when
// the test ends (or by Kill).
func Start(t *testing.T, o Options) *Browser {
	t.Helper()
	args := []string{"--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--password-store=basic",
		"--remote-debugging-pipe", "about:blank"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	// Debian's chromium, or the google-chrome an osworld image may serve
	// it as instead.
	script := `exec "$(command -v chromium || command -v google-chrome)" "$@" 3<&0 4>&1 >/dev/null </dev/null`
	if o.Before != "" {
		script = "(" + o.Before + ") >&2 </dev/null & " + script
	}
	profile := t.TempDir()
	if o.Image != "" {
		profile = "/tmp/chromium-profile" // the image run's own /tmp
	}
	argv := append([]string{"/bin/sh", "-c", script, "sh", "--user-data-dir=" + profile}, args...)
	if o.Image != "" {
		testimage.NeedImages(t, o.Image)
		run := []string{o.Drums, "image", "run", "--image-dir", testimage.ImageDir()}
		for _, b := range o.Binds {
			run = append(run, "--bind", b)
		}
		argv = append(append(run, o.Image, "--"), argv...)
	} else {
		testutil.Tier1(t)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// A process group of its own, to end Chromium's children (renderers,
	// zygote) and whatever runs beside it with one signal.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	b := &Browser{lines: make(chan string, 256), image: o.Image != ""}
	b.proc = testutil.StartCmd(t, cmd) // killed, group and all, at cleanup
	t.Cleanup(b.Kill)                  // first, gently
	b.conn = cdp.New(cdp.Pipe(out, in))
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case b.lines <- sc.Text():
			default: // nobody waits for lines: drop them
			}
		}
		close(b.lines)
	}()
	return b
}

// stopGrace bounds how long drums image run may take to end its command
// and its namespaces on SIGTERM before it is killed.
const stopGrace = 10 * time.Second

// Kill ends Chromium and everything beside it, and waits for it. drums
// image run is asked first (SIGTERM, which it passes on): killed, it would
// leave its scratch directory behind.
func (b *Browser) Kill() {
	if b.image {
		_ = b.proc.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.proc.Done():
		case <-time.After(stopGrace):
		}
	}
	b.proc.Kill()
}

// exit says how Chromium ended, for a failure's message.
func (b *Browser) exit() string {
	select {
	case <-b.proc.Done():
		return fmt.Sprintf("chromium exited: %v", b.proc.Err())
	default:
		return "chromium still runs"
	}
}

// WaitLine returns the submatches of the first line of Chromium's stderr
// (and Before's output) that matches re.
func (b *Browser) WaitLine(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	var seen []string
	ctx := testutil.WithTimeout(t)
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				t.Fatalf("no line matching %s before its output ended (%s); it printed:\n%s", re, b.exit(), strings.Join(seen, "\n"))
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
			seen = append(seen, l)
		case <-ctx.Done():
			t.Fatalf("no line matching %s; chromium printed:\n%s", re, strings.Join(seen, "\n"))
		}
	}
}

// Page is one tab, attached in flat mode.
type Page struct {
	b       *Browser
	session string
}

// OpenPage attaches to the tab Chromium opened.
func (b *Browser) OpenPage(t *testing.T) *Page {
	t.Helper()
	ctx := testutil.WithTimeout(t)
	pages, err := b.conn.Pages(ctx)
	if err != nil || len(pages) == 0 {
		t.Fatalf("no page among the targets (%v, %s)", err, b.exit())
	}
	session, err := b.conn.Attach(ctx, pages[0].TargetID)
	if err != nil || session == "" {
		t.Fatalf("attach to %s: %v", pages[0].TargetID, err)
	}
	return &Page{b: b, session: session}
}

// Navigate opens url in the page and waits for its load event.
func (p *Page) Navigate(t *testing.T, url string) {
	t.Helper()
	if err := p.b.conn.Navigate(testutil.WithTimeout(t), p.session, url, testutil.ReadyTimeout); err != nil {
		t.Fatalf("%v (%s)", err, p.b.exit())
	}
}

// Eval evaluates a JavaScript expression and decodes its value into out.
func (p *Page) Eval(t *testing.T, expr string, out any) {
	t.Helper()
	if err := p.b.conn.Eval(testutil.WithTimeout(t), p.session, expr, out); err != nil {
		t.Fatalf("%v (%s)", err, p.b.exit())
	}
}

// WaitEval evaluates expr, a number, until ok accepts it; nothing tells a
// test when a page has drawn, so it looks again every 50 ms.
func (p *Page) WaitEval(t *testing.T, what, expr string, ok func(float64) bool) float64 {
	t.Helper()
	ctx := testutil.WithTimeout(t)
	for {
		var n float64
		p.Eval(t, expr, &n)
		if ok(n) {
			return n
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s (%s = %v)", what, expr, n)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
