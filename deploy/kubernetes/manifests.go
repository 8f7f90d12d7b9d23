package kubernetes

import (
	_ "embed"
	"fmt"
	"strings"
)

// manifest is drums.yaml: the DaemonSet and the Service.
//
//go:embed drums.yaml
var manifest string

// Options change what a deployment differs in from drums.yaml's defaults.
// Empty fields keep the file's.
type Options struct {
	StateDir, ImageDir, RunDir string // the hostPath volumes
	PublishPorts               string // FIRST-LAST
	Capacity                   int
	Image                      string   // the daemon's default desktop image
	Args                       []string // more flags of drums serve
}

// Manifests returns drums.yaml with o applied.
func Manifests(o Options) (string, error) {
	out := manifest
	for _, r := range []struct {
		set      bool
		old, new string
	}{
		{o.StateDir != "", "{path: /var/lib/drums, type", "{path: " + o.StateDir + ", type"},
		{o.ImageDir != "", "{path: /var/lib/drums/images, type", "{path: " + o.ImageDir + ", type"},
		{o.RunDir != "", "{path: /run/drums, type", "{path: " + o.RunDir + ", type"},
		{o.PublishPorts != "", "--publish-ports=29000-29063", "--publish-ports=" + o.PublishPorts},
		{o.Capacity != 0, "--capacity=16", fmt.Sprintf("--capacity=%d", o.Capacity)},
		{o.Image != "", "--image=osworld", "--image=" + o.Image},
	} {
		if !r.set {
			continue
		}
		if strings.Count(out, r.old) != 1 {
			return "", fmt.Errorf("drums.yaml holds %q %d times, want once", r.old, strings.Count(out, r.old))
		}
		out = strings.Replace(out, r.old, r.new, 1)
	}
	if len(o.Args) > 0 {
		const last = "        env:\n"
		if strings.Count(out, last) != 1 {
			return "", fmt.Errorf("drums.yaml: no one place to add flags")
		}
		var b strings.Builder
		for _, a := range o.Args {
			fmt.Fprintf(&b, "        - %s\n", a)
		}
		out = strings.Replace(out, last, b.String()+last, 1)
	}
	return out, nil
}
