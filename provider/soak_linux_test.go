package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// BenchmarkSoak is the bounded soak (make soak): DRUMS_SOAK_CYCLES (1000)
// cycles of lease, screenshot, revert, screenshot, release against a
// `drums serve` that is killed with SIGKILL at seeded random moments, with
// a leased desktop's X server killed now and then. It prints the cycles,
// the kills, the errors by kind (the kills' clean errors apart from any
// other), lease and revert p50/p95, and what is left on the host after a
// drain: mounts, links, nftables tables, cgroups, frozen cgroups,
// processes, records and claims.
func BenchmarkSoak(b *testing.B) {
	testutil.Tier1(b)
	cycles := envCount(b, "DRUMS_SOAK_CYCLES", 1000)
	rng, ecfg, eng, state, sock := faultWorld(b, 6)
	defer eng.Close()
	args := []string{"--pool-size", "2", "--warm", "1024x768", "--drain-on-exit", "--capacity", "6"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	c, err := client.New(sock, "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()

	var st soakStats
	s := startServe(b, ecfg, state, sock, args...)
	t0 := time.Now()
	for range b.N * cycles {
		var killed atomic.Bool
		var timer *time.Timer
		if rng.IntN(1000) < 15 { // a daemon kill, somewhere in this cycle
			pid := s.p.Cmd.Process.Pid
			timer = time.AfterFunc(time.Duration(rng.IntN(300))*time.Millisecond, func() {
				killed.Store(true)
				syscall.Kill(-pid, syscall.SIGKILL)
			})
		}
		killX := rng.IntN(1000) < 20
		errs := st.cycle(ctx, c, killX)
		if timer != nil {
			timer.Stop()
		}
		for _, e := range errs {
			switch {
			case killed.Load():
				st.errs["daemon killed: "+e.op]++
			case killX && e.expected:
				st.errs["X server killed: "+e.op]++
			default:
				st.errs["unexpected: "+e.op]++
				b.Errorf("cycle %d: %s: %v", st.cycles, e.op, e.err)
			}
		}
		if killed.Load() {
			st.daemonKills++
			<-s.p.Done()
			s = startServe(b, ecfg, state, sock, args...)
			// The lease the killed cycle held, if any, outlived the daemon.
			for _, d := range leasedOf(b, ctx, c) {
				c.Release(ctx, d.ID)
			}
		}
		st.cycles++
		if st.cycles%100 == 0 {
			fmt.Printf("soak: %d cycles, %d daemon kills, %d X kills, %s\n", st.cycles, st.daemonKills, st.xKills, time.Since(t0).Round(time.Second))
		}
	}
	elapsed := time.Since(t0)
	// Claims no live process holds: garbage a kill left (a claim taken
	// before its init ran), which the drain's sweep must remove.
	garbage := freeClaims(ecfg.Prefix)
	fmt.Printf("soak: claims held by nobody before the drain: %d %v\n", len(garbage), garbage)
	if err := s.p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	<-s.p.Done()
	leaks := soakLeaks(ecfg, state)
	st.print(elapsed, leaks)
	for what, l := range leaks {
		if len(l) > 0 {
			b.Errorf("left after the drain: %s %v", what, l)
		}
	}
	b.ReportMetric(pct(st.lease, 50), "lease-p50-ms")
	b.ReportMetric(pct(st.lease, 95), "lease-p95-ms")
	b.ReportMetric(pct(st.revert, 50), "revert-p50-ms")
	b.ReportMetric(pct(st.revert, 95), "revert-p95-ms")
	b.ReportMetric(float64(st.cycles), "cycles")
}

type soakStats struct {
	cycles, daemonKills, xKills int
	errs                        map[string]int
	lease, revert               []time.Duration
}

type soakErr struct {
	op       string
	err      error
	expected bool // what a killed X server explains
}

// cycle is one episode: lease, screenshot, (the X server killed), revert,
// screenshot, release.
func (st *soakStats) cycle(ctx context.Context, c *client.Client, killX bool) []soakErr {
	if st.errs == nil {
		st.errs = map[string]int{}
	}
	var errs []soakErr
	t := time.Now()
	d, err := c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, LeaseSeconds: 600})
	if err != nil {
		return append(errs, soakErr{op: "lease", err: err})
	}
	st.lease = append(st.lease, time.Since(t))
	if err := screenshotOK(d); err != nil {
		errs = append(errs, soakErr{op: "screenshot", err: err})
	}
	if killX {
		if pid, err := findDesktopProcess(d, "Xvfb"); err == nil && syscall.Kill(pid, syscall.SIGKILL) == nil {
			st.xKills++
			if err := screenshotOK(d); err != nil {
				errs = append(errs, soakErr{op: "screenshot", err: err, expected: true})
			}
		}
	}
	t = time.Now()
	r, err := c.Revert(ctx, d.ID, "")
	if err != nil {
		errs = append(errs, soakErr{op: "revert", err: err})
		c.Release(ctx, d.ID)
		return errs
	}
	st.revert = append(st.revert, time.Since(t))
	if err := screenshotOK(r); err != nil {
		errs = append(errs, soakErr{op: "screenshot after revert", err: err})
	}
	if err := c.Release(ctx, r.ID); err != nil {
		errs = append(errs, soakErr{op: "release", err: err})
	}
	return errs
}

func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100].Microseconds()) / 1000
}

func (st *soakStats) print(elapsed time.Duration, leaks map[string][]string) {
	fmt.Printf("soak: %d cycles in %s; %d daemon kills, each followed by a restart that adopted its desktops; %d X servers killed\n",
		st.cycles, elapsed.Round(time.Second), st.daemonKills, st.xKills)
	fmt.Printf("soak: lease p50 %.1f ms p95 %.1f ms (n=%d); revert p50 %.1f ms p95 %.1f ms (n=%d)\n",
		pct(st.lease, 50), pct(st.lease, 95), len(st.lease), pct(st.revert, 50), pct(st.revert, 95), len(st.revert))
	kinds := make([]string, 0, len(st.errs))
	for k := range st.errs {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	if len(kinds) == 0 {
		fmt.Println("soak: errors: none")
	}
	for _, k := range kinds {
		fmt.Printf("soak: errors: %s: %d\n", k, st.errs[k])
	}
	what := make([]string, 0, len(leaks))
	for k := range leaks {
		what = append(what, k)
	}
	slices.Sort(what)
	for _, k := range what {
		fmt.Printf("soak: left after the drain: %s: %d\n", k, len(leaks[k]))
	}
}

// freeClaims lists the prefix's claim files that no process holds.
func freeClaims(prefix string) []string {
	var out []string
	for _, d := range []string{sessions.AddrClaimDir, sessions.IDClaimDir} {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			path := filepath.Join(d, f.Name())
			b, err := os.ReadFile(path)
			if err != nil || !strings.HasPrefix(string(b), prefix+"-") {
				continue
			}
			fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
			if err != nil {
				continue
			}
			if syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
				out = append(out, path+" ("+strings.TrimSpace(string(b))+")")
			}
			syscall.Close(fd)
		}
	}
	return out
}

// soakLeaks lists what of the prefix is on the host after a drain.
func soakLeaks(ecfg sessions.Config, state string) map[string][]string {
	p := ecfg.Prefix
	out := map[string][]string{}
	grep := func(what string, lines []string) {
		out[what] = nil
		for _, l := range lines {
			if strings.Contains(l, p) {
				out[what] = append(out[what], strings.TrimSpace(l))
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	grep("mounts", strings.Split(string(mounts), "\n"))
	links, _ := exec.Command("ip", "-o", "link").Output()
	grep("links", strings.Split(string(links), "\n"))
	tables, _ := exec.Command("nft", "list", "tables").Output()
	grep("nft tables", strings.Split(string(tables), "\n"))
	var cgroups []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, r := range append(roots, "/sys/fs/cgroup") {
		filepath.WalkDir(r, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.Contains(filepath.Base(path), p) {
				cgroups = append(cgroups, path)
				return filepath.SkipDir
			}
			return nil
		})
	}
	out["cgroups"] = cgroups
	out["frozen cgroups"] = frozenCgroups(p)
	var left []string
	for _, pid := range procs() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), p+"-") {
			left = append(left, strconv.Itoa(pid))
		}
	}
	out["processes"] = left
	recs, _ := os.ReadDir(filepath.Join(state, "desktops"))
	out["records"] = nil
	for _, r := range recs {
		out["records"] = append(out["records"], r.Name())
	}
	out["claims"] = nil
	for _, d := range []string{sessions.AddrClaimDir, sessions.IDClaimDir} {
		files, _ := os.ReadDir(d)
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(d, f.Name())); err == nil && strings.HasPrefix(string(b), p+"-") {
				out["claims"] = append(out["claims"], filepath.Join(d, f.Name())+" ("+strings.TrimSpace(string(b))+")")
			}
		}
	}
	return out
}
