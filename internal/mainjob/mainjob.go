package mainjob

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/tasks"
	"github.com/drums-dev/drums/tasks/osworld"
)

// Config is what the job does.
type Config struct {
	Desktops int           // brought up in parallel, an episode on each
	Out      string        // screenshots, the built-in tasks' report, the daemon's log
	Socket   string        // the daemon's, as the progress lines name it
	Width    int           // of the desktops
	Height   int           // of the desktops
	Image    string        // the desktops run from
	Timeout  time.Duration // bound on the whole job
}

// Host is what the job needs of the machine, from its caller.
type Host struct {
	// EnsureImage makes sure Config.Image is in the image store.
	EnsureImage func(ctx context.Context) error
	// ConnectDaemon returns the daemon on Config.Socket, started for this
	// job (its log in logDir) when none answers.
	ConnectDaemon func(ctx context.Context, logDir string) (*tasks.Daemon, error)
	// Stdout gets the tables, Stderr the progress.
	Stdout, Stderr io.Writer
}

// Run does the job. It fails when an episode or a built-in task does not
// go from 0 to 1.
func Run(ctx context.Context, cfg Config, host Host) error {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	say := func(format string, a ...any) {
		fmt.Fprintf(host.Stderr, "drums run: "+format+"\n", a...)
	}
	out, err := filepath.Abs(cfg.Out)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	total := time.Now()

	say("preparing the desktops' image %s (drums image build %s)", cfg.Image, cfg.Image)
	if err := host.EnsureImage(ctx); err != nil {
		return fmt.Errorf("image %s: %w", cfg.Image, err)
	}

	say("starting the daemon unless one answers on %s", cfg.Socket)
	d, err := host.ConnectDaemon(ctx, out)
	if err != nil {
		return err
	}
	defer func() {
		if d.Started {
			say("stopping the daemon this run started")
		}
		if err := d.Stop(); err != nil {
			fmt.Fprintln(host.Stderr, "drums run:", err)
		}
	}()
	desktops := &tasks.ProviderDesktops{Client: d.Client, LeaseSeconds: int(cfg.Timeout.Seconds()), Image: cfg.Image}

	say("bringing up %d desktops in parallel and driving one episode on each", cfg.Desktops)
	episodes := runEpisodes(ctx, desktops, cfg, out)

	say("running the built-in tasks (score before and after their scripted solutions)")
	builtin, err := tasks.Builtin()
	if err != nil {
		return err
	}
	runner := tasks.NewRunner(tasks.Config{Files: filepath.Join(out, "builtin"), Parallel: cfg.Desktops,
		Width: cfg.Width, Height: cfg.Height, TaskTimeout: 5 * time.Minute, Settle: time.Second}, desktops, nil)
	results, err := runner.RunTasks(ctx, builtin)
	if err != nil {
		return err
	}
	rep := tasks.Report{Results: results, Started: total, Duration: time.Since(total), Mode: "native", Command: "drums run"}
	if err := rep.WriteFiles(filepath.Join(out, "builtin")); err != nil {
		return err
	}
	bad := printTables(host.Stdout, episodes, results)
	fmt.Fprintf(host.Stdout, "\nscreenshots: %s/episodes/<desktop>/ and %s/builtin/screenshots/\nbuilt-in report: %s (screenshots, accessibility trees, timing), %s\ntotal: %s\n",
		out, out, filepath.Join(out, "builtin", tasks.ReportHTML), filepath.Join(out, "builtin", tasks.ReportMD), time.Since(total).Round(100*time.Millisecond))
	if bad > 0 {
		return fmt.Errorf("%d episodes or built-in tasks did not score 0 before and 1 after", bad)
	}
	return ctx.Err()
}

// episodeRow is one desktop's line of the table.
type episodeRow struct {
	id    string
	ready time.Duration
	res   tasks.EpisodeResult
	err   error
}

// runEpisodes leases the desktops at once and drives the episode on each.
func runEpisodes(ctx context.Context, desktops *tasks.ProviderDesktops, cfg Config, out string) []episodeRow {
	rows := make([]episodeRow, cfg.Desktops)
	task, err := tasks.EpisodeTask()
	var wg sync.WaitGroup
	for i := range rows {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			row := &rows[i]
			if err != nil {
				row.err = err
				return
			}
			start := time.Now()
			dk, lerr := desktops.Lease(ctx, cfg.Width, cfg.Height)
			row.ready = time.Since(start)
			if lerr != nil {
				row.err = fmt.Errorf("lease: %w", lerr)
				return
			}
			row.id = dk.ID
			defer func() { _ = desktops.Release(context.WithoutCancel(ctx), dk.ID) }()
			g := client.New(dk.GuestURL, nil)
			defer g.Close()
			env := &osworld.Env{Guest: g, TaskID: task.ID, Screen: osworld.Screen{Width: dk.Width, Height: dk.Height, Password: "password"},
				WorkDir: filepath.Join(out, "episodes", dk.ID, "work")}
			row.res = tasks.RunEpisode(ctx, env, task, filepath.Join(out, "episodes", dk.ID))
			row.err = row.res.Err
		}(i)
	}
	wg.Wait()
	return rows
}

func scoreCell(s *float64) string {
	if s == nil {
		return "-"
	}
	return fmt.Sprint(*s)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

// printTables prints the episodes and the built-in tasks to w; it returns
// how many did not go from 0 to 1.
func printTables(w io.Writer, rows []episodeRow, results []tasks.Result) int {
	bad := 0
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nDESKTOP\tREADY\tRESET\tOBSERVE\tSTEPS\tSTEP MEDIAN\tSTEP MAX\tSCORE\tNOTE")
	for _, r := range rows {
		steps := append([]time.Duration{}, r.res.Steps...)
		sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
		med, mx := time.Duration(0), time.Duration(0)
		if len(steps) > 0 {
			med, mx = steps[len(steps)/2], steps[len(steps)-1]
		}
		note := "ok"
		ok := r.err == nil && r.res.ScoreBefore != nil && *r.res.ScoreBefore == 0 && r.res.ScoreAfter != nil && *r.res.ScoreAfter == 1
		if !ok {
			bad++
			note = "FAILED"
			if r.err != nil {
				note += ": " + oneLine(r.err.Error())
			}
		}
		id := r.id
		if id == "" {
			id = "(none)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s → %s\t%s\n", id, ms(r.ready), ms(r.res.Setup), ms(r.res.Observe),
			len(r.res.Steps), ms(med), ms(mx), scoreCell(r.res.ScoreBefore), scoreCell(r.res.ScoreAfter), note)
	}
	fmt.Fprintln(tw, "\nBUILT-IN TASK\tDESKTOP\tSETUP\tBEFORE\tAFTER\tTIME\tNOTE")
	for _, r := range results {
		note := "ok"
		ok := r.Status == tasks.StatusRan && r.ScoreBefore != nil && *r.ScoreBefore == 0 && r.ScoreAfter != nil && *r.ScoreAfter == 1
		if !ok {
			bad++
			note = "FAILED " + r.Status
			if r.Reason != "" {
				note += ": " + oneLine(r.Reason)
			}
		}
		setup := "no"
		if r.SetupOK != nil && *r.SetupOK {
			setup = "ok"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f s\t%s\n", r.ID, r.Desktop, setup, scoreCell(r.ScoreBefore), scoreCell(r.ScoreAfter), r.Seconds, note)
	}
	_ = tw.Flush()
	return bad
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
