package guestd

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/atspi"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/internal/x11"
)

// desktop is guestd over a real desktop (Xvfb, openbox, a session bus),
// the real X and accessibility packages, and real HTTP on loopback.
type desktop struct {
	t    testing.TB
	d    *testutil.Desktop
	disp *x11.Display
	srv  *Server
	url  string
}

func startDesktop(t testing.TB, opts testutil.DesktopOptions, tweak ...func(*Config)) *desktop {
	t.Helper()
	testutil.Tier1(t, "Xvfb", "openbox", "wmctrl")
	opts.WM = true
	d := testutil.StartDesktop(t, opts)
	disp, err := x11.Open(d.X.Display)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disp.Close() })
	a11y := atspi.NewSource(atspi.SourceOptions{Display: d.X.Display, SessionBusAddress: d.Bus.Address, BusAddress: d.A11yAddress})
	t.Cleanup(func() { a11y.Close() })
	cfg := Config{
		Display:       d.X.Display,
		Home:          d.Home,
		RecordingPath: filepath.Join(t.TempDir(), "recording.mp4"),
		TempDir:       t.TempDir(),
		Environ:       append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}, d.Env()...),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, f := range tweak {
		f(&cfg)
	}
	cfg = cfg.withDefaults()
	srv, err := New(cfg, Deps{Display: disp, Accessibility: a11y, Actions: desktopActions(t, disp, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return &desktop{t: t, d: d, disp: disp, srv: srv, url: hs.URL}
}

func (dt *desktop) post(path, ctype string, body io.Reader) (int, http.Header, []byte) {
	dt.t.Helper()
	req, err := http.NewRequest(http.MethodPost, dt.url+path, body)
	if err != nil {
		dt.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return dt.send(req)
}

func (dt *desktop) send(req *http.Request) (int, http.Header, []byte) {
	dt.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		dt.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		dt.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

func (dt *desktop) postJSON(path string, v any) (int, []byte) {
	dt.t.Helper()
	b, _ := json.Marshal(v)
	status, _, body := dt.post(path, "application/json", bytes.NewReader(b))
	return status, body
}

func (dt *desktop) get(path string) (int, http.Header, []byte) {
	dt.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, dt.url+path, nil)
	return dt.send(req)
}

// screenshot fetches and decodes /screenshot.
func (dt *desktop) screenshot() image.Image {
	dt.t.Helper()
	status, h, body := dt.get("/screenshot")
	if status != 200 || h.Get("Content-Type") != "image/png" {
		dt.t.Fatalf("/screenshot: %d %s", status, h)
	}
	img, err := png.Decode(bytes.NewReader(body))
	if err != nil {
		dt.t.Fatal(err)
	}
	return img
}

// waitFor polls check; nothing signals a repaint, an activation or a
// finished ffmpeg file, so these tests poll with a short interval.
func waitFor(t testing.TB, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(testutil.ReadyTimeout)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// countColor counts pixels of exactly c.
func countColor(img image.Image, c [3]uint32) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 == c[0] && g>>8 == c[1] && bl>>8 == c[2] {
				n++
			}
		}
	}
	return n
}

func TestDesktopScreen(t *testing.T) {
	dt := startDesktop(t, testutil.DesktopOptions{Width: 640, Height: 480})
	img := dt.screenshot()
	if b := img.Bounds(); b.Dx() != 640 || b.Dy() != 480 {
		t.Fatalf("screenshot size %v", b)
	}
	// A red xterm appears in the screenshot: its pixels, not just a size.
	dt.d.StartApp(t, "xterm", "-class", "DrumsRed", "-bg", "#ff0000", "-geometry", "40x10+50+60")
	if _, err := testutil.WaitWindow(testutil.WithTimeout(t), dt.d.X.Display, "drumsred"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the red xterm in the screenshot", func() bool {
		return countColor(dt.screenshot(), [3]uint32{255, 0, 0}) > 40*10*20
	})

	status, body := dt.postJSON("/screen_size", nil)
	if status != 200 || string(body) != "{\n  \"height\": 480,\n  \"width\": 640\n}\n" {
		t.Errorf("/screen_size: %d %s", status, body)
	}
	if err := dt.disp.MoveTo(context.Background(), 123, 234); err != nil {
		t.Fatal(err)
	}
	if status, _, body := dt.get("/cursor_position"); status != 200 || string(body) != "[\n  123,\n  234\n]\n" {
		t.Errorf("/cursor_position: %d %s", status, body)
	}
}

// xwininfoSize is the client window's size as xwininfo reports it.
func xwininfoSize(t *testing.T, display string, id uint32) string {
	out, err := exec.Command("xwininfo", "-display", display, "-id", fmt.Sprint(id)).Output()
	if err != nil {
		t.Fatalf("xwininfo: %v", err)
	}
	var w, h string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "Width: "); ok {
			w = v
		}
		if v, ok := strings.CutPrefix(line, "Height: "); ok {
			h = v
		}
	}
	return fmt.Sprintf("{\n  \"height\": %s,\n  \"width\": %s\n}\n", h, w)
}

// activeWindow reads _NET_ACTIVE_WINDOW.
func activeWindow(t *testing.T, display string) uint32 {
	out, err := exec.Command("xprop", "-display", display, "-root", "-notype", "32x", " $0", "_NET_ACTIVE_WINDOW").Output()
	if err != nil {
		t.Fatalf("xprop: %v", err)
	}
	var id uint32
	fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(string(out), "_NET_ACTIVE_WINDOW")), "0x%x", &id)
	return id
}

func TestDesktopWindows(t *testing.T) {
	testutil.Tier1(t, "xterm", "xwininfo", "xprop")
	dt := startDesktop(t, testutil.DesktopOptions{})
	disp := dt.d.X.Display
	a := dt.d.StartApp(t, "xterm", "-class", "DrumsA", "-title", "Alpha Window", "-geometry", "50x12")
	dt.d.StartApp(t, "xterm", "-class", "DrumsB", "-title", "Beta Window", "-geometry", "30x8")
	idA, err := testutil.WaitWindow(testutil.WithTimeout(t), disp, "drumsa")
	if err != nil {
		t.Fatal(err)
	}
	idB, err := testutil.WaitWindow(testutil.WithTimeout(t), disp, "drumsb")
	if err != nil {
		t.Fatal(err)
	}

	status, _, body := dt.post("/window_size", "application/x-www-form-urlencoded", strings.NewReader("app_class_name=DRUMSA"))
	if want := xwininfoSize(t, disp, idA); status != 200 || string(body) != want {
		t.Errorf("/window_size: %d %q, want %q", status, body, want)
	}
	if status, _, _ := dt.post("/window_size", "application/x-www-form-urlencoded", strings.NewReader("app_class_name=nosuch")); status != 404 {
		t.Errorf("/window_size without a match: %d", status)
	}

	for _, c := range []struct {
		req  map[string]any
		want uint32
	}{
		{map[string]any{"window_name": "alpha"}, idA},
		{map[string]any{"window_name": "drumsb", "by_class": true}, idB},
		{map[string]any{"window_name": "Alpha Window", "strict": true}, idA},
	} {
		status, body := dt.postJSON("/setup/activate_window", c.req)
		if status != 200 || string(body) != "Window activated successfully" {
			t.Fatalf("activate %v: %d %s", c.req, status, body)
		}
		waitFor(t, fmt.Sprintf("window %#x active after %v", c.want, c.req), func() bool { return activeWindow(t, disp) == c.want })
	}

	// execute_with_verification sees the window in wmctrl -l.
	status, body = dt.postJSON("/execute_with_verification", map[string]any{
		"command": []string{"true"}, "verification": map[string]any{"window_exists": "BETA window"}})
	if status != 200 || !strings.Contains(string(body), `"verification": "passed"`) {
		t.Errorf("verification: %d %s", status, body)
	}

	status, body = dt.postJSON("/setup/close_window", map[string]any{"window_name": "Alpha Window", "strict": true})
	if status != 200 || string(body) != "Window closed successfully." {
		t.Fatalf("close: %d %s", status, body)
	}
	select {
	case <-a.Done():
	case <-testutil.WithTimeout(t).Done():
		t.Fatal("xterm A did not close")
	}
}

func TestDesktopLaunchAndOpen(t *testing.T) {
	testutil.Tier1(t, "xterm", "xdg-open", "file")
	dt := startDesktop(t, testutil.DesktopOptions{})
	disp := dt.d.X.Display

	status, body := dt.postJSON("/setup/launch", map[string]any{"command": []string{"xterm", "-class", "DrumsLaunched"}})
	if status != 200 || string(body) != "xterm -class DrumsLaunched launched successfully" {
		t.Fatalf("launch: %d %s", status, body)
	}
	launched, err := testutil.WaitWindow(testutil.WithTimeout(t), disp, "drumslaunched")
	if err != nil {
		t.Fatal(err)
	}
	endWindowProcess(t, disp, launched)

	// open_file runs the real xdg-open, which finds a desktop entry for
	// text/plain that shows the file's name in an xterm title.
	apps := filepath.Join(dt.d.Home, ".local/share/applications")
	os.MkdirAll(apps, 0o755)
	os.WriteFile(filepath.Join(apps, "drums-view.desktop"), []byte("[Desktop Entry]\nType=Application\nName=Drums Viewer\nExec=xterm -class DrumsViewer -title %f\nMimeType=text/plain;\n"), 0o644)
	os.WriteFile(filepath.Join(dt.d.Home, ".config/mimeapps.list"), []byte("[Default Applications]\ntext/plain=drums-view.desktop\n"), 0o644)
	doc := filepath.Join(dt.d.Home, "Desktop", "notes for drums.txt")
	os.WriteFile(doc, []byte("some text\n"), 0o644)
	status, body = dt.postJSON("/setup/open_file", map[string]any{"path": "~/Desktop/notes for drums.txt"})
	if status != 200 || string(body) != "File opened and window activated successfully" {
		t.Fatalf("open_file: %d %s", status, body)
	}
	id, err := testutil.WaitWindow(testutil.WithTimeout(t), disp, "drumsviewer")
	if err != nil {
		t.Fatal(err)
	}
	endWindowProcess(t, disp, id)
	waitFor(t, "the viewer active", func() bool { return activeWindow(t, disp) == id })
}

// endWindowProcess registers the end of the process that owns window id
// (by _NET_WM_PID): applications guestd started are not the test's own
// children, so the test ends them itself while the desktop still runs.
func endWindowProcess(t *testing.T, display string, id uint32) {
	out, err := exec.Command("xprop", "-display", display, "-id", fmt.Sprint(id), "-notype", "_NET_WM_PID").Output()
	if err != nil {
		t.Fatalf("xprop _NET_WM_PID: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(string(out), "_NET_WM_PID = ")), "%d", &pid); err != nil || pid <= 1 {
		t.Fatalf("no _NET_WM_PID on %#x: %q", id, out)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		// Gone once reaped (guestd reaps what it started); a process
		// orphaned to an init that does not reap stays a zombie.
		waitFor(t, fmt.Sprintf("process %d to end", pid), func() bool {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			return err != nil || strings.Contains(string(st), ") Z ")
		})
	})
}

func TestDesktopFiles(t *testing.T) {
	dt := startDesktop(t, testutil.DesktopOptions{})
	content := make([]byte, 5<<20)
	rand.Read(content)
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("file_path", "~/deep/er/blob.bin")
	fw, _ := w.CreateFormFile("file_data", "blob.bin")
	fw.Write(content)
	w.Close()
	status, _, body := dt.post("/setup/upload", w.FormDataContentType(), &b)
	if status != 200 || string(body) != fmt.Sprintf("File Uploaded: %d bytes", len(content)) {
		t.Fatalf("upload: %d %s", status, body)
	}
	status, h, got := dt.post("/file", "application/x-www-form-urlencoded", strings.NewReader("file_path="+url.QueryEscape("~/deep/er/blob.bin")))
	if status != 200 || !bytes.Equal(got, content) || h.Get("Content-Disposition") != "attachment; filename=blob.bin" {
		t.Fatalf("download: %d, %d bytes, %v", status, len(got), h)
	}

	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(content) }))
	defer src.Close()
	status, body = dt.postJSON("/setup/download_file", map[string]any{"url": src.URL + "/x", "path": "~/dl/blob.bin"})
	if status != 200 || string(body) != fmt.Sprintf("File downloaded successfully: %d bytes", len(content)) {
		t.Fatalf("download_file: %d %s", status, body)
	}
	if b, _ := os.ReadFile(filepath.Join(dt.d.Home, "dl/blob.bin")); !bytes.Equal(b, content) {
		t.Errorf("download_file content differs")
	}
}

func TestDesktopWallpaper(t *testing.T) {
	testutil.Tier1(t, "gsettings")
	dt := startDesktop(t, testutil.DesktopOptions{})
	wall := filepath.Join(dt.d.Home, "wall.png")
	os.WriteFile(wall, []byte("\x89PNG wallpaper bytes"), 0o644)
	status, body := dt.postJSON("/setup/change_wallpaper", map[string]any{"path": "~/wall.png"})
	if status != 200 || string(body) != "Wallpaper changed successfully" {
		t.Fatalf("change_wallpaper: %d %s", status, body)
	}
	status, h, got := dt.post("/wallpaper", "", nil)
	if status != 200 || string(got) != "\x89PNG wallpaper bytes" || h.Get("Content-Type") != "image/png" {
		t.Errorf("wallpaper: %d %q %v", status, got, h)
	}
}

func TestDesktopRecording(t *testing.T) {
	testutil.Tier1(t, "ffmpeg", "ffprobe")
	dt := startDesktop(t, testutil.DesktopOptions{Width: 640, Height: 360})
	status, body := dt.postJSON("/start_recording", nil)
	if status != 200 {
		t.Fatalf("start_recording: %d %s", status, body)
	}
	// Something moves while it records. start_recording waited two
	// seconds for ffmpeg to survive, as upstream does; on a loaded machine
	// ffmpeg may still be starting then, and stopped before it wrote
	// anything it leaves no file (upstream's too): wait until it writes.
	dt.d.StartApp(t, "xterm", "-geometry", "40x10+10+10")
	waitFor(t, "ffmpeg's first output", func() bool {
		st, err := os.Stat(dt.srv.cfg.RecordingPath)
		return err == nil && st.Size() > 0
	})
	status, h, video := dt.post("/end_recording", "", nil)
	if status != 200 || h.Get("Content-Type") != "video/mp4" || len(video) == 0 {
		t.Fatalf("end_recording: %d %v, %d bytes: %.300s", status, h, len(video), video)
	}
	file := filepath.Join(t.TempDir(), "got.mp4")
	os.WriteFile(file, video, 0o644)
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0",
		"-show_entries", "stream=codec_name,width,height", "-show_entries", "format=duration", "-of", "json", file).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	var probe struct {
		Streams []struct {
			CodecName     string `json:"codec_name"`
			Width, Height int
		}
		Format struct{ Duration string }
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		t.Fatal(err)
	}
	if len(probe.Streams) != 1 || probe.Streams[0].CodecName != "h264" || probe.Streams[0].Width != 640 || probe.Streams[0].Height != 360 || probe.Format.Duration == "" {
		t.Errorf("video: %s", out)
	}
}

func TestDesktopExecuteAndTerminal(t *testing.T) {
	testutil.Tier1(t, testutil.DebianPython, "/usr/libexec/at-spi-bus-launcher")
	dt := startDesktop(t, testutil.DesktopOptions{A11y: true})
	status, body := dt.postJSON("/execute", map[string]any{"command": []string{testutil.DebianPython, "-c", "import os; print(os.environ['DISPLAY'], 6*7)"}})
	if status != 200 || !strings.Contains(string(body), `"output": "`+dt.d.X.Display+` 42\n"`) {
		t.Errorf("execute python3: %d %s", status, body)
	}
	// No gnome-terminal: output null, the readiness answer OSWorld waits
	// for.
	status, _, body = dt.get("/terminal")
	if status != 200 || string(body) != "{\n  \"output\": null,\n  \"status\": \"success\"\n}\n" {
		t.Errorf("/terminal: %d %s", status, body)
	}
	status, _, body = dt.get("/accessibility")
	if status != 200 || !strings.HasPrefix(string(body), "{\n  \"AT\": \"<desktop-frame") {
		t.Errorf("/accessibility: %d %.200s", status, body)
	}
}

// osworldAction is the command DesktopEnv.step sends for an action.
func osworldAction(action string) map[string]any {
	return map[string]any{"command": []string{"python", "-c",
		"import pyautogui; import time; pyautogui.FAILSAFE = False; " + action}, "shell": false}
}

func (dt *desktop) cursor() string {
	dt.t.Helper()
	_, _, body := dt.get("/cursor_position")
	return strings.Join(strings.Fields(string(body)), "")
}

func TestDesktopPyautogui(t *testing.T) {
	testutil.Tier1(t, "xterm", testutil.DebianPython)
	dt := startDesktop(t, testutil.DesktopOptions{})

	// OSWorld's exact shape runs natively: there is no "python" here.
	status, body := dt.postJSON("/execute", osworldAction("pyautogui.moveTo(300, 200)"))
	if status != 200 || string(body) != "{\n  \"error\": \"\",\n  \"output\": \"\",\n  \"returncode\": 0,\n  \"status\": \"success\"\n}\n" {
		t.Fatalf("fast path: %d %s", status, body)
	}
	if got := dt.cursor(); got != "[300,200]" {
		t.Errorf("cursor after moveTo: %s", got)
	}

	// Typing reaches an application: a shell in an xterm runs what was
	// typed.
	dt.d.StartApp(t, "xterm", "-class", "DrumsTyped", "-e", "/bin/sh")
	id, err := testutil.WaitWindow(testutil.WithTimeout(t), dt.d.X.Display, "drumstyped")
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the xterm active", func() bool {
		dt.postJSON("/setup/activate_window", map[string]any{"window_name": "drumstyped", "by_class": true})
		return activeWindow(t, dt.d.X.Display) == id
	})
	marker := filepath.Join(dt.d.Home, "typed.txt")
	status, body = dt.postJSON("/execute", osworldAction(fmt.Sprintf("pyautogui.write(%q); pyautogui.press('enter')", "echo typed > "+marker)))
	if status != 200 {
		t.Fatalf("write: %d %s", status, body)
	}
	waitFor(t, "the typed command to run", func() bool {
		b, err := os.ReadFile(marker)
		return err == nil && string(b) == "typed\n"
	})

	// Snippets the fast path does not cover (a loop, a variable) run in
	// the real python3, whose pyautogui calls back into guestd.
	loop := "import pyautogui\nfor i in range(3):\n    x = 100 + i * 10\npyautogui.moveTo(x, 150)\nprint(pyautogui.position())"
	status, body = dt.postJSON("/execute", map[string]any{"command": []string{testutil.DebianPython, "-c", loop}})
	if status != 200 || !strings.Contains(string(body), `"returncode": 0`) {
		t.Fatalf("python3 with a loop: %d %s", status, body)
	}
	if got := dt.cursor(); got != "[120,150]" {
		t.Errorf("cursor after the loop: %s (%s)", got, body)
	}
}

func TestDesktopNoFastPath(t *testing.T) {
	testutil.Tier1(t, testutil.DebianPython)
	dt := startDesktop(t, testutil.DesktopOptions{}, func(c *Config) {
		c.NoFastPath = true
		// Debian has python3 only (a drums desktop adds python in
		// /usr/local/bin): a PATH without it.
		c.Environ = slices.DeleteFunc(c.Environ, func(e string) bool { return strings.HasPrefix(e, "PATH=") })
		c.Environ = append(c.Environ, "PATH=/usr/bin:/bin")
	})
	// Without the fast path OSWorld's "python" is a real process, which
	// this PATH does not have: upstream's answer.
	status, body := dt.postJSON("/execute", osworldAction("pyautogui.moveTo(10, 10)"))
	if status != 500 || !strings.Contains(string(body), "[Errno 2] No such file or directory: 'python'") {
		t.Errorf("python missing: %d %s", status, body)
	}
	status, body = dt.postJSON("/execute", map[string]any{"command": []string{testutil.DebianPython, "-c",
		"import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.moveTo(310, 210)"}})
	if status != 200 || !strings.Contains(string(body), `"returncode": 0`) {
		t.Fatalf("python3 path: %d %s", status, body)
	}
	if got := dt.cursor(); got != "[310,210]" {
		t.Errorf("cursor after python3 moveTo: %s", got)
	}
}

// TestDesktopSameEndState runs one snippet through the fast path, through
// python3 with the callback module, and (where DRUMS_PYAUTOGUI_PYTHONPATH
// names one) through python3 with the real pyautogui: the pointer ends in
// the same place with the same reply.
func TestDesktopSameEndState(t *testing.T) {
	testutil.Tier1(t, testutil.DebianPython)
	code := "import pyautogui; import time; pyautogui.FAILSAFE = False; " +
		"pyautogui.moveTo(200, 100); pyautogui.moveRel(15, -5)"
	kit := os.Getenv("DRUMS_PYAUTOGUI_PYTHONPATH")
	ways := []struct {
		name   string
		python string
		tweak  func(*Config)
	}{
		{"fast path", "python", func(*Config) {}},
		{"callback module", testutil.DebianPython, func(c *Config) { c.NoFastPath = true }},
		{"real pyautogui", testutil.DebianPython, func(c *Config) {
			c.NoFastPath = true
			c.Environ = append(c.Environ, "PYTHONPATH="+kit, "XDG_SESSION_TYPE=x11")
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			real := w.name == "real pyautogui"
			if real && kit == "" && pythonImport("pyautogui") != nil {
				t.Skip("no real pyautogui to compare with: set DRUMS_PYAUTOGUI_PYTHONPATH")
			}
			dt := startDesktop(t, testutil.DesktopOptions{}, w.tweak)
			if real {
				dt.srv.deps.Actions = nil // no callback module in the way
			}
			status, body := dt.postJSON("/execute", map[string]any{"command": []string{w.python, "-c", code}})
			if want := "{\n  \"error\": \"\",\n  \"output\": \"\",\n  \"returncode\": 0,\n  \"status\": \"success\"\n}\n"; status != 200 || string(body) != want {
				t.Errorf("%d %s", status, body)
			}
			if got := dt.cursor(); got != "[215,95]" {
				t.Errorf("cursor %s", got)
			}
		})
	}
}
