package guestdcli

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/websocket"

	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/testutil"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseFlags(t *testing.T) {
	cfg, err := parseFlags(nil, env(map[string]string{"DISPLAY": ":3", "HOME": "/home/user"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "0.0.0.0:5000" || cfg.Guest.Display != ":3" || cfg.Guest.Home != "/home/user" ||
		cfg.Guest.Python != "/usr/bin/python3" || cfg.Guest.MaxBody != 1<<30 ||
		cfg.Guest.RecordingPath != "/tmp/recording.mp4" || cfg.Guest.NoFastPath || cfg.LogLevel.String() != "INFO" ||
		cfg.IdleHeap != 2*time.Second || cfg.IdleFrame != time.Minute ||
		cfg.Guest.AllowOrigins != nil || cfg.Guest.AllowHosts != nil ||
		cfg.VNCListen != "" || cfg.VNCWeb != "/usr/share/novnc" || cfg.VNCTakeover {
		t.Errorf("defaults: %+v", cfg)
	}
	cfg, err = parseFlags([]string{"--listen", "127.0.0.1:0", "--display", ":9", "--home", "/h", "--log-level", "debug",
		"--no-fast-path", "--python", "/opt/py", "--max-body", "16MiB", "--recording-path", "/r.mp4",
		"--idle-heap", "0", "--idle-frame", "5s", "--allow-origin", "https://dash.example:8443", "--allow-host", "vm-1.lan",
		"--allow-origin", "http://localhost:3000", "--allow-host", "vm-2.lan",
		"--vnc-listen", "0.0.0.0:8006", "--vnc-web", "/opt/novnc", "--vnc-takeover"}, env(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:0" || cfg.Guest.Display != ":9" || cfg.Guest.Home != "/h" || cfg.LogLevel.String() != "DEBUG" ||
		!cfg.Guest.NoFastPath || cfg.Guest.Python != "/opt/py" || cfg.Guest.MaxBody != 16<<20 || cfg.Guest.RecordingPath != "/r.mp4" ||
		cfg.IdleHeap != 0 || cfg.IdleFrame != 5*time.Second ||
		!slices.Equal(cfg.Guest.AllowOrigins, []string{"https://dash.example:8443", "http://localhost:3000"}) ||
		!slices.Equal(cfg.Guest.AllowHosts, []string{"vm-1.lan", "vm-2.lan"}) ||
		cfg.VNCListen != "0.0.0.0:8006" || cfg.VNCWeb != "/opt/novnc" || !cfg.VNCTakeover {
		t.Errorf("flags: %+v", cfg)
	}
	for _, args := range [][]string{
		{"--log-level", "loud"},
		{"--max-body", "lots"},
		{"--max-body", "0"},
		{"--display", ""},
		{"--idle-heap", "-1s"},
		{"--idle-frame", "soon"},
		{"--allow-origin", "null"},
		{"--allow-origin", "*"},
		{"--allow-origin", "dash.example"},
		{"--allow-host", "vm-1.lan:5000"},
		{"--allow-host", ""},
		{"extra"},
	} {
		if _, err := parseFlags(args, env(map[string]string{"DISPLAY": ":1", "HOME": "/h"}), io.Discard); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/help.golden from the current output")

// --help explains every flag; testdata/help.golden is the text, for review.
func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := parseFlags([]string{"--help"}, env(nil), &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, name := range []string{"listen", "display", "home", "log-level", "no-fast-path", "python", "max-body", "recording-path",
		"idle-heap", "idle-frame", "allow-origin", "allow-host", "vnc-listen", "vnc-web", "vnc-takeover"} {
		if !strings.Contains(out.String(), "-"+name+" ") && !strings.Contains(out.String(), "-"+name+"\n") {
			t.Errorf("--help does not explain --%s:\n%s", name, out.String())
		}
	}
	testutil.Golden(t, filepath.Join("testdata", "help.golden"), out.String(), *update)
}

// Main's exit status: 0 for --help, 2 with the reason for a bad command
// line, 1 when the server cannot start.
func TestMainStatus(t *testing.T) {
	usage := "Usage: guestd [flags]\n"
	for _, c := range []struct {
		args        []string
		env         map[string]string
		status      int
		first, last string // how stderr starts and ends
	}{
		{[]string{"--help"}, nil, 0, usage, ""},
		{[]string{"-h"}, nil, 0, usage, ""},
		{nil, nil, 2, "guestd: no X display: set DISPLAY or pass --display\n", ""},
		{nil, map[string]string{"DISPLAY": ":1"}, 2, "guestd: no home directory: set HOME or pass --home\n", ""},
		{[]string{"--bogus"}, nil, 2, "flag provided but not defined: -bogus\n", "guestd: flag provided but not defined: -bogus\n"},
		{[]string{"--display", ":1", "--home", "/h", "extra"}, nil, 2, "guestd: unexpected arguments: extra\n", ""},
		{[]string{"--max-body", "0", "--display", ":1"}, nil, 2, "guestd: parse --max-body \"0\": must be positive\n", ""},
		{[]string{"--display", ":1", "--home", t.TempDir(), "--listen", "127.0.0.1:99999", "--python", "/nonexistent/python3"}, nil, 1,
			"guestd: listen on 127.0.0.1:99999: ", ": invalid port\n"},
	} {
		stderr, err := os.CreateTemp(t.TempDir(), "stderr")
		if err != nil {
			t.Fatal(err)
		}
		status := Main(c.args, env(c.env), stderr, stderr)
		stderr.Close()
		b, err := os.ReadFile(stderr.Name())
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		if status != c.status || !strings.HasPrefix(got, c.first) || !strings.HasSuffix(got, c.last) {
			t.Errorf("guestd %q: status %d, stderr:\n%s\nwant status %d, stderr from %q to %q", c.args, status, got, c.status, c.first, c.last)
		}
	}
}

// idleStages leaves out the stages set to 0 and runs the others in order
// of their delays.
func TestIdleStages(t *testing.T) {
	delays := func(cfg config) []time.Duration {
		var d []time.Duration
		for _, st := range idleStages(cfg, nil) {
			d = append(d, st.after)
		}
		return d
	}
	for _, c := range []struct {
		heap, frame time.Duration
		want        []time.Duration
	}{
		{2 * time.Second, time.Minute, []time.Duration{2 * time.Second, time.Minute}},
		{time.Minute, time.Second, []time.Duration{time.Second, time.Minute}},
		{0, time.Minute, []time.Duration{time.Minute}},
		{0, 0, nil},
	} {
		if got := delays(config{IdleHeap: c.heap, IdleFrame: c.frame}); !slices.Equal(got, c.want) {
			t.Errorf("heap %v, frame %v: stages after %v, want %v", c.heap, c.frame, got, c.want)
		}
	}
}

// guestdBinary is $DRUMS_BIN/guestd, or a fresh build.
func guestdBinary(t testing.TB) string {
	if dir := os.Getenv("DRUMS_BIN"); dir != "" {
		return filepath.Join(dir, "guestd")
	}
	bin := filepath.Join(t.TempDir(), "guestd")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/guestd").CombinedOutput()
	if err != nil {
		t.Fatalf("build guestd: %v\n%s", err, out)
	}
	return bin
}

// TestServe runs the binary (cmd/guestd, which is Main) on a real
// desktop: it says where it listens, answers /screenshot with a PNG of the
// screen, and exits cleanly on SIGTERM.
func TestServe(t *testing.T) {
	testutil.Tier1(t, "Xvfb")
	d := testutil.StartDesktop(t, testutil.DesktopOptions{Width: 800, Height: 600})
	base, p := startGuestd(t, d, nil)
	if p.live != "" {
		t.Errorf("a live view at %s without --vnc-listen", p.live)
	}

	resp, err := http.Get(base + "/screenshot")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/screenshot: %d %v", resp.StatusCode, err)
	}
	if b := img.Bounds(); b.Dx() != 800 || b.Dy() != 600 {
		t.Errorf("screenshot %v", b)
	}
	if resp, err := http.Get(base + "/"); err != nil || resp.StatusCode != 404 {
		t.Errorf("GET /: %v %v", resp, err)
	}

	terminate(t, p)
}

// terminate sends SIGTERM and expects a clean exit.
func terminate(t *testing.T, p *guestdProc) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(testutil.ReadyTimeout):
		t.Fatal("guestd did not exit on SIGTERM")
	}
}

// guestdProc is a running guestd; live is its live view's base URL, if
// it said it serves one before it said it listens.
type guestdProc struct {
	*testutil.Proc
	live string
}

// startGuestd runs the guestd binary on d, prefixed by wrapper (a command
// that execs its arguments, such as unshare, or nil), with extra flags,
// and returns its base URL once it says where it listens.
func startGuestd(t testing.TB, d *testutil.Desktop, wrapper []string, extra ...string) (string, *guestdProc) {
	t.Helper()
	argv := append(append([]string{}, wrapper...), guestdBinary(t), "--listen", "127.0.0.1:0", "--display", d.X.Display,
		"--home", d.Home, "--recording-path", filepath.Join(t.TempDir(), "rec.mp4"))
	argv = append(argv, extra...)
	cmd := testutil.Command(d.Env(), argv[0], argv[1:]...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &guestdProc{Proc: testutil.StartCmd(t, cmd)}
	addr := make(chan string, 1)
	live := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		re := regexp.MustCompile(`msg=listening .*address=(\S+)`)
		reLive := regexp.MustCompile(`msg="live view listening" .*address=(\S+)`)
		for sc.Scan() {
			if m := reLive.FindStringSubmatch(sc.Text()); m != nil {
				live <- m[1]
			}
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			t.Fatalf("guestd exited before listening: %v", p.Err())
		}
		select {
		case l := <-live:
			p.live = "http://" + l
		default:
		}
		return "http://" + a, p
	case <-testutil.WithTimeout(t).Done():
		t.Fatal("guestd did not say where it listens")
	}
	return "", nil
}

// TestServeLive runs the binary with --vnc-listen: it says where the live
// view listens (before guestd itself does), holds no X connection for it
// until a viewer connects, and gives it up when the viewer leaves.
func TestServeLive(t *testing.T) {
	testutil.Tier1(t, "Xvfb")
	d := testutil.StartDesktop(t, testutil.DesktopOptions{Width: 800, Height: 600})
	base, p := startGuestd(t, d, nil, "--vnc-listen", "127.0.0.1:0")
	if p.live == "" {
		t.Fatal("guestd did not say where the live view listens")
	}
	if resp, err := http.Get(base + "/screenshot"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/screenshot: %v %v", resp, err)
	}
	unwatched, err := testutil.XClients(d.X.Display)
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(p.live + "/"); err != nil || resp.StatusCode != 200 {
		// Redirected to vnc.html: 200 with the image's noVNC, 404
		// without (the host's own runs have none).
		if resp == nil || resp.StatusCode != 404 {
			t.Errorf("GET /: %v %v", resp, err)
		}
	}
	if n, _ := testutil.XClients(d.X.Display); n != unwatched {
		t.Fatalf("the page alone made %d X clients of %d", n, unwatched)
	}
	ws, err := websocket.Dial("ws"+strings.TrimPrefix(p.live, "http")+"/websockify", "", p.live)
	if err != nil {
		t.Fatal(err)
	}
	ws.PayloadType = websocket.BinaryFrame
	c, err := rfb.NewClient(ws)
	if err != nil {
		t.Fatal(err)
	}
	if b := c.FB.Rect.Size(); b.X != 800 || b.Y != 600 {
		t.Errorf("ServerInit size %v", b)
	}
	c.Request(false)
	if _, err := c.ReadUpdate(); err != nil {
		t.Fatal(err)
	}
	if n, _ := testutil.XClients(d.X.Display); n != unwatched+1 {
		t.Errorf("watched: %d X clients, want %d", n, unwatched+1)
	}
	ws.Close()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for {
		n, _ := testutil.XClients(d.X.Display)
		if n == unwatched {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the viewer left: %d X clients, %d unwatched", n, unwatched)
		}
		time.Sleep(20 * time.Millisecond)
	}
	terminate(t, p)
}
