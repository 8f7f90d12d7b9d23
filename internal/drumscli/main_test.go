//go:build linux

package drumscli

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/help.golden from the current output")

// TestMain: drums image run re-executes its own binary, and the
// hidden-command tests run this one as drums: then it is drums, as
// cmd/drums is.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		if c := find(commands(), os.Args[1]); c != nil && c.child != nil {
			os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// result is what one run of drums did.
type result struct {
	status         int
	stdout, stderr string
}

// drums runs Main with args, stdin empty, in an environment without the
// variables that change defaults.
func drums(t *testing.T, args ...string) result {
	t.Helper()
	stableEnv(t)
	return mainIn(t, args...)
}

// mainIn runs Main with args, stdin empty, in the test's environment.
func mainIn(t *testing.T, args ...string) result {
	t.Helper()
	dir := t.TempDir()
	stdin, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	files := make([]*os.File, 2)
	for i, name := range []string{"stdout", "stderr"} {
		if files[i], err = os.Create(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	status := Main(args, stdin, files[0], files[1])
	out := make([]string, 2)
	for i, f := range files {
		f.Close()
		b, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return result{status, out[0], out[1]}
}

// stableEnv clears the environment variables that defaults and help texts
// come from.
func stableEnv(t *testing.T) {
	for _, k := range []string{"DRUMS_SOCKET", "DRUMS_OSWORLD", "DRUMS_OSWORLD_CACHE", "DRUMS_HF_MIRROR", "DRUMS_OSWORLD_PYTHONPATH", "DRUMS_PROVIDER_PYTHON"} {
		t.Setenv(k, "")
	}
	t.Setenv("TMPDIR", "/tmp")
}

const usage = `drums: Linux desktops for computer-use agents, without virtual machines.

Usage: drums COMMAND [flags]

Commands:
  bench      time drums beside upstream main.py: latency, an RL step loop, sessions, memory
  compat     compare guestd with upstream main.py, request by request
  image      build, import, list, check and remove the images desktops run from
  run        the main job: image, daemon, desktops in parallel, an episode on each, the built-in tasks
  serve      run the provider daemon: warm desktops, leases, snapshots, the v1 API
  session    create, list, reset, remove and enter desktops (no daemon needed)
  sweep      remove leftovers of crashed sessions (veths, tables, cgroups, processes, dirs)
  tasks      run OSWorld task files on drums desktops and report task by task
  ui         the daemon's page for a browser on this machine: desktops, thumbnails, live views, metrics

Run 'drums COMMAND --help' for a command's flags.
`

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want result
	}{
		{nil, result{2, "", usage}},
		{[]string{"-h"}, result{0, "", usage}},
		{[]string{"--help"}, result{0, "", usage}},
		{[]string{"help"}, result{0, "", usage}},
		{[]string{"bogus"}, result{2, "", "drums: unknown command \"bogus\"\n\n" + usage}},
		{[]string{"--bogus"}, result{2, "", "drums: unknown command \"--bogus\"\n\n" + usage}},
	} {
		if got := drums(t, c.args...); got != c.want {
			t.Errorf("drums %q: %+v\nwant %+v", c.args, got, c.want)
		}
	}
}

// The table: every command but the hidden ones is listed in the usage and
// answers --help, each subcommand too; the hidden ones are the engine's.
func TestCommandTable(t *testing.T) {
	var listed, hidden []string
	for _, c := range commands() {
		if c.child != nil {
			hidden = append(hidden, c.name)
			if c.run != nil || c.group != nil || c.summary != "" {
				t.Errorf("hidden %s also runs as a command", c.name)
			}
			continue
		}
		listed = append(listed, c.name)
		if (c.run == nil) == (c.group == nil) {
			t.Errorf("%s: want a run or subcommands", c.name)
		}
		if !strings.Contains(usage, "\n  "+c.name+" ") {
			t.Errorf("usage does not list %s", c.name)
		}
		paths := [][]string{{c.name}}
		if c.group != nil {
			for _, sub := range c.group.subs {
				paths = append(paths, []string{c.name, sub.name})
			}
		}
		for _, p := range paths {
			r := drums(t, append(p, "--help")...)
			if r.status != 0 || r.stdout != "" || !strings.HasPrefix(r.stderr, "Usage") {
				t.Errorf("drums %s --help: %+v", strings.Join(p, " "), r)
			}
		}
	}
	if !slices.IsSorted(listed) {
		t.Errorf("commands %v: keep the table sorted as the usage is", listed)
	}
	if want := []string{"image-run-init"}; !slices.Equal(hidden, want) {
		t.Errorf("hidden commands %v, want %v", hidden, want)
	}
	for _, h := range hidden {
		if strings.Contains(usage, h+" ") {
			t.Errorf("usage lists hidden %s", h)
		}
	}
}

// helpPaths are the commands whose --help testdata/help.golden holds.
var helpPaths = [][]string{
	{"bench"}, {"compat"}, {"image"}, {"image", "build"}, {"image", "import"}, {"image", "ls"}, {"image", "inspect"}, {"image", "check"},
	{"image", "rm"}, {"image", "run"}, {"run"}, {"serve"}, {"session"}, {"session", "create"}, {"session", "ls"},
	{"session", "rm"}, {"session", "reset"}, {"session", "exec"}, {"session", "shell"}, {"session", "screenshot"},
	{"session", "plan"}, {"sweep"}, {"tasks"}, {"tasks", "run"}, {"tasks", "list"}, {"tasks", "report"},
}

// Every command's --help, for review: testdata/help.golden (-update
// rewrites it). The default of drums run --out carries the time.
func TestHelp(t *testing.T) {
	now := regexp.MustCompile(`drums-run-\d{8}-\d{6}`)
	var b strings.Builder
	for _, p := range helpPaths {
		r := drums(t, append(p, "--help")...)
		if r.status != 0 || r.stdout != "" {
			t.Errorf("drums %s --help: status %d, stdout %q", strings.Join(p, " "), r.status, r.stdout)
		}
		b.WriteString("=== drums " + strings.Join(p, " ") + " --help\n" + now.ReplaceAllString(r.stderr, "drums-run-YYYYMMDD-HHMMSS"))
	}
	testutil.Golden(t, filepath.Join("testdata", "help.golden"), b.String(), *update)
}

// A bad command line exits 2 and says why on its last line; a flag error
// is also said by the flag package, with the command's usage, first.
func TestBadCommandLine(t *testing.T) {
	images := t.TempDir()
	for _, c := range []struct {
		args  []string
		first string // stderr's first line, when it is not the last
		last  string
	}{
		{[]string{"serve", "--bogus"}, "flag provided but not defined: -bogus", "drums serve: flag provided but not defined: -bogus"},
		{[]string{"serve", "extra"}, "", `drums serve: unexpected arguments ["extra"] (see drums serve --help)`},
		{[]string{"serve", "--warm", "10x"}, `invalid value "10x" for flag -warm: parse shape "10x": want WIDTHxHEIGHT[:SNAPSHOT][@IMAGE]: bad request`,
			`drums serve: invalid value "10x" for flag -warm: parse shape "10x": want WIDTHxHEIGHT[:SNAPSHOT][@IMAGE]: bad request`},
		{[]string{"serve", "--network", "nope"}, "", `drums serve: --network "nope": netip.ParsePrefix("nope"): no '/'`},
		{[]string{"serve", "--token-file", filepath.Join(images, "none")}, "", "drums serve: read token file: open " + filepath.Join(images, "none") + ": no such file or directory"},
		{[]string{"serve", "--listen", "127.0.0.1:7070"}, "", "drums serve: --listen 127.0.0.1:7070 needs --token: TCP clients must authenticate: bad request"},
		{[]string{"serve", "--capacity", "0"}, "", "drums serve: capacity 0: must be at least 1: bad request"},
		{[]string{"serve", "--publish-address", "192.0.2.1"}, "", "drums serve: --publish-address and --publish-ports go together"},
		{[]string{"serve", "--publish-address", "192.0.2.1", "--publish-ports", "30010-30000"}, "",
			`drums serve: --publish-ports "30010-30000": want FIRST-LAST, 1 <= FIRST <= LAST <= 65535`},
		{[]string{"serve", "--publish-address", "192.0.2.1", "--publish-ports", "30000-30015", "--capacity", "5"}, "",
			"drums serve: --publish-ports 30000-30015: 16 ports hold 4 desktops of 4 ports, fewer than --capacity 5"},
		{[]string{"serve", "--publish-address", "192.0.2.1", "--publish-ports", "30000-30015", "--capacity", "4", "--spares", "2"}, "",
			"drums serve: --publish-ports 30000-30015: 16 ports hold 4 desktops of 4 ports, fewer than --capacity 4 + --spares 2"},
		{[]string{"sweep", "--network", "10.0.0.0"}, "", `drums sweep: --network "10.0.0.0": netip.ParsePrefix("10.0.0.0"): no '/'`},
		{[]string{"session"}, "Usage: drums session COMMAND [flags]", "drums session: no session command"},
		{[]string{"session", "bogus"}, "Usage: drums session COMMAND [flags]", `drums session: unknown session command "bogus"`},
		{[]string{"session", "create", "--width", "wide"}, `invalid value "wide" for flag -width: parse error`, `drums session: invalid value "wide" for flag -width: parse error`},
		{[]string{"session", "rm"}, "", "drums session: rm: which session? (drums session ls)"},
		{[]string{"session", "reset", "a", "b"}, "", "drums session: reset: want one session id"},
		{[]string{"session", "exec"}, "", "drums session: which session? (drums session ls)"},
		{[]string{"session", "exec", "ID"}, "", "drums session: exec: no command (drums session exec ID -- CMD...)"},
		{[]string{"session", "exec", "--env", "NOEQUALS", "ID", "--", "true"}, `invalid value "NOEQUALS" for flag -env: --env "NOEQUALS": want KEY=VALUE`,
			`drums session: invalid value "NOEQUALS" for flag -env: --env "NOEQUALS": want KEY=VALUE`},
		{[]string{"session", "shell"}, "", "drums session: which session? (drums session ls)"},
		{[]string{"session", "screenshot", "ID"}, "", "drums session: screenshot: want ID FILE"},
		{[]string{"session", "plan", "--network", "x"}, "", `drums session: --network "x": netip.ParsePrefix("x"): no '/'`},
		{[]string{"image"}, "Usage: drums image COMMAND [flags]", "drums image: image: no command"},
		{[]string{"image", "bogus"}, "Usage: drums image COMMAND [flags]", `drums image: image: unknown command "bogus"`},
		{[]string{"image", "build"}, "Usage: drums image build NAME [flags]", "drums image: want 1 argument(s), got 0"},
		{[]string{"image", "import", "onlyone"}, "Usage: drums image import NAME FILE [flags]", "drums image: want 2 argument(s), got 1"},
		{[]string{"image", "ls", "extra", "--image-dir", images}, "Usage: drums image ls [flags]", "drums image: want 0 argument(s), got 1"},
		{[]string{"image", "run", "core", "--image-dir", images}, "", "drums image: image run: no command after --"},
		{[]string{"tasks"}, "Usage: drums tasks COMMAND [flags]", "drums tasks: missing command"},
		{[]string{"tasks", "bogus"}, "", `drums tasks: unknown tasks command "bogus" (try drums tasks --help)`},
		{[]string{"tasks", "run", "extra"}, "", `drums tasks: unexpected arguments ["extra"] (see drums tasks run --help)`},
		{[]string{"tasks", "run", "--parallel", "0"}, "", "drums tasks: --parallel 0: must be at least 1"},
		{[]string{"tasks", "run"}, "", "drums tasks: no suite: give --suite FILE (or set DRUMS_OSWORLD), or --builtin"},
		{[]string{"tasks", "run", "--builtin", "--via-python"}, "", "drums tasks: --via-python runs suite tasks, not --builtin"},
		{[]string{"tasks", "list"}, "", "drums tasks: no suite: give --suite FILE (or set DRUMS_OSWORLD), or --builtin"},
		{[]string{"tasks", "report", "dir"}, "", "drums tasks: say which report to write: --html (see drums tasks report --help)"},
		{[]string{"tasks", "report", "--html"}, "", `drums tasks: want one report directory, got [] (see drums tasks report --help)`},
		{[]string{"run", "extra"}, "", `drums run: unexpected arguments ["extra"] (see drums run --help)`},
		{[]string{"run", "--desktops", "0"}, "", "drums run: --desktops 0: must be at least 1"},
		{[]string{"run", "--timeout", "soon"}, `invalid value "soon" for flag -timeout: parse error`, `drums run: invalid value "soon" for flag -timeout: parse error`},
		{[]string{"bench", "extra"}, "", `drums bench: unexpected arguments ["extra"] (see drums bench --help)`},
		{[]string{"bench", "--parts", "latency,speed"}, "", `drums bench: --parts: unknown part "speed" (the parts: sessions, density, latency, steps)`},
		{[]string{"bench", "--parts", ","}, "", "drums bench: --parts names no part"},
		{[]string{"bench", "--standby"}, "", "drums bench: --standby measures the sessions part only: run it with --parts sessions"},
		{[]string{"bench", "--spares", "1"}, "", "drums bench: --spares measures the sessions part only: run it with --parts sessions"},
		{[]string{"bench", "--spares", "-1"}, "", "drums bench: --spares -1: must not be negative"},
		{[]string{"serve", "--spares", "1", "--width", "800", "--height", "600"}, "", "drums serve: --spares are desktops of 1920x1080, the engine's default screen: leave --width and --height at it"},
		{[]string{"bench", "--step-desktops", "1,0"}, "", `drums bench: --step-desktops "1,0": want counts from 1 to 100, comma-separated`},
		{[]string{"bench", "--step-desktops", "ten"}, "", `drums bench: --step-desktops "ten": want counts from 1 to 100, comma-separated`},
		{[]string{"bench", "--sessions", "0"}, "", "drums bench: --sessions 0: must be at least 1"},
		{[]string{"bench", "--step-duration", "0s"}, "", "drums bench: --step-duration 0s: must be positive"},
		{[]string{"bench", "--rounds", "0"}, "", "drums bench: --rounds 0: must be at least 1"},
		{[]string{"bench", "--latency-n", "0"}, "", "drums bench: --latency-n must be at least 1 and --latency-warmup at least 0"},
		{[]string{"bench", "--name", "a/b"}, "", `drums bench: --name "a/b": want a file name`},
		{[]string{"bench", "--step-setup", "cursor_position"}, "",
			`drums bench: --step-setup "cursor_position": want none or a built-in latency benchmark with a setup: screenshot, screenshot/busy, screenshot/unchanged, accessibility/gtk3-widget-factory, accessibility/gnome-terminal, terminal`},
		{[]string{"compat", "extra"}, "", `drums compat: unexpected arguments ["extra"] (see --help)`},
		{[]string{"compat", "--upstream-url", "http://x"}, "", "drums compat: --upstream-url, --guestd-url and --exec go together"},
		{[]string{"compat", "--bench", "--bench-n", "0"}, "", "drums compat: --bench-n must be at least 1 and --bench-warmup at least 0"},
		{[]string{"compat", "--bench", "--cases", "x"}, "", "drums compat: --cases is for comparing answers, not with --bench"},
		{[]string{"compat", "--bench-n", "3"}, "", "drums compat: --bench-n needs --bench"},
	} {
		r := drums(t, c.args...)
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		first := c.first
		if first == "" {
			first = c.last
		}
		if r.status != 2 || r.stdout != "" || lines[0] != first || lines[len(lines)-1] != c.last {
			t.Errorf("drums %q: status %d, stdout %q, stderr:\n%s\nwant status 2, stderr from %q to %q", c.args, r.status, r.stdout, r.stderr, first, c.last)
		}
	}
}

// A command that fails on a good command line exits 1 and says why.
func TestFailure(t *testing.T) {
	dir := t.TempDir()
	noImage := "drums image: image nope in " + dir + " (build it with `drums image build nope` or import one): image not found\n"
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"image", "inspect", "nope", "--image-dir", dir}, noImage},
		{[]string{"image", "run", "--image-dir", dir, "nope", "--", "true"}, noImage},
		{[]string{"session", "plan", "--image-dir", dir, "--image", "core"},
			"drums session: image core in " + dir + " (build it with `drums image build core` or import one): image not found: image not found\n"},
		{[]string{"tasks", "list", "--builtin", "--id", "nope"}, "drums tasks: no built-in task matches --id [nope]\n"},
		{[]string{"tasks", "list", "--suite", filepath.Join(dir, "none.json")}, ""},
		{[]string{"tasks", "list", "--builtin", "--hf-mirror", filepath.Join(dir, "nomirror")},
			"drums tasks: open file-cache mirror: stat " + filepath.Join(dir, "nomirror") + ": no such file or directory\n"},
		{[]string{"tasks", "report", "--html", dir},
			"drums tasks: read report: open " + filepath.Join(dir, "report.json") + ": no such file or directory\n"},
	} {
		r := drums(t, c.args...)
		if r.status != 1 || r.stdout != "" || c.stderr != "" && r.stderr != c.stderr || !strings.HasPrefix(r.stderr, "drums "+c.args[0]+": ") {
			t.Errorf("drums %q: %+v\nwant status 1, stderr %q", c.args, r, c.stderr)
		}
	}
}

// What the commands that need no root and no desktop print.
func TestOutput(t *testing.T) {
	images := t.TempDir()
	if r := drums(t, "image", "ls", "--image-dir", images); r != (result{0, "NAMES  ID  SOURCE  OS  SIZE  PACKAGES  CREATED  DESKTOP\n", ""}) {
		t.Errorf("image ls of an empty store: %+v", r)
	}
	if r := drums(t, "image", "ls", "--json", "--image-dir", images); r != (result{0, "[]\n", ""}) {
		t.Errorf("image ls --json of an empty store: %+v", r)
	}
	r := drums(t, "tasks", "list", "--native")
	if r.status != 0 || !strings.HasPrefix(r.stdout, "native getters: ") || !strings.Contains(r.stdout, "\nnative metrics: ") || r.stderr != "" {
		t.Errorf("tasks list --native: %+v", r)
	}
	r = drums(t, "tasks", "list", "--builtin", "--json")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.status != 0 || len(lines) < 2 || r.stderr != "" {
		t.Fatalf("tasks list --builtin --json: %+v", r)
	}
	for _, l := range lines {
		var task struct{ Domain, ID string }
		if err := json.Unmarshal([]byte(l), &task); err != nil || task.Domain != "drums" || task.ID == "" {
			t.Errorf("tasks list --json line %q: %+v %v", l, task, err)
		}
	}
	text := drums(t, "tasks", "list", "--builtin")
	if text.status != 0 || strings.Count(text.stdout, "\n  apps: ") != len(lines) {
		t.Errorf("tasks list --builtin: %+v", text)
	}

	// tasks report --html rebuilds report.html from report.json alone.
	dir := t.TempDir()
	rows := `[{"domain": "os", "id": "a", "status": "ran", "seconds": 1.5, "observation": {"screenshot_bytes": 3, "screenshot": "screenshots/os/a.png"}}]`
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	want := result{0, "report: " + filepath.Join(dir, "report.html") + " (1 tasks)\n", ""}
	if r := drums(t, "tasks", "report", "--html", dir); r != want {
		t.Errorf("tasks report --html: %+v, want %+v", r, want)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !strings.Contains(string(html), `<article id="t-os-a">`) || !strings.Contains(string(html), "screenshot not kept") {
		t.Errorf("report.html: %v\n%s", err, html)
	}
	// With --files where the screenshot is, the page links it.
	files := t.TempDir()
	if err := os.MkdirAll(filepath.Join(files, "screenshots", "os"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(files, "screenshots", "os", "a.png"), []byte("png"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := drums(t, "tasks", "report", "--html", "--files", files, dir); r != want {
		t.Errorf("tasks report --html --files: %+v, want %+v", r, want)
	}
	link, _ := filepath.Rel(dir, filepath.Join(files, "screenshots", "os", "a.png"))
	if html, _ := os.ReadFile(filepath.Join(dir, "report.html")); !strings.Contains(string(html), `<img src="`+link+`"`) {
		t.Errorf("report.html with --files lacks <img src=%q>:\n%s", link, html)
	}
}

// The hidden commands run what the engine re-executes drums for, before
// anything else: here this test binary, which TestMain makes drums, is
// started as each with inert descriptors where the engine passes its
// plan and sync pipe. Each fails in its own words, which shows that it
// ran; drums never says it does not know them.
func TestHiddenCommands(t *testing.T) {
	for _, c := range []struct {
		args   []string
		status int
		stderr string
	}{
		{[]string{"image-run-init"}, 125, "drums image run: read plan: "},
	} {
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], c.args...)
		cmd.ExtraFiles = []*os.File{null, null}
		out, err := cmd.CombinedOutput()
		null.Close()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != c.status || !strings.HasPrefix(string(out), c.stderr) {
			t.Errorf("drums %s: %v, output:\n%s\nwant status %d, output from %q", strings.Join(c.args, " "), err, out, c.status, c.stderr)
		}
	}
}
