//go:build linux

package drumscli

import "github.com/drums-dev/drums/sessions"

// commands is every command of drums, the hidden ones included; each
// command's flags and run are in its own file.
func commands() []command {
	return []command{
		{name: "bench", summary: "time drums beside upstream main.py: latency, an RL step loop, sessions, memory", run: leaf(parseBench, runBenchmarks)},
		{name: "compat", summary: "compare guestd with upstream main.py, request by request", run: leaf(parseCompat, runCompat)},
		{name: "image", summary: "build, import, list, check and remove the images desktops run from", group: &group{
			usage: imageUsage, none: "image: no command", unknown: "image: unknown command %q",
			subs: []command{
				{name: "build", run: leaf(parseImageBuild, runImageBuild)},
				{name: "import", run: leaf(parseImageImport, runImageImport)},
				{name: "ls", run: leaf(parseImageList, runImageList)},
				{name: "inspect", run: leaf(parseImageInspect, runImageInspect)},
				{name: "check", run: leaf(parseImageCheck, runImageCheck)},
				{name: "rm", run: leaf(parseImageRemove, runImageRemove)},
				{name: "run", run: leaf(parseImageRun, runImageRun)},
			}}},
		{name: "run", summary: "the main job: image, daemon, desktops in parallel, an episode on each, the built-in tasks", run: leaf(parseRun, runRun)},
		{name: "serve", summary: "run the provider daemon: warm desktops, leases, snapshots, the v1 API", run: leaf(parseServe, runServe)},
		{name: "session", summary: "create, list, reset, remove and enter desktops (no daemon needed)", group: &group{
			usage: sessionUsage, none: "no session command", unknown: "unknown session command %q",
			subs: []command{
				{name: "create", run: leaf(parseSessionCreate, runSessionCreate)},
				{name: "ls", run: leaf(parseSessionList, runSessionList)},
				{name: "rm", run: leaf(parseSessionRemove, runSessionRemove)},
				{name: "reset", run: leaf(parseSessionReset, runSessionReset)},
				{name: "exec", run: leaf(parseSessionExec, runSessionExec)},
				{name: "shell", run: leaf(parseSessionShell, runSessionExec)},
				{name: "screenshot", run: leaf(parseSessionScreenshot, runSessionScreenshot)},
				{name: "plan", run: leaf(parseSessionPlan, runSessionPlan)},
			}}},
		{name: "sweep", summary: "remove leftovers of crashed sessions (veths, tables, cgroups, processes, dirs)", run: leaf(parseSweep, runSweep)},
		{name: "tasks", summary: "run OSWorld task files on drums desktops and report task by task", group: &group{
			usage: tasksUsage, none: "missing command", unknown: "unknown tasks command %q (try drums tasks --help)", terse: true,
			subs: []command{
				{name: "run", run: leaf(parseTasksRun, runTasksRun)},
				{name: "list", run: leaf(parseTasksList, runTasksList)},
				{name: "report", run: leaf(parseTasksReport, runTasksReport)},
			}}},
		{name: "ui", summary: "the daemon's page for a browser on this machine: desktops, thumbnails, live views, metrics", run: leaf(parseUI, runUI)},

		// Hidden: drums image run re-executes drums as this (a desktop's
		// init is drums-init's).
		{name: sessions.RunInitCommand, child: func([]string) int { return sessions.RunImageInit() }},
	}
}
