package osworld

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
)

// Tier-1 tests: setup steps and getters against a real guestd on a real
// desktop (Xvfb, session bus, AT-SPI, openbox).

func TestMain(m *testing.M) {
	code := m.Run()
	testutil.RemoveBins()
	os.Exit(code)
}

var listeningRE = regexp.MustCompile(`msg=listening .*address=(\S+)`)

// startGuestd runs guestd on the desktop, on a free loopback port, and
// returns an Env for it once it says where it listens.
func startGuestd(t *testing.T, d *testutil.Desktop) *Env {
	t.Helper()
	bin := filepath.Join(testutil.Bins(t), "guestd")
	cmd := testutil.Command(d.Env(), bin, "--listen", "127.0.0.1:0", "--display", d.X.Display, "--home", d.Home)
	cmd.Dir = d.Home
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = pw
	cmd.Stdout = pw
	p := testutil.StartCmd(t, cmd)
	pw.Close()
	addr := make(chan string, 1)
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		sent := false
		for sc.Scan() {
			logMu.Lock()
			log.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := listeningRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
				addr <- strings.Trim(m[1], `"`)
				sent = true
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("guestd log:\n%s", log.String())
			logMu.Unlock()
		}
	})
	var a string
	select {
	case a = <-addr:
	case <-p.Done():
		t.Fatalf("guestd exited: %v", p.Err())
	case <-time.After(testutil.ReadyTimeout):
		t.Fatal("guestd did not say where it listens")
	}
	g := client.New("http://"+a, nil)
	g.Retry = client.Retry{Attempts: 3, Pause: 200 * time.Millisecond}
	g.FileRetry = g.Retry
	t.Cleanup(g.Close)
	return &Env{
		Guest:   g,
		TaskID:  "tier1",
		Screen:  Screen{Width: d.X.Width, Height: d.X.Height, Password: "password"},
		WorkDir: t.TempDir(),
		Timeouts: Timeouts{Open: time.Minute, Until: time.Minute, Launch: 30 * time.Second,
			CDPConnect: time.Minute, PageLoad: 30 * time.Second, Ready: 30 * time.Second, Pause: 200 * time.Millisecond},
	}
}

func tier1Desktop(t *testing.T, bins ...string) (*testutil.Desktop, *Env) {
	t.Helper()
	testutil.Tier1(t, append([]string{"wmctrl"}, bins...)...)
	d := testutil.StartDesktop(t, testutil.DesktopOptions{Width: 1280, Height: 800, WM: true, A11y: true})
	return d, startGuestd(t, d)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestTier1SetupSteps(t *testing.T) {
	if !testimage.InImage(t, "osworld") {
		return
	}
	d, e := tier1Desktop(t, "xterm")
	ctx := ctxFor(t, 3*time.Minute)
	home := d.Home
	// A file-cache download, an upload_file, an execute with placeholders
	// and stdout capture, a launched window awaited with until, activated
	// and closed.
	e.Cache = FileCache{Dir: t.TempDir()}
	url := "https://huggingface.co/datasets/x/resolve/main/t/data.txt"
	cached := e.Cache.Path(e.TaskID, DownloadName(url, home+"/Desktop/data.txt"))
	if err := os.MkdirAll(filepath.Dir(cached), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cached, []byte("from the cache\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := file(t, "up.txt", "uploaded\n")
	steps := []Step{
		step("download", map[string]any{"files": []any{map[string]any{"url": url, "path": home + "/Desktop/data.txt"}}}),
		step("upload_file", map[string]any{"files": []any{map[string]any{"local_path": local, "path": "~/sub/up.txt"}}}),
		step("execute", map[string]any{"command": []any{"sh", "-c", "echo {SCREEN_WIDTH_HALF}x{SCREEN_HEIGHT_HALF} {CLIENT_PASSWORD}"}, "stdout": "out.txt"}),
		step("command", map[string]any{"command": "cat " + home + "/Desktop/data.txt " + home + "/sub/up.txt > " + home + "/both.txt", "shell": true}),
		step("launch", map[string]any{"command": "xterm -T drums-xterm"}),
		step("execute", map[string]any{"command": []any{"wmctrl", "-l"}, "until": map[string]any{"stdout": "drums-xterm"}}),
		step("activate_window", map[string]any{"window_name": "drums-xterm", "strict": true}),
		step("sleep", map[string]any{"seconds": 0.1}),
	}
	res, err := e.Setup(ctx, steps)
	if err != nil {
		t.Fatalf("setup: %v (%+v)", err, res)
	}
	for _, r := range res {
		if r.Warning != "" {
			t.Errorf("%s warned: %s", r.Type, r.Warning)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.WorkDir, "out.txt")); string(b) != "640x400 password\n" {
		t.Errorf("stdout file = %q", b)
	}
	both, err := e.RunGetter(ctx, Getter{"type": "vm_command_line", "command": []any{"cat", home + "/both.txt"}})
	if err != nil || both != "from the cache\nuploaded\n" {
		t.Errorf("both.txt = %q, %v", both, err)
	}
	size, err := e.RunGetter(ctx, Getter{"type": "vm_window_size", "app_class_name": "xterm"})
	if err != nil || size == nil {
		t.Errorf("vm_window_size(xterm) = %v, %v", size, err)
	}
	if _, err := e.Setup(ctx, []Step{step("close_window", map[string]any{"window_name": "drums-xterm"})}); err != nil {
		t.Fatal(err)
	}
	// The xterm goes away: wait for wmctrl to stop listing it.
	if _, err := e.Setup(ctx, []Step{step("execute", map[string]any{"command": "wmctrl -l | grep -c drums-xterm", "shell": true, "until": map[string]any{"stdout": "0"}})}); err != nil {
		t.Fatal(err)
	}
	// A missing cache file is needs-file-cache, not a failure of drums.
	_, err = e.Setup(ctx, []Step{step("download", map[string]any{"files": []any{map[string]any{"url": "https://x/y.bin", "path": "~/y.bin"}}})})
	if err == nil || !strings.Contains(err.Error(), ErrNeedsFileCache.Error()) {
		t.Errorf("missing cache file: %v", err)
	}
	// open of an application waits for its window.
	if _, err := e.Setup(ctx, []Step{step("open", map[string]any{"path": "xterm"})}); err != nil {
		t.Errorf("open xterm: %v", err)
	}
}

func TestTier1Getters(t *testing.T) {
	if !testimage.InImage(t, "osworld") {
		return
	}
	d, e := tier1Desktop(t)
	ctx := ctxFor(t, 2*time.Minute)
	home := d.Home
	if err := os.MkdirAll(filepath.Join(home, "pics"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.jpg", "b.jpg"} {
		if err := os.WriteFile(filepath.Join(home, "pics", n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task := mustTask(t, fmt.Sprintf(`{"id": "g", "evaluator": {
		"func": ["check_moved_jpgs", "exact_match", "check_include_exclude", "exact_match"], "conj": "and",
		"result": [
			{"type": "list_directory", "path": "%[1]s/pics"},
			{"type": "vm_file", "path": "%[1]s/pics/a.jpg", "dest": "a.jpg"},
			{"type": "vm_command_error", "command": "ls /nonexistent-dir", "shell": true},
			{"type": "vm_screen_size"}],
		"expected": [
			{"type": "rule", "rules": {"expected": ["a.jpg", "b.jpg"]}},
			{"type": "rule", "rules": {"expected": "%[2]s"}},
			{"type": "rule", "rules": {"include": ["No such file"]}},
			{"type": "rule", "rules": {"expected": {"width": 1280, "height": 800}}}]}}`, home, filepath.Join(e.WorkDir, "a.jpg")))
	ev := e.Evaluate(ctx, task, false)
	if ev.Score == nil || *ev.Score != 1 || !ev.GettersOK() {
		t.Errorf("evaluation = %+v", ev)
	}
	tree, err := e.RunGetter(ctx, Getter{"type": "accessibility_tree"})
	if err != nil || !strings.Contains(tree.(string), "desktop-frame") {
		t.Errorf("accessibility_tree = %.200v, %v", tree, err)
	}
	term, err := e.RunGetter(ctx, Getter{"type": "vm_terminal_output"})
	if err != nil || term != nil {
		t.Errorf("vm_terminal_output with no terminal = %v, %v (want None)", term, err)
	}
	have, err := ProbePrograms(ctx, e.Guest, []string{"sh", "no-such-program-xyz"})
	if err != nil || !have["sh"] || have["no-such-program-xyz"] {
		t.Errorf("ProbePrograms = %v, %v", have, err)
	}
}

// freePort is a loopback port nobody listens on right now.
func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestTier1ChromiumTabs(t *testing.T) {
	if !testimage.InImage(t, "osworld") {
		return
	}
	d, e := tier1Desktop(t, "chromium")
	ctx := ctxFor(t, 3*time.Minute)
	port := freePort(t)
	e.Chromium = port
	a := filepath.Join(d.Home, "a.html")
	b := filepath.Join(d.Home, "b.html")
	for p, title := range map[string]string{a: "page A", b: "page B"} {
		if err := os.WriteFile(p, []byte("<title>"+title+"</title><h1>x</h1>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []any{"chromium", "--remote-debugging-port=" + strconv.Itoa(port), "--user-data-dir=" + t.TempDir(),
		"--no-first-run", "--no-default-browser-check", "--password-store=basic"}
	if os.Geteuid() == 0 {
		args = append(args, "--no-sandbox")
	}
	_, err := e.Setup(ctx, []Step{
		step("launch", map[string]any{"command": args}),
		step("chrome_open_tabs", map[string]any{"urls_to_open": []any{"file://" + a, "file://" + b}}),
		step("chrome_close_tabs", map[string]any{"urls_to_close": []any{"file://" + a}}),
	})
	t.Cleanup(func() {
		_, _ = e.Guest.Execute(context.Background(), "/execute", []string{"pkill", "-f", "remote-debugging-port=" + strconv.Itoa(port)}, false)
	})
	if err != nil {
		t.Fatal(err)
	}
	// An observation (the accessibility tree) must leave Chromium running.
	if _, err := e.Guest.Accessibility(ctx); err != nil {
		t.Fatal(err)
	}
	tabs, err := e.RunGetter(ctx, Getter{"type": "open_tabs_info"})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := tabs.([]any)
	if len(l) != 1 || l[0].(map[string]any)["title"] != "page B" {
		t.Errorf("tabs = %v, want page B only", tabs)
	}
	s, err := metrics["is_expected_tabs"]([]any{tabs, map[string]any{"type": "url", "urls": []any{"file://" + b}}}, nil)
	if err != nil || s != 1 {
		t.Errorf("is_expected_tabs = %v, %v", s, err)
	}
}

// TestTier1ChromeAnswersAsGoogleChrome starts google-chrome as OSWorld's
// chrome tasks do and checks that its accessibility tree names the
// application "Google Chrome", with the address bar in it, which OSWorld's
// get_active_url_from_accessTree selects on x86-64 (the osworld image's
// preloaded library; see sessions/images chromeNameSource).
func TestTier1ChromeAnswersAsGoogleChrome(t *testing.T) {
	if !testimage.InImage(t, "osworld") {
		return
	}
	d, e := tier1Desktop(t, "google-chrome")
	ctx := ctxFor(t, 3*time.Minute)
	port := strconv.Itoa(freePort(t))
	t.Cleanup(func() {
		_, _ = e.Guest.Execute(context.Background(), "/execute", []string{"pkill", "-f", "remote-debugging-port=" + port}, false)
	})
	if _, err := e.Setup(ctx, []Step{step("launch", map[string]any{"command": []any{"google-chrome", "--remote-debugging-port=" + port}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.WaitWindow(ctx, d.X.Display, "chromium"); err != nil {
		t.Fatalf("no browser window: %v", err)
	}
	// The window maps before the browser's views register with AT-SPI:
	// read the tree until its application node holds the address bar.
	var tree string
	for {
		var err error
		if tree, err = e.Guest.Accessibility(ctx); err != nil {
			t.Fatal(err)
		}
		root, err := parseA11y(tree)
		if err != nil {
			t.Fatal(err)
		}
		var bars []*a11yNode
		for _, app := range root.find("application", "Google Chrome", nil) {
			bars = app.find("entry", "Address and search bar", bars)
		}
		if len(bars) > 0 {
			if chromium := root.find("application", "Chromium", nil); len(chromium) > 0 {
				t.Errorf("the tree also has an application named Chromium")
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no application named Google Chrome with an address bar in the tree:\n%s", tree)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
