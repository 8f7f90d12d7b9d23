package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/nftables"
)

// Sweep removes every leftover of this prefix that is not a live session:
// records of dead or interrupted sessions and, found by name alone,
// processes, veths, nftables tables, cgroups and directories of sessions
// that left no record. Sessions being created or reset by a live process
// are left alone.
func (e *Engine) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	pl, err := e.prefixLock(ctx)
	if err != nil {
		return rep, err
	}
	defer pl.unlock()
	ids, err := e.ids()
	if err != nil {
		return rep, err
	}
	var errs []error
	liveIDs, liveSlots := map[string]bool{}, map[int]bool{}
	for _, id := range ids {
		slot, _ := parseID(e.cfg.Prefix, id)
		lk, free, err := tryLock(filepath.Join(e.sessionDir(id), "lock"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !free { // being created, reset or removed by a live process
			liveIDs[id], liveSlots[slot] = true, true
			continue
		}
		rec, err := e.readRecord(id)
		if err == nil && rec.Session.State == StateReady && rec.initAlive() {
			liveIDs[id], liveSlots[slot] = true, true
			errs = append(errs, e.thawOrphan(ctx, rec))
			rep.Cgroups = append(rep.Cgroups, e.sweepStandby(rec)...)
			lk.unlock()
			continue
		}
		if rec != nil && rec.Plan != nil && rec.Session.State == StateReady && !e.holds(id) &&
			claimHeld(AddrClaimDir, addrKey(rec.Plan.Net.Address), id) {
			// Its init died after it was ready, but a live engine keeps it
			// claimed (a daemon whose client still holds its lease): that
			// engine removes it.
			liveIDs[id], liveSlots[slot] = true, true
			lk.unlock()
			continue
		}
		if rec == nil {
			rec = &record{Session: Session{ID: id, Slot: slot}}
		}
		if rec.initAlive() {
			rep.Processes = append(rep.Processes, rec.Session.InitPID)
		}
		errs = append(errs, e.teardown(ctx, rec), removeDir(e.sessionDir(id)))
		rep.Sessions = append(rep.Sessions, id)
		lk.unlock()
	}

	for id, pids := range findInits(e.cfg.Prefix) {
		if liveIDs[id] {
			continue
		}
		for _, pid := range pids {
			start, _ := procStart(pid)
			errs = append(errs, e.stopInit(ctx, pid, start))
			rep.Processes = append(rep.Processes, pid)
		}
	}
	links, err := hostLinks()
	errs = append(errs, err)
	for _, name := range links {
		if slot, ok := vethSlot(e.cfg.Prefix, name); ok && !liveSlots[slot] {
			errs = append(errs, deleteLink(name))
			rep.Veths = append(rep.Veths, name)
		}
	}
	if nft, err := nftables.New(); err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		tables, err := listTables(nft)
		errs = append(errs, err)
		for _, t := range tables {
			if slot, ok := tableSlot(e.cfg.Prefix, t); ok && !liveSlots[slot] {
				errs = append(errs, deleteTable(nft, t))
				rep.Tables = append(rep.Tables, t)
			}
		}
	}
	for _, base := range e.facts.cgroups.Bases {
		entries, _ := os.ReadDir(base)
		for _, d := range entries {
			id := cgroupID(d.Name())
			if !d.IsDir() || liveIDs[id] {
				continue
			}
			if _, ok := parseID(e.cfg.Prefix, id); !ok {
				continue
			}
			dir := filepath.Join(base, d.Name())
			errs = append(errs, removeCgroupDir(ctx, dir))
			rep.Cgroups = append(rep.Cgroups, dir)
		}
	}
	e.removeBases()
	for _, c := range []struct {
		dir string
		key func(string) bool
	}{{AddrClaimDir, isAddrKey}, {IDClaimDir, isIDKey}} {
		claims, err := sweepClaims(c.dir, e.cfg.Prefix, c.key)
		errs = append(errs, err)
		rep.Claims = append(rep.Claims, claims...)
	}
	if entries, err := os.ReadDir(e.sessionsDir()); err == nil {
		for _, d := range entries {
			if _, ok := parseID(e.cfg.Prefix, d.Name()); !ok {
				path := filepath.Join(e.sessionsDir(), d.Name())
				errs = append(errs, removeDir(path))
				rep.Dirs = append(rep.Dirs, path)
			}
		}
	}
	if !rep.Empty() {
		e.log.Info("swept leftovers", "report", rep)
		e.fillSpares() // the slots of what it removed are free
	}
	return rep, errors.Join(errs...)
}
