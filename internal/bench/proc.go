package bench

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/drums-dev/drums/sessions"
)

// procfs reads what a desktop's processes cost from the host's /proc and
// the desktop's cgroups (sessions.Plan.Cgroup); root is "/proc" except in
// tests, which lay out a fake one.
type procfs struct{ root string }

// userHZ is the unit of utime and stime in /proc/PID/stat: USER_HZ, 100
// on every architecture Linux builds for with a stable ABI.
const userHZ = 100

// ProcCPU is one process's CPU time so far.
type ProcCPU struct {
	Comm string
	// Start is the process's start time in clock ticks after boot: with
	// the PID it names one process, even if the PID is reused.
	Start uint64
	CPU   time.Duration
}

// CPUSample is what a desktop's processes have used so far: the cgroup's
// total (processes that exited included) and each live process.
type CPUSample struct {
	Total time.Duration
	Procs map[int]ProcCPU
}

// cgroupDir is the session's directory in the hierarchy of controller (v1),
// or its one directory (v2).
func cgroupDir(c sessions.CgroupPlan, controller string) (string, error) {
	if c.Version == 2 {
		if d := c.Dirs[""]; d != "" {
			return d, nil
		}
		return "", errors.New("the session's plan has no cgroup v2 directory")
	}
	for h, d := range c.Dirs {
		for _, ctrl := range strings.Split(h, ",") {
			if ctrl == controller {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("the session's plan has no cgroup of the %s controller", controller)
}

// cgroupCPU is the CPU time of everything that ran in the session's
// cgroup, nested cgroups included.
func cgroupCPU(c sessions.CgroupPlan) (time.Duration, error) {
	dir, err := cgroupDir(c, "cpuacct")
	if err != nil {
		return 0, err
	}
	if c.Version == 2 {
		data, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
		if err != nil {
			return 0, fmt.Errorf("read cgroup cpu time: %w", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "usage_usec" {
				us, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("parse %s/cpu.stat: %w", dir, err)
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
		return 0, fmt.Errorf("%s/cpu.stat has no usage_usec", dir)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage"))
	if err != nil {
		return 0, fmt.Errorf("read cgroup cpu time: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s/cpuacct.usage: %w", dir, err)
	}
	return time.Duration(ns), nil
}

// cgroupPIDs lists the host PIDs in the session's cgroup and the cgroups
// below it (what runs in the desktop may make its own).
func cgroupPIDs(c sessions.CgroupPlan) ([]int, error) {
	dir, err := cgroupDir(c, "pids")
	if err != nil {
		return nil, err
	}
	var pids []int
	err = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && errors.Is(err, fs.ErrNotExist) {
				return nil // a nested cgroup removed meanwhile
			}
			return err
		}
		if e.IsDir() || e.Name() != "cgroup.procs" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil // removed meanwhile
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the session's processes: %w", err)
	}
	return pids, nil
}

// stat reads a process's name, start time and CPU time from
// /proc/PID/stat. The name is in parentheses and may hold spaces and
// parentheses itself: the fields after it start after the last ')'.
func (p procfs) stat(pid int) (ProcCPU, error) {
	data, err := os.ReadFile(filepath.Join(p.root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcCPU{}, err
	}
	s := string(data)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return ProcCPU{}, fmt.Errorf("parse /proc/%d/stat: no name", pid)
	}
	// After the name: state (field 3), then field n at index n-3.
	f := strings.Fields(s[end+1:])
	if len(f) < 20 {
		return ProcCPU{}, fmt.Errorf("parse /proc/%d/stat: %d fields after the name", pid, len(f))
	}
	var v [3]uint64
	for i, idx := range []int{11, 12, 19} { // utime (14), stime (15), starttime (22)
		if v[i], err = strconv.ParseUint(f[idx], 10, 64); err != nil {
			return ProcCPU{}, fmt.Errorf("parse /proc/%d/stat: %w", pid, err)
		}
	}
	return ProcCPU{Comm: s[open+1 : end], Start: v[2], CPU: time.Duration(v[0]+v[1]) * time.Second / userHZ}, nil
}

// cpu samples the session's CPU time: its cgroup's total and each process
// alive now.
func (p procfs) cpu(c sessions.CgroupPlan) (CPUSample, error) {
	total, err := cgroupCPU(c)
	if err != nil {
		return CPUSample{}, err
	}
	pids, err := cgroupPIDs(c)
	if err != nil {
		return CPUSample{}, err
	}
	s := CPUSample{Total: total, Procs: map[int]ProcCPU{}}
	for _, pid := range pids {
		if st, err := p.stat(pid); err == nil { // else it exited meanwhile
			s.Procs[pid] = st
		}
	}
	return s, nil
}

// cpuByProcess splits the CPU time from before to after by process name.
// A process alive at both counts its difference, one started in between
// all of its time; what processes that ended in between used is the
// cgroup's total less the rest, under endedProcs (the clock-tick rounding
// of the per-process times makes it approximate; it is never negative).
func cpuByProcess(before, after CPUSample) map[string]time.Duration {
	out := map[string]time.Duration{}
	var sum time.Duration
	for pid, a := range after.Procs {
		d := a.CPU
		if b, ok := before.Procs[pid]; ok && b.Start == a.Start {
			d -= b.CPU
		}
		out[a.Comm] += d
		sum += d
	}
	if rest := after.Total - before.Total - sum; rest > 0 {
		out[endedProcs] += rest
	}
	return out
}

// endedProcs names the CPU time of processes that ended during a loop
// (upstream: the python3 that runs each /execute).
const endedProcs = "(ended during the loop)"

// ProcMem is what processes map, from /proc/PID/smaps_rollup, in KiB:
// Rss counts every page mapped, Pss divides each page by the processes
// mapping it, split into anonymous memory, file pages (the image's
// libraries and data, shared by every desktop of the image through the
// page cache) and shared memory (tmpfs and SysV/POSIX segments: Xvfb's
// MIT-SHM images, Chromium's shared memory between its processes); KSM is
// what of Rss is merged pages.
type ProcMem struct {
	Procs    int   `json:"procs"`
	Rss      int64 `json:"rss_kib"`
	Pss      int64 `json:"pss_kib"`
	PssAnon  int64 `json:"pss_anon_kib"`
	PssFile  int64 `json:"pss_file_kib"`
	PssShmem int64 `json:"pss_shmem_kib"`
	KSM      int64 `json:"ksm_kib"`
}

func (m *ProcMem) add(o ProcMem) {
	m.Procs += o.Procs
	m.Rss += o.Rss
	m.Pss += o.Pss
	m.PssAnon += o.PssAnon
	m.PssFile += o.PssFile
	m.PssShmem += o.PssShmem
	m.KSM += o.KSM
}

// per is m's mean over n.
func (m ProcMem) per(n int64) ProcMem {
	return ProcMem{Procs: int(int64(m.Procs) / n), Rss: m.Rss / n, Pss: m.Pss / n, PssAnon: m.PssAnon / n, PssFile: m.PssFile / n,
		PssShmem: m.PssShmem / n, KSM: m.KSM / n}
}

// parseRollup reads one process's smaps_rollup. KSM: is absent before
// Linux 6.6 (zero then).
func parseRollup(text string) (ProcMem, error) {
	m := ProcMem{Procs: 1}
	for _, f := range []struct {
		key      string
		v        *int64
		optional bool
	}{{"Rss:", &m.Rss, false}, {"Pss:", &m.Pss, false}, {"Pss_Anon:", &m.PssAnon, false}, {"Pss_File:", &m.PssFile, false},
		{"Pss_Shmem:", &m.PssShmem, false}, {"KSM:", &m.KSM, true}} {
		v, ok := meminfoField(text, f.key)
		if !ok && !f.optional {
			return ProcMem{}, fmt.Errorf("no %s", strings.TrimSuffix(f.key, ":"))
		}
		*f.v = v
	}
	return m, nil
}

// memory is what the session's processes map, by process name.
func (p procfs) memory(c sessions.CgroupPlan) (map[string]ProcMem, error) {
	pids, err := cgroupPIDs(c)
	if err != nil {
		return nil, err
	}
	out := map[string]ProcMem{}
	for _, pid := range pids {
		dir := filepath.Join(p.root, strconv.Itoa(pid))
		data, err := os.ReadFile(filepath.Join(dir, "smaps_rollup"))
		if err != nil {
			continue // exited meanwhile
		}
		comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
		m, err := parseRollup(string(data))
		if err != nil {
			return nil, fmt.Errorf("parse /proc/%d/smaps_rollup: %w", pid, err)
		}
		name := strings.TrimSpace(string(comm))
		sum := out[name]
		sum.add(m)
		out[name] = sum
	}
	return out, nil
}

// memAvailable is the host's MemAvailable, in KiB.
func (p procfs) memAvailable() (int64, error) {
	data, err := os.ReadFile(filepath.Join(p.root, "meminfo"))
	if err != nil {
		return 0, fmt.Errorf("read meminfo: %w", err)
	}
	kb, ok := meminfoField(string(data), "MemAvailable:")
	if !ok {
		return 0, errors.New("meminfo has no MemAvailable")
	}
	return kb, nil
}

// meminfoField is the number after key in a "Key: N kB" listing.
func meminfoField(text, key string) (int64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			v, err := strconv.ParseInt(f[1], 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// HostCPU is the host's CPU time so far, all CPUs together, from the
// first line of /proc/stat.
type HostCPU struct {
	// Busy is user, nice, system, irq and softirq time; IOWait and Steal
	// are idle time waiting for I/O and time the hypervisor gave to
	// others; Total is everything, idle included.
	Busy, IOWait, Steal, Total time.Duration
}

// hostCPU reads the host's CPU time.
func (p procfs) hostCPU() (HostCPU, error) {
	data, err := os.ReadFile(filepath.Join(p.root, "stat"))
	if err != nil {
		return HostCPU{}, fmt.Errorf("read host cpu time: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return HostCPU{}, fmt.Errorf("parse %s/stat: first line %q", p.root, line)
	}
	var v [8]time.Duration // user nice system idle iowait irq softirq steal
	for i := range v {
		n, err := strconv.ParseUint(f[i+1], 10, 64)
		if err != nil {
			return HostCPU{}, fmt.Errorf("parse %s/stat: %w", p.root, err)
		}
		v[i] = time.Duration(n) * time.Second / userHZ
	}
	h := HostCPU{Busy: v[0] + v[1] + v[2] + v[5] + v[6], IOWait: v[4], Steal: v[7]}
	h.Total = h.Busy + v[3] + h.IOWait + h.Steal
	return h, nil
}

func (h HostCPU) sub(b HostCPU) HostCPU {
	return HostCPU{Busy: h.Busy - b.Busy, IOWait: h.IOWait - b.IOWait, Steal: h.Steal - b.Steal, Total: h.Total - b.Total}
}
