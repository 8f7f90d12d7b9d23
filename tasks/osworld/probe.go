package osworld

import (
	"context"
	"slices"
	"strings"

	"github.com/drums-dev/drums/guestd/client"
)

// ProbePrograms asks the desktop which of the programs it has on PATH.
// "python" stands for what OSWorld needs of it: `python -c "import
// pyautogui; …"` working through /execute, however the guest provides it.
func ProbePrograms(ctx context.Context, g *client.Client, names []string) (map[string]bool, error) {
	have := map[string]bool{}
	if len(names) == 0 {
		return have, nil
	}
	if slices.Contains(names, "python") {
		r, err := g.ExecutePython(ctx, "pass")
		have["python"] = err == nil && r.ReturnCode == 0
	}
	script := `for p in "$@"; do command -v "$p" >/dev/null 2>&1 && echo "$p"; done; true`
	cmd := append([]string{script, "sh"}, names...)
	res, err := g.ExecuteRetried(ctx, cmd, true)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(res.Output, "\n") {
		if l = strings.TrimSpace(l); l != "" && l != "python" {
			have[l] = true
		}
	}
	return have, nil
}

// ProbeSchemas lists the GSettings schemas the desktop has.
func ProbeSchemas(ctx context.Context, g *client.Client) (map[string]bool, error) {
	res, err := g.ExecuteRetried(ctx, []string{"gsettings", "list-schemas"}, false)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, l := range strings.Split(res.Output, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			have[l] = true
		}
	}
	return have, nil
}
