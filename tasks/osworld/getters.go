package osworld

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/cdp"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// getter is one OSWorld getter (get_<type>): it reads the desktop (or the
// task's rules) and returns the value the metric compares. Files are
// returned as paths in the task's work dir, as OSWorld returns paths in its
// cache dir.
type getter func(ctx context.Context, e *Env, cfg Getter) (any, error)

// getters are the OSWorld getters drums implements itself.
var getters = map[string]getter{
	"rule":                            getRule,
	"rule_relativeTime":               getRuleRelativeTime,
	"vm_command_line":                 getVMCommand("output"),
	"vm_command_error":                getVMCommand("error"),
	"vm_terminal_output":              getVMTerminalOutput,
	"vm_file":                         getVMFile,
	"cloud_file":                      getCloudFile,
	"cache_file":                      getCacheFile,
	"list_directory":                  getListDirectory,
	"vm_screen_size":                  getVMScreenSize,
	"vm_window_size":                  getVMWindowSize,
	"vm_wallpaper":                    getVMWallpaper,
	"accessibility_tree":              getAccessibilityTree,
	"vlc_config":                      getHomeFile(".config/vlc/vlcrc"),
	"vlc_playing_info":                getVLCPlayingInfo,
	"default_video_player":            getDefaultVideoPlayer,
	"gimp_config_file":                getGimpConfigFile,
	"shortcuts_on_desktop":            getShortcutsOnDesktop,
	"default_search_engine":           chromePref(prefDefaultSearchEngine),
	"profile_name":                    chromePref(prefProfileName),
	"chrome_font_size":                chromePref(prefFontSize),
	"chrome_language":                 chromeLocalState(prefLanguage),
	"enabled_experiments":             chromeLocalState(prefExperiments),
	"enable_do_not_track":             chromePref(prefDoNotTrack),
	"enable_enhanced_safety_browsing": chromePref(prefEnhancedSafety),
	"enable_safe_browsing":            chromePref(prefSafeBrowsing),
	"new_startup_page":                chromePref(prefNewStartupPage),
	"find_unpacked_extension_path":    chromePref(prefExtensionPaths),
	"find_installed_extension_name":   chromePref(prefExtensionNames),
	"data_delete_automacally":         chromePref(prefDataDelete),
	"bookmarks":                       getBookmarks,
	"open_tabs_info":                  getOpenTabsInfo,
	"active_url_from_accessTree":      getActiveURLFromAccessTree,
	"active_tab_info":                 getActiveTabInfo,
	"active_tab_url_parse":            getActiveTabURLParse,
	"url_dashPart":                    getURLDashPart,
}

// GetterNative reports whether drums implements the getter itself.
func GetterNative(name string) bool { _, ok := getters[name]; return ok }

// NativeGetters lists the getters drums implements, sorted.
func NativeGetters() []string {
	out := make([]string, 0, len(getters))
	for k := range getters {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunGetter runs one getter config.
func (e *Env) RunGetter(ctx context.Context, cfg Getter) (any, error) {
	g, ok := getters[cfg.Type()]
	if !ok {
		return nil, fmt.Errorf("getter %s: %w", cfg.Type(), ErrNotNative)
	}
	return g(ctx, e, cfg)
}

func cfgString(cfg Getter, k string) (string, error) {
	s, ok := cfg[k].(string)
	if !ok {
		return "", fmt.Errorf("getter %s: %s is %s, not a string (KeyError)", cfg.Type(), k, pyvalue.TypeName(cfg[k]))
	}
	return s, nil
}

func getRule(_ context.Context, _ *Env, cfg Getter) (any, error) {
	v, ok := cfg["rules"]
	if !ok {
		return nil, fmt.Errorf("KeyError: 'rules'")
	}
	return v, nil
}

// getVMCommand is get_vm_command_line / get_vm_command_error: one POST
// /execute with the command as given; None on an error status.
func getVMCommand(field string) getter {
	return func(ctx context.Context, e *Env, cfg Getter) (any, error) {
		shell, ok := cfg["shell"]
		if !ok {
			shell = false
		}
		r, err := e.Guest.Execute(ctx, "/execute", cfg["command"], shell)
		var ge *client.Error
		if errors.As(err, &ge) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if field == "error" {
			return r.Error, nil
		}
		return r.Output, nil
	}
}

func getVMTerminalOutput(ctx context.Context, e *Env, _ Getter) (any, error) {
	out, err := e.Guest.Terminal(ctx)
	if err != nil {
		var ge *client.Error
		if errors.As(err, &ge) {
			return nil, nil
		}
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	return *out, nil
}

// PathsAndDests reads path/dest as single values or, with multi, lists.
func PathsAndDests(cfg Getter) (paths, dests []string, err error) {
	if !pyvalue.Truthy(cfg["multi"]) {
		p, err := cfgString(cfg, "path")
		if err != nil {
			return nil, nil, err
		}
		d, err := cfgString(cfg, "dest")
		if err != nil {
			return nil, nil, err
		}
		return []string{p}, []string{d}, nil
	}
	if paths, err = stringList(cfg["path"]); err != nil {
		return nil, nil, fmt.Errorf("getter %s path: %w", cfg.Type(), err)
	}
	if dests, err = stringList(cfg["dest"]); err != nil {
		return nil, nil, fmt.Errorf("getter %s dest: %w", cfg.Type(), err)
	}
	return paths, dests, nil
}

// gives is the set of indexes a multi-file getter returns (default [0]).
func gives(cfg Getter) map[int]bool {
	out := map[int]bool{}
	l, ok := pyvalue.AsList(cfg["gives"])
	if !ok {
		return map[int]bool{0: true}
	}
	for _, x := range l {
		if f, ok := x.(float64); ok {
			out[int(f)] = true
		}
	}
	return out
}

func oneOrList(l []any) any {
	if len(l) == 1 {
		return l[0]
	}
	return l
}

// getVMFile is get_vm_file: each file fetched into the work dir; a file the
// guest does not have is None in its place.
func getVMFile(ctx context.Context, e *Env, cfg Getter) (any, error) {
	paths, dests, err := PathsAndDests(cfg)
	if err != nil {
		return nil, err
	}
	if !pyvalue.Truthy(cfg["multi"]) && pyvalue.Truthy(cfg["time_suffix"]) {
		format := "%Y%m%d_%H%M%S"
		if f, ok := cfg["time_format"].(string); ok {
			format = f
		}
		ext := filepath.Ext(dests[0])
		dests[0] = strings.TrimSuffix(dests[0], ext) + "_" + strftime(e.now(), format) + ext
	}
	want := gives(cfg)
	var out []any
	for i := range paths {
		if i >= len(dests) {
			break
		}
		data, err := e.Guest.GetFile(ctx, paths[i])
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if want[i] {
				out = append(out, nil)
			}
			continue
		}
		local, err := e.saveWork(dests[i], data)
		if err != nil {
			return nil, err
		}
		if want[i] {
			out = append(out, local)
		}
	}
	if len(out) == 0 {
		return []any{}, nil
	}
	return oneOrList(out), nil
}

// strftime formats the directives OSWorld's time suffixes use.
func strftime(t time.Time, f string) string {
	r := strings.NewReplacer("%Y", "2006", "%m", "01", "%d", "02", "%H", "15", "%M", "04", "%S", "05", "%%", "%")
	return t.Format(r.Replace(f))
}

// getCloudFile is get_cloud_file, from the file cache only.
func getCloudFile(_ context.Context, e *Env, cfg Getter) (any, error) {
	paths, dests, err := PathsAndDests(cfg)
	if err != nil {
		return nil, err
	}
	want := gives(cfg)
	var out []any
	for i := range paths {
		if i >= len(dests) {
			break
		}
		local, err := e.cloudFile(dests[i], paths[i])
		if err != nil {
			return nil, err
		}
		if want[i] {
			out = append(out, local)
		}
	}
	return oneOrList(out), nil
}

// cloudFile is where get_cloud_file finds dest: in the cache dir where it
// has it; else, as OSWorld downloads dest into the task's cache_dir unless
// it is there already, the work dir's dest, saved there from the mirror
// when absent.
func (e *Env) cloudFile(dest, url string) (string, error) {
	if e.Cache.Has(e.TaskID, dest) {
		return e.Cache.Path(e.TaskID, dest), nil
	}
	local, err := e.workFile(dest)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(local); err == nil && st.Mode().IsRegular() {
		return local, nil
	}
	data, err := e.Cache.Read(e.TaskID, dest, url)
	if err != nil {
		return "", err
	}
	return e.saveWork(dest, data)
}

// getCacheFile is get_cache_file: a file an earlier step wrote into the
// task's cache dir (an execute step's stdout). Missing, OSWorld's assert
// fails.
func getCacheFile(_ context.Context, e *Env, cfg Getter) (any, error) {
	p, err := cfgString(cfg, "path")
	if err != nil {
		return nil, err
	}
	local, err := e.workFile(p)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(local); err != nil {
		if e.Cache.Has(e.TaskID, p) {
			return e.Cache.Path(e.TaskID, p), nil
		}
		return nil, fmt.Errorf("AssertionError: cache file %s does not exist", p)
	}
	return local, nil
}

func getListDirectory(ctx context.Context, e *Env, cfg Getter) (any, error) {
	p, err := cfgString(cfg, "path")
	if err != nil {
		return nil, err
	}
	return e.Guest.ListDirectory(ctx, p)
}

func getVMScreenSize(ctx context.Context, e *Env, _ Getter) (any, error) {
	m, err := e.Guest.ScreenSize(ctx)
	var ge *client.Error
	if errors.As(err, &ge) {
		return nil, nil
	}
	return m, err
}

func getVMWindowSize(ctx context.Context, e *Env, cfg Getter) (any, error) {
	c, err := cfgString(cfg, "app_class_name")
	if err != nil {
		return nil, err
	}
	m, err := e.Guest.WindowSize(ctx, c)
	if m == nil || err != nil {
		return nil, err
	}
	return m, nil
}

// getVMWallpaper saves the wallpaper (an empty file when there is none).
func getVMWallpaper(ctx context.Context, e *Env, cfg Getter) (any, error) {
	d, err := cfgString(cfg, "dest")
	if err != nil {
		return nil, err
	}
	data, err := e.Guest.Wallpaper(ctx)
	if err != nil {
		return nil, err
	}
	local, err := e.saveWork(d, data)
	if err != nil {
		return nil, err
	}
	return local, nil
}

func getAccessibilityTree(ctx context.Context, e *Env, _ Getter) (any, error) {
	t, err := e.Guest.Accessibility(ctx)
	var ge *client.Error
	if errors.As(err, &ge) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// getHomeFile fetches a file under the guest user's home into the work
// dir as cfg["dest"] (get_vlc_config and friends); a missing file is an
// error, as writing OSWorld's None content raises.
func getHomeFile(rel string) getter {
	return func(ctx context.Context, e *Env, cfg Getter) (any, error) {
		d, err := cfgString(cfg, "dest")
		if err != nil {
			return nil, err
		}
		data, err := e.Guest.GetFile(ctx, "/home/user/"+rel)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// OSWorld writes the None it got: a TypeError, not a
			// FileNotFoundError, so evaluate() raises.
			return nil, fmt.Errorf("TypeError: a bytes-like object is required, not 'NoneType' (%v)", err)
		}
		local, err := e.saveWork(d, data)
		if err != nil {
			return nil, err
		}
		return local, nil
	}
}

func getGimpConfigFile(ctx context.Context, e *Env, cfg Getter) (any, error) {
	name, err := cfgString(cfg, "file_name")
	if err != nil {
		return nil, err
	}
	d, err := cfgString(cfg, "dest")
	if err != nil {
		return nil, err
	}
	data, err := e.Guest.GetFile(ctx, "/home/user/.config/GIMP/2.10/"+name)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// get_gimp_config_file returns None when the file is missing.
		return nil, nil
	}
	local, err := e.saveWork(d, data)
	if err != nil {
		return nil, err
	}
	return local, nil
}

// getVLCPlayingInfo is get_vlc_playing_info: VLC's HTTP status with the
// password OSWorld's VM configures.
func getVLCPlayingInfo(ctx context.Context, e *Env, cfg Getter) (any, error) {
	d, err := cfgString(cfg, "dest")
	if err != nil {
		return nil, err
	}
	host := e.Guest.Host()
	u := fmt.Sprintf("http://%s:%d/requests/status.xml", host, e.vlcPort())
	a, err := e.Guest.GetURL(ctx, u, "", "password")
	if err != nil {
		return nil, err
	}
	if a.Status != 200 {
		return nil, nil
	}
	local, err := e.saveWork(d, a.Body)
	if err != nil {
		return nil, err
	}
	return local, nil
}

// videoTypes are the MIME subtypes get_default_video_player asks xdg-mime
// about, in OSWorld's order (with its duplicates, which weigh the vote).
var videoTypes = strings.Fields(`3gp 3gp 3gpp 3gpp 3gpp2 3gpp2 avi avi divx divx dv dv fli fli flv flv mp2t mp2t mp4 mp4
mp4v-es mp4v-es mpeg mpeg mpeg-system mpeg-system msvideo msvideo ogg ogg quicktime quicktime vnd.divx vnd.divx
vnd.mpegurl vnd.mpegurl vnd.rn-realvideo vnd.rn-realvideo webm webm x-anim x-anim x-avi x-avi x-flc x-flc x-fli x-fli
x-flv x-flv x-m4v x-m4v x-matroska x-matroska x-mpeg x-mpeg x-mpeg-system x-mpeg-system x-mpeg2 x-mpeg2 x-ms-asf x-ms-asf
x-ms-asf-plugin x-ms-asf-plugin x-ms-asx x-ms-asx x-ms-wm x-ms-wm x-ms-wmv x-ms-wmv x-ms-wmx x-ms-wmx x-ms-wvx x-ms-wvx
x-msvideo x-msvideo x-nsv x-nsv x-ogm x-ogm x-ogm+ogg x-theora x-theora x-theora+ogg x-theora+ogg`)

// getDefaultVideoPlayer is get_default_video_player: the most common
// answer of xdg-mime for the video types. OSWorld asks once per type; one
// shell loop gives the same answers in one request.
func getDefaultVideoPlayer(ctx context.Context, e *Env, _ Getter) (any, error) {
	script := `for t in "$@"; do printf '%s\n' "$(xdg-mime query default "video/$t")"; printf '\036\n'; done`
	r, err := e.Guest.Execute(ctx, "/execute", append([]string{script, "sh"}, videoTypes...), true)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	var order []string
	for _, chunk := range strings.Split(r.Output, "\x1e\n") {
		// Each answer is xdg-mime's output with its newline, as
		// get_vm_command_line returns it.
		if chunk == "" || chunk == "\n" {
			continue
		}
		if _, seen := counts[chunk]; !seen {
			order = append(order, chunk)
		}
		counts[chunk]++
	}
	if len(order) == 0 {
		return "unknown", nil
	}
	best := order[0]
	for _, k := range order {
		if counts[k] > counts[best] {
			best = k
		}
	}
	return best, nil
}

func getShortcutsOnDesktop(ctx context.Context, e *Env, _ Getter) (any, error) {
	dp, err := e.Guest.DesktopPath(ctx)
	if err != nil {
		return nil, err
	}
	tree, err := e.Guest.ListDirectory(ctx, dp)
	if err != nil {
		return nil, err
	}
	t, ok := tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("TypeError: 'NoneType' object is not subscriptable (no directory tree for %s)", dp)
	}
	out := map[string]any{}
	children, _ := pyvalue.AsList(t["children"])
	for _, c := range children {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		if !strings.HasSuffix(name, ".desktop") {
			continue
		}
		data, err := e.Guest.GetFile(ctx, "/home/user/Desktop/"+name)
		if err != nil {
			return nil, fmt.Errorf("AttributeError: 'NoneType' object has no attribute 'decode' (%w)", err)
		}
		out[name] = string(data)
	}
	return out, nil
}

// Chrome's profile as OSWorld's x86 Ubuntu VM lays it out.
const (
	chromePreferences = "/home/user/.config/google-chrome/Default/Preferences"
	chromeLocalStateF = "/home/user/.config/google-chrome/Local State"
	chromeBookmarks   = "/home/user/.config/google-chrome/Default/Bookmarks"
)

// prefFunc reads a value from a parsed Chrome JSON file; on any error the
// getter returns onError, as OSWorld's try/except does.
type prefFunc struct {
	read    func(data map[string]any) (any, error)
	onError any
}

func chromeJSON(file string, f prefFunc) getter {
	return func(ctx context.Context, e *Env, _ Getter) (any, error) {
		data, err := e.Guest.GetFile(ctx, file)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return f.onError, nil
		}
		var m map[string]any
		if json.Unmarshal(data, &m) != nil {
			return f.onError, nil
		}
		v, err := f.read(m)
		if err != nil {
			return f.onError, nil
		}
		return v, nil
	}
}

func chromePref(f prefFunc) getter       { return chromeJSON(chromePreferences, f) }
func chromeLocalState(f prefFunc) getter { return chromeJSON(chromeLocalStateF, f) }

// dig is data.get(k1, {}).get(k2, {})…, nil when a level is missing or not
// a dict.
func dig(m map[string]any, keys ...string) (any, bool) {
	var v any = m
	for _, k := range keys {
		d, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = d[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

var (
	prefDefaultSearchEngine = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		if v, ok := dig(d, "default_search_provider_data", "template_url_data", "short_name"); ok {
			return v, nil
		}
		return "Google", nil
	}}
	prefProfileName = prefFunc{read: func(d map[string]any) (any, error) {
		v, _ := dig(d, "profile", "name")
		return v, nil
	}}
	prefFontSize = prefFunc{
		onError: map[string]any{"default_fixed_font_size": 13.0, "default_font_size": 16.0},
		read: func(d map[string]any) (any, error) {
			if v, ok := dig(d, "webkit", "webprefs"); ok {
				return v, nil
			}
			return map[string]any{"default_fixed_font_size": 13.0, "default_font_size": 16.0, "minimum_font_size": 13.0}, nil
		}}
	prefLanguage = prefFunc{onError: "en-US", read: func(d map[string]any) (any, error) {
		if v, ok := dig(d, "intl", "app_locale"); ok {
			return v, nil
		}
		return "en-US", nil
	}}
	prefExperiments = prefFunc{onError: []any{}, read: func(d map[string]any) (any, error) {
		if v, ok := dig(d, "browser", "enabled_labs_experiments"); ok {
			return v, nil
		}
		return []any{}, nil
	}}
	prefDoNotTrack = prefFunc{onError: "false", read: func(d map[string]any) (any, error) {
		v, _ := dig(d, "enable_do_not_track")
		return boolText(pyvalue.Truthy(v)), nil
	}}
	prefEnhancedSafety = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		v, _ := dig(d, "safebrowsing", "enhanced")
		return boolText(pyvalue.Truthy(v)), nil
	}}
	prefSafeBrowsing = prefFunc{onError: "false", read: func(d map[string]any) (any, error) {
		e, _ := dig(d, "safebrowsing", "enhanced")
		n, _ := dig(d, "safebrowsing", "enabled")
		return boolText(pyvalue.Truthy(e) || pyvalue.Truthy(n)), nil
	}}
	prefNewStartupPage = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		if _, ok := d["session"]; !ok {
			return "true", nil
		}
		v, _ := dig(d, "session", "restore_on_startup")
		return boolText(pyvalue.Equal(v, 5.0)), nil
	}}
	prefExtensionPaths = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		return extensionField(d, "path")
	}}
	prefExtensionNames = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		return extensionField(d, "manifest", "name")
	}}
	prefDataDelete = prefFunc{onError: "Google", read: func(d map[string]any) (any, error) {
		p, ok := d["profile"].(map[string]any)
		if !ok {
			return nil, errors.New("KeyError: 'profile'")
		}
		return boolText(p["default_content_setting_values"] != nil), nil
	}}
)

// extensionField lists a field of every entry of extensions.settings, in
// the file's key order (Python dicts keep it).
func extensionField(d map[string]any, path ...string) (any, error) {
	s, _ := dig(d, "extensions", "settings")
	settings, ok := s.(map[string]any)
	if !ok {
		return []any{}, nil
	}
	ids := make([]string, 0, len(settings))
	for id := range settings {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := []any{}
	for _, id := range ids {
		m, _ := settings[id].(map[string]any)
		v, ok := dig(m, path...)
		if !ok {
			return nil, fmt.Errorf("KeyError: %s", path[len(path)-1])
		}
		out = append(out, v)
	}
	return out, nil
}

func getBookmarks(ctx context.Context, e *Env, _ Getter) (any, error) {
	data, err := e.Guest.GetFile(ctx, chromeBookmarks)
	if err != nil || len(data) == 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return []any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("json.decoder.JSONDecodeError: %w", err)
	}
	if v, ok := m["roots"]; ok {
		return v, nil
	}
	return map[string]any{}, nil
}

// connectChrome is connect_over_cdp as the getters use it: one quick try.
func (e *Env) connectChrome(ctx context.Context) (*cdp.Conn, error) {
	return cdp.Dial(ctx, e.Guest.Host(), e.chromiumPort())
}

// relaunchWait is how long get_open_tabs_info waits for a Chromium it
// started itself (OSWorld: 5 s, then one try).
const relaunchWait = 10 * time.Second

// getOpenTabsInfo is get_open_tabs_info: title and URL of every tab. When
// DevTools does not answer, OSWorld starts google-chrome and tries again.
func getOpenTabsInfo(ctx context.Context, e *Env, _ Getter) (any, error) {
	c, err := e.connectChrome(ctx)
	if err != nil {
		_ = e.Guest.Launch(ctx, []string{"google-chrome", "--remote-debugging-port=1337"}, false, e.timeouts().Launch)
		t := e.timeouts()
		c, err = connectCDP(ctx, e.Guest.Host(), e.chromiumPort(), min(relaunchWait, t.CDPConnect), t.Pause)
		if err != nil {
			return []any{}, nil
		}
	}
	defer c.Close()
	pages, err := c.Pages(ctx)
	if err != nil {
		return []any{}, nil
	}
	out := []any{}
	for _, p := range pages {
		title, err := c.Title(ctx, p.TargetID)
		if err != nil {
			title = "Error encountered"
		}
		out = append(out, map[string]any{"title": title, "url": p.URL})
	}
	return out, nil
}

// a11yNode is an element of the accessibility XML with what the chrome
// getters select on.
type a11yNode struct {
	tag, name, text string
	// coord and size are the cp:screencoord and cp:size attributes,
	// "(x, y)" and "(width, height)", in whichever component namespace the
	// tree binds cp to (guestd, like OSWorld's server today, writes
	// https://accessibility.ubuntu.example.org/ns/component; OSWorld's
	// getters still name uri:deskat:component.at-spi.gnome.org).
	coord, size string
	children    []*a11yNode
}

// parseA11y reads the accessibility XML into a tree of tags, names and
// leading text (lxml's .text).
func parseA11y(doc string) (*a11yNode, error) {
	d := xml.NewDecoder(strings.NewReader(doc))
	var stack []*a11yNode
	var root *a11yNode
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("parse accessibility tree: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &a11yNode{tag: t.Name.Local}
			for _, a := range t.Attr {
				switch {
				case a.Name.Space == "" && a.Name.Local == "name":
					n.name = a.Value
				case strings.Contains(a.Name.Space, "component") && a.Name.Local == "screencoord":
					n.coord = a.Value
				case strings.Contains(a.Name.Space, "component") && a.Name.Local == "size":
					n.size = a.Value
				}
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root == nil {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case xml.CharData:
			if len(stack) > 0 {
				n := stack[len(stack)-1]
				if len(n.children) == 0 {
					n.text += string(t)
				}
			}
		}
	}
	if root == nil {
		return nil, errors.New("parse accessibility tree: empty document")
	}
	return root, nil
}

// find appends, in document order, the descendants of n (n excluded)
// with tag and name.
func (n *a11yNode) find(tag, name string, out []*a11yNode) []*a11yNode {
	for _, c := range n.children {
		out = c.findSelf(tag, name, out)
	}
	return out
}

// findSelf is find with n itself first.
func (n *a11yNode) findSelf(tag, name string, out []*a11yNode) []*a11yNode {
	if n.tag == tag && n.name == name {
		out = append(out, n)
	}
	return n.find(tag, name, out)
}

// chromeAppNames are the AT-SPI application names of the browser. OSWorld's
// x86 VM runs Google Chrome; a drums desktop of the osworld image runs
// Chromium (as google-chrome), which the image makes answer as "Google
// Chrome" (sessions/images: chromeNameSource); "Chromium" is the name
// OSWorld uses on its ARM VMs, and Chromium's own elsewhere.
var chromeAppNames = []string{"Google Chrome", "Chromium"}

// getActiveURLFromAccessTree is get_active_url_from_accessTree: the text of
// Chrome's address bar, prefixed with goto_prefix (default "https://").
func getActiveURLFromAccessTree(ctx context.Context, e *Env, cfg Getter) (any, error) {
	doc, err := e.Guest.Accessibility(ctx)
	if err != nil {
		return nil, nil
	}
	root, err := parseA11y(doc)
	if err != nil {
		return nil, nil
	}
	var entries []*a11yNode
	for _, app := range chromeAppNames {
		for _, a := range root.findSelf("application", app, nil) {
			entries = a.find("entry", "Address and search bar", entries)
		}
	}
	if len(entries) == 0 || entries[len(entries)-1].text == "" {
		return nil, nil
	}
	prefix := "https://"
	if p, ok := cfg["goto_prefix"].(string); ok {
		prefix = p
	}
	return prefix + entries[0].text, nil
}

// activeTabLoad bounds the reload get_active_tab_info does (OSWorld: 60 s).
const activeTabLoad = 60 * time.Second

// getActiveTabInfo is get_active_tab_info: the address bar's URL opened in
// a new tab, then its title, URL and HTML.
func getActiveTabInfo(ctx context.Context, e *Env, cfg Getter) (any, error) {
	u, err := getActiveURLFromAccessTree(ctx, e, cfg)
	if err != nil || u == nil {
		return nil, err
	}
	c, err := e.connectChrome(ctx)
	if err != nil {
		return nil, nil
	}
	defer c.Close()
	_, s, err := c.NewPage(ctx)
	if err != nil {
		return nil, nil
	}
	title := ""
	if err := c.Navigate(ctx, s, u.(string), activeTabLoad); err != nil {
		// A network error gives nothing, a load that times out a title.
		var nav *cdp.NavigationError
		if !errors.As(err, &nav) || nav.ErrorText != "" {
			return nil, nil
		}
		title = "Load timeout"
	}
	var cur, content string
	if err := c.Eval(ctx, s, "location.href", &cur); err != nil {
		return nil, nil
	}
	if err := c.Eval(ctx, s, cdp.PageContentJS, &content); err != nil {
		return nil, nil
	}
	if title == "" {
		if err := c.Eval(ctx, s, "document.title", &title); err != nil {
			return nil, nil
		}
	}
	return map[string]any{"title": title, "url": cur, "content": content}, nil
}

// getActiveTabURLParse is get_active_tab_url_parse: chosen query
// parameters of the active tab's URL.
func getActiveTabURLParse(ctx context.Context, e *Env, cfg Getter) (any, error) {
	u, err := getActiveURLFromAccessTree(ctx, e, cfg)
	if err != nil || u == nil {
		return nil, err
	}
	pu, err := url.Parse(u.(string))
	if err != nil {
		return nil, fmt.Errorf("ValueError: %w", err)
	}
	q := pu.Query()
	keys, err := stringList(cfg["parse_keys"])
	if err != nil {
		return nil, fmt.Errorf("KeyError: 'parse_keys': %w", err)
	}
	out := map[string]any{}
	for _, k := range keys {
		out[k] = q.Get(k)
	}
	if rep, ok := cfg["replace"].(map[string]any); ok {
		for from, to := range rep {
			v, ok := out[from]
			if !ok {
				return nil, fmt.Errorf("KeyError: %s", pyvalue.Repr(from))
			}
			delete(out, from)
			out[fmt.Sprint(to)] = v
		}
	}
	if pyvalue.Truthy(cfg["split_list"]) {
		for k, v := range out {
			parts := []any{}
			for _, p := range strings.Split(v.(string), ",") {
				parts = append(parts, p)
			}
			out[k] = parts
		}
	}
	return out, nil
}

// getURLDashPart is get_url_dashPart: one "/"-separated part of the
// active tab's URL.
func getURLDashPart(ctx context.Context, e *Env, cfg Getter) (any, error) {
	u, err := getActiveURLFromAccessTree(ctx, e, cfg)
	if err != nil || u == nil {
		return nil, err
	}
	idx, err := pyInt(cfg["partIndex"])
	if err != nil {
		return nil, nil
	}
	parts := strings.Split(u.(string), "/")
	if idx >= len(parts) || idx < -len(parts) {
		return nil, nil
	}
	if idx < 0 {
		idx += len(parts)
	}
	part := parts[idx]
	if pyvalue.Truthy(cfg["needDeleteId"]) {
		part, _, _ = strings.Cut(part, "?")
	}
	switch cfg["returnType"] {
	case "string":
		return part, nil
	case "json":
		k, _ := cfg["key"].(string)
		return map[string]any{k: part}, nil
	}
	return nil, nil
}
