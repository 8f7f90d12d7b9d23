// Command mkimage writes the drums container image, an OCI archive of
// drums' binaries over a small base (deploy/kubernetes.Image), for nodes
// to import: make kubernetes-image.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/drums-dev/drums/deploy/kubernetes"
)

func main() {
	bin := flag.String("bin", "bin", "directory of drums, drums-init and guestd (make build)")
	out := flag.String("o", "bin/drums-image.oci.tar", "the archive to write")
	flag.Parse()
	if err := run(*bin, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(bin, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := kubernetes.WriteImage(f, bin); err != nil {
		f.Close()
		os.Remove(out)
		return err
	}
	return f.Close()
}
