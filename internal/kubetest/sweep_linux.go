package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
)

var prefixRE = regexp.MustCompile(`^zk[a-z0-9]{5}$`)

// Sweep removes what runs that died left: for each run directory under
// Root whose lock is free, the processes that name it on their command
// line or live in its nodes' cgroups, those cgroups, its links, the
// sysctls it saved, the standard directories it made, and the directory.
func Sweep() error {
	entries, err := os.ReadDir(Root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !prefixRE.MatchString(e.Name()) {
			continue
		}
		dir := filepath.Join(Root, e.Name())
		lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			lock.Close()
			continue // a live run
		}
		errs = append(errs, sweepRun(e.Name(), dir))
		lock.Close()
	}
	return errors.Join(errs...)
}

func sweepRun(prefix, dir string) error {
	var errs []error
	// The run's node cgroups, each once: a node has one in every
	// hierarchy, and cgroupPids and removeCgroups cover them all.
	var cgroups []string
	for _, h := range cgroupHierarchies() {
		matches, _ := filepath.Glob(filepath.Join(h, prefix+"n*"))
		for _, m := range matches {
			if cg := "/" + filepath.Base(m); !slices.Contains(cgroups, cg) {
				cgroups = append(cgroups, cg)
			}
		}
	}
	errs = append(errs, killUntilGone(func() []int {
		var pids []int
		for _, cg := range cgroups {
			pids = append(pids, cgroupPids(cg)...)
		}
		for _, p := range procs() {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			if strings.Contains(string(b), dir+"/") {
				pids = append(pids, p)
			}
		}
		return pids
	}))
	for _, cg := range cgroups {
		errs = append(errs, removeCgroups(cg))
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
			if strings.HasPrefix(name, prefix) {
				if out, err := exec.Command("ip", "link", "del", name).CombinedOutput(); err != nil {
					errs = append(errs, fmt.Errorf("delete link %s: %v %s", name, err, out))
				}
			}
		}
	}
	if saved, err := readSysctls(filepath.Join(dir, "sysctls")); err == nil {
		errs = append(errs, restoreSysctls(saved))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "made-dirs")); err == nil {
		for _, d := range strings.Fields(string(b)) {
			_ = os.Remove(d)
		}
	}
	errs = append(errs, os.RemoveAll(dir))
	return errors.Join(errs...)
}
