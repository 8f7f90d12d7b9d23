package guestdcli

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
)

// memoryIdle is the idle time after which BenchmarkMemory reads guestd's
// memory a first time (the heap stage has run, the frame is kept) and a
// second time (the frame is released too).
var memoryIdle = []time.Duration{30 * time.Second, defaultIdleFrame + 5*time.Second}

// BenchmarkMemory runs the guestd binary (default flags) against a
// 1920x1080 Xvfb desktop (openbox and an xterm running top) and reports its
// memory, read from /proc, after startup, after 1 and after 20 sequential
// GET /screenshot, and after each of memoryIdle without requests; then the
// latency of the first screenshot after that idle time (which rebuilds the
// released frame) next to the median of the 20:
//
//	DRUMS_TIER1=1 go test ./internal/guestdcli/ -run '^$' -bench BenchmarkMemory -benchtime 1x
//
// "shm" is the normal case (guestd shares the X server's IPC namespace and
// captures through MIT-SHM); "core" runs guestd in its own IPC namespace
// (unshare, needs root), so it captures through core GetImage as in a
// container that does not share /dev/shm with the X server.
func BenchmarkMemory(b *testing.B) {
	b.Run("shm", func(b *testing.B) { benchMemory(b, nil) })
	b.Run("core", func(b *testing.B) {
		testutil.RequireRoot(b, "unshare")
		benchMemory(b, []string{"unshare", "--ipc"})
	})
}

func benchMemory(b *testing.B, wrapper []string) {
	testutil.Tier1(b, "Xvfb", "openbox", "xterm")
	d := testutil.StartDesktop(b, testutil.DesktopOptions{Width: 1920, Height: 1080, WM: true})
	d.StartApp(b, "xterm", "-class", "DrumsBench", "-geometry", "120x40+100+100", "-e", "top")
	if _, err := testutil.WaitWindow(testutil.WithTimeout(b), d.X.Display, "DrumsBench"); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		base, p := startGuestd(b, d, wrapper)
		pid := p.Cmd.Process.Pid
		var rows []string
		read := func(stage string) {
			m, err := readMemory(pid)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(m.pss, "MiB-pss-"+stage)
			b.ReportMetric(m.anon, "MiB-anon-"+stage)
			rows = append(rows, fmt.Sprintf("%-8s  pss %5.1f MiB (anon %5.1f, file %5.1f, shmem %5.1f)  anon rss %5.1f MiB  threads %d",
				stage, m.pss, m.pssAnon, m.pssFile, m.pssShmem, m.anon, m.threads))
		}
		shot := func() time.Duration {
			start := time.Now()
			resp, err := http.Get(base + "/screenshot")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || n == 0 {
				b.Fatalf("/screenshot: %d, %d bytes, %v", resp.StatusCode, n, err)
			}
			return time.Since(start)
		}
		read("start")
		took := []time.Duration{shot()}
		read("1shot")
		for range 19 {
			took = append(took, shot())
		}
		read("20shots")
		idle := time.Duration(0)
		for _, until := range memoryIdle {
			time.Sleep(until - idle)
			idle = until
			read(fmt.Sprintf("idle%.0fs", until.Seconds()))
		}
		slices.Sort(took)
		median, afterIdle := took[len(took)/2], shot()
		b.ReportMetric(float64(median.Microseconds())/1000, "ms-median-of-20")
		b.ReportMetric(float64(afterIdle.Microseconds())/1000, "ms-after-idle")
		b.Logf("guestd %v:\n%s\nscreenshot: median of the 20 %v, first after %v idle %v",
			wrapper, strings.Join(rows, "\n"), median, idle, afterIdle)
		p.Kill()
	}
}

// memory is one process's footprint in MiB, from smaps_rollup and status.
type memory struct {
	pss, pssAnon, pssFile, pssShmem float64
	anon                            float64 // RssAnon: resident anonymous pages
	threads                         int
}

func readMemory(pid int) (memory, error) {
	var m memory
	kib := map[string]*float64{"Pss:": &m.pss, "Pss_Anon:": &m.pssAnon, "Pss_File:": &m.pssFile,
		"Pss_Shmem:": &m.pssShmem, "RssAnon:": &m.anon}
	for _, name := range []string{"smaps_rollup", "status"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/%s", pid, name))
		if err != nil {
			return m, fmt.Errorf("read memory of %d: %w", pid, err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 2 {
				continue
			}
			v, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				continue
			}
			if p, ok := kib[fields[0]]; ok {
				*p = v / 1024
			}
			if fields[0] == "Threads:" {
				m.threads = int(v)
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return m, fmt.Errorf("read memory of %d: %w", pid, err)
		}
	}
	return m, nil
}
