package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ImportOptions say what to import.
type ImportOptions struct {
	Name string
	File string // a file, or an OCI image layout directory
	// Format is "tar", "oci", "docker" or "disk"; "" finds it from the file.
	Format   string
	Progress func(line string)
}

// Formats Import takes.
const (
	FormatTar    = "tar"    // a root filesystem tarball, maybe gzip or zstd compressed
	FormatOCI    = "oci"    // an OCI image layout: a directory or a tar of one
	FormatDocker = "docker" // a `docker save` archive
	FormatDisk   = "disk"   // a raw or qcow2 disk image with a partition table
)

// Import makes an image from what a user has, or reuses the one the same
// bytes made before, and names it o.Name. A failed import installs nothing.
func (s *Store) Import(ctx context.Context, o ImportOptions) (*Image, error) {
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string) {}
	}
	file, err := filepath.Abs(o.File)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", o.File, err)
	}
	st, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("import %s: %w: %w", o.File, err, ErrBadRequest)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("importing an image needs root (its files keep their owners): %w", ErrUnsupported)
	}
	format := o.Format
	if format == "" {
		if format, err = detectFormat(file, st); err != nil {
			return nil, err
		}
	}
	started := time.Now()
	step := func(format string, args ...any) {
		progress(fmt.Sprintf("%6.1fs  ", time.Since(started).Seconds()) + fmt.Sprintf(format, args...))
	}
	step("import %s as %s (%s)", file, o.Name, format)
	sum, err := digest(ctx, file, st, step)
	if err != nil {
		return nil, err
	}
	id := importID(format, sum)
	if im, err := s.reuse(id, o.Name); err == nil || !errors.Is(err, ErrNotFound) {
		if err == nil {
			step("image %s exists (%s): reused", im.ShortID(), o.Name)
		}
		return im, err
	}
	b, err := s.newBuild()
	if err != nil {
		return nil, err
	}
	defer b.discard()
	rootfs := filepath.Join(b.dir, "rootfs")
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return nil, fmt.Errorf("create root filesystem: %w", err)
	}
	switch format {
	case FormatTar:
		err = applyFile(file, rootfs)
	case FormatOCI, FormatDocker:
		err = importLayers(ctx, file, st.IsDir(), format, rootfs, b.dir, step)
	case FormatDisk:
		err = importDisk(ctx, file, rootfs, b.dir, step)
	default:
		err = fmt.Errorf("format %q: want %s, %s, %s or %s: %w", format, FormatTar, FormatOCI, FormatDocker, FormatDisk, ErrBadRequest)
	}
	if err != nil {
		return nil, fmt.Errorf("import %s: %w", o.File, err)
	}
	im := &Image{ID: id, Source: Source{Kind: "import", File: file, Format: format, SHA256: sum}}
	if err := s.install(b, im, o.Name, false); err != nil {
		return nil, err
	}
	step("installed image %s as %s: %s, %d packages", im.ShortID(), o.Name, HumanSize(im.Size), im.Packages)
	return im, nil
}

// importID is an import's image id: the same bytes in the same format, the
// same id.
func importID(format, sum string) string {
	h := sha256.Sum256([]byte("import\x00" + format + "\x00" + sum))
	return hex.EncodeToString(h[:])
}

// detectFormat tells the format of a file by its first bytes (and, for a
// plain tar, by whether it holds an OCI layout or docker's manifest).
func detectFormat(file string, st os.FileInfo) (string, error) {
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(file, "oci-layout")); err == nil {
			return FormatOCI, nil
		}
		return "", fmt.Errorf("%s is a directory without an oci-layout file: not an OCI image layout: %w", file, ErrBadRequest)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("QFI\xfb")):
		return FormatDisk, nil
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}), bytes.HasPrefix(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return FormatTar, nil
	case len(head) > 262 && bytes.Equal(head[257:262], []byte("ustar")):
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return "", err
		}
		return tarKind(f)
	case len(head) >= 512 && head[510] == 0x55 && head[511] == 0xAA:
		return FormatDisk, nil
	}
	return "", fmt.Errorf("%s: not a tar, gzip, zstd, qcow2 or partitioned disk image (use --format): %w", file, ErrBadRequest)
}

// tarKind says whether a tar is an OCI layout, a docker save archive or a
// root filesystem, by its top-level entries.
func tarKind(r io.Reader) (string, error) {
	tr := tar.NewReader(r)
	kind := FormatTar
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return kind, nil
		}
		if err != nil {
			return "", fmt.Errorf("read tar: %w", err)
		}
		switch clean(hdr.Name) {
		case "oci-layout":
			return FormatOCI, nil
		case "manifest.json":
			kind = FormatDocker // docker save; newer ones also have oci-layout
		case "etc", "usr", "bin":
			if kind == FormatTar {
				return FormatTar, nil
			}
		}
	}
}

// digest is the SHA-256 of a file's bytes, or of an OCI layout
// directory's index.json (the layout is content-addressed from there).
func digest(ctx context.Context, file string, st os.FileInfo, step func(string, ...any)) (string, error) {
	if st.IsDir() {
		b, err := os.ReadFile(filepath.Join(file, "index.json"))
		if err != nil {
			return "", fmt.Errorf("read the layout's index.json: %w: %w", err, ErrBadRequest)
		}
		sum := sha256.Sum256(b)
		return hex.EncodeToString(sum[:]), nil
	}
	step("hashing %s (%s)", filepath.Base(file), HumanSize(st.Size()))
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		n, err := f.Read(buf)
		h.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("read %s: %w", file, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// applyFile applies a (compressed) tar file to rootfs.
func applyFile(file, rootfs string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := decompress(f)
	if err != nil {
		return err
	}
	defer r.Close()
	return applyLayer(r, rootfs)
}

// importLayers applies an OCI image's or a docker save archive's layers in
// order. An archive is unpacked beside the build first (its blobs are read
// in the manifest's order, not the archive's).
func importLayers(ctx context.Context, file string, isDir bool, format, rootfs, work string, step func(string, ...any)) error {
	dir := file
	if !isDir {
		dir = filepath.Join(work, "layout")
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		step("unpacking the archive")
		if err := applyFile(file, dir); err != nil {
			return fmt.Errorf("unpack %s: %w", filepath.Base(file), err)
		}
	}
	var layers []string
	var err error
	if _, statErr := os.Stat(filepath.Join(dir, "index.json")); statErr == nil {
		layers, err = ociLayers(dir)
	} else {
		layers, err = dockerLayers(dir)
	}
	if err != nil {
		return err
	}
	for i, l := range layers {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		step("layer %d of %d", i+1, len(layers))
		if err := applyFile(l, rootfs); err != nil {
			return fmt.Errorf("layer %d (%s): %w", i+1, filepath.Base(l), err)
		}
	}
	return os.RemoveAll(filepath.Join(work, "layout"))
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform,omitempty"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
	Layers    []ociDescriptor `json:"layers"` // set when the document is a manifest
}

// ociLayers follows index.json (and nested indexes) to the manifest of
// this machine's platform and returns its layer blobs in order.
func ociLayers(dir string) ([]string, error) {
	blob := func(digest string) (string, error) {
		algo, hexsum, ok := strings.Cut(digest, ":")
		if !ok || algo != "sha256" || !idRE().MatchString(hexsum) {
			return "", fmt.Errorf("digest %q: want sha256:<64 hex>: %w", digest, ErrBadRequest)
		}
		return filepath.Join(dir, "blobs", "sha256", hexsum), nil
	}
	doc := filepath.Join(dir, "index.json")
	for depth := 0; depth < 4; depth++ {
		b, err := os.ReadFile(doc)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Base(doc), err)
		}
		var idx ociIndex
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("parse %s: %w: %w", filepath.Base(doc), err, ErrBadRequest)
		}
		if len(idx.Layers) > 0 {
			var out []string
			for _, l := range idx.Layers {
				p, err := blob(l.Digest)
				if err != nil {
					return nil, err
				}
				out = append(out, p)
			}
			return out, nil
		}
		var pick *ociDescriptor
		for i, m := range idx.Manifests {
			if m.Platform == nil || (m.Platform.OS == "linux" && m.Platform.Architecture == runtime.GOARCH) {
				pick = &idx.Manifests[i]
				break
			}
		}
		if pick == nil {
			return nil, fmt.Errorf("no manifest for linux/%s in the image index: %w", runtime.GOARCH, ErrBadRequest)
		}
		if doc, err = blob(pick.Digest); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("image index nested too deep: %w", ErrBadRequest)
}

// dockerLayers reads a docker save archive's manifest.json.
func dockerLayers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("neither index.json nor manifest.json: %w: %w", err, ErrBadRequest)
	}
	var m []struct {
		Layers []string `json:"Layers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("parse manifest.json: %w: %w", err, ErrBadRequest)
	}
	if len(m) != 1 {
		return nil, fmt.Errorf("manifest.json holds %d images: save one: %w", len(m), ErrBadRequest)
	}
	var out []string
	for _, l := range m[0].Layers {
		if c := clean(l); c != l || c == "" {
			return nil, fmt.Errorf("layer path %q: %w", l, ErrBadRequest)
		}
		out = append(out, filepath.Join(dir, l))
	}
	return out, nil
}

// importDisk copies a disk image's root partition into rootfs: a qcow2
// image is converted to a sparse raw one first (qemu-img), the partition
// table read, and the root partition mounted read-only through a loop
// device in a private mount namespace (it goes when the copy ends, even
// killed) and copied with its owners, modes, links and attributes.
func importDisk(ctx context.Context, file, rootfs, work string, step func(string, ...any)) error {
	raw := file
	if isQcow2(file) {
		qemuImg, err := exec.LookPath("qemu-img")
		if err != nil {
			return fmt.Errorf("a qcow2 image needs qemu-img (apt-get install qemu-utils; make deps does): %w", ErrUnsupported)
		}
		raw = filepath.Join(work, "disk.raw")
		step("converting qcow2 to a sparse raw image")
		if err := runLogged(ctx, step, "qemu-img", qemuImg, "convert", "-f", "qcow2", "-O", "raw", file, raw); err != nil {
			return err
		}
	}
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	parts, err := partitions(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w: %w", filepath.Base(file), err, ErrBadRequest)
	}
	root, err := rootPartition(parts)
	if err != nil {
		return err
	}
	step("root partition %d (%s, %s at %d)", root.Index, root.Type, HumanSize(root.Size), root.Start)
	mnt := filepath.Join(work, "mnt")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		return err
	}
	// ext4 with a journal to replay cannot be mounted from a read-only
	// loop device unless told not to load the journal; other
	// filesystems do not know noload.
	opts := "ro,loop,offset=" + strconv.FormatInt(root.Start, 10) + ",sizelimit=" + strconv.FormatInt(root.Size, 10)
	script := `mount -o "$1,noload" "$2" "$3" 2>/dev/null || mount -o "$1" "$2" "$3" || exit 1
test -e "$3/etc/os-release" || test -e "$3/usr/lib/os-release" || { echo "partition has no /etc/os-release: not a root filesystem" >&2; exit 1; }
cp -a "$3/." "$4/"`
	step("copying the root filesystem")
	if err := runLogged(ctx, step, "copy", "/bin/sh", "-c", script, "sh", opts, raw, mnt, rootfs); err != nil {
		return err
	}
	if raw != file {
		return os.Remove(raw)
	}
	return nil
}

func isQcow2(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	magic := make([]byte, 4)
	_, err = io.ReadFull(f, magic)
	return err == nil && string(magic) == "QFI\xfb"
}
