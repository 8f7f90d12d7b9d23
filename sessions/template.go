package sessions

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// templateVersion changes whenever a template's layout changes; sessions
// refuse a template of another version, so an upgrade asks for a rebuild.
const templateVersion = 3

// TemplateManifest describes a built template layer.
type TemplateManifest struct {
	Version int       `json:"version"`
	Name    string    `json:"name"`
	Built   time.Time `json:"built"`
	User    User      `json:"user"`
	// Locale is the session's LANG.
	Locale string `json:"locale"`
	// Terminal is what Ctrl+Alt+T runs.
	Terminal string `json:"terminal"`
	// Chrome is what `google-chrome` runs in a session.
	Chrome string `json:"chrome"`
	// VideoDefault is the desktop file `xdg-mime query default video/*`
	// names, and whether it exists here.
	VideoDefault string `json:"video_default"`
	// VLC says how VLC is configured (its HTTP interface for OSWorld's
	// getters) and whether VLC exists here.
	VLC string `json:"vlc"`
	// Binds are host files bound read-only into every session over
	// placeholders of the template.
	Binds []Bind `json:"binds,omitempty"`
	// Found and Missing are OSWorld's applications and the tools tasks
	// call, as found on the host when the template was built.
	Found   []string `json:"found"`
	Missing []string `json:"missing"`
}

// Bind is a host file (Source) a session sees at Target.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// TemplateOptions configure BuildTemplate.
type TemplateOptions struct {
	Dir  string // where templates live (Config.TemplateDir)
	Name string // default "default"
}

func templatePaths(dir, name string) (root, rootfs, manifest string) {
	root = filepath.Join(dir, name)
	return root, filepath.Join(root, "rootfs"), filepath.Join(root, "manifest.json")
}

// LoadTemplate reads a built template and returns it with its rootfs
// directory.
func LoadTemplate(dir, name string) (*TemplateManifest, string, error) {
	_, rootfs, manifest := templatePaths(dir, name)
	b, err := os.ReadFile(manifest)
	if os.IsNotExist(err) {
		return nil, "", fmt.Errorf("template %q in %s: run `drums template build`: %w", name, dir, ErrNoTemplate)
	}
	if err != nil {
		return nil, "", fmt.Errorf("read template manifest: %w", err)
	}
	var m TemplateManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, "", fmt.Errorf("parse template manifest %s: %w", manifest, err)
	}
	if m.Version != templateVersion {
		return nil, "", fmt.Errorf("template %q is version %d, this drums needs %d: run `drums template build`: %w",
			name, m.Version, templateVersion, ErrNoTemplate)
	}
	return &m, rootfs, nil
}

// osworldApps are the applications OSWorld's task domains drive, each with
// the commands that provide it.
var osworldApps = []struct {
	name string
	bins []string
}{
	{"chrome", []string{"google-chrome", "chromium"}},
	{"libreoffice", []string{"libreoffice", "soffice"}},
	{"gimp", []string{"gimp"}},
	{"vlc", []string{"vlc"}},
	{"thunderbird", []string{"thunderbird"}},
	{"vs_code", []string{"code"}},
	{"gnome-terminal", []string{"gnome-terminal"}},
}

// guestTools are what the desktop stack, guestd and OSWorld tasks run.
var guestTools = []string{
	"Xvfb", "dbus-daemon", "openbox", "xprop", "/usr/libexec/at-spi-bus-launcher",
	"/usr/bin/python3", "sudo", "wmctrl", "xdg-open", "socat", "ffmpeg", "gsettings", "dconf",
}
