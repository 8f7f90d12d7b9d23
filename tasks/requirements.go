package tasks

import (
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/drums-dev/drums/tasks/osworld"
)

// Requirements are what a task needs from the desktop and the host, read
// from its JSON (no desktop needed).
type Requirements struct {
	// Apps are programs the desktop must have: the task's applications
	// and the tools its commands call.
	Apps []string `json:"apps"`
	// FileCache lists the files that come from OSWorld's file cache.
	FileCache []CacheFile `json:"file_cache,omitempty"`
	// LiveWeb names the internet hosts or services the task reaches.
	LiveWeb []string `json:"live_web,omitempty"`
	// Services are system services the task relies on.
	Services []string `json:"services,omitempty"`
	// Schemas are the GSettings schemas its gsettings commands use.
	Schemas []string `json:"gsettings_schemas,omitempty"`
	// Unsupported names steps a drums desktop cannot perform, with why.
	Unsupported []string `json:"unsupported,omitempty"`
}

// CacheFile is one file of the file cache a task needs.
type CacheFile struct {
	Name string `json:"name"` // under DIR/<task id>/
	URL  string `json:"url"`
	// Path is the file in the dataset (and the mirror), for a URL of the
	// file-cache dataset.
	Path    string `json:"path,omitempty"`
	Present bool   `json:"present"`
}

// describe names the file for a person: its dataset path where it has one.
func (f CacheFile) describe() string {
	if f.Path != "" {
		return f.Path
	}
	return f.Name
}

// appOf maps OSWorld's related_apps values to the program that provides
// them on its Ubuntu VM ("" for none).
var appOf = map[string]string{
	"chrome": "google-chrome", "Chrome": "google-chrome", "browser": "google-chrome",
	"libreoffice": "libreoffice", "libreoffice_calc": "libreoffice", "libreoffice calc": "libreoffice",
	"libreoffice_impress": "libreoffice", "libreoffice_writer": "libreoffice", "calc": "libreoffice",
	"writer": "libreoffice", "Writer": "libreoffice",
	"gimp": "gimp", "vlc": "vlc", "ubuntu_media_player": "vlc", "thunderbird": "thunderbird",
	"vscode": "code", "vs_code": "code", "terminal": "gnome-terminal", "picard": "picard",
}

// toolPrograms are the commands whose presence the report checks when a
// task's commands call them. The rest (coreutils, python3, …) every desktop
// has.
var toolPrograms = map[string]bool{
	"google-chrome": true, "chromium": true, "libreoffice": true, "soffice": true, "gimp": true,
	"vlc": true, "thunderbird": true, "code": true, "gnome-terminal": true, "nautilus": true,
	"socat": true, "jq": true, "xsel": true, "xclip": true, "unzip": true, "zip": true, "git": true,
	"pulseaudio": true, "pactl": true, "bc": true, "xdotool": true, "wmctrl": true, "xdg-open": true,
	"xdg-mime": true, "gsettings": true, "sudo": true, "ffmpeg": true, "convert": true,
	"timedatectl": true, "systemctl": true, "pip": true, "pip3": true, "picard": true, "python": true,
	"zenity": true,
}

// appOpenedBy maps a file type opened by an `open` step to its program.
var appOpenedBy = map[string]string{
	".xlsx": "libreoffice", ".xls": "libreoffice", ".ods": "libreoffice", ".csv": "libreoffice",
	".docx": "libreoffice", ".doc": "libreoffice", ".odt": "libreoffice",
	".pptx": "libreoffice", ".ppt": "libreoffice", ".odp": "libreoffice",
}

// serviceOf maps a command to the system service it needs.
var serviceOf = map[string]string{
	"gsettings":   "session D-Bus with dconf",
	"dconf":       "session D-Bus with dconf",
	"sudo":        "sudo with password \"password\"",
	"timedatectl": "systemd-timedated",
	"systemctl":   "systemd",
	"pactl":       "PulseAudio",
	"pulseaudio":  "PulseAudio",
	"xdg-open":    "xdg-utils with MIME defaults",
	"xdg-mime":    "xdg-utils with MIME defaults",
	"wmctrl":      "an EWMH window manager",
}

// gsettingsSchemaVerbs are the gsettings commands whose next word is a
// schema.
var gsettingsSchemaVerbs = map[string]bool{"get": true, "set": true, "reset": true, "list-keys": true, "range": true, "writable": true, "describe": true, "monitor": true}

// unavailableServices are services a namespace desktop does not run, with
// why: there is no systemd as PID 1. The osworld image's desktops run
// timedated, hostnamed and localed on a system bus without it
// (sessions/images/services.go), but no systemd1 manager.
var unavailableServices = map[string]string{
	"systemd": "systemctl needs systemd as PID 1; a drums desktop's system bus has no org.freedesktop.systemd1",
}

// networkCommands are command heads that reach the internet when given
// these subcommands: package managers and downloads.
var networkCommands = map[string]func(args []string) string{
	"apt":     aptNeeds,
	"apt-get": aptNeeds,
	"pip":     func(a []string) string { return ifHas(a, "install", "PyPI") },
	"pip3":    func(a []string) string { return ifHas(a, "install", "PyPI") },
	"snap":    func(a []string) string { return ifHas(a, "install", "the Snap store") },
	"wget":    func([]string) string { return "the web (wget)" },
	"curl":    func([]string) string { return "the web (curl)" },
	"git": func(a []string) string {
		for _, x := range a {
			if x == "clone" || x == "push" || x == "pull" || x == "fetch" {
				return "a git remote"
			}
		}
		return ""
	},
}

func aptNeeds(a []string) string {
	for _, x := range a {
		if x == "install" || x == "update" || x == "upgrade" {
			return "Debian/Ubuntu package mirrors"
		}
	}
	return ""
}

func ifHas(a []string, word, what string) string {
	for _, x := range a {
		if x == word {
			return what
		}
	}
	return ""
}

// webGetters reach live websites from the evaluation.
var webGetters = map[string]bool{
	"pdf_from_url": true, "page_info": true, "info_from_website": true,
	"gotoRecreationPage_and_get_html_content": true, "active_tab_html_parse": true,
	"active_tab_info": true, "number_of_search_results": true,
}

// ctrlAltT matches pyautogui.hotkey('ctrl', 'alt', 't') in any quoting.
var ctrlAltT = regexp.MustCompile(`hotkey\(\s*\[?\s*['"]ctrl['"]\s*,\s*['"]alt['"]\s*,\s*['"]t['"]`)

// segmentSplit cuts a shell script into simple commands.
var segmentSplit = regexp.MustCompile("&&|\\|\\||[;|&\\n(){}`]|\\$\\(")

// commandHeads returns each simple command of a task command (a list or a
// shell string) as its words, following sudo, env assignments and
// `bash -c SCRIPT`.
func commandHeads(command any) [][]string {
	var out [][]string
	switch c := command.(type) {
	case []any:
		words := make([]string, 0, len(c))
		for _, w := range c {
			s, _ := w.(string)
			words = append(words, s)
		}
		if len(words) == 1 && strings.ContainsAny(words[0], " \n;|&") {
			return commandHeads(words[0])
		}
		out = append(out, trimHead(words))
		for i, w := range words {
			base := path.Base(w)
			if (base == "bash" || base == "sh") && i+2 < len(words) && words[i+1] == "-c" {
				out = append(out, commandHeads(words[i+2])...)
			}
		}
	case string:
		for _, seg := range segmentSplit.Split(c, -1) {
			words := strings.Fields(seg)
			if len(words) == 0 {
				continue
			}
			h := trimHead(words)
			if len(h) > 0 {
				out = append(out, h)
			}
			if len(h) > 2 && (path.Base(h[0]) == "bash" || path.Base(h[0]) == "sh") && h[1] == "-c" {
				out = append(out, commandHeads(strings.Trim(strings.Join(h[2:], " "), `"'`))...)
			}
		}
	}
	return out
}

// trimHead drops what comes before the program: VAR=value, sudo and its
// flags, export, timeout N, and quotes.
func trimHead(words []string) []string {
	for len(words) > 0 {
		w := strings.Trim(words[0], `"'`)
		switch {
		case w == "":
			words = words[1:]
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "-"):
			words = words[1:]
		case w == "sudo" || w == "export" || w == "exec" || w == "nohup" || w == "env":
			words = words[1:]
		case strings.HasPrefix(w, "-") && len(words) > 1:
			words = words[1:]
		case w == "timeout" && len(words) > 2:
			words = words[2:]
		default:
			words[0] = path.Base(w)
			return words
		}
	}
	return nil
}

// isLocalURL reports URLs that need no internet.
func isLocalURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return true
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss", "ftp":
	default:
		return true
	}
	h := u.Hostname()
	return h == "" || h == "localhost" || strings.HasPrefix(h, "127.") || h == "::1"
}

var urlRE = regexp.MustCompile(`https?://[^\s"'<>\\^$()|]+`)

// collectURLs appends the non-local internet hosts found in any string of v.
func collectURLs(v any, add func(string)) {
	switch x := v.(type) {
	case string:
		for _, m := range urlRE.FindAllString(x, -1) {
			if isLocalURL(m) {
				continue
			}
			u, _ := url.Parse(m)
			if h := u.Hostname(); h != osworld.FileCacheHost && h != "" && strings.Contains(h, ".") && !strings.HasSuffix(h, ".") {
				add(h)
			}
		}
	case []any:
		for _, e := range x {
			collectURLs(e, add)
		}
	case map[string]any:
		for _, e := range x {
			collectURLs(e, add)
		}
	}
}

type set map[string]bool

func (s set) add(v string) {
	if v != "" {
		s[v] = true
	}
}

func (s set) sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Analyze reads a task's requirements; the file cache is checked for the
// presence of each file it needs.
func Analyze(t *osworld.Task, cache osworld.FileCache) Requirements {
	apps, web, services, unsupported, schemas := set{}, set{}, set{}, set{}, set{}
	for _, a := range t.RelatedApps {
		apps.add(appOf[a])
	}
	var files []CacheFile
	addFile := func(name, u string) {
		p, _ := osworld.DatasetPath(u)
		files = append(files, CacheFile{Name: name, URL: u, Path: p, Present: cache.Holds(t.ID, name, u)})
	}
	commandUse := func(command any) {
		for _, words := range commandHeads(command) {
			if len(words) == 0 {
				continue
			}
			h := words[0]
			if h == "soffice" {
				h = "libreoffice"
			}
			if toolPrograms[h] {
				apps.add(h)
			}
			services.add(serviceOf[h])
			if h == "gsettings" && len(words) > 2 && gsettingsSchemaVerbs[words[1]] {
				schemas.add(strings.Trim(words[2], `"'`))
			}
			if f := networkCommands[h]; f != nil {
				web.add(f(words[1:]))
			}
		}
		words := osworld.CommandWords(command)
		// The session bus is needed wherever a command names it.
		if strings.Contains(words, "DBUS_SESSION_BUS_ADDRESS") {
			services.add("session D-Bus")
		}
		// Ctrl+Alt+T opens gnome-terminal on OSWorld's Ubuntu.
		if ctrlAltT.MatchString(words) {
			apps.add("gnome-terminal")
		}
	}
	steps := append(append([]osworld.Step{}, t.Config...), t.Evaluator.Postconfig...)
	for _, s := range steps {
		if err := osworld.CheckStep(s); err != nil {
			unsupported.add(err.Error())
		}
		p := s.Parameters
		switch s.Type {
		case "download":
			specs, _ := osworld.FileSpecs(p["files"])
			for _, f := range specs {
				addFile(osworld.DownloadName(f.URL, f.Path), f.URL)
			}
		case "update_browse_history":
			addFile(osworld.HistoryName, "https://huggingface.co/datasets/xlangai/ubuntu_osworld_file_cache/resolve/main/chrome/44ee5668-ecd5-4366-a6ce-c1c9b8d4e938/history_empty.sqlite")
			apps.add("google-chrome")
		case "execute", "command", "launch", "execute_with_verification":
			commandUse(p["command"])
		case "open":
			pth, _ := p["path"].(string)
			apps.add(appOpenedBy[strings.ToLower(path.Ext(pth))])
		case "chrome_open_tabs", "chrome_close_tabs":
			apps.add("google-chrome")
			collectURLs(p, web.add)
		case "activate_window", "close_window":
			services.add(serviceOf["wmctrl"])
		}
	}
	ev := t.Evaluator
	for i := range ev.Funcs {
		for _, g := range []osworld.Getter{ev.Results[i], ev.Expected[i]} {
			if g == nil {
				continue
			}
			switch typ := g.Type(); {
			case typ == "cloud_file":
				paths, dests, err := osworld.PathsAndDests(g)
				if err == nil {
					for j := range paths {
						if j < len(dests) {
							addFile(dests[j], paths[j])
						}
					}
				}
			case typ == "vm_command_line" || typ == "vm_command_error":
				commandUse(g["command"])
			case typ == "vm_terminal_output":
				apps.add("gnome-terminal")
			case webGetters[typ]:
				collectURLs(g, web.add)
				if typ == "active_tab_info" || typ == "active_tab_html_parse" {
					web.add("the page open in the active tab")
				}
			case strings.HasPrefix(typ, "vlc"):
				apps.add("vlc")
			case typ == "gimp_config_file":
				apps.add("gimp")
			case typ == "vscode_config":
				apps.add("code")
			}
			if g.Type() != "cloud_file" && g.Type() != "vm_file" {
				// Expected URLs are sites the agent must visit.
				collectURLs(map[string]any(g), web.add)
			}
		}
	}
	delete(apps, "")
	delete(web, "")
	delete(services, "")
	return Requirements{
		Apps:        apps.sorted(),
		FileCache:   files,
		LiveWeb:     web.sorted(),
		Services:    services.sorted(),
		Schemas:     schemas.sorted(),
		Unsupported: unsupported.sorted(),
	}
}

// MissingFiles lists the file-cache files that are absent.
func (r Requirements) MissingFiles() []CacheFile {
	var out []CacheFile
	for _, f := range r.FileCache {
		if !f.Present {
			out = append(out, f)
		}
	}
	return out
}

// UnavailableServices lists the task's services a drums desktop lacks.
func (r Requirements) UnavailableServices() []string {
	var out []string
	for _, s := range r.Services {
		if why, ok := unavailableServices[s]; ok {
			out = append(out, why)
		}
	}
	return out
}
