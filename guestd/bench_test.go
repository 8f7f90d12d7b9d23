package guestd

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
)

// BenchmarkDesktop measures guestd over real HTTP on loopback against a
// 1920x1080 Xvfb desktop (openbox, real x11 and pyauto) and reports each
// request's median and 90th percentile latency. Run it with a fixed count:
//
//	DRUMS_TIER1=1 go test ./guestd/ -run '^$' -bench BenchmarkDesktop -benchtime 200x
//
// The /execute cases send OSWorld's action shape ("import pyautogui; import
// time; pyautogui.FAILSAFE = False; pyautogui.moveTo(…)"); pyautogui sleeps
// its PAUSE (0.1 s) after every call, in the fast path as in Python, so the
// "pause0" variants (pyautogui.PAUSE = 0) show guestd's own cost. With
// DRUMS_PYAUTOGUI_PYTHONPATH set, one more case runs the snippet in python3
// with the real pyautogui (OpenCV hidden, as on an OSWorld VM without it):
// what every action costs upstream.
//
// The /screenshot cases: "screenshot" is the empty desktop, unchanged
// between requests; "screenshot_gtk3" is gtk3-widget-factory with the
// pointer over it, the scene of compat's latency benchmark against
// upstream (bench/results/vs-upstream.md), unchanged too;
// "screenshot_gtk3_pointer" moves the pointer before every request, and
// "screenshot_busy" shows a new photograph-like 1920x1080 image (an
// ImageMagick plasma under Gaussian noise, set as the root window's
// background) before every request, so that the whole screen changed.
// The changes are made outside the timed request.
func BenchmarkDesktop(b *testing.B) {
	testutil.Tier1(b, "Xvfb", "openbox", testutil.DebianPython, "gtk3-widget-factory", "convert", "display")
	size := testutil.DesktopOptions{Width: 1920, Height: 1080}
	fast := startDesktop(b, size)
	slow := startDesktop(b, size, func(c *Config) { c.NoFastPath = true })
	busy := startDesktop(b, size)
	var noise []string
	for seed := range 2 {
		file := filepath.Join(b.TempDir(), "noise.png")
		out, err := exec.Command("convert", "-size", "1920x1080", "-seed", strconv.Itoa(seed+1), "plasma:fractal",
			"-attenuate", "0.4", "+noise", "Gaussian", "-depth", "8", "PNG24:"+file).CombinedOutput()
		if err != nil {
			b.Fatalf("convert: %v: %s", err, out)
		}
		noise = append(noise, file)
	}
	shown := 0
	showNoise := func() {
		shown = 1 - shown
		cmd := exec.Command("display", "-window", "root", noise[shown])
		cmd.Env = busy.d.Env()
		// ImageMagick 6's display exits 1 after setting the root's
		// background as well; a real failure says why.
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if len(out) > 0 || (err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1)) {
			b.Fatalf("display: %v: %s", err, out)
		}
	}
	gtk := startDesktop(b, size)
	gtk.d.StartApp(b, "gtk3-widget-factory")
	if _, err := testutil.WaitWindow(testutil.WithTimeout(b), gtk.d.X.Display, "gtk3-widget-factory"); err != nil {
		b.Fatal(err)
	}
	ctx := testutil.WithTimeout(b)
	if err := gtk.disp.MoveTo(ctx, 700, 400); err != nil {
		b.Fatal(err)
	}
	pointer := 0
	movePointer := func() {
		pointer = 1 - pointer
		if err := gtk.disp.MoveTo(ctx, 700+300*pointer, 400+200*pointer); err != nil {
			b.Fatal(err)
		}
	}
	action := func(python, prefix string) []byte {
		body, _ := json.Marshal(map[string]any{"command": []string{python, "-c",
			"import pyautogui; import time; pyautogui.FAILSAFE = False; " + prefix + "pyautogui.moveTo(640, 360)"}, "shell": false})
		return body
	}
	type benchCase struct {
		name   string
		dt     *desktop
		method string
		path   string
		body   []byte
		before func() // untimed, before each request
	}
	cases := []benchCase{
		{"screenshot", fast, http.MethodGet, "/screenshot", nil, nil},
		{"screenshot_gtk3", gtk, http.MethodGet, "/screenshot", nil, nil},
		{"screenshot_gtk3_pointer", gtk, http.MethodGet, "/screenshot", nil, movePointer},
		{"screenshot_busy", busy, http.MethodGet, "/screenshot", nil, showNoise},
		{"cursor_position", fast, http.MethodGet, "/cursor_position", nil, nil},
		{"execute_fast_path", fast, http.MethodPost, "/execute", action("python", ""), nil},
		{"execute_fast_path_pause0", fast, http.MethodPost, "/execute", action("python", "pyautogui.PAUSE = 0; "), nil},
		{"execute_python3", slow, http.MethodPost, "/execute", action(testutil.DebianPython, ""), nil},
		{"execute_python3_pause0", slow, http.MethodPost, "/execute", action(testutil.DebianPython, "pyautogui.PAUSE = 0; "), nil},
	}
	if kit := os.Getenv("DRUMS_PYAUTOGUI_PYTHONPATH"); kit != "" {
		noCV := b.TempDir()
		if err := os.WriteFile(filepath.Join(noCV, "cv2.py"), []byte("raise ImportError('hidden for timing')\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		real := startDesktop(b, size, func(c *Config) {
			c.NoFastPath = true
			c.Environ = append(c.Environ, "PYTHONPATH="+noCV+":"+kit, "XDG_SESSION_TYPE=x11")
		})
		real.srv.deps.Actions = nil // the real pyautogui, no callback module
		cases = append(cases, benchCase{"execute_python3_real_pyautogui_pause0", real, http.MethodPost, "/execute", action(testutil.DebianPython, "pyautogui.PAUSE = 0; "), nil})
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			samples := make([]time.Duration, 0, b.N)
			size := 0
			// The client reads into one buffer of the size the reply
			// announces, so that the figures are the server's, not
			// io.ReadAll's doubling copies of a 4 MB PNG.
			var body bytes.Buffer
			for range b.N {
				if c.before != nil {
					b.StopTimer()
					c.before()
					b.StartTimer()
				}
				req, _ := http.NewRequest(c.method, c.dt.url+c.path, bytes.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				start := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				body.Reset()
				body.Grow(int(max(resp.ContentLength, 0)))
				_, err = body.ReadFrom(resp.Body)
				resp.Body.Close()
				samples = append(samples, time.Since(start))
				if err != nil || resp.StatusCode != 200 || (c.path == "/execute" && !bytes.Contains(body.Bytes(), []byte(`"returncode": 0`))) {
					b.Fatalf("%s: %d %v %s", c.path, resp.StatusCode, err, body.Bytes())
				}
				size += body.Len()
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "ms/median")
			b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds())/1000, "ms/p90")
			if c.path == "/screenshot" {
				b.ReportMetric(float64(size)/float64(b.N), "B/png")
			}
		})
	}
}
