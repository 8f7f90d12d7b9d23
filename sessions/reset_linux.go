package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Reset returns a session to a clean state under the same id: its init is
// killed (and with it every process, the upper layer and the network
// namespace), every host socket connected or connecting to it is destroyed,
// and a new init brings the desktop up from the same plan. A request made
// before the reset can never act on the desktop after it: its connection
// died with the old namespace or was destroyed. With Config.Standby, a
// reset that finds the session's standby takes it over instead of starting
// a new init (resetWarm; Session.Standby says so); one whose standby is
// still starting waits for it; without a usable one it starts cold.
func (e *Engine) Reset(ctx context.Context, id string) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	if _, ok := parseID(e.cfg.Prefix, id); !ok {
		return nil, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	dir := e.sessionDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	lk, rec, err, lerr := e.lockSession(ctx, id)
	if lerr != nil {
		return nil, lerr
	}
	defer lk.unlock()
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	rec.Session.State = StateResetting
	if err := e.writeRecord(rec); err != nil {
		return nil, err
	}
	if sb := e.takeStandby(id); sb != nil {
		s, err := e.resetWarm(ctx, rec, sb)
		if err == nil {
			e.log.Info("session reset", "id", id, "resets", s.Resets, "standby", true)
			return s, nil
		}
		e.log.Warn("session reset without its standby", "id", id, "err", err)
	}
	// The old desktop is killed, then cut off (its veth deleted, every host
	// socket to it destroyed) while the new one starts, before the new init
	// makes its network (start's clear): until then nothing reaches the new
	// desktop. The kernel's teardown of the old namespaces overlaps the new
	// start too, unless the upper layer is on disk, where the new one must
	// not start before the old overlay is gone.
	t0 := time.Now()
	oldPID := rec.Session.InitPID
	// The address and the ids stay claimed across the reset: this process
	// holds them (it started or adopted the session), or takes copies of
	// the old init's claims before killing it.
	addr, ids := addrKey(rec.Plan.Net.Address), idKey(rec.Plan.IDs.Host)
	held, heldIDs := e.takeHeld(id)
	if held == nil {
		held = takeClaim(oldPID, rec.InitStart, fdClaim, claimPath(AddrClaimDir, addr))
	}
	if heldIDs == nil {
		heldIDs = takeClaim(oldPID, rec.InitStart, fdIDClaim, claimPath(IDClaimDir, ids))
	}
	fd, err := killInit(oldPID, rec.InitStart)
	old := make(chan error, 1)
	oldGone := make(chan struct{})
	if fd < 0 {
		old <- nil
		close(oldGone)
	} else {
		go func() {
			old <- e.waitInit(ctx, oldPID, fd)
			unix.Close(fd)
			close(oldGone)
		}()
	}
	if err == nil && rec.Plan.Root.UpperDir != "" {
		err = <-old
		old <- err
	}
	if err == nil && held == nil {
		held, err = reclaim(ctx, id, AddrClaimDir, addr, oldGone)
	}
	if err == nil && heldIDs == nil {
		heldIDs, err = reclaim(ctx, id, IDClaimDir, ids, oldGone)
	}
	t1 := time.Now()
	if err == nil {
		rec.Session.Resets++
		rec.claim, rec.idClaim, held, heldIDs = held, heldIDs, nil, nil
		err = e.start(ctx, rec, func() error { return e.cutOff(id, rec.Plan.Net) })
	}
	for _, f := range []*os.File{held, heldIDs} {
		if f != nil {
			f.Close()
		}
	}
	err = errors.Join(err, <-old)
	e.log.Debug("session reset steps", "id", id, "stop_ms", ms(t1.Sub(t0)), "start_ms", ms(time.Since(t1)))
	if err != nil {
		rec.Session.State, rec.Session.Reason = StateFailed, err.Error()
		return nil, errors.Join(err, e.writeRecord(rec))
	}
	e.log.Info("session reset", "id", id, "resets", rec.Session.Resets, "standby", false)
	e.keepStandby(id, nil)
	return rec.session(), nil
}

// cutOff cuts a session's old desktop off in a reset: its host veth
// deleted, every host socket to its address destroyed.
func (e *Engine) cutOff(id string, n NetPlan) error {
	began := time.Now()
	defer func() { e.log.Debug("session reset cut off", "id", id, "ms", ms(time.Since(began))) }()
	socks := make(chan error, 1)
	go func() { socks <- destroySockets(n.Address.Addr()) }()
	err := deleteLink(n.HostVeth)
	serr := <-socks
	if errors.Is(serr, errNoSockDestroy) {
		e.log.Warn("reset cannot cut pending connections", "id", id, "err", serr)
		serr = nil
	}
	return errors.Join(err, serr)
}
