package kubetest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/testutil"
)

// PauseImage is the pod sandbox image the nodes' containerd uses; the
// test builds it and imports it (Import) before the first pod.
const PauseImage = "drums.local/pause:1"

// holderScript runs as the node's namespace holder, in new network and
// mount namespaces (mounts slave to the host's: nothing mounted inside
// reaches the host). It puts a tmpfs over each standard directory and the
// node's own directory over the cluster's NodeLocal, makes the mounts
// shared among the node's own processes, and says "ready".
const holderScript = `set -e
for d in "$@"; do mount -t tmpfs -o mode=0755 kubetest "$d"; done
mount --bind "$NODE_LOCAL_SRC" "$NODE_LOCAL_DST"
mount --make-rshared /
ip link set lo up
echo ready
exec sleep infinity`

// nodeUp starts node n: its namespaces and veth, containerd, the kubelet
// and kube-proxy. Its teardown, registered here, kills every process of
// the node (pods and what they started included) before the namespaces
// go, and removes the node's cgroups.
func (c *Cluster) nodeUp(t *testing.T, n *Node) {
	t.Helper()
	if err := os.MkdirAll(n.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := makeCgroups(n.cgroup); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := removeCgroups(n.cgroup); err != nil {
			t.Error(err)
		}
	})
	if err := os.MkdirAll(filepath.Join(n.Dir, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	hold := testutil.Command([]string{"NODE_LOCAL_SRC=" + filepath.Join(n.Dir, "local"), "NODE_LOCAL_DST=" + c.NodeLocal}, "unshare", append([]string{"--net", "--mount", "--propagation", "slave", "sh", "-c", holderScript, "sh"}, standardDirs...)...)
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n.holder = testutil.StartCmd(t, hold)
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("node %s: namespace holder: %q %v", n.Name, line, err)
	}
	pid := strconv.Itoa(hold.Process.Pid)
	run(t, "ip", "link", "add", n.veth, "type", "veth", "peer", "name", "eth0", "netns", pid)
	// The namespace may outlive its processes for a while (a reference
	// the kernel drops late): the veth goes explicitly, after them.
	t.Cleanup(func() {
		out, err := exec.Command("ip", "link", "del", n.veth).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "Cannot find device") {
			t.Errorf("delete veth %s: %v %s", n.veth, err, out)
		}
	})
	run(t, "ip", "link", "set", n.veth, "master", c.bridge, "up")
	in := func(args ...string) { run(t, "nsenter", append([]string{"-t", pid, "-n", "--"}, args...)...) }
	in("ip", "addr", "add", netip.PrefixFrom(n.Address, 24).String(), "dev", "eth0")
	in("ip", "link", "set", "eth0", "up")
	in("ip", "route", "add", "default", "via", c.apiserver.String())
	for _, o := range c.Nodes {
		if o != n {
			in("ip", "route", "add", o.PodCIDR.String(), "via", o.Address.String())
		}
	}
	for name, data := range map[string]string{
		"containerd.toml":      containerdConfig(n),
		"cni/10-kubetest.conf": cniConfig(n),
		"kubelet.yaml":         kubeletConfig(c, n),
		"kube-proxy.yaml":      kubeProxyConfig(c, n),
	} {
		p := filepath.Join(n.Dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The node's processes die before its cgroups are removed (this
	// cleanup is registered after removeCgroups', so it runs first).
	t.Cleanup(func() {
		if err := c.killNode(n); err != nil {
			t.Error(err)
		}
	})
	c.startIn(t, n, "containerd", "containerd", "--config", filepath.Join(n.Dir, "containerd.toml"))
	// The kubelet exits when the runtime does not answer: wait for it.
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := poll(ctx, func() error {
		_, err := n.Exec(ctx, "ctr", "--address", n.Socket, "version")
		return err
	}); err != nil {
		t.Fatalf("node %s: containerd never answered: %v", n.Name, err)
	}
	c.startIn(t, n, "kubelet", filepath.Join(c.Bin, "kubelet"), "--config", filepath.Join(n.Dir, "kubelet.yaml"),
		"--kubeconfig", c.Kubeconfig, "--root-dir", filepath.Join(n.Dir, "kubelet"),
		"--hostname-override", n.Name, "--node-ip", n.Address.String())
	c.startIn(t, n, "kube-proxy", filepath.Join(c.Bin, "kube-proxy"), "--config", filepath.Join(n.Dir, "kube-proxy.yaml"))
}

// startIn runs a process of node n inside the node's namespaces.
func (c *Cluster) startIn(t *testing.T, n *Node, name, path string, args ...string) {
	t.Helper()
	ns := []string{"-t", strconv.Itoa(n.holder.Cmd.Process.Pid), "-n", "-m", "--", path}
	c.startCmd(t, n.Name+"-"+name, testutil.Command(nil, "nsenter", append(ns, args...)...))
}

// Exec runs a command in node n's namespaces (its network, mounts and so
// its containerd socket and pods' addresses) and returns its output.
func (n *Node) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	ns := []string{"-t", strconv.Itoa(n.holder.Cmd.Process.Pid), "-n", "-m", "--", name}
	out, err := exec.CommandContext(ctx, "nsenter", append(ns, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%s %s on %s: %w: %s", name, strings.Join(args, " "), n.Name, err, out)
	}
	return out, nil
}

// Import imports an image archive (OCI or docker) into the node's
// containerd, where the kubelet finds it (namespace k8s.io).
func (n *Node) Import(ctx context.Context, archive string) error {
	_, err := n.Exec(ctx, "ctr", "--address", n.Socket, "-n", "k8s.io", "images", "import", archive)
	return err
}

// killNode kills every process of node n: those in its network namespace
// (containerd, its shims, the kubelet, kube-proxy, host-network pods) and
// those in its cgroups (every pod's, and what they started in namespaces
// of their own), until none is left; then the holder, so the namespaces
// and every mount in them go.
func (c *Cluster) killNode(n *Node) error {
	if n.holder == nil || n.holder.Cmd.Process == nil {
		return nil
	}
	netns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", n.holder.Cmd.Process.Pid))
	if err != nil {
		return fmt.Errorf("node %s: read its network namespace: %w", n.Name, err)
	}
	holder := n.holder.Cmd.Process.Pid
	err = killUntilGone(func() []int {
		pids := cgroupPids(n.cgroup)
		for _, p := range procs() {
			if p == holder {
				continue
			}
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", p)); err == nil && l == netns {
				pids = append(pids, p)
			}
		}
		return pids
	})
	n.holder.Kill()
	if err != nil {
		return fmt.Errorf("node %s: %w", n.Name, err)
	}
	return nil
}

// killUntilGone SIGKILLs what list returns until it returns nothing
// (containerd's shims start processes while they die), waiting on each
// killed process's pidfd for its exit. A pid is killed and waited for once
// a round however often list names it (cgroupPids names a process once per
// cgroup hierarchy). Bounded: a process that outlives 30 s of kills is an
// error.
func killUntilGone(list func() []int) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		pids := list()
		slices.Sort(pids)
		pids = slices.Compact(pids)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v outlived 30 s of SIGKILL", pids)
		}
		var fds []unix.PollFd
		for _, p := range pids {
			fd, err := unix.PidfdOpen(p, 0)
			if err != nil {
				continue // gone already
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
		// A pidfd turns readable when its process exits.
		for _, f := range fds {
			_, _ = unix.Poll([]unix.PollFd{f}, int(max(time.Until(deadline), 0).Milliseconds()))
			unix.Close(int(f.Fd))
		}
	}
}

func procs() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// cgroupHierarchies are the host's mounted cgroup hierarchies.
func cgroupHierarchies() []string {
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var out []string
	for _, e := range entries {
		p := filepath.Join("/sys/fs/cgroup", e.Name())
		if _, err := os.Stat(filepath.Join(p, "cgroup.procs")); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// makeCgroups makes the kubelet's cgroup root in every hierarchy (cpuset's
// with its parent's CPUs and memory nodes, which a new one lacks).
func makeCgroups(root string) error {
	for _, h := range cgroupHierarchies() {
		d := filepath.Join(h, root)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("make cgroup %s: %w", d, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(d, f), v, 0o644); err != nil {
					return fmt.Errorf("set %s of %s: %w", f, d, err)
				}
			}
		}
	}
	return nil
}

// cgroupPids lists the processes in root's subtree in every hierarchy.
func cgroupPids(root string) []int {
	var out []int
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// removeCgroups removes root's subtree in every hierarchy, deepest first;
// an absent one is success.
func removeCgroups(root string) error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
