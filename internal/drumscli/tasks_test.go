//go:build linux

package drumscli

import (
	"os"
	"path/filepath"
	"testing"
)

// A relative --suite gives task files by absolute path: --via-python's
// worker runs in another directory.
func TestSuiteExamplesAbsolute(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "suite.json"), []byte(`{"os": ["94d95f96-9699-4208-98ba-3c3119edf9c2"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	s := suiteFlags{Suite: "suite.json"}
	entries, _, err := s.load()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("entries %+v, want the one task", entries)
	}
	if want := filepath.Join(dir, "examples"); s.Examples != want {
		t.Errorf("examples %q, want %q", s.Examples, want)
	}
}
