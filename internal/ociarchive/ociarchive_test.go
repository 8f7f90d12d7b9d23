package ociarchive

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The archive is an OCI layout whose index names the image and leads,
// through digests that match their blobs, to a config and layers that hold
// the files given.
func TestWrite(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	if err := os.WriteFile(src, []byte("from the host"), 0o644); err != nil {
		t.Fatal(err)
	}
	im := Image{Name: "drums.local/x:1", Entrypoint: []string{"/bin/x"}, Env: []string{"A=1"}, Layers: [][]File{
		{{Path: "bin", Mode: fs.ModeDir | 0o755}, {Path: "bin/x", Mode: 0o755, Data: []byte("x")}, {Path: "bin/y", Mode: fs.ModeSymlink | 0o777, Link: "x"}},
		{{Path: "tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777}, {Path: "src", Mode: 0o644, Source: src}},
	}}
	var a, b bytes.Buffer
	if err := Write(&a, im); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, im); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatalf("two writes differ (%v)", err)
	}
	_, files := untar(t, a.Bytes())
	blob := func(digest string) []byte {
		data, ok := files["blobs/sha256/"+digest[len("sha256:"):]]
		sum := sha256.Sum256(data)
		if !ok || "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s missing or not its digest", digest)
		}
		return data
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json: %v %s", err, files["index.json"])
	}
	if n := index.Manifests[0].Annotations["io.containerd.image.name"]; n != im.Name {
		t.Errorf("image name %q", n)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil || len(manifest.Layers) != 2 {
		t.Fatalf("manifest: %v", err)
	}
	var config struct {
		Config struct{ Entrypoint, Env []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &config); err != nil || config.Config.Entrypoint[0] != "/bin/x" ||
		len(config.RootFS.DiffIDs) != 2 || config.RootFS.DiffIDs[1] != manifest.Layers[1].Digest {
		t.Fatalf("config %+v %v", config, err)
	}
	l1, _ := untar(t, blob(manifest.Layers[0].Digest))
	l2, _ := untar(t, blob(manifest.Layers[1].Digest))
	if h := l1["bin/y"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "x" {
		t.Errorf("symlink %+v", h)
	}
	if h := l2["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("sticky directory %+v", h)
	}
	if h := l2["src"]; h == nil || h.Size != int64(len("from the host")) {
		t.Errorf("file from the host %+v", h)
	}
}

// untar returns each entry's header and content, by name.
func untar(t *testing.T, b []byte) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hdrs, data
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs[h.Name] = h
		data[h.Name], _ = io.ReadAll(tr)
	}
}
