package guestd

import (
	"os/exec"

	"github.com/drums-dev/drums/internal/testutil"
)

// pythonImport says why Debian's python3 cannot import module (nil if it can).
func pythonImport(module string) error {
	return exec.Command(testutil.DebianPython, "-c", "import "+module).Run()
}
