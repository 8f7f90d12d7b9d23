package kubetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
)

// TestCluster: a two-node cluster runs pods on both nodes, and a Service
// on one node's pod answers a pod on the other (kube-proxy, the routes
// between the nodes' pod ranges).
func TestCluster(t *testing.T) {
	c := Start(t, Options{Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  nodeName: %[1]s
  automountServiceAccountToken: false
  containers:
  - name: web
    image: %[3]s
    imagePullPolicy: Never
    command: ["/bin/busybox", "sh", "-c", "mkdir -p /www && echo hello from %[1]s > /www/index.html && exec /bin/busybox httpd -f -p 8080 -h /www"]
    readinessProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: client
spec:
  nodeName: %[2]s
  automountServiceAccountToken: false
  restartPolicy: OnFailure
  containers:
  - name: client
    image: %[3]s
    imagePullPolicy: Never
    # busybox-static's wget crashes without glibc's NSS modules: nc.
    command: ["/bin/busybox", "sh", "-c", "printf 'GET / HTTP/1.0\\r\\n\\r\\n' | /bin/busybox nc -w 20 $(WEB_SERVICE_HOST) 80"]
`, c.Nodes[0].Name, c.Nodes[len(c.Nodes)-1].Name, PauseImage)
	t0 := time.Now()
	if out, err := c.KubectlIn(ctx, []byte(manifest), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "wait", "--for=condition=Ready", "pod/web", "--timeout=3m"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("pod Ready %.1fs after apply (load %s)", time.Since(t0).Seconds(), compat.LoadAverages(3))
	if out, err := c.Kubectl(ctx, "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/client", "--timeout=3m"); err != nil {
		logs, _ := c.Kubectl(ctx, "logs", "client")
		desc, _ := c.Kubectl(ctx, "describe", "pod")
		svc, _ := c.Kubectl(ctx, "get", "svc,endpointslices,pods", "-o", "wide")
		nft, _ := c.Nodes[len(c.Nodes)-1].Exec(ctx, "nft", "list", "ruleset")
		routes, _ := c.Nodes[len(c.Nodes)-1].Exec(ctx, "ip", "route")
		t.Fatalf("client: %v\n%s\n%s\n%s\n%s\n%s\n%s", err, out, logs, desc, svc, nft, routes)
	}
	logs, err := c.Kubectl(ctx, "logs", "client")
	if err != nil || !strings.Contains(string(logs), "hello from "+c.Nodes[0].Name) {
		t.Errorf("client's answer %q %v", logs, err)
	}
}
