// Package kubernetes deploys drums on Kubernetes: the manifests of its
// DaemonSet, Service and Secret (embedded, also plain YAML files here),
// and the drums container image, made from drums' own binaries over a
// small base root filesystem: a static busybox (Debian's busybox-static,
// which the engine needs anyway to enter desktops' user namespaces) and
// the few files a root needs.
//
// It knows nothing of a cluster's internals: the tier-2 test
// (kubernetes_linux_test.go) runs one with internal/kubetest.
package kubernetes

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/drums-dev/drums/internal/ociarchive"
	"github.com/drums-dev/drums/sessions"
)

// ImageName is the drums image's name in the manifests; nodes import it
// (no registry is needed: imagePullPolicy is Never).
const ImageName = "drums.local/drums:dev"

// Image is the drums image: layer 1 the base (busybox as /bin/sh and
// /usr/bin/busybox, /etc/passwd and /etc/group, /tmp, the directories the
// daemon's hostPath volumes mount on), layer 2 drums, drums-init and
// guestd from bin, in /usr/local/bin (the engine finds drums-init and
// guestd next to drums).
func Image(bin string) (ociarchive.Image, error) {
	busybox, err := sessions.StaticBusybox()
	if err != nil {
		return ociarchive.Image{}, err
	}
	dir := func(p string, mode fs.FileMode) ociarchive.File {
		return ociarchive.File{Path: p, Mode: fs.ModeDir | mode}
	}
	base := []ociarchive.File{
		dir("bin", 0o755), dir("usr", 0o755), dir("usr/bin", 0o755), dir("usr/local", 0o755), dir("usr/local/bin", 0o755),
		{Path: "usr/bin/busybox", Mode: 0o755, Source: busybox},
		{Path: "bin/sh", Mode: fs.ModeSymlink | 0o777, Link: "/usr/bin/busybox"},
		{Path: "bin/busybox", Mode: fs.ModeSymlink | 0o777, Link: "/usr/bin/busybox"},
		dir("etc", 0o755),
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		dir("root", 0o700), dir("tmp", fs.ModeSticky|0o777),
		dir("run", 0o755), dir("run/drums", 0o755), dir("var", 0o755), dir("var/lib", 0o755), dir("var/lib/drums", 0o755),
	}
	var drums []ociarchive.File
	for _, b := range []string{"drums", "drums-init", "guestd"} {
		p := filepath.Join(bin, b)
		if _, err := os.Stat(p); err != nil {
			return ociarchive.Image{}, fmt.Errorf("drums image: %w (make build)", err)
		}
		drums = append(drums, ociarchive.File{Path: "usr/local/bin/" + b, Mode: 0o755, Source: p})
	}
	return ociarchive.Image{
		Name:       ImageName,
		Entrypoint: []string{"/usr/local/bin/drums"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		Layers:     [][]ociarchive.File{base, drums},
	}, nil
}

// WriteImage writes the drums image of the binaries in bin to w.
func WriteImage(w io.Writer, bin string) error {
	im, err := Image(bin)
	if err != nil {
		return err
	}
	return ociarchive.Write(w, im)
}
