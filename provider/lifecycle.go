package provider

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/drums-dev/drums/provider/client"
)

// Start takes the state directory, adopts the desktops a previous daemon
// left (leased ones keep their lease, warm ones return to their pools),
// removes every other session of the engine's host prefix, and starts the
// pools. The engine's Adopt and Sweep are authoritative for what runs; the
// records say what each running desktop was.
func (m *Manager) Start(ctx context.Context) error {
	if err := m.st.init(); err != nil {
		return err
	}
	lf, err := lockState(m.cfg.StateDir)
	if err != nil {
		return err
	}
	m.lockFile = lf
	if err := m.st.removeTemps(); err != nil {
		lf.Close()
		return err
	}
	m.started = time.Now()
	if err := m.recover(ctx); err != nil {
		lf.Close()
		return err
	}
	m.eng.StartSpares() // the prefix is this daemon's, its leftovers adopted or removed
	m.mu.Lock()
	for _, s := range m.cfg.Warm {
		if s.Image == "" { // a lease without an image gets the default: the same shape
			s.Image = m.cfg.Image
		}
		p := m.poolLocked(s)
		p.pinned = true
	}
	m.mu.Unlock()
	m.bg.Add(1)
	go m.filler()
	return nil
}

func (m *Manager) recover(ctx context.Context) error {
	snaps, err := m.st.snapshots()
	if err != nil {
		return err
	}
	for _, r := range snaps {
		if fi, err := os.Stat(r.Dir); err != nil || !fi.IsDir() {
			m.log.Warn("snapshot lost its files; forgetting it", "name", r.Name, "dir", r.Dir)
			if err := m.st.deleteSnapshot(r.Name); err != nil {
				return err
			}
			continue
		}
		m.snaps[r.Name] = r
	}
	recs, err := m.st.desktops()
	if err != nil {
		return err
	}
	byID := make(map[string]desktopRecord, len(recs)) // by session
	for _, r := range recs {
		if r.Session == "" { // written before desktops had ids of their own
			r.Session = r.ID
		}
		byID[r.Session] = r
	}
	live, err := m.eng.Adopt(ctx)
	if err != nil {
		return fmt.Errorf("adopt desktops of the previous daemon: %w", err)
	}
	now := time.Now()
	var adopted, removed, expired int
	var toRetire []*desktop
	m.mu.Lock()
	for _, sess := range live {
		r, ok := byID[sess.ID]
		delete(byID, sess.ID)
		cur, serr := m.snapDirLocked(r.Shape.Snapshot)
		keep := ok && (r.State == client.StateLeased || (r.State == client.StateReady && serr == nil && cur == r.SnapshotDir))
		if !keep {
			m.mu.Unlock()
			if err := m.eng.Remove(ctx, sess.ID); err != nil {
				return fmt.Errorf("remove unrecorded desktop %s: %w", sess.ID, err)
			}
			m.unpersist(sess.ID)
			m.mu.Lock()
			removed++
			continue
		}
		d := &desktop{id: r.ID, sess: sess, shape: r.Shape, snapDir: r.SnapshotDir, created: r.Created, state: r.State}
		m.desktops[d.id] = d
		m.watchLocked(d)
		adopted++
		switch r.State {
		case client.StateReady:
			p := m.poolLocked(d.shape)
			p.ready = append(p.ready, d)
		case client.StateLeased:
			d.lease = time.Duration(r.LeaseSeconds) * time.Second
			if d.lease <= 0 {
				d.lease = m.cfg.LeaseTime
			}
			d.leaseExpires = r.LeaseExpires
			d.holder, d.takeover = r.Holder, r.Takeover
			if !now.Before(r.LeaseExpires) {
				toRetire = append(toRetire, d)
				expired++
				continue
			}
			d.timer = time.AfterFunc(r.LeaseExpires.Sub(now), func() { m.expire(d) })
			m.poolLocked(d.shape) // its shape is in use: keep a warm one
		}
	}
	for _, d := range toRetire {
		m.met.expired.Add(1)
		m.retireLocked(d)
	}
	m.mu.Unlock()
	var lost int
	for id := range byID {
		m.unpersist(id)
		lost++
	}
	rep, err := m.eng.Sweep(ctx)
	if err != nil {
		return fmt.Errorf("sweep leftovers of earlier daemons: %w", err)
	}
	m.mu.Lock()
	m.gcSnapshotsLocked()
	m.mu.Unlock()
	m.log.Info("recovered state", "adopted", adopted, "removed_unrecorded", removed, "expired", expired,
		"records_without_desktop", lost, "snapshots", len(m.snaps), "sweep", fmt.Sprintf("%+v", rep))
	return nil
}

// Close stops the pools and waits for background work. With drain, every
// desktop is removed; without, they keep running and the next daemon on the
// same state directory adopts them.
func (m *Manager) Close(ctx context.Context, drain bool) error {
	// Leases stop expiring before the wait: an expiry retires its desktop,
	// which starts background work (a recycle) that the wait would miss. A
	// timer already firing finds closing set and does nothing.
	m.mu.Lock()
	m.closing = true
	for _, d := range m.desktops {
		if d.timer != nil {
			d.timer.Stop()
		}
	}
	m.mu.Unlock()
	m.bgCancel()
	done := make(chan struct{})
	go func() { m.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("wait for background work: %w", ctx.Err())
	}
	var errs []error
	if drain {
		// The engine's list, not ours: it also holds desktops whose removal
		// failed in the background.
		for _, s := range m.eng.List() {
			if err := m.eng.Remove(ctx, s.ID); err != nil {
				errs = append(errs, fmt.Errorf("remove desktop %s: %w", s.ID, err))
				continue
			}
			m.unpersist(s.ID)
		}
		// A drain leaves nothing of the prefix: what a start interrupted
		// by an earlier kill left (a claim taken before its init ran, say)
		// goes too, as at the next start.
		rep, err := m.eng.Sweep(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep after the drain: %w", err))
		} else if !rep.Empty() {
			m.log.Warn("swept after the drain", "report", fmt.Sprintf("%+v", rep))
		}
	}
	if m.lockFile != nil {
		errs = append(errs, m.lockFile.Close())
	}
	return errors.Join(errs...)
}
