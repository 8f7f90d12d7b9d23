//go:build !linux

package initcli

import (
	"fmt"
	"os"
)

// Main: a desktop's init is Linux namespaces; elsewhere it says so.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "drums-init: runs on Linux only (a desktop's init makes Linux namespaces)")
	return 1
}
