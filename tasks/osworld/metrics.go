package osworld

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// metric is one OSWorld metric: args are (result) or (result, expected) as
// DesktopEnv.evaluate passes them, opts its keyword options. An error is a
// Python exception escaping the metric.
type metric func(args []any, opts map[string]any) (float64, error)

// metrics are the OSWorld metrics drums computes itself: the ones that
// compare text, JSON and configuration files. Metrics over office documents,
// images, audio, video and PDFs are left to OSWorld (--via-python).
var metrics = map[string]metric{
	"exact_match":                               exactMatch,
	"check_include_exclude":                     checkIncludeExclude,
	"match_in_list":                             matchInList,
	"is_in_list":                                isInList,
	"literal_match":                             literalMatch,
	"check_list":                                checkList,
	"check_json":                                checkJSON,
	"check_direct_json_object":                  checkDirectJSONObject,
	"file_contains":                             fileContains,
	"check_line_number":                         checkLineNumber,
	"diff_text_file":                            diffTextFile,
	"is_utc_0":                                  isUTC0,
	"check_gnome_favorite_apps":                 checkGnomeFavoriteApps,
	"check_moved_jpgs":                          checkMovedJpgs,
	"is_in_vm_clickboard":                       isInVMClipboard,
	"check_json_settings":                       checkJSONSettings,
	"check_json_keybindings":                    checkJSONKeybindings,
	"compare_text_file":                         compareTextFile,
	"compare_config":                            compareConfig,
	"is_extension_installed":                    isExtensionInstalled,
	"is_expected_active_tab":                    activeTabMatches(sameTabURL),
	"is_expected_active_tab_approximate":        activeTabMatches(sameTabURLButQuery),
	"is_expected_url_pattern_match":             isExpectedURLPatternMatch,
	"is_expected_tabs":                          isExpectedTabs,
	"is_expected_bookmarks":                     isExpectedBookmarks,
	"is_expected_search_query":                  isExpectedSearchQuery,
	"is_expected_installed_extensions":          isExpectedInstalledExtensions,
	"is_shortcut_on_desktop":                    isShortcutOnDesktop,
	"check_font_size":                           checkFontSize,
	"is_added_to_steam_cart":                    isAddedToSteamCart,
	"is_vlc_playing":                            isVLCPlaying,
	"is_vlc_recordings_folder":                  isVLCRecordingsFolder,
	"is_vlc_fullscreen":                         isVLCFullscreen,
	"check_qt_bgcone":                           vlcrcCheck("qt-bgcone=", "expected_qt_bgcone", "1"),
	"check_qt_max_volume":                       vlcrcCheck("qt-max-volume=", "expected_qt_max_volume", "125"),
	"check_qt_minimal_view":                     vlcrcCheck("qt-minimal-view=", "expected_qt_minimal_view", "0"),
	"check_one_instance_when_started_from_file": vlcrcCheck("one-instance-when-started-from-file=", "expected_one_instance_when_started_from_file", "1"),
	"check_play_and_exit":                       vlcrcCheck("play-and-exit=", "expected_play_and_exit", "0"),
	"check_qt_slider_colours":                   checkQtSliderColours,
	"check_global_key_play_pause":               vlcrcCompare("expected_global_key_play_pause", globalKeyPlayPause),
	"check_config_status":                       checkConfigStatus,
	"check_image_file_size":                     checkImageFileSize,
	"check_thunderbird_prefs":                   checkThunderbirdPrefs,
	"check_thunderbird_filter":                  checkThunderbirdFilter,
	"check_left_panel":                          checkLeftPanel,
	"check_auto_saving_time":                    checkAutoSavingTime,
}

// MetricNative reports whether drums computes the metric itself: a Go
// metric the metric corpus proves equal to OSWorld's (corpus.go).
func MetricNative(name string) bool {
	_, ok := metrics[name]
	return ok && proven()[name] || name == "infeasible"
}

// NativeMetrics lists the metrics drums computes itself, sorted.
func NativeMetrics() []string {
	out := []string{"infeasible"}
	for k := range metrics {
		if MetricNative(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func Arg(args []any, i int) any {
	if i < len(args) {
		return args[i]
	}
	return nil
}

func ruleMap(v any, what string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("TypeError: %s is %s, not a dict", what, pyvalue.TypeName(v))
	}
	return m, nil
}

// key is Python's rules[k]: a KeyError when absent.
func key(m map[string]any, k string) (any, error) {
	v, ok := m[k]
	if !ok {
		return nil, fmt.Errorf("KeyError: %s", pyvalue.Repr(k))
	}
	return v, nil
}

// readText is open(path).read() in text mode.
func readText(path any) (string, error) {
	p, ok := path.(string)
	if !ok {
		return "", fmt.Errorf("TypeError: expected str path, not %s", pyvalue.TypeName(path))
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s", client.ErrFileNotFound, p)
	}
	return pyvalue.UniversalNewlines(string(b)), nil
}

func score(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ruleExpected is rules["expected"] of the rules dict a metric gets: a
// TypeError naming it what when it is not a dict, a KeyError when the key
// is absent.
func ruleExpected(v any, what string) (any, error) {
	rules, err := ruleMap(v, what)
	if err != nil {
		return nil, err
	}
	return key(rules, "expected")
}

func exactMatch(args []any, _ map[string]any) (float64, error) {
	exp, err := ruleExpected(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	return score(pyvalue.Equal(Arg(args, 0), exp)), nil
}

func checkIncludeExclude(args []any, _ map[string]any) (float64, error) {
	result := Arg(args, 0)
	if result == nil {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	for _, k := range []string{"include", "exclude"} {
		l, _ := pyvalue.AsList(rules[k])
		for _, r := range l {
			in, err := pyvalue.In(r, result)
			if err != nil {
				return 0, err
			}
			if in != (k == "include") {
				return 0, nil
			}
		}
	}
	return 1, nil
}

func matchInList(args []any, _ map[string]any) (float64, error) {
	exp, err := ruleExpected(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	in, err := pyvalue.In(Arg(args, 0), exp)
	return score(in), err
}

func isInList(args []any, _ map[string]any) (float64, error) {
	exp, err := ruleExpected(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	in, err := pyvalue.In(exp, Arg(args, 0))
	return score(in), err
}

func literalMatch(args []any, opts map[string]any) (float64, error) {
	result, expected := Arg(args, 0), Arg(args, 1)
	typ := "str"
	if t, ok := opts["type"].(string); ok {
		typ = t
	}
	ic := pyvalue.Truthy(opts["ignore_case"])
	norm := func(v any) string {
		s := pyvalue.Str(v)
		if ic {
			s = strings.ToLower(s)
		}
		return s
	}
	switch typ {
	case "str":
		return score(norm(result) == norm(expected)), nil
	case "list":
		r, ok1 := pyvalue.AsList(result)
		e, ok2 := pyvalue.AsList(expected)
		if !ok1 || !ok2 || len(r) != len(e) {
			return 0, nil
		}
		for i := range r {
			if norm(r[i]) != norm(e[i]) {
				return 0, nil
			}
		}
		return 1, nil
	}
	return 0, fmt.Errorf("NotImplementedError: type %s not supported", typ)
}

func checkList(args []any, _ map[string]any) (float64, error) {
	if Arg(args, 0) == nil {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	var expect, unexpect []*pyRegexp
	for k, dst := range map[string]*[]*pyRegexp{"expect": &expect, "unexpect": &unexpect} {
		l, _ := pyvalue.AsList(rules[k])
		for _, p := range l {
			s, _ := p.(string)
			re, err := compilePy(s)
			if err != nil {
				return 0, err
			}
			*dst = append(*dst, re)
		}
	}
	text, err := readText(Arg(args, 0))
	if err != nil {
		return 0, err
	}
	var matchErr error
	match := func(re *pyRegexp, line string) bool {
		ok, err := re.MatchString(line)
		matchErr = cmp.Or(matchErr, err)
		return ok
	}
	ok := expectUnexpect(pyvalue.Lines(text), expect, unexpect, match)
	if matchErr != nil {
		return 0, matchErr
	}
	return score(ok), nil
}

// expectUnexpect is the expect/unexpect rule of OSWorld's metrics: every
// expect pattern matches some item and no unexpect pattern matches any.
func expectUnexpect[P, I any](items []I, expect, unexpect []P, match func(P, I) bool) bool {
	matchesAny := func(p P) bool {
		return slices.ContainsFunc(items, func(it I) bool { return match(p, it) })
	}
	for _, p := range expect {
		if !matchesAny(p) {
			return false
		}
	}
	return !slices.ContainsFunc(unexpect, matchesAny)
}

// matchValueToRule is metrics.utils._match_value_to_rule.
func matchValueToRule(value any, rule map[string]any) (bool, error) {
	method, _ := rule["method"].(string)
	ref := rule["ref"]
	switch {
	case strings.HasPrefix(method, "re"):
		s, ok := value.(string)
		if !ok {
			return false, fmt.Errorf("TypeError: expected string or bytes-like object, got %s", pyvalue.TypeName(value))
		}
		p, _ := ref.(string)
		re, err := compilePy(p, strings.Split(method, ".")[1:]...)
		if err != nil {
			return false, err
		}
		return re.MatchString(s)
	case method == "eq":
		return pyvalue.Equal(value, ref), nil
	case method == "ne":
		return !pyvalue.Equal(value, ref), nil
	case method == "le" || method == "lt" || method == "ge" || method == "gt":
		return pyvalue.Compare(method, value, ref)
	case strings.HasPrefix(method, "approx"):
		_, th, _ := strings.Cut(method, ":")
		threshold, err := strconv.ParseFloat(th, 64)
		if err != nil {
			return false, fmt.Errorf("ValueError: bad approx threshold %q", th)
		}
		var v float64
		switch x := value.(type) {
		case string:
			if v, err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
				return false, nil
			}
		default:
			var ok bool
			if v, ok = pyvalue.Number(x); !ok {
				return false, nil
			}
		}
		r, ok := pyvalue.Number(ref)
		if !ok {
			return false, fmt.Errorf("TypeError: approx ref is %s", pyvalue.TypeName(ref))
		}
		d := v - r
		if d < 0 {
			d = -d
		}
		return d <= threshold, nil
	case strings.HasPrefix(method, "range.") && len(method) >= 8:
		l, ok := pyvalue.AsList(ref)
		if !ok || len(l) < 2 {
			return false, fmt.Errorf("TypeError: range ref is not a pair")
		}
		a, err := pyvalue.Compare("l"+method[6:7], l[0], value)
		if err != nil {
			return false, err
		}
		b, err := pyvalue.Compare("l"+method[7:8], value, l[1])
		return a && b, err
	}
	return false, fmt.Errorf("%w: rule method %q", ErrNotNative, method)
}

// notNative keeps of an error a metric catches (scoring 0) only what
// makes the score unknown: something drums does not compute natively.
func notNative(err error) error {
	if errors.Is(err, ErrNotNative) {
		return err
	}
	return nil
}

func loadJSONFile(path any) (any, bool) {
	text, err := readText(path)
	if err != nil {
		return nil, false
	}
	var v any
	if json.Unmarshal([]byte(text), &v) != nil {
		return nil, false
	}
	return v, true
}

func checkJSON(args []any, opts map[string]any) (float64, error) {
	if pyvalue.Truthy(opts["is_yaml"]) {
		return 0, fmt.Errorf("%w: check_json with is_yaml", ErrNotNative)
	}
	if Arg(args, 0) == nil {
		return 0, nil
	}
	data, ok := loadJSONFile(Arg(args, 0))
	if !ok {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	lookup := func(r map[string]any) (any, bool) {
		v := data
		keys, _ := pyvalue.AsList(r["key"])
		for _, k := range keys {
			switch c := v.(type) {
			case map[string]any:
				ks, _ := k.(string)
				x, ok := c[ks]
				if !ok {
					return nil, false
				}
				v = x
			case []any:
				i, ok := pyvalue.Number(k)
				if !ok || int(i) < -len(c) || int(i) >= len(c) {
					return nil, false
				}
				if i < 0 {
					i += float64(len(c))
				}
				v = c[int(i)]
			default:
				return nil, false
			}
		}
		return v, true
	}
	metric := true
	exp, _ := pyvalue.AsList(rules["expect"])
	for _, x := range exp {
		r, ok := x.(map[string]any)
		if !ok {
			return 0, nil
		}
		v, found := lookup(r)
		if !found {
			return 0, nil
		}
		m, err := matchValueToRule(v, r)
		if err != nil {
			return 0, notNative(err)
		}
		metric = metric && m
	}
	unexp, _ := pyvalue.AsList(rules["unexpect"])
	for _, x := range unexp {
		r, ok := x.(map[string]any)
		if !ok {
			return 0, nil
		}
		v, _ := lookup(r)
		m, err := matchValueToRule(v, r)
		if err != nil {
			return 0, notNative(err)
		}
		metric = metric && !m
	}
	return score(metric), nil
}

func checkDirectJSONObject(args []any, _ map[string]any) (float64, error) {
	result := Arg(args, 0)
	if s, ok := result.(string); ok {
		s = strings.ReplaceAll(strings.TrimSpace(s), "'", `"`)
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return 0, fmt.Errorf("json.decoder.JSONDecodeError: %w", err)
		}
		result = v
	}
	if result == nil {
		return 0, nil
	}
	rules, err := ruleMap(Arg(args, 1), "rules")
	if err != nil {
		return 0, err
	}
	expected, _ := rules["expected"].(map[string]any)
	for _, v := range expected {
		if v == "__EVALUATION_FAILED__" {
			return 0, nil
		}
	}
	res, ok := result.(map[string]any)
	if !ok {
		return 0, nil // result.get raises inside the try: 0
	}
	if expected == nil {
		return 0, nil
	}
	if !pyvalue.Truthy(rules["expect_in_result"]) {
		for k, ev := range expected {
			av := res[k]
			if pyvalue.Truthy(expected["ignore_list_order"]) {
				el, ok1 := pyvalue.AsList(ev)
				al, ok2 := pyvalue.AsList(av)
				if !ok1 || !ok2 || !pyvalue.Equal(sortedPy(el), sortedPy(al)) {
					return 0, nil
				}
			} else if !pyvalue.Equal(ev, av) {
				return 0, nil
			}
		}
		return 1, nil
	}
	for k, ev := range expected {
		switch e := ev.(type) {
		case []any:
			found := false
			for _, each := range e {
				switch a := res[k].(type) {
				case []any:
					in, _ := pyvalue.In(each, a)
					found = found || in
				case string:
					found = found || pyvalue.Equal(each, a)
				}
				if found {
					break
				}
			}
			if !found {
				return 0, nil
			}
		case string:
			a, ok := res[k].(string)
			if !ok || !strings.Contains(a, e) {
				return 0, nil
			}
		default:
			return 0, nil
		}
	}
	return 1, nil
}

// sortedPy sorts strings or numbers the way Python's sorted() does; mixed
// lists keep their order (Python would raise, caught as 0 by the caller).
func sortedPy(l []any) []any {
	out := append([]any{}, l...)
	sort.SliceStable(out, func(i, j int) bool {
		lt, err := pyvalue.Compare("lt", out[i], out[j])
		return err == nil && lt
	})
	return out
}

func fileContains(args []any, _ map[string]any) (float64, error) {
	if !pyvalue.Truthy(Arg(args, 0)) {
		return 0, nil
	}
	text, err := readText(Arg(args, 0))
	if err != nil {
		return 0, nil
	}
	cfg, ok := Arg(args, 1).(map[string]any)
	if !ok {
		return 0, nil
	}
	exp, _ := pyvalue.AsList(cfg["expected"])
	for _, e := range exp {
		in, err := pyvalue.In(e, text)
		if err != nil || !in {
			return 0, nil
		}
	}
	return 1, nil
}

// timeRE is general.py's check_line_number timeRegex.
var timeRE = mustPy(`([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)`)

func checkLineNumber(args []any, _ map[string]any) (float64, error) {
	text, err := readText(Arg(args, 0))
	if err != nil {
		return 0, nil
	}
	n := 0
	for _, l := range pyvalue.Lines(text) {
		if timeRE.MatchString(l) {
			n++
		}
	}
	cfg, ok := Arg(args, 1).(map[string]any)
	if !ok {
		return 0, nil
	}
	want, err := pyInt(cfg["expected"])
	if err != nil {
		return 0, nil
	}
	return score(n == want), nil
}

// pyInt is int(v) for a number or a numeric string.
func pyInt(v any) (int, error) {
	switch x := v.(type) {
	case float64:
		return int(x), nil
	case string:
		return strconv.Atoi(strings.TrimSpace(x))
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("TypeError: int() argument must be a string or a number, not %s", pyvalue.TypeName(v))
}

// diffTextFile is difflib.SequenceMatcher(a=lines, b=lines).ratio().
func diffTextFile(args []any, _ map[string]any) (float64, error) {
	if Arg(args, 0) == nil {
		return 0, nil
	}
	a, b, err := readBoth(args)
	if err != nil {
		return 0, err
	}
	return sequenceRatio(pyvalue.Splitlines(a), pyvalue.Splitlines(b)), nil
}

// readBoth reads the two files a comparison metric gets: the result's and
// the expected one.
func readBoth(args []any) (result, expected string, err error) {
	if result, err = readText(Arg(args, 0)); err != nil {
		return "", "", err
	}
	if expected, err = readText(Arg(args, 1)); err != nil {
		return "", "", err
	}
	return result, expected, nil
}

// sequenceRatio is difflib.SequenceMatcher(None, a, b).ratio() without the
// junk heuristic (which only applies to sequences of 200+ items; a longer
// input may then differ slightly from Python's).
func sequenceRatio(a, b []string) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	return 2 * float64(matchingCount(a, b)) / float64(len(a)+len(b))
}

// matchingCount is the total size of difflib's matching blocks: the
// longest common block, then recursively left and right of it.
func matchingCount(a, b []string) int {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	bestI, bestJ, bestN := 0, 0, 0
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
				if cur[j+1] > bestN {
					bestI, bestJ, bestN = i+1-cur[j+1], j+1-cur[j+1], cur[j+1]
				}
			}
		}
		prev = cur
	}
	if bestN == 0 {
		return 0
	}
	return bestN + matchingCount(a[:bestI], b[:bestJ]) + matchingCount(a[bestI+bestN:], b[bestJ+bestN:])
}

func isUTC0(args []any, _ map[string]any) (float64, error) {
	s, ok := Arg(args, 0).(string)
	if !ok {
		return 0, fmt.Errorf("AttributeError: %s has no attribute 'split'", pyvalue.TypeName(Arg(args, 0)))
	}
	lines := strings.Split(s, "\n")
	if len(lines) < 4 {
		return 0, fmt.Errorf("IndexError: list index out of range (timedatectl printed %d lines)", len(lines))
	}
	return score(strings.HasSuffix(lines[3], "+0000)")), nil
}

func checkGnomeFavoriteApps(args []any, _ map[string]any) (float64, error) {
	s, ok := Arg(args, 0).(string)
	if !ok {
		return 0, fmt.Errorf("TypeError: eval() arg 1 must be a string, not %s", pyvalue.TypeName(Arg(args, 0)))
	}
	v, err := pyvalue.ParseLiteral(s)
	if err != nil {
		return 0, err
	}
	apps, ok := pyvalue.AsList(v)
	if !ok {
		return 0, fmt.Errorf("TypeError: %s has no len()", pyvalue.TypeName(v))
	}
	return sameAsExpected(apps, Arg(args, 1))
}

// sameAsExpected scores whether got has as many items as rule["expected"]
// and the same set of them.
func sameAsExpected(got []any, ruleArg any) (float64, error) {
	rule, err := ruleMap(ruleArg, "rule")
	if err != nil {
		return 0, err
	}
	exp, _ := pyvalue.AsList(rule["expected"])
	if len(got) != len(exp) {
		return 0, nil
	}
	return score(sameSet(got, exp)), nil
}

// sameSet is set(a) == set(b) for hashable JSON values.
func sameSet(a, b []any) bool {
	in := func(x any, l []any) bool {
		for _, y := range l {
			if pyvalue.Equal(x, y) {
				return true
			}
		}
		return false
	}
	for _, x := range a {
		if !in(x, b) {
			return false
		}
	}
	for _, y := range b {
		if !in(y, a) {
			return false
		}
	}
	return true
}

func checkMovedJpgs(args []any, _ map[string]any) (float64, error) {
	tree, err := ruleMap(Arg(args, 0), "directory_list")
	if err != nil {
		return 0, err
	}
	children, _ := pyvalue.AsList(tree["children"])
	var names []any
	for _, c := range children {
		m, _ := c.(map[string]any)
		names = append(names, m["name"])
	}
	return sameAsExpected(names, Arg(args, 1))
}

func isInVMClipboard(args []any, _ map[string]any) (float64, error) {
	cfg, err := ruleMap(Arg(args, 0), "config")
	if err != nil {
		return 0, err
	}
	out := Arg(args, 1)
	exp := cfg["expected"]
	if l, ok := pyvalue.AsList(exp); ok {
		for _, e := range l {
			in, err := pyvalue.In(e, out)
			if err != nil {
				return 0, err
			}
			if !in {
				return 0, nil
			}
		}
		return 1, nil
	}
	in, err := pyvalue.In(exp, out)
	return score(in), err
}
