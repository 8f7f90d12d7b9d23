package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// A store is one directory:
//
//	lock               flock: name changes, installs and removals
//	store/<id>/        one image, never changed once installed:
//	    image.json     its manifest (Image)
//	    rootfs/        the root filesystem, owned as in the image
//	    layer-v<N>/    drums' own small layer for it, version N
//	    use            flock held shared by every desktop running from it
//	names/<name>       symlink to ../store/<id>
//	tmp/<build>/       builds and imports under way, each with its own
//	                   lock; one whose lock is free was left by a crash and
//	                   is removed by the next Open
//
// An image's id is the SHA-256 of what made it (recipe, suite, mirror,
// architecture and packages; or the imported bytes), so the same inputs
// name the same image and a second build of them is a lookup.
type Store struct {
	dir string
}

// DefaultDir is where `drums` keeps its images.
const DefaultDir = "/var/lib/drums/images"

// Image is an installed image as its manifest describes it.
type Image struct {
	ID      string    `json:"id"`
	Source  Source    `json:"source"`
	Created time.Time `json:"created"`
	// Size is what rootfs takes on disk, in bytes.
	Size int64 `json:"size"`
	// Packages counts the dpkg packages installed in it.
	Packages int `json:"packages"`
	// OS is /etc/os-release's PRETTY_NAME.
	OS      string  `json:"os"`
	Desktop Desktop `json:"desktop"`

	// Names are the store's names for it (not in image.json).
	Names []string `json:"names,omitempty"`
	dir   string
}

// Source says what an image was made from.
type Source struct {
	Kind string `json:"kind"` // "build" or "import"
	// A build.
	Recipe   string   `json:"recipe,omitempty"`
	Suite    string   `json:"suite,omitempty"`
	Mirror   string   `json:"mirror,omitempty"`
	Arch     string   `json:"arch,omitempty"`
	Packages []string `json:"packages,omitempty"` // the full list, sorted
	// An import.
	File   string `json:"file,omitempty"`
	Format string `json:"format,omitempty"`
	SHA256 string `json:"sha256,omitempty"` // of the file, or of an OCI layout's manifest
}

// Dir is the image's directory: idmap it as a whole, then the layers are
// LayerDir and "rootfs" under it.
func (im *Image) Dir() string { return im.dir }

// RootFS is the image's root filesystem.
func (im *Image) RootFS() string { return filepath.Join(im.dir, "rootfs") }

// LayerDir is the name, under Dir, of drums' layer for this drums version.
func (im *Image) LayerDir() string { return fmt.Sprintf("layer-v%d", layerVersion) }

// ShortID is the id's first 12 hex digits, as listings show it.
func (im *Image) ShortID() string { return im.ID[:12] }

// nameRE and idRE are compiled at first use: every desktop's init links
// this package, and what a package builds at start-up is heap in each.
var (
	nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`) })
	idRE   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}$`) })
)

// CheckName says whether name can name an image: lower-case letters,
// digits, dots, dashes and underscores, starting with a letter or digit, at
// most 63 characters. Every way a name enters drums (CLI, daemon API,
// environment) checks it here.
func CheckName(name string) error {
	if !nameRE().MatchString(name) || strings.Contains(name, "..") {
		return fmt.Errorf("image name %q: want lower-case letters, digits, '.', '-' and '_', starting with a letter or digit, at most 63: %w", name, ErrBadRequest)
	}
	return nil
}

// Open opens (creating) a store and removes what interrupted builds left.
func Open(dir string) (*Store, error) {
	if dir == "" {
		dir = DefaultDir
	}
	for _, d := range []string{dir, filepath.Join(dir, "store"), filepath.Join(dir, "names"), filepath.Join(dir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("create image store %s: %w", d, err)
		}
	}
	s := &Store{dir: dir}
	if err := s.sweepTmp(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

func (s *Store) imageDir(id string) string { return filepath.Join(s.dir, "store", id) }
func (s *Store) namePath(name string) string {
	return filepath.Join(s.dir, "names", name)
}

// Get returns the image a name or id (or a unique id prefix of at least 12
// digits) names, with drums' layer of this version made if it is missing.
func (s *Store) Get(ref string) (*Image, error) {
	id, err := s.resolve(ref)
	if err != nil {
		return nil, err
	}
	im, err := s.load(id)
	if err != nil {
		return nil, err
	}
	if err := s.ensureLayer(im); err != nil {
		return nil, err
	}
	return im, nil
}

// resolve turns a name, an id or an id prefix into an id.
func (s *Store) resolve(ref string) (string, error) {
	if ref == "" {
		return "", fmt.Errorf("empty image name: %w", ErrBadRequest)
	}
	if target, err := os.Readlink(s.namePath(ref)); err == nil && nameRE().MatchString(ref) {
		id := filepath.Base(target)
		if !idRE().MatchString(id) {
			return "", fmt.Errorf("image name %s points at %q, not an image: %w", ref, target, ErrNotFound)
		}
		return id, nil
	}
	if len(ref) >= 12 && len(ref) <= 64 && strings.Trim(ref, "0123456789abcdef") == "" {
		ids, err := s.ids()
		if err != nil {
			return "", err
		}
		var match []string
		for _, id := range ids {
			if strings.HasPrefix(id, ref) {
				match = append(match, id)
			}
		}
		switch len(match) {
		case 1:
			return match[0], nil
		case 0:
			if !nameRE().MatchString(ref) {
				return "", fmt.Errorf("no image with id %s in %s: %w", ref, s.dir, ErrNotFound)
			}
		default:
			return "", fmt.Errorf("image id prefix %s matches %d images: %w", ref, len(match), ErrBadRequest)
		}
	}
	if err := CheckName(ref); err != nil {
		return "", err
	}
	return "", fmt.Errorf("image %s in %s (build it with `drums image build %s` or import one): %w", ref, s.dir, ref, ErrNotFound)
}

func (s *Store) ids() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "store"))
	if err != nil {
		return nil, fmt.Errorf("read image store: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && idRE().MatchString(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	return ids, nil
}

// names maps each image id to its names.
func (s *Store) names() (map[string][]string, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "names"))
	if err != nil {
		return nil, fmt.Errorf("read image names: %w", err)
	}
	out := map[string][]string{}
	for _, e := range entries {
		if target, err := os.Readlink(s.namePath(e.Name())); err == nil {
			out[filepath.Base(target)] = append(out[filepath.Base(target)], e.Name())
		}
	}
	return out, nil
}

func (s *Store) load(id string) (*Image, error) {
	dir := s.imageDir(id)
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("image %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read image %s: %w", id, err)
	}
	var im Image
	if err := json.Unmarshal(b, &im); err != nil {
		return nil, fmt.Errorf("parse image manifest %s: %w", id, err)
	}
	if im.ID != id {
		return nil, fmt.Errorf("image %s: its manifest says %s: %w", id, im.ID, ErrNotFound)
	}
	im.dir = dir
	names, err := s.names()
	if err != nil {
		return nil, err
	}
	im.Names = names[id]
	sort.Strings(im.Names)
	return &im, nil
}

// List returns every image, by creation time.
func (s *Store) List() ([]*Image, error) {
	ids, err := s.ids()
	if err != nil {
		return nil, err
	}
	var out []*Image
	for _, id := range ids {
		im, err := s.load(id)
		if err != nil {
			continue // a directory without a manifest is not an image
		}
		out = append(out, im)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Remove removes a name; the image goes when no name is left and no
// desktop runs from it. Removing an id removes the image and all its names.
func (s *Store) Remove(ref string) error {
	lk, err := lockFile(filepath.Join(s.dir, "lock"), true)
	if err != nil {
		return err
	}
	defer lk.Close()
	id, err := s.resolve(ref)
	if err != nil {
		return err
	}
	names, err := s.names()
	if err != nil {
		return err
	}
	drop := names[id]
	if slices.Contains(drop, ref) && len(drop) > 1 {
		return removeName(s.namePath(ref))
	}
	use, free, err := claimUnused(filepath.Join(s.imageDir(id), "use"))
	if err != nil {
		return err
	}
	if !free {
		return fmt.Errorf("image %s is in use by running desktops (a daemon's spares, which `drums session ls` does not show, count: they go when it stops): remove them first: %w", ref, ErrBusy)
	}
	defer use.Close()
	for _, n := range drop {
		if err := removeName(s.namePath(n)); err != nil {
			return err
		}
	}
	return s.removeImage(id)
}

// removeImage removes an image whose use lock the caller holds
// exclusively. The manifest goes first: a desktop that got the use lock
// after us sees the image gone (Hold).
func (s *Store) removeImage(id string) error {
	if err := os.Remove(filepath.Join(s.imageDir(id), "image.json")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove image %s: %w", id, err)
	}
	return removeAll(s.imageDir(id))
}

// dropUnnamed removes the image id once no name points at it, unless
// desktops run from it; then it stays, listed without a name, for `drums
// image rm ID` once they are gone. The caller holds the store's lock.
func (s *Store) dropUnnamed(id string) error {
	names, err := s.names()
	if err != nil {
		return err
	}
	if len(names[id]) > 0 {
		return nil
	}
	use, free, err := claimUnused(filepath.Join(s.imageDir(id), "use"))
	if err != nil || !free {
		return err
	}
	defer use.Close()
	return s.removeImage(id)
}

func removeName(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove image name: %w", err)
	}
	return nil
}

// setName points name at id, atomically, and removes the image the name
// pointed at before if that leaves it without a name (dropUnnamed). The
// caller holds the store's lock.
func (s *Store) setName(name, id string) error {
	prev, _ := os.Readlink(s.namePath(name))
	tmp := s.namePath("." + name + ".new")
	os.Remove(tmp)
	if err := os.Symlink(filepath.Join("..", "store", id), tmp); err != nil {
		return fmt.Errorf("name image %s: %w", name, err)
	}
	if err := os.Rename(tmp, s.namePath(name)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("name image %s: %w", name, err)
	}
	if prev = filepath.Base(prev); prev == id || !idRE().MatchString(prev) {
		return nil
	}
	return s.dropUnnamed(prev)
}

// sweepTmp removes the build directories of interrupted builds.
func (s *Store) sweepTmp() error {
	tmp := filepath.Join(s.dir, "tmp")
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return fmt.Errorf("read %s: %w", tmp, err)
	}
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(tmp, e.Name())
		lk, err := lockFile(filepath.Join(dir, "lock"), false)
		if err != nil {
			continue // a live build
		}
		errs = append(errs, removeAll(dir))
		lk.Close()
	}
	return errors.Join(errs...)
}
