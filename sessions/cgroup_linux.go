package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

const cgroupRoot = "/sys/fs/cgroup"

// discoverCgroups finds where session cgroups go on this host.
func discoverCgroups(prefix string, mounts []mountInfo) (cgroupLayout, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return cgroupLayout{}, fmt.Errorf("read own cgroup: %w", err)
	}
	defer f.Close()
	own, err := parseProcCgroup(f)
	if err != nil {
		return cgroupLayout{}, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return cgroupLayout{}, fmt.Errorf("statfs %s: %w: %w", cgroupRoot, err, ErrUnsupported)
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return layoutV2(prefix, cgroupRoot, own)
	}
	return layoutV1(prefix, mounts, own)
}

// setupCgroup creates the session's cgroup directories and writes its
// limits, then makes its delegated cgroups (CgroupPlan.Delegated), which
// must not exist: Engine.setupCgroup clears them first. All else is
// idempotent (a reset reuses the directories).
func setupCgroup(layout cgroupLayout, p CgroupPlan) error {
	if p.Version == 2 {
		base := layout.Bases[""]
		if err := enableV2(base); err != nil {
			return err
		}
		dir := p.Dirs[""]
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		if err := writeFiles(dir, map[string]string{
			"memory.max": strconv.FormatInt(p.MemoryBytes, 10),
			"pids.max":   strconv.Itoa(p.Pids),
			"cpu.max":    fmt.Sprintf("%d %d", p.CPUQuotaUS, p.CPUPeriodUS),
		}); err != nil {
			return err
		}
		return delegate(p)
	}
	for h, dir := range p.Dirs { // v1
		ctrls := strings.Split(h, ",")
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", d, err)
			}
			// A new v1 cpuset has no CPUs or memory nodes: it takes
			// its parent's (the prefix directory's, in turn the host's).
			if slices.Contains(ctrls, "cpuset") {
				if err := inheritCpuset(d); err != nil {
					return err
				}
			}
		}
		for _, c := range ctrls {
			if err := writeLimits(dir, c, p); err != nil {
				return err
			}
		}
	}
	return delegate(p)
}

// writeLimits writes a v1 controller's settings of the session.
func writeLimits(dir, controller string, p CgroupPlan) error {
	switch controller {
	case "memory":
		return writeFiles(dir, map[string]string{"memory.limit_in_bytes": strconv.FormatInt(p.MemoryBytes, 10)})
	case "pids":
		return writeFiles(dir, map[string]string{"pids.max": strconv.Itoa(p.Pids)})
	case "cpu":
		return writeFiles(dir, map[string]string{"cpu.cfs_period_us": strconv.FormatInt(p.CPUPeriodUS, 10),
			"cpu.cfs_quota_us": strconv.FormatInt(p.CPUQuotaUS, 10)})
	case "devices":
		// Everything is refused, then the desktop's /dev allowed: a
		// device node anywhere else (an image's, a host's) cannot be
		// opened or made even by a process with the capabilities.
		if err := os.WriteFile(filepath.Join(dir, "devices.deny"), []byte("a"), 0); err != nil {
			return fmt.Errorf("write %s/devices.deny: %w", dir, err)
		}
		for _, rule := range allowedDevices {
			if err := os.WriteFile(filepath.Join(dir, "devices.allow"), []byte(rule), 0); err != nil {
				return fmt.Errorf("allow device %s in %s: %w", rule, dir, err)
			}
		}
	}
	return nil
}

// allowedDevices are the desktop's /dev (Plan.Root.Devices, the
// pseudo-terminal multiplexer and its terminals), in devices.allow's
// format: "m" lets init create the nodes.
var allowedDevices = []string{
	"c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", // null zero full random urandom
	"c 5:0 rwm", "c 5:2 rwm", "c 136:* rwm", // tty, ptmx, pts/*
}

// inheritCpuset copies a v1 cpuset's CPUs and memory nodes from its parent
// when it has none.
func inheritCpuset(dir string) error {
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		cur, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", dir, f, err)
		}
		if strings.TrimSpace(string(cur)) != "" {
			continue
		}
		parent, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		if err != nil {
			return fmt.Errorf("read %s/%s: %w", filepath.Dir(dir), f, err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), parent, 0); err != nil {
			return fmt.Errorf("write %s/%s: %w", dir, f, err)
		}
	}
	return nil
}

// enableV2 makes base (the prefix directory under the engine's own
// cgroup) able to hold limited children. cgroup v2 forbids processes in a
// cgroup that delegates controllers ("no internal processes"), so when the
// engine's own cgroup holds the engine itself, as a systemd service with
// Delegate=yes does (deploy/systemd/drums.service), the engine first moves
// into a leaf of it, drums.engine, the way container managers run under
// systemd: systemd owns the cgroups above, drums the delegated subtree.
// Other processes in that cgroup are refused with a message: drums does
// not move what it did not start.
func enableV2(base string) error {
	parent := filepath.Dir(base)
	const ctrl = "+memory +pids +cpu"
	control := filepath.Join(parent, "cgroup.subtree_control")
	err := os.WriteFile(control, []byte(ctrl), 0)
	if errors.Is(err, unix.EBUSY) {
		leaf := filepath.Join(parent, "drums.engine")
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", leaf, err)
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("move the engine into %s: %w", leaf, err)
		}
		err = os.WriteFile(control, []byte(ctrl), 0)
	}
	if err != nil {
		procs, _ := cgroupProcs(parent)
		return fmt.Errorf("enable controllers in %s (it must hold no processes but drums', which moves itself to drums.engine; "+
			"it holds %v; run drums in a cgroup delegated to it, e.g. systemd's Delegate=yes): %w: %w", parent, procs, err, ErrUnsupported)
	}
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create cgroup %s: %w", base, err)
	}
	if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(ctrl), 0); err != nil {
		return fmt.Errorf("enable controllers in %s: %w", base, err)
	}
	return nil
}

func writeFiles(dir string, files map[string]string) error {
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0); err != nil {
			return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

// setCPUWeight gives the session's cgroup the least CPU weight (v1
// cpu.shares 2, v2 cpu.weight 1), or back the kernel's default (1024,
// 100), which setupCgroup leaves: a standby starts on the CPU that nothing
// else wants, and takes its share once it is the session.
func setCPUWeight(p CgroupPlan, least bool) error {
	file, v := "cpu.shares", map[bool]string{true: "2", false: "1024"}[least]
	if p.Version == 2 {
		file, v = "cpu.weight", map[bool]string{true: "1", false: "100"}[least]
	}
	return writeFiles(p.dir("cpu"), map[string]string{file: v})
}

// placeCgroup moves pid (init, before it forks) into the session's cgroup
// in every v1 hierarchy; v1 has no clone-into-cgroup.
func placeCgroup(p CgroupPlan, pid int) error {
	for _, dir := range p.Dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("place init in %s: %w", dir, err)
		}
	}
	return nil
}

// cgroupProcs lists the processes in a cgroup directory.
func cgroupProcs(dir string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out, nil
}

// cgroupPollInterval is how often removal checks that a v1 cgroup
// emptied: v1 offers nothing to wait on. It must stay well below a
// removal's cost (tens of milliseconds).
const cgroupPollInterval = 2 * time.Millisecond

// removeCgroupDir kills what is left in dir and the cgroups under it (a
// desktop's user manager makes its own: init.scope, app.slice, one per
// unit) and removes them, deepest first; an absent directory is success.
// In the cgroup2 hierarchy (v2, or a v1 host's unified one) it kills the
// subtree with cgroup.kill, which nothing forking escapes, and waits on
// its cgroup.events; in a v1 hierarchy it kills by pid and polls.
func removeCgroupDir(ctx context.Context, dir string) error {
	_, err := os.Stat(filepath.Join(dir, "cgroup.events"))
	unified := err == nil // else v1, or dir already gone
	for {
		err := rmdirTree(dir)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		if unified {
			waited, err := killCgroup(ctx, dir)
			if err != nil {
				return fmt.Errorf("remove cgroup %s: %w", dir, err)
			}
			if waited {
				continue
			}
		}
		procs := treeProcs(dir)
		for _, pid := range procs {
			unix.Kill(pid, unix.SIGKILL)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove cgroup %s: %v: %w", dir, procs, ctx.Err())
		case <-time.After(cgroupPollInterval):
		}
	}
}

// killCgroup kills every process in a cgroup2 directory's subtree
// (cgroup.kill) and waits until cgroup.events says it is no longer
// populated. It returns false, and nil, where there is nothing to wait
// for: a v1 hierarchy's directory (no cgroup.kill), or one already empty
// (what keeps it then is no process, and a wait would not end).
func killCgroup(ctx context.Context, dir string) (bool, error) {
	events := filepath.Join(dir, "cgroup.events")
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return false, fmt.Errorf("inotify: %w", err)
	}
	f := os.NewFile(uintptr(fd), "inotify "+events)
	defer f.Close()
	if _, err := unix.InotifyAddWatch(fd, events, unix.IN_MODIFY); err != nil {
		return false, nil // a v1 hierarchy: no cgroup.events
	}
	if populated, err := cgroupPopulated(events); err != nil || !populated {
		return false, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
		return false, fmt.Errorf("kill: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	defer stop()
	buf := make([]byte, 4096)
	for {
		populated, err := cgroupPopulated(events)
		if err != nil || !populated {
			return true, err
		}
		if _, err := f.Read(buf); err != nil {
			if ctx.Err() != nil {
				return true, fmt.Errorf("wait for %s: %w", events, ctx.Err())
			}
			return true, fmt.Errorf("wait for %s: %w", events, err)
		}
	}
}

// cgroupPopulated reads a cgroup2 directory's cgroup.events: whether a
// process is in it or under it.
func cgroupPopulated(events string) (bool, error) {
	b, err := os.ReadFile(events)
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v != "0", nil
		}
	}
	return false, fmt.Errorf("%s: no populated line", events)
}

// rmdirTree removes dir and every cgroup under it, deepest first, and
// stops at the first that will not go (EBUSY while a process is in it).
// An absent directory is success.
func rmdirTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return err
	}
	return nil
}

// treeProcs lists the processes in dir and the cgroups under it.
func treeProcs(dir string) []int {
	procs, _ := cgroupProcs(dir)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			procs = append(procs, treeProcs(filepath.Join(dir, e.Name()))...)
		}
	}
	return procs
}

// clearDelegated removes the cgroups under a session's cgroup2
// directory (the delegated ones and what the last desktop's user manager
// made in them) before a desktop starts in it again: delegate makes them
// afresh, so nothing the last desktop's root did to them (modes, user.*
// extended attributes, enabled controllers) carries over.
func clearDelegated(ctx context.Context, p CgroupPlan) error {
	if len(p.Delegated) == 0 {
		return nil
	}
	dir := p.unified()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read cgroup %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeCgroupDir(ctx, filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}

// Bounds on the cgroups a desktop may make under its delegated ones (each
// costs kernel memory, and removal walks them): a fresh GNOME desktop has
// 8, a slice per kind and one per unit, the deepest 5 below its root
// (`find /sys/fs/cgroup -mindepth 1 -type d` in an osworld-gnome desktop
// 5 s after ready, 2026-12-02), as deep as the VM's application scopes. They are written
// in the session's directory, the host root's: the desktop cannot raise
// them.
const (
	cgroupMaxDescendants = 512
	cgroupMaxDepth       = 16
)

// delegate creates the session's delegated cgroups (CgroupPlan.Delegated)
// and gives each, with the files that move processes and enable
// controllers, to its owner, as systemd's CGROUP_DELEGATION.md has a
// delegating manager do; limits, the session's directory and every
// other file stay the host's.
func delegate(p CgroupPlan) error {
	if len(p.Delegated) == 0 {
		return nil
	}
	dir := p.unified()
	if err := writeFiles(dir, map[string]string{
		"cgroup.max.descendants": strconv.Itoa(cgroupMaxDescendants),
		"cgroup.max.depth":       strconv.Itoa(cgroupMaxDepth),
	}); err != nil {
		return err
	}
	for _, d := range p.Delegated {
		path := filepath.Join(dir, d.Path)
		if err := os.Mkdir(path, os.FileMode(d.Mode)); err != nil {
			return fmt.Errorf("create cgroup %s: %w", path, err)
		}
		for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
			if err := os.Lchown(filepath.Join(path, f), d.UID, d.GID); err != nil {
				return fmt.Errorf("delegate cgroup %s: %w", path, err)
			}
		}
	}
	return nil
}

// removeCgroup removes the session's directory in every hierarchy.
func removeCgroup(ctx context.Context, p CgroupPlan) error {
	var errs []error
	for _, dir := range p.Dirs {
		errs = append(errs, removeCgroupDir(ctx, dir))
	}
	return errors.Join(errs...)
}

// isFrozen reports whether the session's cgroup is frozen or freezing; a
// cgroup that does not exist is not.
func isFrozen(p CgroupPlan) (bool, error) {
	file := filepath.Join(p.Dirs[""], "cgroup.freeze")
	if p.Version != 2 {
		file = filepath.Join(p.dir("freezer"), "freezer.state")
	}
	b, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	s := strings.TrimSpace(string(b))
	return s == "1" || s == "FROZEN" || s == "FREEZING", nil
}

// freeze stops (or thaws) every process of the session, waiting until the
// kernel says the cgroup is frozen.
func freeze(ctx context.Context, p CgroupPlan, frozen bool) error {
	var file, want, state string
	if p.Version == 2 {
		dir := p.Dirs[""]
		file, state = filepath.Join(dir, "cgroup.freeze"), filepath.Join(dir, "cgroup.events")
		want = map[bool]string{true: "1", false: "0"}[frozen]
	} else {
		file = filepath.Join(p.dir("freezer"), "freezer.state")
		state = file
		want = map[bool]string{true: "FROZEN", false: "THAWED"}[frozen]
	}
	if err := os.WriteFile(file, []byte(want), 0); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	for {
		b, err := os.ReadFile(state)
		if err != nil {
			return fmt.Errorf("read %s: %w", state, err)
		}
		s := string(b)
		if p.Version == 2 {
			if strings.Contains(s, "frozen "+want) {
				return nil
			}
		} else if strings.TrimSpace(s) == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to read %s: %w", state, want, ctx.Err())
		case <-time.After(cgroupPollInterval):
		}
	}
}
