package osworld

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FileCache is where a task's files from OSWorld's file cache come from,
// so a user runs offline: Dir, laid out like OSWorld's cache_dir (a user
// who ran OSWorld once, or copied its cache), and Mirror, a copy of the
// dataset those files are downloaded from. Dir is looked in first.
//
//	Dir/<task id>/<uuid5(URL namespace, url)>_<basename of the VM path>   a setup download
//	Dir/<task id>/<dest>                                                 a cloud_file getter's file
//	Dir/<task id>/history_new.sqlite                                     update_browse_history's empty History
//
// A zero FileCache (Dir "", no Mirror) has no files.
type FileCache struct {
	Dir    string
	Mirror *Mirror
}

// namespaceURL is RFC 4122's name space for URLs (Python's uuid.NAMESPACE_URL).
var namespaceURL = [16]byte{0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuid5 is Python's str(uuid.uuid5(uuid.NAMESPACE_URL, name)).
func uuid5(name string) string {
	h := sha1.New()
	h.Write(namespaceURL[:])
	h.Write([]byte(name))
	s := h.Sum(nil)[:16]
	s[6] = s[6]&0x0f | 0x50
	s[8] = s[8]&0x3f | 0x80
	x := hex.EncodeToString(s)
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// pyBasename is Python's os.path.basename for a POSIX path.
func pyBasename(p string) string {
	return p[strings.LastIndex(p, "/")+1:]
}

// DownloadName is the cache file name of a download step's file.
func DownloadName(url, vmPath string) string {
	return uuid5(url) + "_" + pyBasename(vmPath)
}

// HistoryName is where update_browse_history finds its empty History file.
const HistoryName = "history_new.sqlite"

// Path is DIR/<task>/<name>.
func (c FileCache) Path(taskID, name string) string {
	if c.Dir == "" {
		return ""
	}
	return filepath.Join(c.Dir, taskID, name)
}

// Read returns a task's file: Dir/<task>/<name>, else the mirror's copy of
// url; ErrNeedsFileCache naming where it was looked for when neither has
// it.
func (c FileCache) Read(taskID, name, url string) ([]byte, error) {
	if c.Has(taskID, name) {
		b, err := os.ReadFile(c.Path(taskID, name))
		if err != nil {
			return nil, fmt.Errorf("read cached %s: %w", name, err)
		}
		return b, nil
	}
	if c.Mirror != nil {
		return c.Mirror.Read(url)
	}
	if c.Dir == "" {
		return nil, fmt.Errorf("%s (%s): %w (no --cache or --hf-mirror given)", name, url, ErrNeedsFileCache)
	}
	return nil, fmt.Errorf("%s (%s): %w", c.Path(taskID, name), url, ErrNeedsFileCache)
}

// Has reports whether Dir holds the file.
func (c FileCache) Has(taskID, name string) bool {
	if c.Dir == "" {
		return false
	}
	st, err := os.Stat(c.Path(taskID, name))
	return err == nil && st.Mode().IsRegular()
}

// Holds reports whether Dir or the mirror has the file.
func (c FileCache) Holds(taskID, name, url string) bool {
	return c.Has(taskID, name) || c.Mirror.Has(url)
}
