package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/sessions/images"
)

// A standby (Config.Standby) is a session's next incarnation started
// ahead: an init of the same plan (ids, image, user, address) under the
// session's other cgroup directories, upper layer and control socket
// (otherIncarnation), that got "go" but not "net". Its desktop comes all
// the way up with no network: no veth, so guestd, which listens inside the
// standby's own network namespace, is reachable by nothing, and the
// running desktop shares none of its namespaces. It waits in init until a
// reset takes it: the old init is killed and cut off as in a cold reset,
// the standby gets "net", and once guestd answers it is the session
// (resetWarm). The start of the stack, most of a cold reset, is then off
// the reset's path, and so is the old desktop's teardown.
//
// A standby exists only in the process that started it: its sync socket
// closes with that process, and an init whose engine goes away before it
// is ready exits (init_linux.go). The record names it (record.Standby) so
// that whoever removes the session kills it; a remove or sweep removes
// both incarnations' cgroups.
//
// A spare (spare_linux.go) is started ahead the same way, as a session of
// its own, and is a standby value too: what says which it is.
type standby struct {
	*incarnation
	what string        // "standby" or "spare", for logs and errors
	up   chan struct{} // closed once its stack is up or it failed
	err  error         // why it failed, set before up is closed
}

// standbyStarts bounds how many standbys start at once (spawned and not
// yet up or failed); the others wait as senders on a channel, woken in
// the order they came (what Go's runtime does, not what its spec
// promises). A start is mostly CPU (X, the session bus, openbox, guestd's
// first screenshot) at the least CPU weight; two is a choice for this
// project's 2-core hosts, not measured against one or three. A
// fixed number rather than one per core: it keeps a daemon that adopts a
// hundred desktops, or a burst of creates, from starting dozens of stacks
// at once on a big host too (each start's memory and I/O count as well as
// its CPU), and the tests' bound is the same on every host. A spare starts
// one at a time through its filler.
const standbyStarts = 2

// standbyRetries is how many more times a session's standby is started
// after it failed before the engine gives up on it until the session's
// next reset; standbyBackoff is the wait before the first retry, doubled
// for each next one. The wait is a backoff measured by a timer, not a
// wait for something to be ready: what made the standby fail (the host
// out of memory, a broken image) may have passed by then.
const (
	standbyRetries = 2
	standbyBackoff = time.Second
)

// keepStandby starts the next standby of session id in the background
// when the engine keeps standbys, once after is closed (the previous
// incarnation, whose names the standby takes, is gone; nil: at once) and
// the desktop an earlier warm reset left dying is gone too: a cold reset
// right after a warm one takes the warm one's names, and its standby the
// names of the desktop the warm one killed. It starts once one of the
// standbyStarts slots is free; a failed one is retried
// (standbyFailedLocked).
func (e *Engine) keepStandby(id string, after <-chan struct{}) {
	if !e.cfg.Standby {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.queueStandbyLocked(id, after, 0)
}

// queueStandbyLocked, with e.mu held, queues attempt (0 the first, then
// the retries) at session id's standby. One queued while another is
// asked for the same session (a reset that went cold, a warm reset) gives
// way to the later one: it is dropped once it has a slot, before it
// starts. Close wakes every one waiting.
func (e *Engine) queueStandbyLocked(id string, after <-chan struct{}, attempt int) {
	if e.closed {
		return
	}
	prev := e.dying[id]
	if after != nil {
		e.dying[id] = after
	}
	e.launching.Add(1)
	started := make(chan struct{})
	e.starting[id] = started
	go func() {
		defer e.launching.Done()
		defer func() {
			e.mu.Lock()
			if e.starting[id] == started {
				delete(e.starting, id)
			}
			e.mu.Unlock()
			close(started)
		}()
		for _, gone := range []<-chan struct{}{prev, after} {
			if gone != nil {
				<-gone
			}
		}
		e.mu.Lock()
		if after != nil && e.dying[id] == after {
			delete(e.dying, id)
		}
		e.mu.Unlock()
		if attempt > 0 {
			backoff := time.NewTimer(standbyBackoff << (attempt - 1))
			defer backoff.Stop()
			select {
			case <-backoff.C:
			case <-e.closing:
				return
			}
		}
		select {
		case e.standbySlots <- struct{}{}:
		case <-e.closing:
			return
		}
		e.mu.Lock()
		current := e.starting[id] == started
		e.mu.Unlock()
		if !current {
			<-e.standbySlots
			return
		}
		sb, err := e.startStandby(id, attempt)
		if sb == nil { // none started: the slot is free again
			<-e.standbySlots
		}
		if err != nil {
			e.mu.Lock()
			e.standbyFailedLocked(id, attempt, err)
			e.mu.Unlock()
		}
	}()
}

// standbyFailedLocked, with e.mu held, retries the standby of session id
// whose attempt failed with err, or gives up on it until the session's
// next reset once it failed 1+standbyRetries times in a row. Nothing is
// retried once the engine closes; a session removed or not ready meanwhile
// gets no standby from the retry (startStandby).
func (e *Engine) standbyFailedLocked(id string, attempt int, err error) {
	if e.closed {
		return
	}
	if attempt < standbyRetries {
		e.log.Warn("session standby failed: retrying", "id", id, "attempt", attempt+1, "err", err)
		e.queueStandbyLocked(id, nil, attempt+1)
		return
	}
	e.log.Warn("session standby failed: none until its next reset", "id", id, "attempts", attempt+1, "err", err)
	e.standbyChangedLocked(id, "given up")
}

// standbyChangedLocked, with e.mu held, tells the engine's onStandby hook
// (tests) what happened to session id's standby.
func (e *Engine) standbyChangedLocked(id, what string) {
	if e.onStandby != nil {
		e.onStandby(id, what)
	}
}

// startStandby starts a standby for session id, under its lock, if the
// session is ready and has none, and returns it (nil if it started none);
// attempt counts its failed standbys before it.
func (e *Engine) startStandby(id string, attempt int) (*standby, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ReadyTimeout)
	defer cancel()
	lk, err := lock(ctx, filepath.Join(e.sessionDir(id), "lock"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // removed meanwhile
	}
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	rec, err := e.readRecord(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	_, has := e.standbys[id]
	h := e.held[id]
	closed := e.closed
	e.mu.Unlock()
	if has || closed || rec.Session.State != StateReady || !rec.initAlive() {
		return nil, nil
	}
	if h.addr == nil || h.ids == nil {
		return nil, fmt.Errorf("this engine holds no claims of the session to pass on")
	}
	began := time.Now()
	p := otherIncarnation(rec.Plan)
	// What a previous incarnation of these names left (an empty cgroup)
	// goes first: the limits, counters and upper layer start fresh.
	if err := removeCgroup(ctx, p.Cgroup); err != nil {
		return nil, err
	}
	// It holds the session's claims from its start, as every init does:
	// they stay held whichever incarnation outlives the other. The log
	// says it starts once it is spawned (its desktop starts at "go").
	sb, err := e.startAhead(ctx, "standby", rec, p, func(inc *incarnation) {
		rec.Standby = &initRef{PID: inc.pid, Start: inc.start}
		if f, err := os.OpenFile(e.LogPath(id), os.O_WRONLY|os.O_APPEND, 0); err == nil {
			fmt.Fprintf(f, "drums: %s: a standby starts (its output follows, among the running desktop's)\n", time.Now().UTC().Format(time.RFC3339Nano))
			f.Close()
		}
	}, h.addr, h.ids)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.standbys[id] = sb
	e.standbyChangedLocked(id, "starting")
	e.mu.Unlock()
	go e.watchStandby(id, sb, began, attempt)
	return sb, nil
}

// startAhead starts an init of p ahead of its use, as a standby or a
// spare (spare_linux.go): at the least CPU weight, so that its start
// takes only CPU that the host's creates and resets (and running
// desktops) leave, and given "go" as a standby, so that its desktop comes
// up with no network and takes guestd's first screenshot over its
// loopback. name records the new init in rec, which is written before
// init gets "go": whoever removes the session then finds it. claims are
// the session's, which init holds for its life.
func (e *Engine) startAhead(ctx context.Context, what string, rec *record, p *Plan, name func(*incarnation), claims ...*os.File) (*standby, error) {
	hold, err := images.Hold(p.Root.Image)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrNoImage)
	}
	defer hold.Close()
	if err := e.prepare(ctx, p); err != nil {
		return nil, err
	}
	if err := setCPUWeight(p.Cgroup, true); err != nil {
		return nil, err
	}
	inc, err := e.spawn(p, append(claims, hold)...)
	if err != nil {
		return nil, err
	}
	inc.ahead = true
	name(inc)
	err = e.writeRecord(rec)
	if err == nil {
		err = inc.goAhead(true)
	}
	if err != nil {
		inc.kill()
		return nil, err
	}
	return &standby{incarnation: inc, what: what, up: make(chan struct{})}, nil
}

// watchStandby follows a standby until its stack is up or it failed,
// when it frees its slot (of standbyStarts), and forgets it once it has
// exited; one that failed and that no reset, remove or Close took is
// retried (standbyFailedLocked). A standby taken or dropped meanwhile is
// killed by whoever took it: it fails here, which frees its slot too.
func (e *Engine) watchStandby(id string, sb *standby, began time.Time, attempt int) {
	e.waitUp(id, sb, began)
	what := "up"
	if sb.err != nil {
		what = "failed"
	}
	e.mu.Lock()
	e.standbyChangedLocked(id, what)
	e.mu.Unlock()
	<-e.standbySlots
	<-sb.done
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.standbys[id] != sb {
		return
	}
	delete(e.standbys, id)
	if sb.err != nil {
		e.standbyFailedLocked(id, attempt, sb.err)
	}
}

// waitUp follows an init started ahead (startAhead) of session id until
// its stack is up or it failed, and closes sb.up; a failed one is killed
// and sb.err says why.
func (e *Engine) waitUp(id string, sb *standby, began time.Time) {
	fail := func(err error) {
		sb.err = err
		close(sb.up)
		sb.proc.Kill()
		e.log.Warn("session "+sb.what+" failed", "id", id, "err", err)
	}
	// One that hangs is given up as a create would be.
	late := time.NewTimer(e.cfg.ReadyTimeout)
	defer late.Stop()
	for {
		select {
		case <-late.C:
			fail(fmt.Errorf("not up after %s: %w", e.cfg.ReadyTimeout, ErrStack))
			return
		case m, ok := <-sb.msgs:
			if !ok {
				fail(fmt.Errorf("init exited before its stack was up: %w%s", ErrInit, e.logTail(id)))
				return
			}
			switch m.Type {
			case "step":
				// Not stepMessage: StepLog's steps are of the desktops
				// made ready, not of those started ahead.
				e.log.Debug("session "+sb.what+" step", "id", id, "step", m.Step, "ms", m.Millis)
			case "error":
				fail(initError(m))
				return
			case "up":
				e.log.Debug("session "+sb.what+" up", "id", id, "pid", sb.pid, "ms", ms(time.Since(began)))
				close(sb.up)
				return
			}
		case <-sb.done:
			fail(fmt.Errorf("init exited before its stack was up: %w%s", ErrInit, e.logTail(id)))
			return
		}
	}
}

// WaitStandby waits until session id's standby (Config.Standby) is up, so
// that its next reset takes it. It fails when the engine keeps no standby
// for the session or the standby failed.
func (e *Engine) WaitStandby(ctx context.Context, id string) error {
	e.mu.Lock()
	started := e.starting[id]
	e.mu.Unlock()
	if started != nil {
		select {
		case <-started:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e.mu.Lock()
	sb := e.standbys[id]
	e.mu.Unlock()
	if sb == nil {
		return fmt.Errorf("session %s has no standby: %w", id, ErrNotReady)
	}
	select {
	case <-sb.up:
		return sb.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeStandby hands over session id's standby (nil if none) to a reset
// or a remove.
func (e *Engine) takeStandby(id string) *standby {
	e.mu.Lock()
	defer e.mu.Unlock()
	sb := e.standbys[id]
	delete(e.standbys, id)
	return sb
}

// dropStandby kills session id's standby, if this engine keeps one, and
// returns a wait until it is gone: its desktop dies while the caller goes
// on (a remove's teardown of the running one).
func (e *Engine) dropStandby(id string) (wait func()) {
	sb := e.takeStandby(id)
	if sb == nil {
		return func() {}
	}
	sb.proc.Kill()
	return sb.kill
}

// resetWarm resets the session of rec, locked and marked resetting, to
// its standby: the old init is killed and cut off, and the standby gets
// "net". Once guestd answers, the record names the standby's init, plan
// and upper layer, and the next standby starts once the old desktop is
// gone. On an error the old init may be dead and the standby is: the
// caller resets cold.
func (e *Engine) resetWarm(ctx context.Context, rec *record, sb *standby) (*Session, error) {
	id := rec.Session.ID
	if err := e.standbyUp(ctx, id, sb); err != nil {
		return nil, err
	}
	began := time.Now()
	oldPID, oldStart := rec.Session.InitPID, rec.InitStart
	fd, err := killInit(oldPID, oldStart)
	if err != nil {
		sb.kill()
		return nil, err
	}
	// The old desktop's namespaces go in the kernel meanwhile; the next
	// standby, which takes its names, waits for it.
	oldGone := make(chan struct{})
	go func() {
		defer close(oldGone)
		if fd >= 0 {
			ctx, cancel := cleanupContext()
			defer cancel()
			e.waitInit(ctx, oldPID, fd)
			unix.Close(fd)
		}
	}()
	// The record changes only once the standby is the session: on a
	// failure the cold reset that follows starts from the old one.
	next := *rec
	if err := e.goLive(ctx, &next, sb, func() error { return e.cutOff(id, rec.Plan.Net) }); err != nil {
		return nil, err
	}
	os.Remove(filepath.Join(rec.Plan.Root.SessionDir, exitFile))
	next.Plan = sb.plan
	next.Session.InitPID, next.InitStart, next.Standby = sb.pid, sb.start, nil
	next.Session.Resets++
	next.Session.State, next.Session.Reason, next.Session.Standby = StateReady, "", true
	if err := e.writeRecord(&next); err != nil {
		sb.kill()
		return nil, err
	}
	*rec = next
	e.log.Debug("session reset to its standby", "id", id, "ms", ms(time.Since(began)))
	e.keepStandby(id, oldGone)
	return rec.session(), nil
}

// standbyUp readies an init started ahead for the caller to take: from
// now on its start (if it still starts) and then its desktop take CPU as
// the session's, and the caller waits for it, up to half of what is left
// of ctx: the other half is a cold start's. On an error it is killed.
func (e *Engine) standbyUp(ctx context.Context, id string, sb *standby) error {
	if err := setCPUWeight(sb.plan.Cgroup, false); err != nil {
		sb.kill()
		return err
	}
	wait, cancel := halfLeft(ctx)
	defer cancel()
	select {
	case <-sb.up:
	case <-wait.Done():
		sb.kill()
		return fmt.Errorf("wait for the %s: %w", sb.what, wait.Err())
	}
	if sb.err != nil {
		sb.kill()
		return fmt.Errorf("the %s failed: %w", sb.what, sb.err)
	}
	select {
	case <-sb.done:
		sb.kill() // its sync socket
		return fmt.Errorf("the %s exited: %w%s", sb.what, ErrInit, e.logTail(id))
	default:
	}
	return nil
}

// goLive makes an up init started ahead the desktop of rec: the slot's
// network made ready (readySlot, clear freeing it), "net" sent, and
// guestd answering from the host, waited for up to half of what is left
// of ctx: an up desktop answers at once, unless its guestd or X died or
// hangs while it waited, and the cold start that follows a failure needs
// time too. On an error it is killed.
func (e *Engine) goLive(ctx context.Context, rec *record, sb *standby, clear func() error) error {
	netReady := make(chan error, 1)
	go func() { netReady <- readySlot(sb.plan, clear) }()
	up, cancel := halfLeft(ctx)
	defer cancel()
	if err := e.await(up, rec, sb.incarnation, netReady); err != nil {
		sb.kill()
		return err
	}
	return nil
}

// halfLeft is ctx with half of the time it has left: a warm reset's
// waits, which leave the other half to the cold start after their failure.
func halfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
}

// sweepStandby removes the cgroup directories of a live session's other
// incarnation when no standby runs in them (its engine went away): rmdirs
// only, deepest first, which fail while anything is in them.
func (e *Engine) sweepStandby(rec *record) []string {
	if rec.Plan == nil || (rec.Standby != nil && rec.Standby.alive()) {
		return nil
	}
	var out []string
	for _, dir := range otherIncarnation(rec.Plan).Cgroup.Dirs {
		if _, err := os.Stat(dir); err == nil && rmdirTree(dir) == nil {
			out = append(out, dir)
		}
	}
	return out
}
