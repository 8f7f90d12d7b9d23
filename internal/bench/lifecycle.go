package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/drums-dev/drums/compat"
	"github.com/drums-dev/drums/sessions"
)

// Engine is what the sessions part needs of the session engine; the real
// one is *sessions.Engine (asserted where it is built, in
// internal/drumscli: it exists on Linux only).
type Engine interface {
	compat.SessionEngine // Create, Exec, Remove: the density part's desktops are compat's
	Reset(ctx context.Context, id string) (*sessions.Session, error)
	WaitStandby(ctx context.Context, id string) error
	WaitSpares(ctx context.Context) error
}

// SessionsResult is the sessions part: what sessions' BenchmarkLifecycle
// measures, through the engine's public API, over fewer light desktops.
type SessionsResult struct {
	Stamp
	Desktops int           `json:"desktops"`
	Image    string        `json:"image"`
	Idle     time.Duration `json:"idle_ns"`
	Create   compat.Stats  `json:"create"`
	Reset    compat.Stats  `json:"reset"`
	Remove   compat.Stats  `json:"remove"`
	// Standby says the engine kept standbys (Config.Standby): PSS counts
	// each desktop's standby too, and StandbyResets resets of Reset.N
	// took one (the others started cold). Reset's resets follow each
	// other, each beside the start of the standby the one before left;
	// SpacedReset's each wait until every standby is up.
	Standby       bool          `json:"standby,omitempty"`
	StandbyResets int           `json:"standby_resets,omitempty"`
	SpacedReset   *compat.Stats `json:"spaced_reset,omitempty"`
	// Spares is how many spares the engine kept (Config.Spares): Create's
	// creates follow each other from the moment the spares are up, and
	// those of SpareCreates (1-based) took one (the others started cold,
	// beside the start of the spare the take before left); SpacedCreate's
	// each wait until the spares are up, and take one each.
	Spares       int           `json:"spares,omitempty"`
	SpareCreates []int         `json:"spare_creates,omitempty"`
	SpacedCreate *compat.Stats `json:"spaced_create,omitempty"`
	// InitSteps are the median times at which a create's init finished
	// each step, since init started, in the order they finish: of the
	// creates that started cold only (a spare's init logs no steps).
	InitSteps []sessions.StepTime `json:"init_steps"`
	// PSS is the summed proportional set size of each desktop's
	// processes after Idle with all of them up, in KiB; ByProcess its
	// mean per desktop by process name, largest first.
	PSS       []int64  `json:"pss_kib"`
	ByProcess []MemRow `json:"by_process"`
	// HostPerDesktop is the host's MemAvailable before the creates less
	// after the idle wait, over the desktops, in KiB (others' work on the
	// host moves it).
	HostPerDesktop int64 `json:"host_per_desktop_kib"`
}

// MemRow is a process name's memory per desktop, in KiB.
type MemRow struct {
	Name string `json:"name"`
	KiB  int64  `json:"kib"`
}

// cleanupTimeout bounds the removal of what a part made, after a failure
// or an interrupt as well.
const cleanupTimeout = 2 * time.Minute

// runSessions creates n light desktops one after the other (create to
// ready: guestd answers GET /screenshot with a PNG), lets them all idle,
// reads their memory, resets each, then removes each, timing every call.
// With spares (the engine keeps them: sessions.Config.Spares, of image)
// the creates start once the spares are up, and n more, each once they
// are up again, are timed and removed. Whatever fails, every desktop it
// made is removed.
func runSessions(ctx context.Context, eng Engine, steps *sessions.StepLog, proc procfs, n int, image string, idle time.Duration, standby bool, spares int, out io.Writer) (res *SessionsResult, err error) {
	res = &SessionsResult{Desktops: n, Image: image, Idle: idle, Standby: standby, Spares: spares}
	res.begin()
	var live []*sessions.Session
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, s := range live {
			if rerr := eng.Remove(cctx, s.ID); rerr != nil {
				err = errors.Join(err, fmt.Errorf("remove session %s: %w", s.ID, rerr))
			}
		}
	}()
	hostBefore, err := proc.memAvailable()
	if err != nil {
		return nil, err
	}
	// waitSpares waits until the engine's spares are up: a create then
	// finds one, as on a daemon up for a while.
	waitSpares := func() error {
		if spares == 0 {
			return nil
		}
		if err := eng.WaitSpares(ctx); err != nil {
			return fmt.Errorf("spares: %w", err)
		}
		return nil
	}
	if err := waitSpares(); err != nil {
		return nil, err
	}
	// create makes a desktop, live until removed, and times it into took.
	create := func(took *[]time.Duration) (*sessions.Session, error) {
		start := time.Now()
		s, err := eng.Create(ctx, sessions.Request{Image: image})
		if err != nil {
			return nil, fmt.Errorf("create a desktop: %w", err)
		}
		*took = append(*took, time.Since(start))
		live = append(live, s)
		return s, nil
	}
	steps.Take() // only this part's creates
	var created, removed []time.Duration
	for i := range n {
		s, err := create(&created)
		if err != nil {
			return nil, err
		}
		if s.Spare {
			res.SpareCreates = append(res.SpareCreates, i+1)
		}
	}
	res.Create, res.InitSteps = compat.NewStats(created), steps.Take()
	printStats(out, "create-to-ready", res.Create)
	if len(res.InitSteps) > 0 {
		fmt.Fprint(out, "  init steps (median ms since init started):")
		for _, s := range res.InitSteps {
			fmt.Fprintf(out, " %s %.1f", s.Name, s.Ms)
		}
		fmt.Fprintln(out)
	}
	if spares > 0 {
		fmt.Fprintf(out, "  %d of %d creates took a spare: %s; the others started cold\n", len(res.SpareCreates), n, ordinals(res.SpareCreates))
		// Again, each once the spares are up: none starts beside the
		// refill of the take before, as when creates come further apart
		// than a desktop's start. Each desktop goes again at once (its
		// removal untimed) before the next wait.
		var spaced []time.Duration
		for range n {
			if err := waitSpares(); err != nil {
				return nil, err
			}
			s, err := create(&spaced)
			if err != nil {
				return nil, err
			}
			if !s.Spare {
				return nil, fmt.Errorf("create of %s started cold though the spares were up", s.ID)
			}
			if err := eng.Remove(ctx, s.ID); err != nil {
				return nil, fmt.Errorf("remove session %s: %w", s.ID, err)
			}
			live = live[:len(live)-1]
		}
		st := compat.NewStats(spaced)
		res.SpacedCreate = &st
		printStats(out, "create, spaced", st)
		fmt.Fprintln(out, "  every spaced create took a spare")
	}

	// Idle is a setting of the measurement, not a readiness wait: guestd
	// gives back memory after set idle times (internal/guestdcli).
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(idle):
	}
	byName := map[string]int64{}
	for _, s := range live {
		cgroups := []sessions.CgroupPlan{s.Plan.Cgroup}
		if standby {
			cgroups = append(cgroups, sessions.StandbyCgroup(s.Plan))
		}
		var total int64
		for i, c := range cgroups {
			m, err := proc.memory(c)
			if i > 0 && errors.Is(err, fs.ErrNotExist) {
				continue // no standby: it failed (the engine logged why)
			}
			if err != nil {
				return nil, fmt.Errorf("memory of session %s: %w", s.ID, err)
			}
			for name, pm := range m {
				byName[name] += pm.Pss
				total += pm.Pss
			}
		}
		res.PSS = append(res.PSS, total)
	}
	for name, kb := range byName {
		res.ByProcess = append(res.ByProcess, MemRow{Name: name, KiB: kb / int64(n)})
	}
	slices.SortFunc(res.ByProcess, func(a, b MemRow) int { return cmp.Or(cmp.Compare(b.KiB, a.KiB), cmp.Compare(a.Name, b.Name)) })
	hostAfter, err := proc.memAvailable()
	if err != nil {
		return nil, err
	}
	res.HostPerDesktop = (hostBefore - hostAfter) / int64(n)
	fmt.Fprintf(out, "%-16s %s up, %s idle: mean %.1f MiB PSS per desktop (min %.1f, max %.1f); host MemAvailable %.1f MiB less per desktop\n",
		"idle memory", plural(n, "desktop"), idle, mib(res.meanPSS()), mib(slices.Min(res.PSS)), mib(slices.Max(res.PSS)), mib(res.HostPerDesktop))

	// resetEach resets every desktop one after the other, each once
	// before(i) returns.
	resetEach := func(before func(i int) error) ([]time.Duration, error) {
		var took []time.Duration
		for i, s := range live {
			if err := before(i); err != nil {
				return nil, err
			}
			start := time.Now()
			r, err := eng.Reset(ctx, s.ID)
			if err != nil {
				return nil, fmt.Errorf("reset session %s: %w", s.ID, err)
			}
			took = append(took, time.Since(start))
			live[i] = r
			if r.Standby {
				res.StandbyResets++
			}
		}
		return took, nil
	}
	reset, err := resetEach(func(int) error { return nil })
	if err != nil {
		return nil, err
	}
	res.Reset = compat.NewStats(reset)
	printStats(out, "reset-to-ready", res.Reset)
	if standby {
		fmt.Fprintf(out, "  %d of %d resets took the desktop's standby\n", res.StandbyResets, len(reset))
		// Again, each once every standby is up: none starts beside a
		// reset, as when an episode outlasts a desktop's start.
		upAll := func(int) error {
			for _, s := range live {
				if err := eng.WaitStandby(ctx, s.ID); err != nil {
					return fmt.Errorf("standby of session %s: %w", s.ID, err)
				}
			}
			return nil
		}
		first := res.StandbyResets
		res.StandbyResets = 0
		spaced, err := resetEach(upAll)
		if err != nil {
			return nil, err
		}
		if res.StandbyResets != len(spaced) {
			return nil, fmt.Errorf("%d of %d resets started cold though every standby was up", len(spaced)-res.StandbyResets, len(spaced))
		}
		res.StandbyResets = first
		st := compat.NewStats(spaced)
		res.SpacedReset = &st
		printStats(out, "reset, spaced", st)
	}
	for len(live) > 0 {
		start := time.Now()
		if err := eng.Remove(ctx, live[0].ID); err != nil {
			return nil, fmt.Errorf("remove session %s: %w", live[0].ID, err)
		}
		removed = append(removed, time.Since(start))
		live = live[1:]
	}
	res.Remove = compat.NewStats(removed)
	printStats(out, "remove", res.Remove)
	res.end()
	return res, nil
}

func (r *SessionsResult) meanPSS() int64 {
	var sum int64
	for _, kb := range r.PSS {
		sum += kb
	}
	return sum / int64(max(1, len(r.PSS)))
}

func printStats(w io.Writer, name string, s compat.Stats) {
	fmt.Fprintf(w, "%-16s n=%-3d median %s   p95 %s   min %s   max %s\n", name, s.N,
		compat.Millis(s.Median), compat.Millis(s.P95), compat.Millis(s.Min), compat.Millis(s.Max))
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// ordinals lists 1-based positions as "#1 #4 #7", or "none".
func ordinals(pos []int) string {
	if len(pos) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, p := range pos {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", p)
	}
	return b.String()
}
