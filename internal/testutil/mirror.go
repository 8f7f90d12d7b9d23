package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// DatasetURL is where OSWorld downloads its file cache from: a mirror
// serves what follows it.
const DatasetURL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/"

// BadSum is a sha256 that no test file has.
var BadSum = strings.Repeat("ab", sha256.Size)

// MirrorFile is one file of a test mirror: its content, and the sha256 its
// manifest lists ("" for none, "good" for the content's own).
type MirrorFile struct{ Content, Sum string }

// MirrorDir lays a file-cache mirror out in a temporary directory
// (DOMAIN/TASK/FILE), with a MANIFEST.tsv in the columns of the real one.
func MirrorDir(t testing.TB, files map[string]MirrorFile) string {
	t.Helper()
	dir := t.TempDir()
	manifest := "domain\ttask_id\tfile\trepo\tpath_in_repo\tsha256\tbytes\tmatch_kind\tverification\tgit_blob\tstored_at\n"
	for p, f := range files {
		if f.Content != "" {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(f.Content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		sum := f.Sum
		if sum == "good" {
			s := sha256.Sum256([]byte(f.Content))
			sum = hex.EncodeToString(s[:])
		}
		parts := strings.SplitN(p, "/", 3)
		manifest += strings.Join([]string{parts[0], parts[1], parts[2], "r", "x", sum, "1", "k", "v", "b", p}, "\t") + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST.tsv"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
