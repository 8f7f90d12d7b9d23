package guestd

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/rfb"
	"github.com/drums-dev/drums/internal/testutil"
)

// BenchmarkLiveView measures the live view of a 1920x1080 desktop, a
// viewer over a WebSocket on loopback asking for Raw ("raw/…") or, as
// noVNC does, Tight ("tight/…"), from a change on the screen to the viewer
// holding the update, and the update's size:
//
//	DRUMS_TIER1=1 go test ./guestd/ -run '^$' -bench BenchmarkLiveView -benchtime 50x
//
// "pointer" moves the pointer inside an xterm (the cursor's old and new
// rectangles, found by the Watcher's pointer poll), "pointer_shape" moves
// it between the xterm and the root window (the cursor's image changes:
// XFixes tells the Watcher at once), "typing" types a character into the
// xterm (DAMAGE wakes the Watcher), "full" sets the root window's colour
// (the screen but the xterm). "idle" is no benchmark of speed: it reports
// the CPU time the test process (the live view's side and the idle
// viewer) and Xvfb take per second, 100 ms per op, with a viewer waiting
// for an update on an unchanging screen ("watched") and with none
// ("unwatched").
func BenchmarkLiveView(b *testing.B) {
	dt := startDesktop(b, testutil.DesktopOptions{Width: 1920, Height: 1080})
	lv := startLiveView(b, dt, false)
	dt.d.StartApp(b, "xterm", "-class", "DrumsLive", "-geometry", "80x24+100+100")
	if _, err := testutil.WaitWindow(testutil.WithTimeout(b), dt.d.X.Display, "drumslive"); err != nil {
		b.Fatal(err)
	}
	ctx := testutil.WithTimeout(b)
	if err := dt.disp.MoveTo(ctx, 400, 300); err != nil { // focus follows the pointer into the xterm
		b.Fatal(err)
	}
	c, _ := lv.viewer(b)
	ct, _ := lv.viewer(b, rfb.Tight)
	for _, v := range []*rfb.Client{c, ct} {
		v.Request(false)
		if _, err := v.ReadUpdate(); err != nil {
			b.Fatal(err)
		}
	}
	colour := 0
	// The pointer goes somewhere new each time: the Watcher polls it, and
	// a pointer back where the last poll saw it is no change. (A viewer
	// that did not ask during the other's run holds those changes; its
	// first update carries them.)
	step := 0
	cases := []struct {
		name   string
		change func()
	}{
		{"pointer", func() {
			step++
			if err := dt.disp.MoveTo(ctx, 300+step%100, 200+step%50); err != nil {
				b.Fatal(err)
			}
		}},
		{"pointer_shape", func() {
			step++
			out := step % 2
			if err := dt.disp.MoveTo(ctx, 400+400*out+step%50, 300+400*out); err != nil {
				b.Fatal(err)
			}
		}},
		{"typing", func() {
			if err := dt.disp.TypeText(ctx, "x"); err != nil {
				b.Fatal(err)
			}
		}},
		{"full", func() {
			colour = 1 - colour
			cmd := exec.Command("xsetroot", "-solid", []string{"#204060", "#604020"}[colour])
			cmd.Env = dt.d.Env()
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("xsetroot: %v %s", err, out)
			}
		}},
	}
	// Only the viewer that asks gets updates: the other's wait for its
	// next request (and merge meanwhile).
	for _, cs := range cases {
		for _, enc := range []struct {
			name string
			c    *rfb.Client
		}{{"raw", c}, {"tight", ct}} {
			b.Run(enc.name+"/"+cs.name, func(b *testing.B) {
				c := enc.c
				samples := make([]time.Duration, 0, b.N)
				bytes := 0
				for range b.N {
					if err := c.Request(true); err != nil {
						b.Fatal(err)
					}
					cs.change()
					start := time.Now()
					u, err := c.ReadUpdate()
					if err != nil {
						b.Fatal(err)
					}
					samples = append(samples, time.Since(start))
					bytes += u.Bytes
				}
				slices.Sort(samples)
				b.ReportMetric(float64(samples[len(samples)/2].Microseconds())/1000, "ms/median")
				b.ReportMetric(float64(samples[len(samples)*9/10].Microseconds())/1000, "ms/p90")
				b.ReportMetric(float64(bytes)/float64(b.N), "B/update")
			})
		}
	}
	xvfb := dt.d.X.Proc.Cmd.Process.Pid
	// cpu is the CPU time of the test process and of Xvfb per second of
	// wall time, in ms, over n times 100 ms (clock ticks are 10 ms).
	cpu := func(n int) (self, x float64) {
		span := time.Duration(n) * 100 * time.Millisecond
		s0, x0 := cpuTicks(b, os.Getpid()), cpuTicks(b, xvfb)
		time.Sleep(span)
		s1, x1 := cpuTicks(b, os.Getpid()), cpuTicks(b, xvfb)
		return float64(s1-s0) * 10 / span.Seconds(), float64(x1-x0) * 10 / span.Seconds()
	}
	b.Run("idle", func(b *testing.B) {
		c.Request(true) // waits: nothing changes
		self, x := cpu(b.N)
		b.ReportMetric(self, "ms-cpu/s-watched-guestd")
		b.ReportMetric(x, "ms-cpu/s-watched-xvfb")
	})
	b.Run("idle_unwatched", func(b *testing.B) {
		lv.viewers.Close()
		deadline := time.Now().Add(testutil.ReadyTimeout)
		for lv.viewers.Viewers() != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		self, x := cpu(b.N)
		b.ReportMetric(self, "ms-cpu/s-unwatched-guestd")
		b.ReportMetric(x, "ms-cpu/s-unwatched-xvfb")
	})
}

// cpuTicks is a process's user and system time, in clock ticks.
func cpuTicks(b *testing.B, pid int) int {
	b.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name (which may hold spaces): state is
	// the 1st, utime the 12th, stime the 13th.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+1:]))
	u, _ := strconv.Atoi(f[11])
	s, _ := strconv.Atoi(f[12])
	return u + s
}
