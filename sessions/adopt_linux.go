package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"time"
)

// Adopt takes over the sessions a previous process of this prefix left:
// those whose init runs with every essential process and whose guestd
// answers are returned; the others are removed. Sessions another process is
// creating or resetting right now are left alone.
func (e *Engine) Adopt(ctx context.Context) ([]*Session, error) {
	ids, err := e.ids()
	if err != nil {
		return nil, err
	}
	var out []*Session
	var errs []error
	for _, id := range ids {
		lk, free, err := tryLock(filepath.Join(e.sessionDir(id), "lock"))
		if err != nil || !free {
			continue
		}
		rec, err := e.readRecord(id)
		if err == nil && rec.Session.State == StateReady && rec.initAlive() {
			herr := e.thawOrphan(ctx, rec)
			if herr == nil {
				herr = e.healthy(ctx, rec)
			}
			if herr == nil {
				e.hold(rec.Plan, takeClaim(rec.Session.InitPID, rec.InitStart, fdClaim, claimPath(AddrClaimDir, addrKey(rec.Plan.Net.Address))),
					takeClaim(rec.Session.InitPID, rec.InitStart, fdIDClaim, claimPath(IDClaimDir, idKey(rec.Plan.IDs.Host))))
				lk.unlock()
				e.keepStandby(id, nil)
				out = append(out, rec.session())
				continue
			}
			e.log.Warn("session unhealthy: removing it", "id", id, "err", herr)
		}
		if rec == nil {
			slot, _ := parseID(e.cfg.Prefix, id)
			rec = &record{Session: Session{ID: id, Slot: slot}}
		}
		errs = append(errs, e.teardown(ctx, rec), removeDir(e.sessionDir(id)))
		lk.unlock()
	}
	e.removeBases()
	e.fillSpares() // the slots of the sessions removed are free
	return out, errors.Join(errs...)
}

// healthy asks init whether the essential processes run and guestd whether
// it answers.
func (e *Engine) healthy(ctx context.Context, rec *record) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	procs, err := e.status(ctx, rec)
	if err != nil {
		return err
	}
	for _, p := range rec.Plan.Stack {
		if p.Essential && procs[p.Name] != "running" {
			return fmt.Errorf("%s: %s: %w", p.Name, procs[p.Name], ErrStack)
		}
	}
	return screenshotOnce(ctx, netip.AddrPortFrom(rec.Plan.Net.Address.Addr(), uint16(rec.Plan.GuestPort)))
}
