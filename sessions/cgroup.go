package sessions

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
)

// requiredV1 are the cgroup v1 controllers a session needs: its limits
// (memory, pids, cpu), the devices it may open, and the freezer (SaveUpper
// freezes a session while it copies its files). A session also gets a
// directory in every other mounted hierarchy (cpuset, blkio, cpuacct,
// name=systemd, the hybrid unified one...), so that its cgroup namespace is
// rooted at its own cgroup everywhere: a hierarchy drums left out would
// show the desktop the host's whole tree there.
var requiredV1 = []string{"memory", "pids", "cpu", "devices", "freezer"}

// cpuPeriodUS is the CFS period; quotas are CPUs times it.
const cpuPeriodUS = 100000

// cgroupLayout says where session cgroups go on this host: under the
// engine's own cgroup (read from /proc/self/cgroup), in a directory named
// after the prefix, so a host's cgroup tree shows which process owns them.
type cgroupLayout struct {
	Version int
	// Bases maps a hierarchy to the prefix directory in it. A v1
	// hierarchy is named by its controllers ("cpu,cpuacct",
	// "name=systemd"), the hybrid cgroup2 one "unified"; v2 has one, "".
	Bases map[string]string
}

func (l cgroupLayout) plan(id string, lim Limits) CgroupPlan {
	p := CgroupPlan{
		Version:     l.Version,
		Dirs:        map[string]string{},
		MemoryBytes: lim.MemoryBytes,
		Pids:        lim.Pids,
		CPUQuotaUS:  int64(lim.CPUs * cpuPeriodUS),
		CPUPeriodUS: cpuPeriodUS,
	}
	for h, base := range l.Bases {
		p.Dirs[h] = filepath.Join(base, id)
	}
	return p
}

// dir is the session's directory in the hierarchy holding controller
// ("" on v2).
func (p CgroupPlan) dir(controller string) string {
	if p.Version == 2 {
		return p.Dirs[""]
	}
	for h, d := range p.Dirs {
		if slices.Contains(strings.Split(h, ","), controller) {
			return d
		}
	}
	return ""
}

// unified is the session's directory in the cgroup2 hierarchy: its only
// one on v2, the hybrid "unified" one on v1 (no controller enabled down
// to the session's), or "" when the host mounts none.
func (p CgroupPlan) unified() string { return p.dir("unified") }

// parseProcCgroup reads /proc/<pid>/cgroup into hierarchy -> path, where a
// v1 hierarchy is keyed by each of its controllers and v2 by "".
func parseProcCgroup(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		// 4:memory:/process_api/10c9   2:cpu,cpuacct:/   0::/user.slice
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("parse cgroup line %q", sc.Text())
		}
		if f[1] == "" {
			out[""] = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			out[c] = f[2]
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read cgroup file: %w", err)
	}
	return out, nil
}

// layoutV1 finds every mounted hierarchy, with its mount point and the
// engine's own path in it.
func layoutV1(prefix string, mounts []mountInfo, own map[string]string) (cgroupLayout, error) {
	l := cgroupLayout{Version: 1, Bases: map[string]string{}}
	for _, m := range mounts {
		var name, ownKey string
		switch m.FSType {
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(m.Super, ",") {
				if v1Option[o] || strings.HasPrefix(o, "release_agent=") {
					continue
				}
				ctrls = append(ctrls, o)
			}
			if len(ctrls) == 0 {
				continue
			}
			name, ownKey = strings.Join(ctrls, ","), ctrls[0]
		case "cgroup2":
			name, ownKey = "unified", ""
		default:
			continue
		}
		if _, dup := l.Bases[name]; dup {
			continue // mounted twice: the first mount is as good
		}
		path, ok := own[ownKey]
		if !ok {
			return l, fmt.Errorf("own cgroup in %s: not in /proc/self/cgroup: %w", name, ErrUnsupported)
		}
		l.Bases[name] = filepath.Join(m.Point, path, prefix)
	}
	for _, c := range requiredV1 {
		if (CgroupPlan{Version: 1, Dirs: l.Bases}).dir(c) == "" {
			return l, fmt.Errorf("cgroup v1 controller %s is not mounted: %w", c, ErrUnsupported)
		}
	}
	return l, nil
}

// v1Option are superblock options of a v1 cgroup mount that name no
// controller.
var v1Option = map[string]bool{"rw": true, "ro": true, "xattr": true, "noprefix": true, "clone_children": true, "cpuset_v2_mode": true, "favordynmods": true}

// layoutV2 puts session cgroups under the engine's own cgroup.
func layoutV2(prefix string, point string, own map[string]string) (cgroupLayout, error) {
	path, ok := own[""]
	if !ok {
		return cgroupLayout{}, fmt.Errorf("own cgroup: no v2 entry in /proc/self/cgroup: %w", ErrUnsupported)
	}
	return cgroupLayout{Version: 2, Bases: map[string]string{"": filepath.Join(point, path, prefix)}}, nil
}
