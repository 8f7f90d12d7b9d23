// Package kubetest runs a real Kubernetes cluster on this host for tier-2
// tests: etcd, kube-apiserver, kube-controller-manager and kube-scheduler
// in the host's network namespace on a bridge of the run's own, and each
// node (containerd, the kubelet, kube-proxy, and so its pods) in network
// and mount namespaces of its own. Kubernetes' binaries are built from the
// Go module proxy into a cache outside the repository
// (deploy/kubernetes/build-binaries); etcd, containerd, runc and the CNI
// plugins are Debian's (scripts/deps kubernetes). Every host-global name
// carries the run's random prefix, all state lives under one directory,
// and the test's cleanup (or the next run's sweep, after a crash) removes
// processes, links, cgroups and the sysctls the kubelet changes.
//
// It knows nothing of drums: deploy/kubernetes's test deploys drums on it.
package kubetest
