package osworld

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// FileCacheHost is where OSWorld's file cache is published; URLs there are
// file-cache files, not live web.
const FileCacheHost = "huggingface.co"

// datasetPrefix is where OSWorld's file cache is published: the Hugging
// Face dataset its tasks download their input and gold files from.
const datasetPrefix = "/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"

// DatasetPath is the file a URL of OSWorld's file-cache dataset names: the
// URL-decoded path after resolve/main/, whatever the query
// (?download=true). ok is false for any other URL, and for a path that
// would leave the dataset (.., absolute).
func DatasetPath(raw string) (p string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host != FileCacheHost {
		return "", false
	}
	p, ok = strings.CutPrefix(u.Path, datasetPrefix)
	if !ok || !filepath.IsLocal(p) {
		return "", false
	}
	return p, true
}

// Mirror is a local copy of OSWorld's file-cache dataset in the dataset's
// own layout, DIR/<path> for the URL's resolve/main/<path>, so tasks run
// without reaching Hugging Face:
//
//	DIR/<domain>/<task id>/<file>   the dataset's file
//	DIR/MANIFEST.tsv                optional: a header row, then one row per file;
//	                                columns stored_at (the path) and sha256
//
// A file the manifest lists is used only when its sha256 matches.
type Mirror struct {
	Dir string
	// sums are the manifest's sha256s (hex) by dataset path.
	sums map[string]string
}

// ManifestName is the mirror's list of files and their sha256s.
const ManifestName = "MANIFEST.tsv"

// OpenMirror reads the mirror at dir and its manifest, if it has one.
func OpenMirror(dir string) (*Mirror, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("open file-cache mirror: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("open file-cache mirror: %s is not a directory", dir)
	}
	m := &Mirror{Dir: dir, sums: map[string]string{}}
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if os.IsNotExist(err) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open mirror manifest: %w", err)
	}
	defer f.Close()
	if err := m.readManifest(f.Name(), bufio.NewScanner(f)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Mirror) readManifest(name string, sc *bufio.Scanner) error {
	pathCol, sumCol := -1, -1
	line := 0
	for sc.Scan() {
		line++
		cols := strings.Split(sc.Text(), "\t")
		if line == 1 {
			for i, c := range cols {
				switch c {
				case "stored_at":
					pathCol = i
				case "sha256":
					sumCol = i
				}
			}
			if pathCol < 0 || sumCol < 0 {
				return fmt.Errorf("%s: the header has no stored_at and sha256 columns", name)
			}
			continue
		}
		if len(cols) <= max(pathCol, sumCol) {
			return fmt.Errorf("%s:%d: %d columns, want at least %d", name, line, len(cols), max(pathCol, sumCol)+1)
		}
		p, sum := cols[pathCol], strings.ToLower(cols[sumCol])
		if sum == "" {
			continue
		}
		if b, err := hex.DecodeString(sum); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%s:%d: sha256 %q of %s is not 64 hex digits", name, line, sum, p)
		}
		if prev, dup := m.sums[p]; dup && prev != sum {
			return fmt.Errorf("%s:%d: %s listed twice with different sha256s", name, line, p)
		}
		m.sums[p] = sum
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", name, err)
	}
	return nil
}

// Has reports whether the mirror holds the file a dataset URL names (its
// sha256 is checked when it is read).
func (m *Mirror) Has(rawURL string) bool {
	if m == nil {
		return false
	}
	p, ok := DatasetPath(rawURL)
	if !ok {
		return false
	}
	st, err := os.Stat(filepath.Join(m.Dir, p))
	return err == nil && st.Mode().IsRegular()
}

// Read returns the file a dataset URL names: ErrNeedsFileCache naming the
// path when the mirror lacks it, ErrMirrorMismatch when its sha256 is not
// the manifest's.
func (m *Mirror) Read(rawURL string) ([]byte, error) {
	p, ok := DatasetPath(rawURL)
	if !ok {
		return nil, fmt.Errorf("%s: %w (not a URL of the file-cache dataset)", rawURL, ErrNeedsFileCache)
	}
	local := filepath.Join(m.Dir, p)
	b, err := os.ReadFile(local)
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("%s: %w (not in the mirror %s)", p, ErrNeedsFileCache, m.Dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read mirrored %s: %w", p, err)
	}
	if want, listed := m.sums[p]; listed {
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != want {
			return nil, fmt.Errorf("%s: %w: sha256 %s, %s lists %s", local, ErrMirrorMismatch, got, ManifestName, want)
		}
	}
	return b, nil
}
