// Package ociarchive writes container images as OCI image layout archives
// (what `ctr images import`, `podman load` and `skopeo copy oci-archive:`
// read): uncompressed tar layers made from files, an image config, a
// manifest and an index naming the image. Reproducible: the same files
// give the same bytes (times are the epoch, owners root).
//
// It reads nothing of drums; sessions/images reads such archives
// (drums image import), and this package only writes them.
package ociarchive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"time"
)

// File is one entry of a layer: a directory (Mode has fs.ModeDir), a
// symlink (fs.ModeSymlink, to Link) or a regular file with Data or, when
// Source is set, the content of that host file.
type File struct {
	Path   string // relative to the root: "usr/local/bin/drums"
	Mode   fs.FileMode
	Data   []byte
	Source string
	Link   string
}

// Image is what Write writes.
type Image struct {
	// Name is the image's full reference, "drums.local/drums:dev": the name
	// an importer gives it.
	Name       string
	Entrypoint []string
	Cmd        []string
	Env        []string
	// Layers are applied in order, each over the ones before.
	Layers [][]File
}

const (
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Write writes im as an OCI image layout, in a tar, to w.
func Write(w io.Writer, im Image) error {
	type blob struct {
		digest string
		data   []byte
	}
	var blobs []blob
	add := func(mediaType string, data []byte) descriptor {
		sum := sha256.Sum256(data)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs = append(blobs, blob{d, data})
		return descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
	}
	var layers []descriptor
	var diffIDs []string
	for i, files := range im.Layers {
		data, err := layerTar(files)
		if err != nil {
			return fmt.Errorf("layer %d of %s: %w", i+1, im.Name, err)
		}
		d := add(mediaLayer, data)
		layers = append(layers, d)
		diffIDs = append(diffIDs, d.Digest) // uncompressed: the diff id is the digest
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": im.Entrypoint, "Cmd": im.Cmd, "Env": im.Env},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": mediaManifest, "config": add(mediaConfig, config), "layers": layers,
	})
	if err != nil {
		return err
	}
	md := add(mediaManifest, manifest)
	md.Annotations = map[string]string{"io.containerd.image.name": im.Name, "org.opencontainers.image.ref.name": im.Name}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": []descriptor{md}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	entry := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := entry("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := entry("index.json", index); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := entry("blobs/sha256/"+b.digest[len("sha256:"):], b.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// layerTar is one layer's tar.
func layerTar(files []File) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.Path, Mode: int64(f.Mode.Perm()), ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if f.Mode&fs.ModeSticky != 0 {
			hdr.Mode |= 0o1000
		}
		data := f.Data
		switch {
		case f.Mode.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, f.Path+"/"
		case f.Mode&fs.ModeSymlink != 0:
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, f.Link
		default:
			hdr.Typeflag = tar.TypeReg
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return nil, err
				}
			}
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
