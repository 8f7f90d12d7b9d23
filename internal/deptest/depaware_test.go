package deptest

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite cmd/*/depaware.txt from go list")

// binaries have their dependencies listed in cmd/<name>/depaware.txt (as
// tailscale's depaware.txt), so that a new module or package in a binary
// shows in review.
var binaries = []string{"drums", "drums-init", "guestd"}

// TestDepaware: each binary's packages outside the standard library, as
// `make build` builds it, are the ones its depaware.txt lists. The
// standard library is left out: its internal packages change with every
// Go release.
func TestDepaware(t *testing.T) {
	for _, bin := range binaries {
		t.Run(bin, func(t *testing.T) {
			deps, err := nonStandardDeps("./cmd/" + bin)
			if err != nil {
				t.Fatalf("go list ./cmd/%s: %v", bin, err)
			}
			got := "# Packages outside the standard library in cmd/" + bin + " (linux/amd64, CGO_ENABLED=0).\n" +
				"# Generated; after review: go test ./internal/deptest -run TestDepaware -update\n" +
				strings.Join(deps, "\n") + "\n"
			path := filepath.Join("..", "..", "cmd", bin, "depaware.txt")
			listed, err := os.ReadFile(path)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				t.Fatal(err)
			}
			d := cmp.Diff(string(listed), got)
			switch {
			case d == "":
			case *update:
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				t.Errorf("cmd/%s/depaware.txt is stale (-listed +built); review, then rerun with -update:\n%s", bin, d)
			}
		})
	}
}

// TestThinBinaries: cmd/<name> is its CLI package's Main and nothing else
// (internal/<name>cli, drums- dropped: drums-init's is initcli)
// (DESIGN.md: thin binaries); the commands, their flags and their tests
// live in internal/<name>cli.
func TestThinBinaries(t *testing.T) {
	for _, bin := range binaries {
		cmd := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", "./cmd/"+bin)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list ./cmd/%s: %v", bin, err)
		}
		if got, want := strings.Fields(string(out)), []string{module + "/internal/" + strings.TrimPrefix(bin, "drums-") + "cli", "os"}; !slices.Equal(got, want) {
			t.Errorf("cmd/%s imports %v, want only %v", bin, got, want)
		}
	}
}

// TestNoTextTemplate: no binary links text/template (html/template is
// built on it). Its method lookup by name at run time (reflect's
// MethodByName) keeps every exported method of every reachable type in
// the binary: html/template made drums 3.4 MB larger, and parsing a
// template at init costs every process that links it
// (bench/results/binaries.md).
func TestNoTextTemplate(t *testing.T) {
	for _, bin := range binaries {
		deps, err := listDeps("./cmd/"+bin, "{{.ImportPath}}")
		if err != nil {
			t.Fatalf("go list ./cmd/%s: %v", bin, err)
		}
		if slices.Contains(deps, "text/template") {
			t.Errorf("cmd/%s links text/template; write the text with fmt instead", bin)
		}
	}
}

// nonStandardDeps lists, sorted, the packages outside the standard library
// that pkg is built from (itself included), for the target make build has.
func nonStandardDeps(pkg string) ([]string, error) {
	deps, err := listDeps(pkg, "{{if not .Standard}}{{.ImportPath}}{{end}}")
	sort.Strings(deps)
	return deps, err
}

// listDeps is go list -deps -f format of pkg, one field per package, for
// the target make build has.
func listDeps(pkg, format string) ([]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", format, pkg)
	cmd.Dir = "../.."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}
