// Package deptest enforces the "must not import" column of DESIGN.md and
// keeps each binary's list of dependencies (cmd/*/depaware.txt).
package deptest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/drums-dev/drums"

// forbidden maps a package pattern to the import paths that its packages
// must not depend on, directly or through another package. A trailing "/..."
// also forbids every package below that path. guestd/client is the host
// side's way to a desktop, which everyone may use: it must know nothing of
// guestd's server, and the rules forbid the package guestd itself.
var forbidden = map[string][]string{
	"./guestd/...":        {module + "/sessions/...", module + "/provider/..."},
	"./guestd/client/...": {module + "/guestd", "github.com/labstack/echo/v4/...", module + "/atspi/...", module + "/internal/x11/...", module + "/internal/pyauto/..."},
	"./atspi/...":         {"net/http", module + "/sessions/...", module + "/provider/...", module + "/guestd/..."},
	"./sessions/...":      {"net/http", "github.com/labstack/echo/v4/...", "github.com/jezek/xgb/...", module + "/internal/x11/...", module + "/guestd/..."},
	"./provider/...":      {module + "/guestd", module + "/internal/x11/...", module + "/internal/pyauto/..."},
	"./tasks/...":         {module + "/sessions/...", module + "/internal/x11/..."},
	// drums carries nothing of a desktop's side: guestd is its own binary.
	"./internal/drumscli/...": {module + "/guestd", module + "/atspi/...", module + "/internal/x11/...", module + "/internal/pyauto/..."},
	// guestd's command is also a drop-in for a real OSWorld VM: no engine.
	"./internal/guestdcli/...": {module + "/sessions/...", module + "/provider/..."},
	// The host's terminal, for drums session shell: sizes go to sessions
	// through the caller.
	"./internal/term/...": {module + "/sessions/..."},
	// drums run drives desktops through the daemon and the guest API only;
	// the image store and the daemon's start come from its caller.
	"./internal/mainjob/...": {module + "/sessions/...", module + "/provider", module + "/guestd", module + "/internal/x11/..."},
}

type listed struct {
	ImportPath string
	Deps       []string
}

func TestForbiddenImports(t *testing.T) {
	for pattern, bad := range forbidden {
		out, err := goList(pattern)
		if err != nil {
			t.Fatalf("go list %s: %v", pattern, err)
		}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for {
			var p listed
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("decode go list: %v", err)
			}
			for _, dep := range p.Deps {
				for _, b := range bad {
					if matches(b, dep) {
						t.Errorf("%s depends on %s, which DESIGN.md forbids", p.ImportPath, dep)
					}
				}
			}
		}
	}
}

func matches(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func TestMatches(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"net/http", "net/http", true},
		{"net/http", "net/http/httptest", false},
		{module + "/sessions/...", module + "/sessions", true},
		{module + "/sessions/...", module + "/sessions/internal/x", true},
		{module + "/sessions/...", module + "/sessionsx", false},
	} {
		if got := matches(c.pattern, c.path); got != c.want {
			t.Errorf("matches(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// goList runs go list at the module root, where the patterns are relative to.
func goList(pattern string) ([]byte, error) {
	cmd := exec.Command("go", "list", "-json", pattern)
	cmd.Dir = "../.."
	return cmd.Output()
}
