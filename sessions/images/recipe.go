package images

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// A Recipe is a package list and the OSWorld-like configuration drums
// applies to it (see configure.go): the built-in ones are core and osworld.
type Recipe struct {
	Name        string
	Description string
	// Packages are installed on top of Debian's Essential set and apt,
	// without Recommends.
	Packages []string
	// SystemServices: the desktops run a system bus with systemd's
	// timedated, hostnamed and localed (services.go). drums' layer
	// configures it, so an image built before needs no rebuild.
	SystemServices bool
	// TimeZone is the desktops' initial time zone, set in drums' layer;
	// "" keeps the image's (Debian's installer-less build: Etc/UTC).
	TimeZone string
	// Shell is the desktop's shell: ShellOpenbox (the zero value) or
	// ShellGNOME. Plans take their stack from it (the image's, not a
	// flag of the desktop's), and drums' layer configures it.
	Shell Shell
}

// A Shell is what draws a desktop's windows, panels and background.
type Shell string

const (
	// ShellOpenbox is the light profile: openbox on a black screen, the
	// desktops' density figures.
	ShellOpenbox Shell = ""
	// ShellGNOME is the fidelity profile: GNOME Shell in X11 mode with
	// Ubuntu's session mode (Yaru, the dock on the left), the desktop
	// OSWorld's VM shows.
	ShellGNOME Shell = "gnome-shell"
)

// OSWorldTimeZone is the osworld recipe's time zone. No public OSWorld
// material prints the VM's initial zone (its code, task files, issues and
// docs were searched; see the README's fidelity table): the VM was
// installed by XLang Lab in Hong Kong with Ubuntu's installer, which takes
// the zone from the installing machine's location, and task os/b6781586
// ("set my time zone to UTC+0", scored by timedatectl's "+0000)") is only
// sound if the VM starts elsewhere than +0000.
const OSWorldTimeZone = "Asia/Hong_Kong"

// corePackages are what a desktop's stack runs (Xvfb, the session bus,
// AT-SPI, openbox, PulseAudio's null sink), what guestd and OSWorld's
// actions call (python3 with the modules OSWorld's main.py imports, sudo,
// wmctrl, xdg-open, ffmpeg, gsettings, scrot), two terminals, and what the
// tier-1 tests of the stack drive (GTK 3 and 4 demo apps, zenity, the
// pyatspi reference walk, ImageMagick, ip and nft to show them refused),
// and noVNC's page, which guestd's live view serves (port 8006; Debian's
// package drags in nodejs, numpy and websockify, about 110 MB that guestd
// does not use: it speaks RFB over the WebSocket itself).
var corePackages = []string{
	"xvfb", "openbox", "wmctrl", "x11-xserver-utils", "x11-utils",
	"dbus", "at-spi2-core", "dconf-gsettings-backend", "dconf-cli", "gsettings-desktop-schemas", "libglib2.0-bin",
	"ffmpeg", "sudo", "socat", "xdg-utils", "file", "media-types", "locales", "fonts-dejavu-core",
	"procps", "psmisc", "curl", "ca-certificates", "less", "iproute2", "nftables", "iputils-ping",
	"pulseaudio", "pulseaudio-utils",
	"gnome-terminal", "xterm",
	"python3", "python3-pyatspi", "python3-gi", "gir1.2-gtk-3.0", "python3-xlib", "python3-pil",
	"python3-lxml", "python3-requests", "python3-flask", "python3-psutil",
	"gtk-3-examples", "gtk-4-examples", "zenity", "imagemagick", "scrot",
	"novnc",
}

// osworldPackages are OSWorld's applications (Chromium as google-chrome,
// LibreOffice, GIMP, VLC, Thunderbird, Files, and Evince, Ubuntu's
// document viewer, which opens the PDFs tasks open), the settings schemas
// test_nogdrive's os tasks touch, the tools OSWorld's Ubuntu VM has that
// task configs call (unzip, zip, jq, git, pip, bc), and numpy, which
// upstream main.py's pyxcursor imports (compat and drums bench run it in
// the desktop).
var osworldPackages = []string{
	"chromium", "vlc", "libreoffice-calc", "libreoffice-writer", "libreoffice-impress", "libreoffice-gtk3",
	"gimp", "thunderbird", "nautilus", "evince", "gnome-shell-common", "gnome-settings-daemon-common", "xsel",
	"unzip", "zip", "jq", "git", "python3-pip", "bc", "python3-numpy",
}

// gnomePackages are GNOME Shell and what makes it look like Ubuntu
// 22.04's: the dock (Debian's dash-to-dock, which Ubuntu's dock is a
// fork of), the Yaru shell, GTK and icon themes, GNOME Settings, and
// gnome-session-bin for the session's helpers GNOME Settings calls.
var gnomePackages = []string{
	"gnome-shell", "gnome-shell-extension-dashtodock",
	"yaru-theme-gnome-shell", "yaru-theme-gtk", "yaru-theme-icon",
	"gnome-control-center", "gnome-session-bin",
}

// Recipes are the built-in recipes, by name.
var Recipes = map[string]Recipe{
	"core": {Name: "core", Description: "the desktop stack, python3, sudo, terminals and what the stack's tests drive",
		Packages: corePackages},
	"osworld": {Name: "osworld", Description: "core plus OSWorld's applications: Chromium (as google-chrome), LibreOffice, GIMP, VLC, Thunderbird, nautilus",
		Packages: slices.Concat(corePackages, osworldPackages), SystemServices: true, TimeZone: OSWorldTimeZone},
	"osworld-gnome": {Name: "osworld-gnome", Description: "osworld on GNOME Shell: a top bar, the dock on the left and Yaru, as OSWorld's Ubuntu VM",
		Packages: slices.Concat(corePackages, osworldPackages, gnomePackages), SystemServices: true, TimeZone: OSWorldTimeZone,
		Shell: ShellGNOME},
}

// DefaultSuite is the suite a build without --suite uses.
const DefaultSuite = "bookworm"

// gnomeSuite is the one suite a GNOME Shell recipe builds from: drums'
// extension (gnome.go) declares shell-version 43 and uses the imports.*
// API, which Ubuntu 22.04's GNOME 42 and Debian 13's GNOME 48 refuse.
const gnomeSuite = "bookworm"

// recipeVersion changes whenever configure.go changes what it writes, so
// that an image built by an older drums is not taken for this one's.
const recipeVersion = 6

// BuildOptions say what to build.
type BuildOptions struct {
	Name   string // the image's name
	Recipe string // a built-in recipe; "" takes Name if it is one, else core
	Suite  string // default DefaultSuite
	// Mirrors are apt sources: a URL (the suite's main archive; for
	// Debian, its -updates and -security archives are added), or a whole
	// "deb URL SUITE COMPONENTS" line. nil takes the distribution's.
	Mirrors  []string
	Arch     string   // default the host's
	Packages []string // added to the recipe's
	Rebuild  bool     // build even if an image of the same inputs exists
	// Progress gets one line per step, as the build goes.
	Progress func(line string)
}

// plan is a build's inputs made complete: what the id is made of.
type plan struct {
	Recipe   string   `json:"recipe"`
	Version  int      `json:"recipe_version"`
	Distro   string   `json:"distro"`
	Suite    string   `json:"suite"`
	Sources  []string `json:"sources"`
	Arch     string   `json:"arch"`
	Packages []string `json:"packages"`
	notes    []string // what the distribution lacks of the recipe
}

// distros knows the Ubuntu codenames; every other suite is Debian's.
var ubuntuSuites = []string{"bionic", "focal", "jammy", "mantic", "noble", "oracular", "plucky", "questing"}

// ubuntuMissing are recipe packages Ubuntu ships only as snaps, which do
// not install into a root filesystem.
var ubuntuMissing = map[string]string{
	"chromium": "Ubuntu ships Chromium as a snap only; add a Chrome .deb source with --mirror",
}

func (o BuildOptions) plan() (*plan, error) {
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	recipe := o.Recipe
	if recipe == "" {
		recipe = "core"
		if _, ok := Recipes[o.Name]; ok {
			recipe = o.Name
		}
	}
	r, ok := Recipes[recipe]
	if !ok {
		return nil, fmt.Errorf("recipe %q: want one of %s: %w", recipe, strings.Join(RecipeNames(), ", "), ErrBadRequest)
	}
	p := &plan{Recipe: recipe, Version: recipeVersion, Suite: o.Suite, Arch: o.Arch}
	if p.Suite == "" {
		p.Suite = DefaultSuite
	}
	if strings.ContainsAny(p.Suite, " /\t\n") {
		return nil, fmt.Errorf("suite %q: %w", p.Suite, ErrBadRequest)
	}
	if r.Shell == ShellGNOME && p.Suite != gnomeSuite {
		return nil, fmt.Errorf("recipe %s on suite %q: GNOME Shell desktops need %s's GNOME Shell 43 (drums' extension is written for it; another release's shell refuses it and no desktop would come up): %w",
			recipe, p.Suite, gnomeSuite, ErrBadRequest)
	}
	if p.Arch == "" {
		p.Arch = debianArch(runtime.GOARCH)
	}
	p.Distro = "debian"
	if slices.Contains(ubuntuSuites, strings.Split(p.Suite, "-")[0]) {
		p.Distro = "ubuntu"
	}
	var err error
	if p.Sources, err = sources(p.Distro, p.Suite, p.Arch, o.Mirrors); err != nil {
		return nil, err
	}
	pkgs := map[string]bool{}
	for _, name := range slices.Concat(r.Packages, o.Packages) {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if strings.ContainsAny(name, " \t,/") || strings.HasPrefix(name, "-") {
			return nil, fmt.Errorf("package %q: %w", name, ErrBadRequest)
		}
		if why, ok := ubuntuMissing[name]; ok && p.Distro == "ubuntu" && !slices.Contains(o.Packages, name) {
			p.notes = append(p.notes, name+": "+why)
			continue
		}
		pkgs[name] = true
	}
	for name := range pkgs {
		p.Packages = append(p.Packages, name)
	}
	sort.Strings(p.Packages)
	return p, nil
}

// RecipeNames lists the built-in recipes.
func RecipeNames() []string {
	var out []string
	for n := range Recipes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// id is the image id the plan gives: the same inputs, the same id.
func (p *plan) id() string {
	b, err := json.Marshal(struct {
		Kind string `json:"kind"`
		*plan
	}{"build", p})
	if err != nil {
		panic(err) // plain strings and ints
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// sources are the apt source lines of a build.
func sources(distro, suite, arch string, mirrors []string) ([]string, error) {
	components := "main"
	if distro == "ubuntu" {
		components = "main universe"
	}
	if len(mirrors) == 0 {
		switch {
		case distro == "ubuntu" && (arch == "amd64" || arch == "i386"):
			mirrors = []string{"http://archive.ubuntu.com/ubuntu"}
		case distro == "ubuntu":
			mirrors = []string{"http://ports.ubuntu.com/ubuntu-ports"}
		default:
			mirrors = []string{"http://deb.debian.org/debian"}
		}
	}
	var out []string
	for i, m := range mirrors {
		m = strings.TrimSpace(m)
		if strings.HasPrefix(m, "deb ") {
			out = append(out, m)
			continue
		}
		if !strings.HasPrefix(m, "http://") && !strings.HasPrefix(m, "https://") && !strings.HasPrefix(m, "file://") {
			return nil, fmt.Errorf("mirror %q: want an http(s) or file URL, or a \"deb URL SUITE COMPONENTS\" line: %w", m, ErrBadRequest)
		}
		out = append(out, fmt.Sprintf("deb %s %s %s", m, suite, components))
		if i > 0 || strings.HasPrefix(suite, "sid") || suite == "unstable" {
			continue
		}
		// The first mirror's updates and security archives: a desktop
		// opens arbitrary web pages, its browser must have its fixes.
		out = append(out, fmt.Sprintf("deb %s %s-updates %s", m, suite, components))
		switch {
		case distro == "ubuntu":
			out = append(out, fmt.Sprintf("deb %s %s-security %s", m, suite, components))
		case strings.TrimSuffix(m, "/") == "http://deb.debian.org/debian":
			out = append(out, fmt.Sprintf("deb http://deb.debian.org/debian-security %s-security %s", suite, components))
		}
	}
	return out, nil
}

// debianArch is dpkg's name for a Go architecture.
func debianArch(goarch string) string {
	switch goarch {
	case "386":
		return "i386"
	case "arm":
		return "armhf"
	case "ppc64le":
		return "ppc64el"
	}
	return goarch
}
