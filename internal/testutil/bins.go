package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

var (
	binsOnce sync.Once
	binsDir  string
	binsErr  error
)

// Bins returns the directory holding the drums, drums-init and guestd
// binaries: $DRUMS_BIN, or a build of this checkout made once per test
// binary, which RemoveBins (in TestMain) deletes.
func Bins(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("DRUMS_BIN"); d != "" {
		return d
	}
	binsOnce.Do(func() {
		root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
		if err != nil {
			binsErr = fmt.Errorf("find the module root: %w", err)
			return
		}
		if binsDir, binsErr = os.MkdirTemp("", "drums-test-bin-"); binsErr != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", binsDir+"/", "./cmd/drums", "./cmd/drums-init", "./cmd/guestd")
		cmd.Dir = strings.TrimSpace(string(root))
		if out, err := cmd.CombinedOutput(); err != nil {
			binsErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return binsDir
}

// RemoveBins deletes what Bins built.
func RemoveBins() {
	if binsDir != "" {
		os.RemoveAll(binsDir)
	}
}
