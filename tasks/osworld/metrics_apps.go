package osworld

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/url"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// Metrics over application settings files and browser state (vscode.py,
// chrome.py, vlc.py, gimp.py, thunderbird.py, slides.py of OSWorld).

func checkJSONSettings(args []any, _ map[string]any) (float64, error) {
	if !pyvalue.Truthy(Arg(args, 0)) {
		return 0, nil
	}
	v, ok := loadJSONFile(Arg(args, 0))
	if !ok {
		return 0, nil
	}
	want, err := ruleExpected(Arg(args, 1), "expected")
	if err != nil {
		return 0, err
	}
	wm, ok := want.(map[string]any)
	if !ok {
		return 0, fmt.Errorf("AttributeError: %s has no attribute 'items'", pyvalue.TypeName(want))
	}
	data, ok := v.(map[string]any)
	if !ok {
		in := len(wm) == 0
		return score(in), nil
	}
	for k, w := range wm {
		got, ok := data[k]
		if !ok || !pyvalue.Equal(got, w) {
			return 0, nil
		}
	}
	return 1, nil
}

func checkJSONKeybindings(args []any, _ map[string]any) (float64, error) {
	p, _ := Arg(args, 0).(string)
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, nil
	}
	text := pyvalue.UniversalNewlines(string(b))
	var data any
	if json.Unmarshal([]byte(text), &data) != nil {
		data = nil
	}
	if _, ok := data.([]any); !ok {
		// skip_first_line_load_json
		_, rest, _ := strings.Cut(text, "\n")
		data = nil
		if json.Unmarshal([]byte(rest), &data) != nil {
			data = nil
		}
	}
	list, ok := data.([]any)
	if !ok {
		return 0, nil
	}
	w, err := ruleExpected(Arg(args, 1), "expected")
	if err != nil {
		return 0, err
	}
	in, _ := pyvalue.In(w, list)
	return score(in), nil
}

// vscode.py's compare_text_file: re.sub(r'[\t\n]', ' ', text).strip(),
// then re.sub(r'\s+', ' ', ...), with Python's Unicode \s.
var (
	tabNL       = regexp.MustCompile(`[\t\n]`)
	spaces      = mustPy(`\s+`)
	outerSpaces = mustPy(`\A\s+|\s+\Z`)
)

func compareTextFile(args []any, opts map[string]any) (float64, error) {
	if !pyvalue.Truthy(Arg(args, 0)) {
		return 0, nil
	}
	a, b, err := readBoth(args)
	if err != nil {
		return 0, err
	}
	if pyvalue.Truthy(opts["ignore_blanks"]) {
		norm := func(s string) string {
			return spaces.ReplaceAllString(outerSpaces.ReplaceAllString(tabNL.ReplaceAllString(s, " "), ""), " ")
		}
		a, b = norm(a), norm(b)
	}
	if pyvalue.Truthy(opts["ignore_case"]) {
		a, b = strings.ToLower(a), strings.ToLower(b)
	}
	return score(a == b), nil
}

// isSubset is vscode.py's _is_subset.
func isSubset(expected, actual any) bool {
	if e, ok := expected.(map[string]any); ok {
		a, ok := actual.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range e {
			w, ok := a[k]
			if !ok || !isSubset(v, w) {
				return false
			}
		}
		return true
	}
	return pyvalue.Equal(expected, actual)
}

func compareConfig(args []any, opts map[string]any) (float64, error) {
	if !pyvalue.Truthy(Arg(args, 0)) {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	expText, _ := rules["expected"].(string)
	if expText == "" {
		return 0, nil
	}
	actText, err := readText(Arg(args, 0))
	if err != nil {
		return 0, err
	}
	containment := true
	if v, ok := opts["containment_ok"]; ok {
		containment = pyvalue.Truthy(v)
	}
	var aj, ej any
	aerr := json.Unmarshal([]byte(actText), &aj)
	eerr := json.Unmarshal([]byte(expText), &ej)
	if containment {
		if aerr == nil && eerr == nil {
			return score(isSubset(ej, aj)), nil
		}
		return score(strings.Contains(actText, strings.TrimSpace(expText))), nil
	}
	if actText == expText {
		return 1, nil
	}
	return score(aerr == nil && eerr == nil && pyvalue.Equal(aj, ej)), nil
}

func isExtensionInstalled(args []any, _ map[string]any) (float64, error) {
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	exp, err := key(rules, "expected")
	if err != nil {
		return 0, err
	}
	in, err := pyvalue.In(exp, Arg(args, 0))
	if err != nil {
		return 0, err
	}
	switch rules["type"] {
	case "contain":
		return score(in), nil
	case "not_contain":
		return score(!in), nil
	}
	return 0, fmt.Errorf("NotImplementedError: is_extension_installed type %v", rules["type"])
}

// tabURL is active_tab_info['url'] for a dict, the value itself otherwise.
func tabURL(info any) any {
	if m, ok := info.(map[string]any); ok {
		return m["url"]
	}
	return info
}

// urlRule is the rule of the chrome.py metrics that know only the type
// "url": ok is false for any other type, which they score 0.
func urlRule(v any) (rule map[string]any, ok bool, err error) {
	rule, err = ruleMap(v, "rule")
	if err != nil {
		return nil, false, err
	}
	return rule, rule["type"] == "url", nil
}

// activeTabMatches is is_expected_active_tab and its approximate variant:
// match compares the rule's URL with the active tab's.
func activeTabMatches(match func(want string, tab any) bool) metric {
	return func(args []any, _ map[string]any) (float64, error) {
		if !pyvalue.Truthy(Arg(args, 0)) {
			return 0, nil
		}
		rule, ok, err := urlRule(Arg(args, 1))
		if !ok {
			return 0, err
		}
		want, _ := rule["url"].(string)
		return score(match(want, tabURL(Arg(args, 0)))), nil
	}
}

// sameTabURL is is_expected_active_tab's comparison.
func sameTabURL(want string, tab any) bool {
	got, ok := tab.(string)
	return ok && compareURLs(want, got, true)
}

// sameTabURLButQuery is is_expected_active_tab_approximate's comparison.
func sameTabURLButQuery(want string, tab any) bool {
	strip := func(s string) string {
		u, err := url.Parse(s)
		if err != nil {
			return s
		}
		u.RawQuery, u.ForceQuery = "", false
		return u.String()
	}
	got, _ := tab.(string)
	return strip(want) == strip(got)
}

func isExpectedURLPatternMatch(args []any, _ map[string]any) (float64, error) {
	result := Arg(args, 0)
	if !pyvalue.Truthy(result) {
		return 0, nil
	}
	var u string
	switch r := result.(type) {
	case string:
		u = r
	case map[string]any:
		s, ok := r["url"].(string)
		if !ok {
			return 0, nil
		}
		u = s
	default:
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	pats, _ := pyvalue.AsList(rules["expected"])
	for _, p := range pats {
		s, _ := p.(string)
		re, err := compilePy(s)
		if err != nil {
			return 0, err
		}
		if ok, err := re.MatchString(u); !ok || err != nil {
			return 0, err
		}
	}
	return 1, nil
}

func isExpectedTabs(args []any, _ map[string]any) (float64, error) {
	tabs, ok := pyvalue.AsList(Arg(args, 0))
	if !ok || len(tabs) == 0 {
		return 0, nil
	}
	rule, ok, err := urlRule(Arg(args, 1))
	if !ok {
		return 0, err
	}
	want, _ := pyvalue.AsList(rule["urls"])
	if len(want) != len(tabs) {
		return 0, nil
	}
	for _, w := range want {
		ws, _ := w.(string)
		found := false
		for _, t := range tabs {
			if g, ok := tabURL(t).(string); ok && compareURLs(ws, g, true) {
				found = true
				break
			}
		}
		if !found {
			return 0, nil
		}
	}
	return 1, nil
}

func bookmarkChildren(bookmarks any) ([]map[string]any, error) {
	b, ok := bookmarks.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("TypeError: bookmarks is %s", pyvalue.TypeName(bookmarks))
	}
	bar, ok := b["bookmark_bar"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("KeyError: 'bookmark_bar'")
	}
	l, _ := pyvalue.AsList(bar["children"])
	var out []map[string]any
	for _, c := range l {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func isExpectedBookmarks(args []any, _ map[string]any) (float64, error) {
	if !pyvalue.Truthy(Arg(args, 0)) {
		return 0, nil
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	children, err := bookmarkChildren(Arg(args, 0))
	if err != nil {
		return 0, err
	}
	collect := func(items []map[string]any, typ, field string) []any {
		var out []any
		for _, c := range items {
			if c["type"] == typ {
				out = append(out, c[field])
			}
		}
		return out
	}
	switch rule["type"] {
	case "bookmark_bar_folders_names":
		want, _ := pyvalue.AsList(rule["names"])
		return score(sameSet(collect(children, "folder", "name"), want)), nil
	case "bookmark_bar_websites_urls":
		want, _ := pyvalue.AsList(rule["urls"])
		return score(sameSet(collect(children, "url", "url"), want)), nil
	case "liked_authors_websites_urls":
		var folder map[string]any
		for _, c := range children {
			if c["type"] == "folder" && c["name"] == "Liked Authors" {
				folder = c
				break
			}
		}
		if folder == nil {
			return 0, nil
		}
		kids, _ := pyvalue.AsList(folder["children"])
		var got []any
		for _, k := range kids {
			if m, ok := k.(map[string]any); ok && m["type"] == "url" {
				got = append(got, m["url"])
			}
		}
		urls, _ := pyvalue.AsList(rule["urls"])
		options := make([][]any, len(urls))
		for i, u := range urls {
			if l, ok := pyvalue.AsList(u); ok {
				options[i] = l
			} else {
				options[i] = []any{u}
			}
		}
		// Any combination (one choice per position) equal as a set.
		var try func(i int, pick []any) bool
		try = func(i int, pick []any) bool {
			if i == len(options) {
				return sameSet(pick, got)
			}
			for _, o := range options[i] {
				if try(i+1, append(pick, o)) {
					return true
				}
			}
			return false
		}
		return score(try(0, nil)), nil
	}
	return 0, fmt.Errorf("TypeError: %v not support yet!", rule["type"])
}

func isExpectedSearchQuery(args []any, _ map[string]any) (float64, error) {
	info, ok := Arg(args, 0).(map[string]any)
	if !ok || len(info) == 0 {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	exp, _ := rules["expect"].(map[string]any)
	p, _ := exp["pattern"].(string)
	re, err := compilePy(p)
	if err != nil {
		return 0, err
	}
	u, _ := info["url"].(string)
	ok, err = re.MatchString(u)
	return score(ok), err
}

func isExpectedInstalledExtensions(args []any, _ map[string]any) (float64, error) {
	installed, ok := pyvalue.AsList(Arg(args, 0))
	if !ok || len(installed) == 0 {
		return 0, nil
	}
	exp, err := ruleMap(Arg(args, 1), "expected")
	if err != nil {
		return 0, err
	}
	canon := func(v any) any {
		if v == "Zoom Chrome Extension" || v == "Zoom for Google Chrome" {
			return "Zoom Chrome Extension"
		}
		return v
	}
	want, _ := pyvalue.AsList(exp["expected"])
	for _, w := range want {
		found := false
		for _, i := range installed {
			found = found || pyvalue.Equal(canon(w), canon(i))
		}
		if !found {
			return 0, nil
		}
	}
	return 1, nil
}

func isShortcutOnDesktop(args []any, _ map[string]any) (float64, error) {
	shortcuts, ok := Arg(args, 0).(map[string]any)
	if !ok {
		return 0, fmt.Errorf("TypeError: shortcuts is %s", pyvalue.TypeName(Arg(args, 0)))
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	field := map[any]string{"name": "Name=", "exec": "Exec="}[rule["type"]]
	if field == "" {
		return 0, fmt.Errorf("TypeError: %v not support yet!", rule["type"])
	}
	want, _ := rule[strings.ToLower(strings.TrimSuffix(field, "="))].(string)
	for _, c := range shortcuts {
		content, _ := c.(string)
		if strings.Contains(content, field+want+"\n") {
			return 1, nil
		}
		for _, line := range strings.Split(content, "\n") {
			if !strings.HasPrefix(line, field) {
				continue
			}
			got := line[len(field):]
			if field == "Name=" {
				gl, wl := strings.ToLower(got), strings.ToLower(want)
				if got == want || strings.Contains(gl, wl) || strings.Contains(wl, gl) {
					return 1, nil
				}
			} else if got == want || strings.Contains(got, want) || strings.Contains(want, got) {
				return 1, nil
			}
		}
	}
	return 0, nil
}

func checkFontSize(args []any, _ map[string]any) (float64, error) {
	fs, err := ruleMap(Arg(args, 0), "font_size")
	if err != nil {
		return 0, err
	}
	size, err := key(fs, "default_font_size")
	if err != nil {
		return 0, err
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	switch rule["type"] {
	case "value":
		return score(pyvalue.Equal(size, rule["value"])), nil
	case "range":
		a, err := pyvalue.Compare("lt", rule["min"], size)
		if err != nil {
			return 0, err
		}
		b, err := pyvalue.Compare("lt", size, rule["max"])
		return score(a && b), err
	}
	return 0, fmt.Errorf("TypeError: %v not support yet!", rule["type"])
}

func isAddedToSteamCart(args []any, _ map[string]any) (float64, error) {
	info, err := ruleMap(Arg(args, 0), "active_tab_info")
	if err != nil {
		return 0, err
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	content, _ := info["content"].(string)
	items, _ := pyvalue.AsList(rule["items"])
	for _, it := range items {
		in, err := pyvalue.In(it, content)
		if err != nil {
			return 0, err
		}
		if !in {
			return 0, nil
		}
	}
	return 1, nil
}

// vlcStatus is the part of VLC's /requests/status.xml the metric reads.
type vlcStatus struct {
	State       string `xml:"state"`
	Information struct {
		Categories []struct {
			Name  string `xml:"name,attr"`
			Infos []struct {
				Name string `xml:"name,attr"`
				Text string `xml:",chardata"`
			} `xml:"info"`
		} `xml:"category"`
	} `xml:"information"`
}

func (s vlcStatus) info(category, name string) string {
	for _, c := range s.Information.Categories {
		if c.Name != category {
			continue
		}
		for _, i := range c.Infos {
			if i.Name == name {
				return i.Text
			}
		}
	}
	return ""
}

func isVLCPlaying(args []any, _ map[string]any) (float64, error) {
	p, ok := Arg(args, 0).(string)
	if !ok {
		return 0, fmt.Errorf("TypeError: expected str path, not %s", pyvalue.TypeName(Arg(args, 0)))
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", client.ErrFileNotFound, p)
	}
	var st vlcStatus
	if err := xml.Unmarshal(b, &st); err != nil {
		return 0, fmt.Errorf("xml.etree.ElementTree.ParseError: %w", err)
	}
	if st.State != "playing" {
		return 0, nil
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	first := func(names ...[2]string) string {
		for _, n := range names {
			if v := st.info(n[0], n[1]); v != "" {
				return v
			}
		}
		return ""
	}
	switch rule["type"] {
	case "file_name":
		fi := first([2]string{"meta", "filename"}, [2]string{"meta", "title"}, [2]string{"meta", "uri"}, [2]string{"meta", "location"}, [2]string{"meta", "name"})
		want, _ := rule["file_name"].(string)
		if fi == "" {
			return 0, nil
		}
		return score(pyBasename(fi) == want || strings.HasSuffix(fi, want) ||
			(strings.Contains(fi, want) && (strings.HasSuffix(fi, "/"+want) || strings.HasSuffix(fi, `\`+want)))), nil
	case "url":
		fi := first([2]string{"meta", "url"}, [2]string{"meta", "URI"}, [2]string{"meta", "location"}, [2]string{"meta", "title"},
			[2]string{"meta", "filename"}, [2]string{"Stream 0", "Codec"}, [2]string{"Stream 0", "Type"}, [2]string{"Stream 0", "Language"})
		want, _ := rule["url"].(string)
		if fi == "" {
			return 0, nil
		}
		if strings.Contains(fi, want) {
			return 1, nil
		}
		eu, err := url.Parse(want)
		if err == nil {
			if fi == path.Base(eu.Path) {
				return 1, nil
			}
			if strings.Contains(fi, "://") {
				if au, err := url.Parse(fi); err == nil && au.Host == eu.Host && strings.Contains(au.Path, eu.Path) {
					return 1, nil
				}
			}
		}
		return 0, nil
	}
	return 0, nil
}

// readVlcrc reads the vlcrc file a vlc_config getter fetched.
func readVlcrc(p any) (string, error) {
	s, ok := p.(string)
	if !ok {
		return "", fmt.Errorf("TypeError: expected str path, not %s", pyvalue.TypeName(p))
	}
	b, err := os.ReadFile(s)
	if err != nil {
		return "", fmt.Errorf("%w: %s", client.ErrFileNotFound, s)
	}
	return string(b), nil
}

// vlcrcAndRule is the start of vlc.py's metrics over vlcrc: the file a
// vlc_config getter fetched and the rule dict.
func vlcrcAndRule(args []any) (cfg string, rule map[string]any, err error) {
	if cfg, err = readVlcrc(Arg(args, 0)); err != nil {
		return "", nil, err
	}
	if rule, err = ruleMap(Arg(args, 1), "rule"); err != nil {
		return "", nil, err
	}
	return cfg, rule, nil
}

// lastSetting is the value after the last "=" of the last line containing
// needle, or def when none does (vlc.py's loops).
func lastSetting(cfg, needle, def string) string {
	v := def
	for _, line := range strings.Split(cfg, "\n") {
		if strings.Contains(line, needle) {
			parts := strings.Split(line, "=")
			v = strings.TrimSpace(parts[len(parts)-1])
		}
	}
	return v
}

// expectedSetting is rule[k], an int turned into its decimal text.
func expectedSetting(rule map[string]any, k string) (any, error) {
	v, err := key(rule, k)
	if err != nil {
		return nil, err
	}
	if f, ok := v.(float64); ok && pyvalue.IsInt(f) {
		return strconv.FormatInt(int64(f), 10), nil
	}
	return v, nil
}

// vlcrcCheck is vlc.py's check over one vlcrc setting: the value after the
// last needle line (def when there is none) against rule[ruleKey].
func vlcrcCheck(needle, ruleKey, def string) metric {
	return vlcrcCompare(ruleKey, func(cfg string) string { return lastSetting(cfg, needle, def) })
}

// vlcrcCompare scores setting(vlcrc) == rule[ruleKey] (an int there
// compared as its decimal text).
func vlcrcCompare(ruleKey string, setting func(cfg string) string) metric {
	return func(args []any, _ map[string]any) (float64, error) {
		cfg, rule, err := vlcrcAndRule(args)
		if err != nil {
			return 0, err
		}
		want, err := expectedSetting(rule, ruleKey)
		if err != nil {
			return 0, err
		}
		return score(pyvalue.Equal(setting(cfg), want)), nil
	}
}

func isVLCRecordingsFolder(args []any, _ map[string]any) (float64, error) {
	cfg, rule, err := vlcrcAndRule(args)
	if err != nil {
		return 0, err
	}
	want, err := key(rule, "recording_file_path")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.Contains(line, "input-record-path") {
			parts := strings.Split(line, "=")
			return score(pyvalue.Equal(strings.TrimSpace(parts[len(parts)-1]), want)), nil
		}
	}
	return 0, nil
}

func isVLCFullscreen(args []any, _ map[string]any) (float64, error) {
	w, ok1 := Arg(args, 0).(map[string]any)
	s, ok2 := Arg(args, 1).(map[string]any)
	if !ok1 || !ok2 {
		return 0, nil
	}
	return score(pyvalue.Equal(w["width"], s["width"]) && pyvalue.Equal(w["height"], s["height"])), nil
}

func checkQtSliderColours(args []any, _ map[string]any) (float64, error) {
	cfg, rule, err := vlcrcAndRule(args)
	if err != nil {
		return 0, err
	}
	colours := lastSetting(cfg, "qt-slider-colours", "153;210;153;20;210;20;255;199;15;245;39;29")
	switch rule["type"] {
	case "match":
		return score(pyvalue.Equal(colours, rule["expected_qt_slider_colours"])), nil
	case "blackish":
		var vals []int
		for _, x := range strings.Split(colours, ";") {
			n, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil {
				return 0, nil // ValueError is caught by the metric: 0
			}
			vals = append(vals, n)
		}
		for i := 0; i+2 < len(vals); i += 3 {
			if vals[i] >= 100 || vals[i+1] >= 100 || vals[i+2] >= 100 {
				return 0, nil
			}
		}
		return 1, nil
	}
	return 0, fmt.Errorf("TypeError: float() argument must be a real number, not 'NoneType' (rule type %v)", rule["type"])
}

// globalKeyPlayPause is check_global_key_play_pause's reading of vlcrc:
// "1" when the last global-key-play-pause= line has a value, else "0".
func globalKeyPlayPause(cfg string) string {
	if lastSetting(cfg, "global-key-play-pause=", "") == "" {
		return "0"
	}
	return "1"
}

// textAndRule is the start of the metrics over a fetched text file: its
// text and the rule dict (named what in errors). ok is false when the
// getter found no file, which scores 0, or on err.
func textAndRule(args []any, what string) (text string, rule map[string]any, ok bool, err error) {
	if Arg(args, 0) == nil {
		return "", nil, false, nil
	}
	if text, err = readText(Arg(args, 0)); err != nil {
		return "", nil, false, err
	}
	if rule, err = ruleMap(Arg(args, 1), what); err != nil {
		return "", nil, false, err
	}
	return text, rule, true, nil
}

func checkConfigStatus(args []any, _ map[string]any) (float64, error) {
	text, rule, ok, err := textAndRule(args, "rule")
	if !ok {
		return 0, err
	}
	for _, line := range pyvalue.Lines(text) {
		if strings.HasPrefix(line, "#") || line == "\n" {
			continue
		}
		items := strings.Fields(strings.TrimRight(strings.TrimLeft(strings.TrimSpace(line), "("), ")\n"))
		if len(items) == 0 {
			return 0, fmt.Errorf("IndexError: list index out of range")
		}
		last := items[len(items)-1]
		switch k := rule["key"].(type) {
		case string:
			if items[0] == k && pyvalue.Equal(last, rule["value"]) {
				return 1, nil
			}
		case []any:
			if len(k) == 2 && len(items) > 1 && pyvalue.Equal(items[0], k[0]) && pyvalue.Equal(items[1], k[1]) && pyvalue.Equal(last, rule["value"]) {
				return 1, nil
			}
		}
	}
	return 0, nil
}

func checkImageFileSize(args []any, _ map[string]any) (float64, error) {
	p, ok := Arg(args, 0).(string)
	if !ok {
		return 0, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return 0, fmt.Errorf("%w: %s", client.ErrFileNotFound, p)
	}
	rule, err := ruleMap(Arg(args, 1), "rule")
	if err != nil {
		return 0, err
	}
	lt, err := pyvalue.Compare("lt", float64(st.Size()), rule["max_size"])
	return score(lt), err
}

var prefRE = regexp.MustCompile(`^user_pref\("((?:[^"]|\\")+)", (.+)\);$`)

func checkThunderbirdPrefs(args []any, _ map[string]any) (float64, error) {
	text, rule, ok, err := textAndRule(args, "rule")
	if !ok {
		return 0, err
	}
	expect, _ := rule["expect"].(map[string]any)
	unexpect, _ := rule["unexpect"].(map[string]any)
	got := map[string]bool{}
	for k := range expect {
		got[k] = false
	}
	pass := true
	for _, l := range pyvalue.Lines(text) {
		m := prefRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(m[2]), &v); err != nil {
			return 0, fmt.Errorf("json.decoder.JSONDecodeError in pref %s: %w", m[1], err)
		}
		if r, in := expect[m[1]].(map[string]any); in {
			match, err := matchValueToRule(v, r)
			if err != nil {
				return 0, err
			}
			got[m[1]] = match
		} else if r, in := unexpect[m[1]].(map[string]any); in {
			match, err := matchValueToRule(v, r)
			if err != nil {
				return 0, err
			}
			pass = pass && !match
		}
	}
	for _, g := range got {
		pass = pass && g
	}
	return score(pass), nil
}

// filterConditionRE is thunderbird.py's _condition_pattern.
var filterConditionRE = mustCompilePy(`\b(?:AND|OR) \((?:[\w ]+),(?:[\w ']+),(?:"(?:(?:[^"]|\")+)"|(?:[^)]+))\)|\bALL\b`)

// pySlice is s[a:len(s)+b] for a >= 0, b < 0, clamped as Python does.
func pySlice(s string, a, b int) string {
	end := len(s) + b
	if a > len(s) {
		a = len(s)
	}
	if end < a {
		return ""
	}
	return s[a:end]
}

func checkThunderbirdFilter(args []any, _ map[string]any) (float64, error) {
	text, rules, ok, err := textAndRule(args, "rules")
	if !ok {
		return 0, err
	}
	val := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, `\"`, `"`), `\\`, `\`)
	}
	var filters []map[string]any
	var cur map[string]any
	for _, l := range pyvalue.Lines(text) {
		switch {
		case strings.HasPrefix(l, "name="):
			cur = map[string]any{"name": val(pySlice(l, 6, -2))}
		case cur == nil:
			continue
		case strings.HasPrefix(l, "enabled="):
			cur["enabled"] = val(pySlice(l, 9, -2))
		case strings.HasPrefix(l, "type="):
			cur["type"] = val(pySlice(l, 6, -2))
		case strings.HasPrefix(l, "action="):
			cur["action"] = val(pySlice(l, 8, -2))
		case strings.HasPrefix(l, "actionValue="):
			cur["actionValue"] = val(pySlice(l, 13, -2))
		case strings.HasPrefix(l, "condition="):
			found, err := filterConditionRE.FindAllString(val(pySlice(l, 11, -2)))
			if err != nil {
				return 0, err
			}
			conds := []any{}
			for _, c := range found {
				conds = append(conds, c)
			}
			cur["condition"] = conds
			filters = append(filters, cur)
		}
	}
	matchRecord := func(pattern, item map[string]any) bool {
		for k, v := range pattern {
			iv, ok := item[k]
			if !ok || !pyvalue.Equal(iv, v) {
				return false
			}
		}
		return true
	}
	expect, _ := pyvalue.AsList(rules["expect"])
	unexpect, _ := pyvalue.AsList(rules["unexpect"])
	return score(expectUnexpect(filters, expect, unexpect, func(r any, f map[string]any) bool {
		rm, _ := r.(map[string]any)
		return matchRecord(rm, f)
	})), nil
}

func checkLeftPanel(args []any, _ map[string]any) (float64, error) {
	tree, ok := Arg(args, 0).(string)
	if !ok {
		return 0, fmt.Errorf("TypeError: accessibility tree is %s", pyvalue.TypeName(Arg(args, 0)))
	}
	d := xml.NewDecoder(strings.NewReader(tree))
	for {
		tok, err := d.Token()
		if err != nil {
			if err.Error() == "EOF" {
				return 0, nil
			}
			return 0, fmt.Errorf("xml.etree.ElementTree.ParseError: %w", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "document-frame" {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Space == "" && a.Name.Local == "name" && a.Value == "Slides View" {
				return 1, nil
			}
		}
	}
}

func checkAutoSavingTime(args []any, _ map[string]any) (float64, error) {
	p, ok := Arg(args, 0).(string)
	if !ok {
		return 0, fmt.Errorf("TypeError: expected str path, not %s", pyvalue.TypeName(Arg(args, 0)))
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, fmt.Errorf("%w: %s (the metric returns None)", client.ErrFileNotFound, p)
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	minutes, err := key(rules, "minutes")
	if err != nil {
		return 0, err
	}
	type prop struct {
		Name  string   `xml:"name,attr"`
		Value []string `xml:"value"`
	}
	type item struct {
		Path  string `xml:"path,attr"`
		Props []prop `xml:"prop"`
	}
	var doc struct {
		Items []item `xml:"item"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		return 0, fmt.Errorf("xml.etree.ElementTree.ParseError (the metric returns None): %w", err)
	}
	for _, it := range doc.Items {
		if it.Path != "/org.openoffice.Office.Common/Save/Document" {
			continue
		}
		for _, pr := range it.Props {
			if pr.Name == "AutoSaveTimeIntervall" && len(pr.Value) > 0 {
				n, err := strconv.Atoi(strings.TrimSpace(pr.Value[0]))
				if err != nil {
					return 0, fmt.Errorf("ValueError: invalid literal for int(): %q", pr.Value[0])
				}
				return score(pyvalue.Equal(float64(n), minutes)), nil
			}
		}
	}
	return 0, nil
}
