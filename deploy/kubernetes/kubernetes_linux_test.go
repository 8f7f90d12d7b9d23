package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drums-dev/drums/compat"
	guest "github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/kubetest"
	"github.com/drums-dev/drums/internal/ociarchive"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/provider/client"
)

// The tier-2 test: a two-node cluster, drums deployed with drums.yaml, a
// pod that leases a desktop through the Service and drives an episode
// through the published ports, and a node's drums pod killed and replaced.
//
// The client pod runs this test binary (in an image of the drums image
// plus the binary): with envClient set, TestMain runs clientMain instead
// of the tests.
const (
	envClient   = "DRUMS_KUBE_CLIENT"
	clientImage = "drums.local/drums-client:dev"
	clientPath  = "usr/local/bin/kubetest-client"
	// desktopImage is the image the test's desktops run from: the host's
	// store has it (make images), read by the daemons through a hostPath.
	desktopImage = "core"
	// idBase keeps the test's desktops' host uids apart from the host's
	// own daemons' (the nodes' claims are node-local, as on two machines).
	idBase = 0x68000000
)

func TestMain(m *testing.M) {
	if os.Getenv(envClient) == "1" {
		os.Exit(clientMain())
	}
	os.Exit(m.Run())
}

// episode is what the client pod reports, as one JSON line.
type episode struct {
	Address  string  `json:"address"` // the five-field string
	Daemon   string  `json:"daemon"`
	LeaseS   float64 `json:"lease_s"`
	EpisodeS float64 `json:"episode_s"`
	RevertS  float64 `json:"revert_s"`
	Error    string  `json:"error,omitempty"`
}

func TestKubernetes(t *testing.T) {
	kubetest.Require(t)
	testimage.NeedImages(t, desktopImage)
	bin := os.Getenv("DRUMS_BIN")
	if bin == "" {
		t.Fatal("DRUMS_BIN is unset: the drums image is made of bin/drums, bin/drums-init and bin/guestd (make build)")
	}
	c := kubetest.Start(t, kubetest.Options{Nodes: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	kubectl := func(stdin []byte, args ...string) string {
		t.Helper()
		out, err := c.KubectlIn(ctx, stdin, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return string(out)
	}

	// The images: drums, and drums with this test binary as the client.
	t0 := time.Now()
	drums, err := Image(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The client is this test binary, built static: the image has no
	// dynamic loader.
	self := filepath.Join(c.Dir, "kubetest-client")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", self, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the client: %v\n%s", err, out)
	}
	cl := drums
	cl.Name = clientImage
	cl.Layers = append(append([][]ociarchive.File(nil), drums.Layers...), []ociarchive.File{{Path: clientPath, Mode: 0o755, Source: self}})
	for _, im := range []ociarchive.Image{drums, cl} {
		if err := c.ImportImage(ctx, im); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("timing: images written and imported on %d nodes in %.1fs (load %s)", len(c.Nodes), time.Since(t0).Seconds(), compat.LoadAverages(3))

	// drums: its Secret, then drums.yaml with the test's node-local paths.
	token := testutil.RandomName(32)
	kubectl(nil, "create", "namespace", "drums")
	kubectl(nil, "-n", "drums", "create", "secret", "generic", "drums-token", "--from-literal=token="+token)
	m, err := Manifests(Options{StateDir: filepath.Join(c.NodeLocal, "state"), ImageDir: testimage.ImageDir(),
		RunDir: filepath.Join(c.NodeLocal, "run"), PublishPorts: "29000-29007", Capacity: 2, Image: desktopImage,
		Args: []string{fmt.Sprintf("--id-base=%d", idBase), "--pool-size=0"}})
	if err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	kubectl([]byte(m), "apply", "-f", "-")
	kubectl(nil, "-n", "drums", "rollout", "status", "ds/drums", "--timeout=5m")
	t.Logf("timing: DaemonSet rolled out on %d nodes in %.1fs (load %s)", len(c.Nodes), time.Since(t0).Seconds(), compat.LoadAverages(3))

	// A pod leases a desktop through the Service and drives an episode.
	ep := runClient(t, ctx, c)
	t.Logf("timing: through the Service: lease %.2fs, episode %.2fs, revert %.2fs; desktop at %s of daemon %s (load %s)",
		ep.LeaseS, ep.EpisodeS, ep.RevertS, ep.Address, ep.Daemon, compat.LoadAverages(3))

	killAndReplace(t, ctx, c, token)
}

const clientPod = `apiVersion: v1
kind: Pod
metadata:
  name: client
  namespace: drums
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  nodeName: %s
  containers:
  - name: client
    image: %s
    imagePullPolicy: Never
    command: ["/%s"]
    env:
    - {name: %s, value: "1"}
    - {name: DRUMS_URL, value: "http://$(DRUMS_SERVICE_HOST):$(DRUMS_SERVICE_PORT)"}
    - name: DRUMS_TOKEN
      valueFrom:
        secretKeyRef: {name: drums-token, key: token}
`

// runClient runs the client pod on the last node (the Service may send
// its lease to either node's daemon) and returns what it reports.
func runClient(t *testing.T, ctx context.Context, c *kubetest.Cluster) episode {
	t.Helper()
	pod := fmt.Sprintf(clientPod, c.Nodes[len(c.Nodes)-1].Name, clientImage, clientPath, envClient)
	if out, err := c.KubectlIn(ctx, []byte(pod), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	_, werr := c.Kubectl(ctx, "-n", "drums", "wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/client", "--timeout=5m")
	logs, err := c.Kubectl(ctx, "-n", "drums", "logs", "client")
	if err != nil {
		t.Fatal(err)
	}
	var ep episode
	lines := strings.Split(strings.TrimSpace(string(logs)), "\n")
	if jerr := json.Unmarshal([]byte(lines[len(lines)-1]), &ep); jerr != nil || werr != nil || ep.Error != "" {
		t.Fatalf("client pod: %v %v %s\n%s", werr, jerr, ep.Error, logs)
	}
	return ep
}

// clientMain is the client pod: lease through the Service ($DRUMS_URL),
// an episode through the published ports (a screenshot, a pyautogui action
// through /execute, a file through /setup/upload and back through /file),
// a revert (the file is gone), a release. It prints one JSON line.
func clientMain() int {
	ep, err := clientEpisode()
	if err != nil {
		ep.Error = err.Error()
	}
	b, _ := json.Marshal(ep)
	fmt.Println(string(b))
	if err != nil {
		return 1
	}
	return 0
}

func clientEpisode() (episode, error) {
	var ep episode
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := client.New(os.Getenv("DRUMS_URL"), os.Getenv("DRUMS_TOKEN"))
	if err != nil {
		return ep, err
	}
	// kube-proxy may not have programmed a new Service yet: the first
	// call is retried until it connects.
	if err := retryConnect(ctx, func() error { _, err := c.Health(ctx); return err }); err != nil {
		return ep, fmt.Errorf("health through the Service: %w", err)
	}
	t0 := time.Now()
	d, err := c.Lease(ctx, client.LeaseRequest{Width: 1024, Height: 768, Image: desktopImage, NoEgress: true, Holder: "kubetest-client"})
	if err != nil {
		return ep, fmt.Errorf("lease through the Service: %w", err)
	}
	ep.LeaseS = time.Since(t0).Seconds()
	ep.Daemon = d.Daemon
	p := d.Ports
	ep.Address = fmt.Sprintf("%s:%d:%d:%d:%d", d.Address, p.Guest, p.Chromium, p.VNC, p.VLC)
	if p.Guest == 0 || d.Daemon == "" {
		return ep, fmt.Errorf("desktop %+v: no published ports or daemon", d)
	}
	t0 = time.Now()
	g := guest.New(fmt.Sprintf("http://%s:%d", d.Address, p.Guest), nil)
	defer g.Close()
	png, err := g.Screenshot(ctx)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		return ep, fmt.Errorf("screenshot: %v (%d bytes)", err, len(png))
	}
	res, err := g.ExecutePython(ctx, "pyautogui.moveTo(100, 200); print(pyautogui.position())")
	if err != nil || !strings.Contains(res.Output, "100") || !strings.Contains(res.Output, "200") {
		return ep, fmt.Errorf("pyautogui through /execute: %+v %v", res, err)
	}
	const path = "/home/user/kubetest.txt"
	data := []byte("uploaded through the published port\n")
	if err := g.Upload(ctx, path, data); err != nil {
		return ep, fmt.Errorf("upload: %w", err)
	}
	if got, err := g.GetFile(ctx, path); err != nil || !bytes.Equal(got, data) {
		return ep, fmt.Errorf("file back: %q %v", got, err)
	}
	ep.EpisodeS = time.Since(t0).Seconds()
	t0 = time.Now()
	r, err := c.Revert(ctx, d.ID, "")
	if err != nil {
		return ep, fmt.Errorf("revert: %w", err)
	}
	ep.RevertS = time.Since(t0).Seconds()
	g2 := guest.New(fmt.Sprintf("http://%s:%d", r.Address, r.Ports.Guest), nil)
	g2.FileRetry = guest.Retry{Attempts: 1}
	defer g2.Close()
	if got, err := g2.GetFile(ctx, path); err == nil {
		return ep, fmt.Errorf("after the revert the file is still there: %q", got)
	}
	if err := c.Release(ctx, r.ID); err != nil {
		return ep, fmt.Errorf("release: %w", err)
	}
	return ep, nil
}

// retryConnect calls fn until it gets an answer (any error but a failed
// connection ends it), for up to a minute.
func retryConnect(ctx context.Context, fn func() error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		err := fn()
		var de *client.Error
		if err == nil || errors.As(err, &de) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// killAndReplace leases a desktop from node 0's daemon directly, kills
// that node's drums pod, and checks that the DaemonSet's replacement
// either adopted the desktop (it answers) or cleaned it (unknown to the
// daemon, and no veth or nftables table of it left on the node).
func killAndReplace(t *testing.T, ctx context.Context, c *kubetest.Cluster, token string) {
	t.Helper()
	n := c.Nodes[0]
	direct, err := client.New(fmt.Sprintf("http://%s:7070", n.Address), token)
	if err != nil {
		t.Fatal(err)
	}
	d, err := direct.Lease(ctx, client.LeaseRequest{Width: 800, Height: 600, Image: desktopImage, NoEgress: true, Holder: "kubetest"})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.Kubectl(ctx, "-n", "drums", "get", "pods", "-l", "app=drums", "--field-selector", "spec.nodeName="+n.Name, "-o", "name")
	if err != nil || strings.TrimSpace(string(pods)) == "" {
		t.Fatalf("drums pod of %s: %q %v", n.Name, pods, err)
	}
	old := strings.TrimSpace(string(pods))
	t0 := time.Now()
	if out, err := c.Kubectl(ctx, "-n", "drums", "delete", old, "--grace-period=1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if out, err := c.Kubectl(ctx, "-n", "drums", "rollout", "status", "ds/drums", "--timeout=5m"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := retryConnect(ctx, func() error { _, err := direct.Health(ctx); return err }); err != nil {
		t.Fatalf("the replacement daemon on %s: %v", n.Name, err)
	}
	t.Logf("timing: %s replaced and answering in %.1fs (load %s)", old, time.Since(t0).Seconds(), compat.LoadAverages(3))
	got, err := direct.Get(ctx, d.ID)
	switch {
	case err == nil:
		g := guest.New(fmt.Sprintf("http://%s:%d", got.Address, got.Ports.Guest), nil)
		defer g.Close()
		if _, err := g.Screenshot(ctx); err != nil {
			t.Errorf("the replacement lists %s but it does not answer: %v", d.ID, err)
		}
		t.Logf("the replacement adopted %s", d.ID)
		if err := direct.Release(ctx, d.ID); err != nil {
			t.Error(err)
		}
	case errors.Is(err, client.ErrNotFound):
		// The pod's death ended the desktop (its processes were in the
		// pod's PID namespace and cgroup): nothing of it may be left.
		for _, cmd := range [][]string{{"ip", "-o", "link", "show"}, {"nft", "list", "tables"}} {
			out, err := n.Exec(ctx, cmd[0], cmd[1:]...)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(out), "drumsh") || strings.Contains(string(out), "drums_") {
				t.Errorf("after the replacement, %s on %s still shows a desktop's:\n%s", strings.Join(cmd, " "), n.Name, out)
			}
		}
		ds, err := direct.List(ctx)
		if err != nil || len(ds) != 0 {
			t.Errorf("the replacement holds %v %v", ds, err)
		}
		t.Logf("the replacement cleaned %s", d.ID)
	default:
		t.Fatalf("get %s from the replacement: %v", d.ID, err)
	}
}
