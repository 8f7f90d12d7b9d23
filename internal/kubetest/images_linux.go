package kubetest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/drums-dev/drums/internal/ociarchive"
	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/sessions"
)

// pauseImage is the pod sandbox image, made here: a static busybox that
// sleeps (a sandbox is stopped with SIGKILL, so PID 1 ignoring SIGTERM
// does not matter). Pods can run it with a command of their own: it is
// also the tests' busybox image.
func pauseImage() (ociarchive.Image, error) {
	busybox, err := sessions.StaticBusybox()
	if err != nil {
		return ociarchive.Image{}, err
	}
	return ociarchive.Image{
		Name:       PauseImage,
		Entrypoint: []string{"/bin/busybox", "sleep", "infinity"},
		Layers: [][]ociarchive.File{{
			{Path: "bin", Mode: fs.ModeDir | 0o755},
			{Path: "bin/busybox", Mode: 0o755, Source: busybox},
			{Path: "bin/sh", Mode: fs.ModeSymlink | 0o777, Link: "busybox"},
			{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		}},
	}, nil
}

// ImportImage writes im as an archive under the cluster's directory and
// imports it into every node's containerd.
func (c *Cluster) ImportImage(ctx context.Context, im ociarchive.Image) error {
	path := filepath.Join(c.Dir, fmt.Sprintf("image-%s.tar", testutil.RandomName(6)))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer os.Remove(path)
	if err := ociarchive.Write(f, im); err != nil {
		f.Close()
		return fmt.Errorf("write image %s: %w", im.Name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if err := n.Import(ctx, path); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) importPause(t *testing.T, ctx context.Context) {
	t.Helper()
	pause, err := pauseImage()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ImportImage(ctx, pause); err != nil {
		t.Fatal(err)
	}
}
