package kubetest

import (
	"fmt"
	"path/filepath"
)

// containerdConfig is node n's containerd configuration: every directory
// under the node's, runc's state included. restrict_oom_score_adj: root
// here lacks CAP_SYS_RESOURCE, and runc fails to lower a container's OOM
// score below its own ("can't get final child's PID from pipe") unless
// containerd clamps it.
func containerdConfig(n *Node) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[5]q

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[6]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "/usr/sbin/runc"
  Root = %[7]q
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = %[8]q
  conf_dir = %[9]q
`, filepath.Join(n.Dir, "containerd"), filepath.Join(n.Dir, "containerd-state"), n.Socket, n.Socket+".ttrpc",
		filepath.Join(n.Dir, "opt"), PauseImage, filepath.Join(n.Dir, "runc"), cniDir, filepath.Join(n.Dir, "cni"))
}

// cniConfig is node n's pod network: a bridge in the node's namespace,
// addresses from the node's pod range. No masquerade (it would need
// iptables): pods reach other nodes' pods through the routes the test sets.
func cniConfig(n *Node) string {
	return fmt.Sprintf(`{
  "cniVersion": "0.4.0",
  "name": "kubetest",
  "type": "bridge",
  "bridge": "cni0",
  "isGateway": true,
  "ipMasq": false,
  "hairpinMode": true,
  "ipam": {
    "type": "host-local",
    "subnet": %q,
    "dataDir": %q,
    "routes": [{"dst": "0.0.0.0/0"}]
  }
}
`, n.PodCIDR.String(), filepath.Join(n.Dir, "ipam"))
}

// kubeletConfig is node n's kubelet configuration. failCgroupV1: false, as
// this host has cgroup v1; the cgroup root is the node's own, so its pods'
// cgroups carry the run's prefix; the kubelet's API answers anyone (only
// this run's namespaces reach it).
func kubeletConfig(c *Cluster, n *Node) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
address: %[3]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
failSwapOn: false
resolvConf: %[4]s
podLogsDir: %[5]s
volumePluginDir: %[6]s
serializeImagePulls: false
maxPods: 30
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  nodefs.inodesFree: "1%%"
`, n.cgroup, n.Socket, n.Address, filepath.Join(c.Dir, "resolv.conf"), filepath.Join(n.Dir, "pod-logs"), filepath.Join(n.Dir, "volume-plugins"))
}

// kubeProxyConfig is node n's kube-proxy configuration: nftables mode (its
// tables live in the node's network namespace), no conntrack sysctls (they
// are the host's).
func kubeProxyConfig(c *Cluster, n *Node) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: %[1]s
hostnameOverride: %[2]s
bindAddress: %[3]s
clusterCIDR: %[4]s
nodePortAddresses: ["%[3]s/32"]
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, c.Kubeconfig, n.Name, n.Address, c.PodCIDR)
}
