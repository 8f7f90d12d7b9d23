//go:build !linux

package drumscli

import (
	"fmt"
	"os"
)

// Main: drums' desktops are Linux namespaces and its daemon drives them, so
// the command exists on Linux only; elsewhere it says so.
func Main(args []string, stdin, stdout, stderr *os.File) int {
	fmt.Fprintln(stderr, "drums: runs on Linux only (its desktops are Linux namespaces)")
	return 1
}
