package kubetest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
)

// EnvTier2 turns tier-2 tests on: a real Kubernetes cluster on this host.
// .ci/run sets it; `make test-kubernetes` runs them alone.
const EnvTier2 = "DRUMS_TIER2"

// Version is the Kubernetes release the tests run. It is pinned: the
// kubelet runs here on cgroup v1 (failCgroupV1: false), which later
// releases may drop.
const Version = "v1.37.2"

// Root holds one directory per run, named after the run's prefix, with a
// lock held while the run lives; Sweep removes what crashed runs left.
const Root = "/tmp/drums-kubetest"

// The binaries of Debian's packages a cluster runs on (scripts/deps
// kubernetes), and the CNI plugins' directory.
var debianBinaries = []string{"etcd", "containerd", "containerd-shim-runc-v2", "runc", "ctr", "nft", "ip", "nsenter", "unshare"}

const cniDir = "/usr/lib/cni"

// startTimeout bounds the cluster's start, a node's readiness included:
// about 6 s on an idle 2-core machine, far more under a test suite's load.
const startTimeout = 5 * time.Minute

// Require skips t unless tier-2 tests are enabled, and fails it when they
// are but the host lacks root, tier 1 or a binary the cluster needs.
func Require(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvTier2) != "1" {
		t.Skipf("tier-2 test: set %s=1 (.ci/run and make test-kubernetes do) to run it against a real Kubernetes cluster", EnvTier2)
	}
	testutil.RequireRoot(t, debianBinaries...)
	for _, p := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniDir, p)); err != nil {
			t.Fatalf("tier-2 test needs the CNI plugin %s (scripts/deps kubernetes): %v", p, err)
		}
	}
}

// Options shape a cluster.
type Options struct {
	// Nodes is the number of nodes, each in namespaces of its own (1 or 2).
	Nodes int
}

// Cluster is a running cluster.
type Cluster struct {
	Prefix string // zk + 5 random letters or digits: every host-global name starts with it
	Dir    string // all state, under Root
	Bin    string // Kubernetes' binaries
	// Kubeconfig is an admin kubeconfig (a static token in system:masters).
	Kubeconfig string
	Nodes      []*Node
	// NodeLocal is a directory whose content is each node's own, as a
	// node's disk is: for hostPath volumes of a DaemonSet, which name one
	// path for every node, while the nodes share this host's files.
	NodeLocal string
	// ServiceCIDR is the range of Service addresses; PodCIDR covers every
	// node's pod range.
	ServiceCIDR, PodCIDR netip.Prefix
	apiserver            netip.Addr // the bridge's address
	bridge               string
}

// Node is one node: containerd, the kubelet and kube-proxy in a network
// and mount namespace of its own, held by a process that dies with the
// test binary.
type Node struct {
	Name    string
	Address netip.Addr // on the cluster's bridge: the node's InternalIP
	PodCIDR netip.Prefix
	Dir     string
	// Socket is containerd's.
	Socket string
	holder *testutil.Proc
	veth   string
	cgroup string // the kubelet's cgroup root: /PREFIXnI
}

// Start brings a cluster up and registers its removal, which runs whether
// the test passes or not. It returns once every node is Ready.
func Start(t *testing.T, o Options) *Cluster {
	t.Helper()
	Require(t)
	if o.Nodes < 1 || o.Nodes > 2 {
		t.Fatalf("kubetest: %d nodes: want 1 or 2", o.Nodes)
	}
	if err := Sweep(); err != nil {
		t.Logf("sweep of crashed runs: %v", err)
	}
	bin := Binaries(t)
	c := &Cluster{Prefix: "zk" + testutil.RandomName(5), Bin: bin}
	c.Dir = filepath.Join(Root, c.Prefix)
	c.NodeLocal = filepath.Join(c.Dir, "node-local")
	if err := os.MkdirAll(c.NodeLocal, 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := os.OpenFile(filepath.Join(c.Dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(c.Dir); err != nil {
			t.Errorf("remove %s: %v", c.Dir, err)
		}
		lock.Close()
	})
	// The kubelet sets these kernel-wide; they are put back at the end.
	saved, err := saveSysctls(filepath.Join(c.Dir, "sysctls"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restoreSysctls(saved); err != nil {
			t.Error(err)
		}
	})
	made, err := makeStandardDirs()
	if werr := os.WriteFile(filepath.Join(c.Dir, "made-dirs"), []byte(strings.Join(made, "\n")), 0o600); werr != nil {
		t.Error(werr)
	}
	t.Cleanup(func() {
		for _, d := range made {
			if err := os.Remove(d); err != nil {
				t.Errorf("remove %s: %v", d, err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	t0 := time.Now()
	c.addresses(t, o.Nodes)
	c.bridgeUp(t)
	c.controlPlane(t, ctx)
	for _, n := range c.Nodes {
		c.nodeUp(t, n)
	}
	// Each node's teardown runs before the control plane's (cleanups run
	// last-registered first): its kubelet must not outlive the apiserver.
	for _, n := range c.Nodes {
		c.waitRegistered(t, ctx, n)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Ready", "node", "--all", "--timeout="+startTimeout.String()); err != nil {
		t.Fatalf("nodes not Ready: %v\n%s", err, out)
	}
	t.Logf("kubetest: %d node(s) Ready %.1fs after the cluster's start (load %s)", o.Nodes, time.Since(t0).Seconds(), compat.LoadAverages(3))
	c.importPause(t, ctx)
	return c
}

// addresses picks the run's /16 of 172.16.0.0/12, one no route of the
// host's touches: the bridge is .0.1, node i .0.(10+i) with pods in
// .(16(i+1)).0/20, Services in .128.0/20.
func (c *Cluster) addresses(t *testing.T, nodes int) {
	t.Helper()
	out, err := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		t.Fatal(err)
	}
	var routes []netip.Prefix
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		dst := f[0]
		if dst == "local" || dst == "broadcast" || dst == "unicast" {
			if len(f) < 2 {
				continue
			}
			dst = f[1]
		}
		if p, err := netip.ParsePrefix(dst); err == nil {
			routes = append(routes, p)
		} else if a, err := netip.ParseAddr(dst); err == nil {
			routes = append(routes, netip.PrefixFrom(a, 32))
		}
	}
	v, _ := rand.Int(rand.Reader, big.NewInt(16))
	for i := range 16 {
		b := byte(16 + (int(v.Int64())+i)%16)
		net := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, b, 0, 0}), 16)
		if overlapsAny(net, routes) {
			continue
		}
		c.apiserver = netip.AddrFrom4([4]byte{172, b, 0, 1})
		c.ServiceCIDR = netip.PrefixFrom(netip.AddrFrom4([4]byte{172, b, 128, 0}), 20)
		c.PodCIDR = netip.PrefixFrom(netip.AddrFrom4([4]byte{172, b, 0, 0}), 17)
		for i := range nodes {
			n := &Node{
				Name:    fmt.Sprintf("%sn%d", c.Prefix, i),
				Address: netip.AddrFrom4([4]byte{172, b, 0, byte(10 + i)}),
				PodCIDR: netip.PrefixFrom(netip.AddrFrom4([4]byte{172, b, byte(16 * (i + 1)), 0}), 20),
				Dir:     filepath.Join(c.Dir, fmt.Sprintf("n%d", i)),
			}
			n.Socket = filepath.Join(n.Dir, "containerd.sock")
			n.veth = n.Name
			n.cgroup = "/" + n.Name
			c.Nodes = append(c.Nodes, n)
		}
		return
	}
	t.Fatal("kubetest: every /16 of 172.16.0.0/12 overlaps a route of the host's")
}

func overlapsAny(p netip.Prefix, ps []netip.Prefix) bool {
	for _, q := range ps {
		if q.Bits() > 0 && p.Overlaps(q) {
			return true
		}
	}
	return false
}

// run runs a command that must succeed.
func run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// bridgeUp makes the bridge the control plane listens on and the nodes'
// veths join: a bridge with no port of the host's, so its traffic stays
// between the namespaces this run made.
func (c *Cluster) bridgeUp(t *testing.T) {
	t.Helper()
	c.bridge = c.Prefix + "b"
	run(t, "ip", "link", "add", c.bridge, "type", "bridge")
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "link", "del", c.bridge).CombinedOutput(); err != nil {
			t.Errorf("delete bridge %s: %v %s", c.bridge, err, out)
		}
	})
	run(t, "ip", "addr", "add", netip.PrefixFrom(c.apiserver, 24).String(), "dev", c.bridge)
	run(t, "ip", "link", "set", c.bridge, "up")
}

// controlPlane starts etcd, the apiserver, the controller manager and the
// scheduler, and waits for the apiserver to be ready.
func (c *Cluster) controlPlane(t *testing.T, ctx context.Context) {
	t.Helper()
	tok := make([]byte, 16)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := filepath.Join(c.Dir, "sa.key")
	files := map[string]string{
		"token":       token + "\n",
		"tokens.csv":  token + `,admin,admin,"system:masters"` + "\n",
		"sa.key":      string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})),
		"kubeconfig":  kubeconfig(c.apiserver, token),
		"resolv.conf": "nameserver 127.0.0.1\n",
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	a := c.apiserver.String()
	c.start(t, "etcd", "etcd", "--name", c.Prefix, "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", "http://"+a+":2379", "--advertise-client-urls", "http://"+a+":2379",
		"--listen-peer-urls", "http://"+a+":2380", "--initial-advertise-peer-urls", "http://"+a+":2380",
		"--initial-cluster", c.Prefix+"=http://"+a+":2380", "--listen-metrics-urls", "http://"+a+":2381")
	c.start(t, "kube-apiserver", filepath.Join(c.Bin, "kube-apiserver"),
		"--etcd-servers", "http://"+a+":2379", "--bind-address", a, "--advertise-address", a, "--secure-port", "6443",
		"--cert-dir", filepath.Join(c.Dir, "apiserver"), "--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode", "AlwaysAllow", "--allow-privileged", "--service-cluster-ip-range", c.ServiceCIDR.String(),
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc", "--profiling=false",
		"--kubelet-preferred-address-types=InternalIP")
	c.waitReady(t, ctx)
	c.start(t, "kube-controller-manager", filepath.Join(c.Bin, "kube-controller-manager"),
		"--kubeconfig", c.Kubeconfig, "--bind-address", a, "--leader-elect=false", "--profiling=false",
		"--service-account-private-key-file", saKey, "--use-service-account-credentials=false")
	c.start(t, "kube-scheduler", filepath.Join(c.Bin, "kube-scheduler"),
		"--kubeconfig", c.Kubeconfig, "--bind-address", a, "--leader-elect=false", "--profiling=false")
}

func kubeconfig(server netip.Addr, token string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: https://%s:6443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context:
    cluster: kubetest
    user: admin
current-context: kubetest
`, server, token)
}

// start runs a control-plane process in the host's namespaces; its log
// goes to DIR/NAME.log and, when the test fails, to the test's log.
func (c *Cluster) start(t *testing.T, name, path string, args ...string) *testutil.Proc {
	t.Helper()
	return c.startCmd(t, name, testutil.Command(nil, path, args...))
}

func (c *Cluster) startCmd(t *testing.T, name string, cmd *exec.Cmd) *testutil.Proc {
	t.Helper()
	logPath := filepath.Join(c.Dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	p := testutil.StartCmd(t, cmd)
	t.Cleanup(func() {
		f.Close()
		if t.Failed() {
			t.Logf("last lines of %s:\n%s", logPath, tail(logPath, 40))
		}
	})
	return p
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady waits for the apiserver's /readyz to answer ok.
func (c *Cluster) waitReady(t *testing.T, ctx context.Context) {
	t.Helper()
	err := poll(ctx, func() error {
		out, err := c.Kubectl(ctx, "get", "--raw", "/readyz")
		if err != nil || strings.TrimSpace(string(out)) != "ok" {
			return fmt.Errorf("apiserver not ready: %v %s", err, out)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitRegistered waits for node n's Node object.
func (c *Cluster) waitRegistered(t *testing.T, ctx context.Context, n *Node) {
	t.Helper()
	if err := poll(ctx, func() error {
		_, err := c.Kubectl(ctx, "get", "node", n.Name)
		return err
	}); err != nil {
		t.Fatalf("node %s never registered: %v", n.Name, err)
	}
}

// poll calls fn until it succeeds or ctx ends, backing off from 50 ms to
// 1 s: for a component whose only readiness signal is an endpoint that
// answers.
func poll(ctx context.Context, fn func() error) error {
	wait := 50 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// Kubectl runs kubectl against the cluster and returns its output.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	return c.KubectlIn(ctx, nil, args...)
}

// KubectlIn is Kubectl with stdin (for apply -f -).
func (c *Cluster) KubectlIn(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.Bin, "kubectl"), append([]string{"--kubeconfig", c.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Binaries returns the directory of Kubernetes' binaries of Version,
// building them first into the cache when they are not there
// (deploy/kubernetes/build-binaries: minutes cold, seconds warm).
func Binaries(t testing.TB) string {
	t.Helper()
	root, err := testimage.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join(root, "deploy", "kubernetes", "build-binaries"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, Version)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("build Kubernetes %s: %v\n%s", Version, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// kernelSysctls are what the kubelet sets for the whole host
// (setupKernelTunables, protectKernelDefaults off).
var kernelSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// saveSysctls reads the kubelet's sysctls and writes them to path (for
// the sweep, if this run crashes) as "name value" lines.
func saveSysctls(path string) (map[string]string, error) {
	saved := map[string]string{}
	var b strings.Builder
	for _, k := range kernelSysctls {
		v, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return nil, fmt.Errorf("read sysctl %s: %w", k, err)
		}
		saved[k] = strings.TrimSpace(string(v))
		fmt.Fprintf(&b, "%s %s\n", k, saved[k])
	}
	return saved, os.WriteFile(path, []byte(b.String()), 0o600)
}

func readSysctls(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok {
			out[k] = v
		}
	}
	return out, sc.Err()
}

func restoreSysctls(saved map[string]string) error {
	var errs []error
	for k, v := range saved {
		p := filepath.Join("/proc/sys", k)
		if cur, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(cur)) == v {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore sysctl %s=%s: %w", k, v, err))
		}
	}
	return errors.Join(errs...)
}

// standardDirs are host paths that containerd, the CNI plugins and the
// kubelet use whatever their configuration says; each node mounts a tmpfs
// of its own over each, in its own mount namespace. Those the host lacks
// are made for the run and removed after it.
var standardDirs = []string{"/run/containerd", "/var/lib/cni", "/var/log/containers", "/var/log/pods"}

func makeStandardDirs() ([]string, error) {
	var made []string
	for _, d := range standardDirs {
		if _, err := os.Stat(d); err == nil {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return made, fmt.Errorf("make %s: %w", d, err)
		}
		made = append(made, d)
	}
	return made, nil
}
