package osworld

import (
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// file writes content to a temp file and returns its path. The metric
// corpus finds the file by its path (testFiles).
func file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	testFiles.Store(p, [2]string{name, content})
	return p
}

// testFiles maps the paths file made to their name and content.
var testFiles sync.Map

type metricCase struct {
	name    string
	metric  string
	args    []any
	opts    map[string]any
	want    float64
	wantErr bool
}

func runMetricCases(t *testing.T, cases []metricCase) {
	t.Helper()
	for _, c := range cases {
		m, ok := metrics[c.metric]
		if !ok {
			t.Fatalf("%s: metric %s not registered", c.name, c.metric)
		}
		opts := c.opts
		if opts == nil {
			opts = map[string]any{}
		}
		got, err := m(c.args, opts)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", c.name, err, c.wantErr)
			continue
		}
		if err == nil && math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: %s = %v, want %v", c.name, c.metric, got, c.want)
		}
	}
}

func rules(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

func generalCases(t *testing.T) []metricCase {
	list := file(t, "list.txt", "alpha 1\nbeta 2\n")
	return []metricCase{
		{"exact equal", "exact_match", []any{"false\n", rules("expected", "false\n")}, nil, 1, false},
		{"exact differs", "exact_match", []any{"true\n", rules("expected", "false\n")}, nil, 0, false},
		{"exact None", "exact_match", []any{nil, rules("expected", "x")}, nil, 0, false},
		{"exact no key", "exact_match", []any{"x", rules()}, nil, 0, true},
		{"include ok", "check_include_exclude", []any{"/usr/bin/spotify\n", rules("include", []any{"spotify"}, "exclude", []any{"not found"})}, nil, 1, false},
		{"include missing", "check_include_exclude", []any{"", rules("include", []any{"spotify"})}, nil, 0, false},
		{"exclude hit", "check_include_exclude", []any{"spotify not found", rules("include", []any{"spotify"}, "exclude", []any{"not found"})}, nil, 0, false},
		{"include None", "check_include_exclude", []any{nil, rules("include", []any{"x"})}, nil, 0, false},
		{"in list", "match_in_list", []any{"Bing", rules("expected", []any{"Bing", "bing"})}, nil, 1, false},
		{"not in list", "match_in_list", []any{"Google", rules("expected", []any{"Bing"})}, nil, 0, false},
		{"is_in_list", "is_in_list", []any{[]any{"/a", "/b"}, rules("expected", "/b")}, nil, 1, false},
		{"literal str", "literal_match", []any{"Abc", "abc"}, map[string]any{"ignore_case": true}, 1, false},
		{"literal list", "literal_match", []any{[]any{"a", 1.0}, []any{"a", "1"}}, map[string]any{"type": "list"}, 1, false},
		{"check_list", "check_list", []any{list, rules("expect", []any{"^beta"}, "unexpect", []any{"gamma"})}, nil, 1, false},
		{"check_list unexpect", "check_list", []any{list, rules("expect", []any{"^beta"}, "unexpect", []any{"alpha"})}, nil, 0, false},
		{"check_list None", "check_list", []any{nil, rules()}, nil, 0, false},
		{"utc ok", "is_utc_0", []any{"a\nb\nc\n   Time zone: Etc/UTC (UTC, +0000)\n"}, nil, 1, false},
		{"utc not", "is_utc_0", []any{"a\nb\nc\n   Time zone: Europe/Paris (CET, +0100)\n"}, nil, 0, false},
		{"utc empty output", "is_utc_0", []any{""}, nil, 0, true},
		{"favorites", "check_gnome_favorite_apps", []any{"['google-chrome.desktop', 'thunderbird.desktop']\n", rules("expected", []any{"thunderbird.desktop", "google-chrome.desktop"})}, nil, 1, false},
		{"favorites extra", "check_gnome_favorite_apps", []any{"['a.desktop', 'vim.desktop']", rules("expected", []any{"a.desktop"})}, nil, 0, false},
		{"moved", "check_moved_jpgs", []any{map[string]any{"children": []any{map[string]any{"name": "b.jpg"}, map[string]any{"name": "a.jpg"}}}, rules("expected", []any{"a.jpg", "b.jpg"})}, nil, 1, false},
		{"clipboard", "is_in_vm_clickboard", []any{rules("expected", []any{"x", "y"}), "xy"}, nil, 1, false},
		{"line number", "check_line_number", []any{file(t, "t.txt", "12:00:01 a\nb\n23:59:59 c\n"), rules("expected", "2")}, nil, 1, false},
		{"file contains", "file_contains", []any{file(t, "c.txt", "hello world"), rules("expected", []any{"hello", "world"})}, nil, 1, false},
		{"file contains missing file", "file_contains", []any{"/nonexistent", rules("expected", []any{"x"})}, nil, 0, false},
	}
}

func TestGeneralMetrics(t *testing.T) { runMetricCases(t, generalCases(t)) }

func diffTextCases(t *testing.T) []metricCase {
	a := file(t, "a", "a\nb\nc\nd\n")
	b := file(t, "b", "a\nc\nd\ne\nf\n")
	// Python: difflib.SequenceMatcher(a=[a,b,c,d], b=[a,c,d,e,f]).ratio()
	return []metricCase{{"ratio", "diff_text_file", []any{a, b}, nil, 0.6666666666666666, false}}
}

func TestDiffTextFileRatio(t *testing.T) {
	runMetricCases(t, diffTextCases(t))
	if got := sequenceRatio([]string{"x", "a", "b", "y", "a", "b", "c"}, []string{"a", "b", "c", "x", "a", "b"}); math.Abs(got-0.46153846153846156) > 1e-12 {
		t.Errorf("sequenceRatio = %v", got)
	}
}

func jsonCases(t *testing.T) []metricCase {
	settings := file(t, "settings.json", `{"editor.fontSize": 14, "files.autoSave": "afterDelay", "nested": {"a": 1, "b": [1, 2]}}`)
	keybindings := file(t, "keybindings.json", "// comment\n[{\"key\": \"ctrl+j\", \"command\": \"x\"}]")
	return []metricCase{
		{"settings ok", "check_json_settings", []any{settings, rules("expected", map[string]any{"editor.fontSize": 14.0})}, nil, 1, false},
		{"settings differs", "check_json_settings", []any{settings, rules("expected", map[string]any{"editor.fontSize": 12.0})}, nil, 0, false},
		{"settings missing file", "check_json_settings", []any{"/nonexistent", rules("expected", map[string]any{})}, nil, 0, false},
		{"keybindings", "check_json_keybindings", []any{keybindings, rules("expected", map[string]any{"key": "ctrl+j", "command": "x"})}, nil, 1, false},
		{"config subset", "compare_config", []any{settings, rules("expected", `{"nested": {"a": 1}}`)}, nil, 1, false},
		{"config not subset", "compare_config", []any{settings, rules("expected", `{"nested": {"a": 2}}`)}, nil, 0, false},
		{"check_json eq", "check_json", []any{settings, rules("expect", []any{rules("key", []any{"nested", "a"}, "method", "eq", "ref", 1.0)})}, nil, 1, false},
		{"check_json re", "check_json", []any{settings, rules("expect", []any{rules("key", []any{"files.autoSave"}, "method", "re.I", "ref", "^AFTER")})}, nil, 1, false},
		{"check_json missing key", "check_json", []any{settings, rules("expect", []any{rules("key", []any{"nope"}, "method", "eq", "ref", 1.0)})}, nil, 0, false},
		{"check_json unexpect", "check_json", []any{settings, rules("unexpect", []any{rules("key", []any{"editor.fontSize"}, "method", "ge", "ref", 10.0)})}, nil, 0, false},
		{"direct json", "check_direct_json_object", []any{"{'a': 'x', 'b': 'y'}", rules("expected", map[string]any{"a": "x"})}, nil, 1, false},
		{"direct json differs", "check_direct_json_object", []any{map[string]any{"a": "z"}, rules("expected", map[string]any{"a": "x"})}, nil, 0, false},
		{"direct json in result", "check_direct_json_object", []any{map[string]any{"a": "xyz", "b": []any{"p", "q"}}, rules("expect_in_result", true, "expected", map[string]any{"a": "y", "b": []any{"q"}})}, nil, 1, false},
		{"direct json failed marker", "check_direct_json_object", []any{map[string]any{"a": "x"}, rules("expected", map[string]any{"a": "__EVALUATION_FAILED__"})}, nil, 0, false},
		{"direct json None", "check_direct_json_object", []any{nil, rules("expected", map[string]any{})}, nil, 0, false},
		{"extension contain", "is_extension_installed", []any{"ms-python.python\n", rules("type", "contain", "expected", "ms-python.python")}, nil, 1, false},
		{"extension not_contain", "is_extension_installed", []any{"", rules("type", "not_contain", "expected", "x")}, nil, 1, false},
	}
}

func TestJSONMetrics(t *testing.T) { runMetricCases(t, jsonCases(t)) }

func textFileCases(t *testing.T) []metricCase {
	a := file(t, "a", "Hello\tWorld\r\n")
	b := file(t, "b", "hello world")
	return []metricCase{
		{"differs", "compare_text_file", []any{a, b}, nil, 0, false},
		{"ignoring", "compare_text_file", []any{a, b}, map[string]any{"ignore_blanks": true, "ignore_case": true}, 1, false},
		{"None", "compare_text_file", []any{nil, b}, nil, 0, false},
	}
}

func TestTextFileMetrics(t *testing.T) { runMetricCases(t, textFileCases(t)) }

func chromeCases(t *testing.T) []metricCase {
	bookmarks := map[string]any{"bookmark_bar": map[string]any{"children": []any{
		map[string]any{"type": "folder", "name": "Favorites", "children": []any{}},
		map[string]any{"type": "url", "url": "https://a.org/"},
		map[string]any{"type": "folder", "name": "Liked Authors", "children": []any{
			map[string]any{"type": "url", "url": "https://x.org/"}, map[string]any{"type": "url", "url": "https://y.org/"}}},
	}}}
	return []metricCase{
		{"tabs equal", "is_expected_tabs", []any{[]any{map[string]any{"url": "https://www.airbnb.com/"}, map[string]any{"url": "https://lonelyplanet.com"}},
			rules("type", "url", "urls", []any{"https://www.lonelyplanet.com", "https://www.airbnb.com"})}, nil, 1, false},
		{"tabs count", "is_expected_tabs", []any{[]any{map[string]any{"url": "https://a.com"}}, rules("type", "url", "urls", []any{"https://a.com", "https://b.com"})}, nil, 0, false},
		{"tabs empty", "is_expected_tabs", []any{[]any{}, rules("type", "url", "urls", []any{})}, nil, 0, false},
		{"active tab", "is_expected_active_tab", []any{map[string]any{"url": "https://www.example.co.uk/x"}, rules("type", "url", "url", "http://example.com/x")}, nil, 0, false},
		{"active tab same", "is_expected_active_tab", []any{"https://www.example.com/x", rules("type", "url", "url", "https://example.com/x")}, nil, 1, false},
		{"approximate", "is_expected_active_tab_approximate", []any{"https://a.com/p?q=1", rules("type", "url", "url", "https://a.com/p?q=2")}, nil, 1, false},
		{"pattern", "is_expected_url_pattern_match", []any{"https://www.dmv.virginia.gov/licenses", rules("expected", []any{`^https://(www\.)?dmv\.virginia\.gov/`})}, nil, 1, false},
		{"pattern None", "is_expected_url_pattern_match", []any{nil, rules("expected", []any{"x"})}, nil, 0, false},
		{"bookmark folders", "is_expected_bookmarks", []any{bookmarks, rules("type", "bookmark_bar_folders_names", "names", []any{"Liked Authors", "Favorites"})}, nil, 1, false},
		{"bookmark urls", "is_expected_bookmarks", []any{bookmarks, rules("type", "bookmark_bar_websites_urls", "urls", []any{"https://a.org/"})}, nil, 1, false},
		{"liked authors", "is_expected_bookmarks", []any{bookmarks, rules("type", "liked_authors_websites_urls", "urls", []any{[]any{"https://z.org/", "https://x.org/"}, "https://y.org/"})}, nil, 1, false},
		{"bookmarks empty", "is_expected_bookmarks", []any{[]any{}, rules("type", "x")}, nil, 0, false},
		{"font size", "check_font_size", []any{map[string]any{"default_font_size": 16.0}, rules("type", "range", "min", 15.0, "max", 17.0)}, nil, 1, false},
		{"extensions", "is_expected_installed_extensions", []any{[]any{"Zoom for Google Chrome", "B"}, rules("expected", []any{"Zoom Chrome Extension"})}, nil, 1, false},
		{"shortcut", "is_shortcut_on_desktop", []any{map[string]any{"a.desktop": "[Desktop Entry]\nName=Example Site\nExec=x\n"}, rules("type", "name", "name", "Example Site")}, nil, 1, false},
		{"shortcut none", "is_shortcut_on_desktop", []any{map[string]any{}, rules("type", "name", "name", "X")}, nil, 0, false},
		{"steam cart", "is_added_to_steam_cart", []any{map[string]any{"content": "Your cart: Portal 2, Hades"}, rules("items", []any{"Portal 2", "Hades"})}, nil, 1, false},
		{"steam cart missing", "is_added_to_steam_cart", []any{map[string]any{"content": "Your cart: Hades"}, rules("items", []any{"Portal 2"})}, nil, 0, false},
		{"search query", "is_expected_search_query", []any{map[string]any{"url": "https://www.google.com/search?q=drums+linux"}, rules("expect", rules("pattern", `q=drums\+linux`))}, nil, 1, false},
		{"search query differs", "is_expected_search_query", []any{map[string]any{"url": "https://www.google.com/search?q=x"}, rules("expect", rules("pattern", `q=drums`))}, nil, 0, false},
	}
}

func TestChromeMetrics(t *testing.T) { runMetricCases(t, chromeCases(t)) }

func appConfigCases(t *testing.T) []metricCase {
	vlcrc := file(t, "vlcrc", "# comment\n#qt-max-volume=125\nqt-max-volume=200\nqt-minimal-view=1\ninput-record-path=/home/user/Desktop\nglobal-key-play-pause=Space\nqt-slider-colours=0;0;0;10;10;10;20;20;20;30;30;30\n")
	status := file(t, "status.xml", `<?xml version="1.0"?><root><state>playing</state><information><category name="meta"><info name="filename">video.mp4</info></category></information></root>`)
	gimprc := file(t, "sessionrc", "# GIMP\n(show-menubar yes)\n(undo-levels 100)\n(theme \"Dark\")\n")
	prefs := file(t, "prefs.js", "user_pref(\"mail.spam.manualMark\", true);\nuser_pref(\"mailnews.start_page.enabled\", false);\n")
	filters := file(t, "msgFilterRules.dat", "version=\"9\"\nname=\"spam\"\nenabled=\"yes\"\ntype=\"17\"\naction=\"Move to folder\"\nactionValue=\"mailbox://nobody@Local%20Folders/Junk\"\ncondition=\"AND (subject,contains,discount)\"\n")
	xcu := file(t, "registrymodifications.xcu", `<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry"><item oor:path="/org.openoffice.Office.Common/Save/Document"><prop oor:name="AutoSaveTimeIntervall" oor:op="fuse"><value>3</value></prop></item></oor:items>`)
	return []metricCase{
		{"max volume", "check_qt_max_volume", []any{vlcrc, rules("expected_qt_max_volume", 200.0)}, nil, 1, false},
		{"minimal view", "check_qt_minimal_view", []any{vlcrc, rules("expected_qt_minimal_view", 0.0)}, nil, 0, false},
		{"bgcone default", "check_qt_bgcone", []any{vlcrc, rules("expected_qt_bgcone", 1.0)}, nil, 1, false},
		{"one instance default", "check_one_instance_when_started_from_file", []any{vlcrc, rules("expected_one_instance_when_started_from_file", 1.0)}, nil, 1, false},
		{"one instance differs", "check_one_instance_when_started_from_file", []any{vlcrc, rules("expected_one_instance_when_started_from_file", 0.0)}, nil, 0, false},
		{"play and exit default", "check_play_and_exit", []any{vlcrc, rules("expected_play_and_exit", 0.0)}, nil, 1, false},
		{"recordings", "is_vlc_recordings_folder", []any{vlcrc, rules("recording_file_path", "/home/user/Desktop")}, nil, 1, false},
		{"global key", "check_global_key_play_pause", []any{vlcrc, rules("expected_global_key_play_pause", 1.0)}, nil, 1, false},
		{"slider blackish", "check_qt_slider_colours", []any{vlcrc, rules("type", "blackish")}, nil, 1, false},
		{"vlc missing file", "check_qt_max_volume", []any{nil, rules("expected_qt_max_volume", 1.0)}, nil, 0, true},
		{"playing", "is_vlc_playing", []any{status, rules("type", "file_name", "file_name", "video.mp4")}, nil, 1, false},
		{"fullscreen", "is_vlc_fullscreen", []any{map[string]any{"width": 1920.0, "height": 1080.0}, map[string]any{"width": 1920.0, "height": 1080.0}}, nil, 1, false},
		{"fullscreen None", "is_vlc_fullscreen", []any{nil, map[string]any{}}, nil, 0, false},
		{"gimp", "check_config_status", []any{gimprc, rules("key", "undo-levels", "value", "100")}, nil, 1, false},
		{"gimp None", "check_config_status", []any{nil, rules("key", "x", "value", "y")}, nil, 0, false},
		{"prefs", "check_thunderbird_prefs", []any{prefs, rules("expect", map[string]any{"mail.spam.manualMark": rules("method", "eq", "ref", true)})}, nil, 1, false},
		{"prefs unexpect", "check_thunderbird_prefs", []any{prefs, rules("unexpect", map[string]any{"mailnews.start_page.enabled": rules("method", "eq", "ref", false)})}, nil, 0, false},
		{"filter", "check_thunderbird_filter", []any{filters, rules("expect", []any{rules("enabled", "yes", "action", "Move to folder", "condition", []any{"AND (subject,contains,discount)"})})}, nil, 1, false},
		{"autosave", "check_auto_saving_time", []any{xcu, rules("minutes", 3.0)}, nil, 1, false},
		{"left panel", "check_left_panel", []any{`<desktop-frame><application name="soffice"><document-frame name="Slides View"/></application></desktop-frame>`}, nil, 1, false},
		{"left panel closed", "check_left_panel", []any{`<desktop-frame/>`}, nil, 0, false},
		{"file size", "check_image_file_size", []any{gimprc, rules("max_size", 500000.0)}, nil, 1, false},
	}
}

func TestAppConfigMetrics(t *testing.T) { runMetricCases(t, appConfigCases(t)) }

func TestMatchValueToRule(t *testing.T) {
	for _, c := range []struct {
		v    any
		rule map[string]any
		want bool
	}{
		{5.0, rules("method", "approx:0.5", "ref", 5.3), true},
		{"5.0", rules("method", "approx:0.1", "ref", 5.3), false},
		{2.0, rules("method", "range.te", "ref", []any{0.0, 2.0}), true},
		{0.0, rules("method", "range.te", "ref", []any{0.0, 2.0}), false},
		{"abc", rules("method", "ne", "ref", "abd"), true},
		{3.0, rules("method", "lt", "ref", 4.0), true},
	} {
		got, err := matchValueToRule(c.v, c.rule)
		if err != nil || got != c.want {
			t.Errorf("matchValueToRule(%v, %v) = %v, %v; want %v", c.v, c.rule, got, err, c.want)
		}
	}
}
