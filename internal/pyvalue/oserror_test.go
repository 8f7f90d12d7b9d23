package pyvalue

import (
	"syscall"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

func TestOSErrorText(t *testing.T) {
	if got := NewOSError(syscall.ENOENT, "no-such-binary").Error(); got != "[Errno 2] No such file or directory: 'no-such-binary'" {
		t.Errorf("ENOENT: %s", got)
	}
	if got := NewOSError(syscall.EACCES, "it's").Error(); got != `[Errno 13] Permission denied: "it's"` {
		t.Errorf("EACCES: %s", got)
	}
	t.Run("cpython", func(t *testing.T) {
		var errnos []int
		for e := 1; e <= 133; e++ {
			errnos = append(errnos, e)
		}
		script := `
import json, os, sys
print(json.dumps([str(OSError(e, os.strerror(e), "f")) for e in json.load(sys.stdin)]))
`
		var want []string
		testutil.PythonOracle(t, script, errnos, &want)
		for i, e := range errnos {
			if got := NewOSError(syscall.Errno(e), "f").Error(); got != want[i] {
				t.Errorf("errno %d: %q, Python %q", e, got, want[i])
			}
		}
	})
}
