// Package bench is `drums bench`: the benchmarks side by side with
// upstream main.py where upstream applies — request latencies (compat's
// Bench), an RL step loop over N desktops at once, session create, reset
// and remove, idle memory per light desktop, and density (how many
// desktops with Chromium, Calc or nothing open fit while every one
// answers, with and without kernel same-page merging) — printed as they are
// measured and written as Markdown, an SVG chart and JSON, each figure
// with the machine, date, load and command. It reaches desktops through
// the session engine's public API and compat's desktops, never sessions'
// internals.
package bench
