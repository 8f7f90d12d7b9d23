package tasks

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/drums-dev/drums/tasks/osworld"
)

// osworldExamples finds OSWorld's evaluation_examples through
// DRUMS_OSWORLD (an OSWorld checkout), as the project's tests must.
func osworldExamples(t *testing.T) string {
	t.Helper()
	root := os.Getenv("DRUMS_OSWORLD")
	if root == "" {
		t.Skip("DRUMS_OSWORLD is unset: point it at an OSWorld checkout to check the real test_nogdrive suite")
	}
	dir := filepath.Join(root, "evaluation_examples")
	if _, err := os.Stat(filepath.Join(dir, "test_nogdrive.json")); err != nil {
		t.Fatalf("DRUMS_OSWORLD=%s has no evaluation_examples/test_nogdrive.json: %v", root, err)
	}
	return dir
}

// nogdriveEntries are the tasks of test_nogdrive.
func nogdriveEntries(t *testing.T, dir string) []osworld.Entry {
	t.Helper()
	suite, err := osworld.LoadSuite(filepath.Join(dir, "test_nogdrive.json"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := suite.Select(osworld.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// osworldMirror opens the mirror of the file-cache dataset in
// DRUMS_HF_MIRROR.
func osworldMirror(t *testing.T) *osworld.Mirror {
	t.Helper()
	dir := os.Getenv("DRUMS_HF_MIRROR")
	if dir == "" {
		t.Skip("DRUMS_HF_MIRROR is unset: point it at a mirror of the file-cache dataset (../shared/osworld/hf-cache)")
	}
	m, err := osworld.OpenMirror(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestOSWorldSuiteParsesAndClassifies reads every task of test_nogdrive and
// checks what the report relies on: each parses, each step is one drums
// knows, the app-free tasks need nothing but the desktop.
func TestOSWorldSuiteParsesAndClassifies(t *testing.T) {
	dir := osworldExamples(t)
	entries := nogdriveEntries(t, dir)
	if len(entries) != 361 {
		t.Errorf("%d tasks, want 361", len(entries))
	}
	var appFree []string
	notNative := map[string]int{}
	for _, e := range entries {
		task, err := osworld.LoadTask(filepath.Join(dir, "examples"), e.Domain, e.ID)
		if err != nil {
			t.Errorf("%s/%s: %v", e.Domain, e.ID, err)
			continue
		}
		req := Analyze(task, osworld.FileCache{})
		if len(req.Unsupported) > 0 {
			t.Errorf("%s/%s: unsupported steps %v", e.Domain, e.ID, req.Unsupported)
		}
		for _, n := range osworld.NotNativeParts(task) {
			notNative[n]++
		}
		if len(req.FileCache) == 0 && len(req.LiveWeb) == 0 && onlyTools(req.Apps) {
			appFree = append(appFree, e.Domain+"/"+e.ID)
		}
	}
	sort.Strings(appFree)
	// The heuristic classification (nogdrive_tasks.tsv) calls 14 os tasks
	// app-free. drums finds them all needing only the desktop itself, plus
	// 13584542, which the heuristic counted as needing gnome-terminal: every
	// drums desktop has it (Ctrl+Alt+T), as have 4783cc41's and others.
	for _, id := range tsvAppFree {
		found := false
		for _, a := range appFree {
			found = found || a == "os/"+id
		}
		if !found {
			t.Errorf("app-free task os/%s needs more than the desktop", id)
		}
	}
	for _, a := range appFree {
		if !strings.HasPrefix(a, "os/") {
			t.Errorf("desktop-only task outside os: %s", a)
		}
	}
	t.Logf("not native (task count): %v", notNative)
}

// onlyTools reports apps that every drums desktop has (the desktop stack's
// own tools), so the task needs no application.
func onlyTools(apps []string) bool {
	for _, a := range apps {
		switch a {
		case "gnome-terminal", "gsettings", "sudo", "wmctrl", "xdg-open", "bc", "pulseaudio", "pactl", "timedatectl", "python":
		default:
			return false
		}
	}
	return true
}

// tsvAppFree are the 14 tasks ../shared/osworld/nogdrive_tasks.tsv marks
// app_free.
var tsvAppFree = []string{
	"94d95f96-9699-4208-98ba-3c3119edf9c2", "bedcedc4-4d72-425e-ad62-21960b11fe0d",
	"ec4e3f68-9ea4-4c18-a5c9-69f89d1178b3", "a462a795-fdc7-4b23-b689-e8b6df786b78",
	"f9be0997-4b7c-45c5-b05c-4612b44a6118", "28cc3b7e-b194-4bc9-8353-d04c0f4d56d2",
	"e0df059f-28a6-4169-924f-b9623e7184cc", "b6781586-6346-41cd-935a-a6b1487918fc",
	"b3d4a89c-53f2-4d6b-8b6a-541fb5d205fa", "3ce045a0-877b-42aa-8d2c-b4a863336ab8",
	"fe41f596-a71b-4c2f-9b2f-9dcd40b568c3", "a4d98375-215b-4a4d-aee9-3d4370fccc41",
	"c288e301-e626-4b98-a1ab-159dcb162af5", "4783cc41-c03c-4e1b-89b4-50658f642bd5",
}

// TestOSWorldSuiteMirrorCoverage checks the mirror's URL-to-path mapping on
// every file the suite downloads: with DRUMS_HF_MIRROR (a mirror holding a
// COVERAGE.tsv, as ../shared/osworld/hf-cache does, whose counts were made
// independently of drums), each task needs and finds the files the
// coverage list says. update_browse_history's History file, which the list
// does not count, is left out.
func TestOSWorldSuiteMirrorCoverage(t *testing.T) {
	dir := osworldExamples(t)
	m := osworldMirror(t)
	b, err := os.ReadFile(filepath.Join(m.Dir, "COVERAGE.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	// domain, task_id, status, files_needed, files_present, missing
	coverage := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		cols := strings.Split(l, "\t")
		coverage[cols[0]+"/"+cols[1]] = cols
	}
	entries := nogdriveEntries(t, dir)
	for _, e := range entries {
		task, err := osworld.LoadTask(filepath.Join(dir, "examples"), e.Domain, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		needed, present := map[string]bool{}, map[string]bool{}
		for _, f := range Analyze(task, osworld.FileCache{Mirror: m}).FileCache {
			if f.Name == osworld.HistoryName {
				continue
			}
			if f.Path == "" {
				t.Errorf("%s/%s: %s is not a URL of the dataset", e.Domain, e.ID, f.URL)
			}
			needed[f.Path] = true
			if f.Present {
				present[f.Path] = true
			}
		}
		cov := coverage[e.Domain+"/"+e.ID]
		if got := fmt.Sprintf("%d %d", len(needed), len(present)); cov == nil || got != cov[3]+" "+cov[4] {
			t.Errorf("%s/%s: %s files needed and present, COVERAGE.tsv says %v", e.Domain, e.ID, got, cov)
		}
	}
}
