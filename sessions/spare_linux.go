package sessions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A spare (Config.Spares) is a desktop of the engine's default request
// (Request{}) started ahead of the create that will want it: a session
// allocated as any (slot, address and id claims, record, directory),
// whose init got "go" as a standby does (startAhead) but not "net". It
// comes all the way up at the least CPU weight with no interface but
// loopback, guestd's first screenshot taken over it, and waits. A create
// whose request is the same desktop (sameDesktop, and the image its name
// resolves to now) takes an up one: its CPU weight raised, its slot's
// table and forwarding in, "net" sent, guestd answering from the host
// (standbyUp, goLive, as a warm reset), and the record says it is ready.
// The start of the stack is then off the create's path. The filler then
// starts its replacement, one spare at a time.
//
// A spare is not a user's session: its record says so (record.Spare) and
// List, Get and Ended do not know it (nor the daemon's API and `drums
// session ls`, which list through them), so nobody leases, resets or
// removes a desktop they never asked for; it counts in MaxSessions, as
// it holds a slot, and a create at capacity takes it. The engine holds
// the session's lock for as long as it is a spare: another process's
// Sweep or Adopt leaves it alone (as any session being created), and when
// this process dies the lock goes with it, the spare's init sees its sync
// socket end before it was ready and exits (init_linux.go), and the next
// Sweep or Adopt removes what is left as a create that never finished.
// Close removes the spares.
type spare struct {
	*standby
	rec  *record
	lk   *fileLock     // the session's lock, held while it is a spare
	gone chan struct{} // closed once it is no longer a spare (taken or dropped)
}

// spareRetries is how many spares may fail in a row, none handed out
// between them, before the filler stops: a spare that keeps failing (a
// broken image, a host out of memory) must not be restarted for ever.
// A create of the spares' request that succeeds cold starts it again.
const spareRetries = 3

// StartSpares starts keeping Config.Spares spares. New starts none: a
// daemon first makes sure it is the prefix's only one and adopts or
// sweeps what its predecessor left (whose slots the spares would
// otherwise take), then starts them. Until then, what frees a slot
// (Remove, Sweep, Adopt) starts none either.
func (e *Engine) StartSpares() {
	e.mu.Lock()
	e.sparesOn = true
	e.mu.Unlock()
	e.fillSpares()
}

// fillSpares starts the filler unless it runs or no spare is wanted.
func (e *Engine) fillSpares() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.filling && e.wantSpareLocked() {
		e.startFillerLocked()
	}
}

// wantSpareLocked says whether another spare should start.
func (e *Engine) wantSpareLocked() bool {
	return e.sparesOn && !e.closed && e.sparesOff == nil && len(e.spares) < e.cfg.Spares
}

func (e *Engine) startFillerLocked() {
	e.filling = true
	e.launching.Add(1)
	e.sparesChangedLocked()
	go e.filler()
}

// sparesChangedLocked wakes WaitSpares.
func (e *Engine) sparesChangedLocked() {
	close(e.spareChange)
	e.spareChange = make(chan struct{})
}

// spareEnd is a spare taken off the engine's spares for the filler to
// remove: err says why it failed, nil for one of an image replaced since.
type spareEnd struct {
	sp  *spare
	err error
}

// filler removes the spares that ended (endedSpares) and starts spares
// one after the other, each once the one before is up, until there are
// Config.Spares: one start at a time, at the least CPU weight, beside the
// host's own work. It alone starts and removes spares, but for Close and
// a create's take.
func (e *Engine) filler() {
	defer e.launching.Done()
	for {
		e.mu.Lock()
		ended := e.endedSpares
		e.endedSpares = nil
		if len(ended) == 0 && !e.wantSpareLocked() {
			e.filling = false
			e.sparesChangedLocked()
			e.mu.Unlock()
			return
		}
		e.mu.Unlock()
		if len(ended) > 0 {
			for _, x := range ended {
				err := e.dropSpare(x.sp)
				if x.err != nil {
					e.spareFailed(x.sp.rec.Session.ID, errors.Join(x.err, err))
				} else if err != nil {
					e.log.Warn("spare of a replaced image not removed", "id", x.sp.rec.Session.ID, "err", err)
				}
			}
			continue
		}
		began := time.Now()
		sp, err := e.startSpare()
		if errors.Is(err, ErrCapacity) {
			// A remove frees a slot and starts the filler again; spares
			// that ended meanwhile are removed first.
			e.mu.Lock()
			if len(e.endedSpares) > 0 {
				e.mu.Unlock()
				continue
			}
			first := !e.sparesFull
			e.sparesFull = true
			e.filling = false
			e.sparesChangedLocked()
			e.mu.Unlock()
			if first {
				e.log.Info("no spare started: the engine is at capacity", "err", err)
			} else {
				e.log.Debug("no spare started", "err", err)
			}
			return
		}
		if err != nil {
			e.spareFailed("", err)
			continue
		}
		e.mu.Lock()
		closed := e.closed
		if !closed {
			e.spares = append(e.spares, sp)
			e.sparesFull = false
			e.sparesChangedLocked()
		}
		e.mu.Unlock()
		if closed {
			if err := e.dropSpare(sp); err != nil {
				e.log.Warn("spare not removed", "id", sp.rec.Session.ID, "err", err)
			}
			continue
		}
		id := sp.rec.Session.ID
		e.waitUp(id, sp.standby, began)
		e.mu.Lock()
		listed := sp.err != nil && e.unlistLocked(sp)
		e.sparesChangedLocked()
		e.mu.Unlock()
		if sp.err != nil {
			if listed { // else Close took it
				e.spareFailed(id, errors.Join(sp.err, e.dropSpare(sp)))
			}
			continue
		}
		go e.watchSpare(sp)
	}
}

// startSpare allocates a session of the default request and starts its
// init ahead.
func (e *Engine) startSpare() (*spare, error) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ReadyTimeout)
	defer cancel()
	rec, lk, err := e.allocate(ctx, Request{}, true)
	if err != nil {
		return nil, err
	}
	// This engine holds the claims from now on, beside the init it
	// starts: the teardown of a spare that fails lets them go.
	claim, idClaim := rec.claim, rec.idClaim
	rec.claim, rec.idClaim = nil, nil
	e.hold(rec.Plan, claim, idClaim)
	sp := &spare{rec: rec, lk: lk, gone: make(chan struct{})}
	sp.standby, err = e.startAhead(ctx, "spare", rec, rec.Plan, func(inc *incarnation) {
		rec.Session.InitPID, rec.InitStart = inc.pid, inc.start
	}, claim, idClaim)
	if err != nil {
		return nil, errors.Join(err, e.dropSpare(sp))
	}
	return sp, nil
}

// watchSpare waits until an up spare's init exits (an essential process
// of its desktop died: init ends the desktop) or it stops being a spare.
// One that died goes to the filler, which removes and replaces it.
func (e *Engine) watchSpare(sp *spare) {
	select {
	case <-sp.gone:
		return
	case <-sp.done:
	}
	id := sp.rec.Session.ID
	err := fmt.Errorf("init exited while it waited: %w%s", ErrInit, e.logTail(id))
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.unlistLocked(sp) {
		return // taken meanwhile: the taker saw it dead
	}
	e.endedSpares = append(e.endedSpares, spareEnd{sp, err})
	if !e.filling {
		e.startFillerLocked()
	}
}

// unlistLocked takes sp off the engine's spares; false when it is not on
// them (taken, or taken by Close).
// Whoever takes a spare off removes it or makes it a session.
func (e *Engine) unlistLocked(sp *spare) bool {
	i := slices.Index(e.spares, sp)
	if i < 0 {
		return false
	}
	e.spares = slices.Delete(e.spares, i, i+1)
	close(sp.gone)
	e.sparesChangedLocked()
	return true
}

// spareFailed counts a spare that failed (id "" if it never got a
// session), and stops the filler once too many failed in a row.
func (e *Engine) spareFailed(id string, err error) {
	e.mu.Lock()
	e.spareFails++
	n := e.spareFails
	if n >= spareRetries {
		e.sparesOff = err
		e.sparesChangedLocked()
	}
	e.mu.Unlock()
	if n >= spareRetries {
		e.log.Error("spares stopped: none starts until a create of their request succeeds", "failed_in_a_row", n, "id", id, "err", err)
		return
	}
	e.log.Warn("spare failed: another starts", "failed_in_a_row", n, "id", id, "err", err)
}

// dropSpare removes a spare that is on no list: its init, everything of
// its session, its lock.
func (e *Engine) dropSpare(sp *spare) error {
	if sp.standby != nil {
		sp.kill()
	}
	ctx, cancel := cleanupContext()
	defer cancel()
	err := errors.Join(e.teardown(ctx, sp.rec), removeDir(e.sessionDir(sp.rec.Session.ID)))
	sp.lk.unlock()
	e.removeBases()
	return err
}

// takeSpare takes an up spare off the engine's spares for a create of
// req, or returns nil: the engine keeps none, req is another desktop (its
// image too: the one its name resolves to now is not the one Request{}
// resolves to), or none is up. Spares of an image Request{} no longer
// resolves to (rebuilt since) are removed, and the filler starts spares
// of the new one. The filler starts too when one is handed out, under the
// same lock, so that WaitSpares never sees the engine short of a spare
// and no filler running.
func (e *Engine) takeSpare(req Request) *spare {
	if e.cfg.Spares == 0 || !sameDesktop(e.cfg, req, Request{}) {
		return nil
	}
	e.mu.Lock()
	none := len(e.spares) == 0 // an ended one is the filler's already
	e.mu.Unlock()
	if none {
		return nil
	}
	def, asked, ok := e.spareImage(req)
	if !ok {
		return nil // the cold path says why
	}
	var got *spare
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, sp := range slices.Clone(e.spares) {
		switch {
		case sp.plan.Root.Image != def:
			e.unlistLocked(sp)
			e.endedSpares = append(e.endedSpares, spareEnd{sp: sp})
		case got == nil && asked == def && sp.isUp():
			e.unlistLocked(sp)
			got = sp
		}
	}
	if (got != nil || len(e.endedSpares) > 0) && !e.filling {
		e.startFillerLocked()
	}
	return got
}

// spareImage returns the image directories Request{} (the spares') and
// req resolve to now; ok is false if either does not resolve.
func (e *Engine) spareImage(req Request) (def, asked string, ok bool) {
	store, err := e.imageStore()
	if err != nil {
		return "", "", false
	}
	d, err := openImage(e.cfg, store, Request{})
	if err != nil {
		return "", "", false
	}
	if req.image(e.cfg) == e.cfg.Image {
		return d.Dir(), d.Dir(), true
	}
	a, err := openImage(e.cfg, store, req)
	if err != nil {
		return "", "", false
	}
	return d.Dir(), a.Dir(), true
}

// isUp says whether a spare's desktop is up and its init runs.
func (sb *standby) isUp() bool {
	select {
	case <-sb.up:
	default:
		return false
	}
	select {
	case <-sb.done:
		return false
	default:
		return sb.err == nil
	}
}

// createFromSpare makes a spare taken for req the session it asked for.
// On an error the spare is removed: the caller creates cold.
func (e *Engine) createFromSpare(ctx context.Context, sp *spare, req Request) (*Session, error) {
	began := time.Now()
	rec := sp.rec
	id := rec.Session.ID
	err := e.standbyUp(ctx, id, sp.standby)
	if err == nil {
		err = e.goLive(ctx, rec, sp.standby, func() error { return deleteLink(rec.Plan.Net.HostVeth) })
	}
	if err == nil {
		rec.Request, rec.Spare = req, false
		rec.Session.Image, rec.Session.Created = req.withDefaults(e.cfg).Image, time.Now().UTC()
		rec.Session.State, rec.Session.Reason, rec.Session.Spare = StateReady, "", true
		err = e.writeRecord(rec)
	}
	if err != nil {
		err = errors.Join(fmt.Errorf("spare %s: %w", id, err), e.dropSpare(sp))
		if ctx.Err() == nil { // else the caller gave up: no fault of the spare's
			e.spareFailed(id, err)
		}
		e.fillSpares()
		return nil, err
	}
	sp.lk.unlock()
	e.log.Debug("session made ready from a spare", "id", id, "ms", ms(time.Since(began)))
	e.mu.Lock()
	e.spareFails = 0
	e.mu.Unlock()
	return rec.session(), nil
}

// spareWorks turns the filler back on after a create of the spares'
// request succeeded cold while it was stopped (spareFailed): what made
// the spares fail (the host short of memory, an image being replaced) has
// passed. Spares that fail for a reason of their own so cost at most
// spareRetries starts per such create.
func (e *Engine) spareWorks(req Request) {
	if e.cfg.Spares == 0 || !sameDesktop(e.cfg, req, Request{}) {
		return
	}
	e.mu.Lock()
	stopped := e.sparesOff != nil
	e.mu.Unlock()
	if !stopped {
		return
	}
	if def, asked, ok := e.spareImage(req); !ok || asked != def {
		return // another image's create says nothing of the spares'
	}
	e.mu.Lock()
	off := e.sparesOff
	if off != nil {
		e.sparesOff, e.spareFails = nil, 0
	}
	e.mu.Unlock()
	if off != nil {
		e.log.Info("spares start again: a create of their request succeeded", "stopped_by", off)
		e.fillSpares()
	}
}

// WaitSpares waits until the engine keeps Config.Spares up spares, or
// until the filler stops short of them: at capacity (ErrCapacity), or
// stopped after failures (the error says why). A test or benchmark whose
// next create must find a spare up waits here.
func (e *Engine) WaitSpares(ctx context.Context) error {
	for {
		e.mu.Lock()
		up := 0
		for _, sp := range e.spares {
			if sp.isUp() {
				up++
			}
		}
		// One listed and not up is starting (the filler runs), or died
		// and its watchSpare is about to hand it to the filler.
		pending := len(e.spares) > up
		filling, off, change := e.filling, e.sparesOff, e.spareChange
		e.mu.Unlock()
		switch {
		case up >= e.cfg.Spares:
			return nil
		case off != nil:
			return fmt.Errorf("spares stopped: %w", off)
		case !filling && !pending:
			return fmt.Errorf("%d of %d spares up, and none starts: %w", up, e.cfg.Spares, ErrCapacity)
		}
		select {
		case <-change:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
