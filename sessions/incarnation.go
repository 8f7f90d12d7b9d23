package sessions

import "strings"

// standbySuffix names the second of a session's two incarnations' cgroup
// directories, upper and work directories and control socket.
const standbySuffix = ".s"

// otherIncarnation is p under the names of the session's other
// incarnation.
func otherIncarnation(p *Plan) *Plan {
	toggle := func(path string) string {
		if s, ok := strings.CutSuffix(path, standbySuffix); ok {
			return s
		}
		return path + standbySuffix
	}
	q := *p
	q.Cgroup.Dirs = map[string]string{}
	for h, d := range p.Cgroup.Dirs {
		q.Cgroup.Dirs[h] = toggle(d)
	}
	q.Root.Control = toggle(p.Root.Control)
	if p.Root.UpperDir != "" {
		q.Root.UpperDir, q.Root.WorkDir = toggle(p.Root.UpperDir), toggle(p.Root.WorkDir)
	}
	return &q
}

// cgroupID is the session id a cgroup directory's name belongs to.
func cgroupID(name string) string { return strings.TrimSuffix(name, standbySuffix) }

// StandbyCgroup is the cgroup of the standby of p's session
// (Config.Standby: standby_linux.go), whose processes are not in p's; it
// holds none when the session has no standby.
func StandbyCgroup(p *Plan) CgroupPlan { return otherIncarnation(p).Cgroup }
