package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// leaseFor turns a requested lease time into a duration, checking its range
// before any arithmetic (a huge value would overflow a Duration).
func (m *Manager) leaseFor(seconds int) (time.Duration, error) {
	if seconds == 0 {
		return m.cfg.LeaseTime, nil
	}
	maxSeconds := int64(m.cfg.MaxLease / time.Second)
	if seconds < 0 || int64(seconds) > maxSeconds {
		return 0, fmt.Errorf("lease_seconds %d: must be in [1, %d]: %w", seconds, maxSeconds, ErrBadRequest)
	}
	return time.Duration(seconds) * time.Second, nil
}

func (m *Manager) shapeOf(req client.LeaseRequest) (Shape, error) {
	s := Shape{
		Width:    req.Width,
		Height:   req.Height,
		Snapshot: req.Snapshot,
		Image:    req.Image,
		Limits:   sessions.Limits{MemoryBytes: req.Limits.MemoryBytes, Pids: req.Limits.Pids, CPUs: req.Limits.CPUs},
		NoEgress: req.NoEgress,
	}
	if s.Width == 0 && s.Height == 0 {
		s.Width, s.Height = m.cfg.Width, m.cfg.Height
	}
	if s.Image == "" {
		s.Image = m.cfg.Image
	} else if err := checkImageName(s.Image); err != nil {
		return Shape{}, err
	}
	if err := checkSize(s.Width, s.Height); err != nil {
		return Shape{}, err
	}
	if s.Snapshot != "" {
		if err := checkSnapshotName(s.Snapshot); err != nil {
			return Shape{}, err
		}
	}
	if err := s.Limits.Check(); err != nil {
		return Shape{}, fmt.Errorf("%w: %w", err, ErrBadRequest)
	}
	return s, nil
}

// maxHolder bounds a lease's holder, in characters: a name for people
// (openapi.json's pattern says the same).
const maxHolder = 200

// checkHolder accepts a holder of at most maxHolder characters and no
// control characters (it is shown on a page and in logs).
func checkHolder(h string) error {
	if utf8.RuneCountInString(h) > maxHolder || strings.ContainsFunc(h, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("holder %q: at most %d characters, none of them control characters: %w", h, maxHolder, ErrBadRequest)
	}
	return nil
}

// leaseLocked hands d out for dur from now and arms its expiry.
func (m *Manager) leaseLocked(d *desktop, dur time.Duration) {
	d.state = client.StateLeased
	d.lease = dur
	d.leaseExpires = time.Now().Add(dur)
	if d.timer != nil {
		d.timer.Stop()
	}
	d.timer = time.AfterFunc(dur, func() { m.expire(d) })
	m.persistLocked(d)
}

// expire ends d's lease if it has not been renewed meanwhile.
func (m *Manager) expire(d *desktop) {
	d.op.Lock()
	defer d.op.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing || m.desktops[d.id] != d || (d.state != client.StateLeased && d.state != client.StateFailed) || time.Now().Before(d.leaseExpires) {
		return
	}
	m.met.expired.Add(1)
	m.log.Info("lease expired", "id", d.id)
	m.retireLocked(d)
}

// acquireLocked finds for shape s a warm desktop, or else reserves a slot to
// start one (with, at capacity, a warm desktop of another shape evicted:
// the caller destroys it first). When every slot is taken but some are
// pool work in progress (warm desktops starting, released ones being reset
// or removed), it waits for that work, up to CreateTimeout: the pool must
// never make a lease fail. It fails with ErrCapacity only when the slots
// are leased or starting for leases. Called and returns with mu held; it
// releases mu while it waits.
func (m *Manager) acquireLocked(ctx context.Context, s Shape) (warm, evicted *desktop, snapDir string, err error) {
	deadline := time.NewTimer(m.cfg.CreateTimeout)
	defer deadline.Stop()
	for {
		if snapDir, err = m.snapDirLocked(s.Snapshot); err != nil {
			return nil, nil, "", err
		}
		if warm = m.takeWarmLocked(s, snapDir); warm != nil {
			return warm, nil, snapDir, nil
		}
		evicted, err = m.reserveLocked(snapDir)
		if err == nil || !errors.Is(err, ErrCapacity) || !m.poolWorkLocked() {
			return nil, evicted, snapDir, err
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ch:
			m.mu.Lock()
		case <-ctx.Done():
			m.mu.Lock()
			return nil, nil, "", fmt.Errorf("wait for a free desktop slot: %w", ctx.Err())
		case <-deadline.C:
			m.mu.Lock()
			return nil, nil, "", err
		}
	}
}

// poolWorkLocked reports whether some slots are held by pool work that will
// end in a warm (evictable) desktop or a removal.
func (m *Manager) poolWorkLocked() bool {
	if m.creating > 0 {
		return true
	}
	for _, d := range m.desktops {
		if d.state == client.StateRecycling {
			return true
		}
	}
	return false
}

// Lease hands out a ready desktop of the requested shape: a warm one at
// once, or a new one started now.
func (m *Manager) Lease(ctx context.Context, req client.LeaseRequest) (client.Desktop, error) {
	t0 := time.Now()
	s, err := m.shapeOf(req)
	if err != nil {
		return client.Desktop{}, err
	}
	dur, err := m.leaseFor(req.LeaseSeconds)
	if err != nil {
		return client.Desktop{}, err
	}
	if err := checkHolder(req.Holder); err != nil {
		return client.Desktop{}, err
	}
	m.mu.Lock()
	warm, evicted, snapDir, err := m.acquireLocked(ctx, s)
	if err != nil {
		m.mu.Unlock()
		if errors.Is(err, ErrCapacity) {
			m.met.failure("lease")
		}
		return client.Desktop{}, err
	}
	if warm != nil {
		warm.holder = req.Holder
		m.leaseLocked(warm, dur)
		v := warm.view()
		m.mu.Unlock()
		m.kickFiller()
		m.met.lease.observe("warm", time.Since(t0))
		return v, nil
	}
	m.mu.Unlock()
	m.kickFiller() // so the next lease of this shape finds a warm one
	v, err := m.startLeased(ctx, s, snapDir, evicted, dur, req.Holder)
	if err != nil {
		m.met.failure("lease")
		return client.Desktop{}, err
	}
	m.met.lease.observe("cold", time.Since(t0))
	return v, nil
}

// startLeased starts a desktop of shape s in the slot acquireLocked
// reserved, once the desktop it evicted for it (if any) is gone, and leases
// it for dur to holder. Called without mu.
func (m *Manager) startLeased(ctx context.Context, s Shape, snapDir string, evicted *desktop, dur time.Duration, holder string) (client.Desktop, error) {
	if evicted != nil {
		m.destroy(evicted)
	}
	d, err := m.create(ctx, s, snapDir)
	if err != nil {
		return client.Desktop{}, err
	}
	m.mu.Lock()
	d.holder = holder
	m.leaseLocked(d, dur)
	m.poolLocked(s).lastUsed = time.Now() // a shape that starts: keep it warm
	v := d.view()
	m.mu.Unlock()
	m.kickFiller() // the shape's pool exists only now
	return v, nil
}

// leasedLocked checks, after d's op lock was taken, that d is still the
// daemon's and leased.
func (m *Manager) leasedLocked(d *desktop) error {
	if m.desktops[d.id] != d {
		return fmt.Errorf("desktop %q does not exist (released, expired or reverted into another): %w", d.id, ErrNotFound)
	}
	if d.state == client.StateFailed {
		return fmt.Errorf("desktop %q died (%s); revert it for a new one or release it: %w", d.id, d.failure, ErrConflict)
	}
	if d.state != client.StateLeased {
		return fmt.Errorf("desktop %q is %s, not leased: %w", d.id, d.state, ErrConflict)
	}
	return nil
}

// lockLeased looks up a leased desktop and takes its op lock, then mu:
// it returns with both held (the caller releases them), or an error with
// neither.
func (m *Manager) lockLeased(id string) (*desktop, error) {
	d, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	d.op.Lock()
	m.mu.Lock()
	if err := m.leasedLocked(d); err != nil {
		m.mu.Unlock()
		d.op.Unlock()
		return nil, err
	}
	return d, nil
}

// Renew extends a lease from now.
func (m *Manager) Renew(id string, seconds int) (client.Desktop, error) {
	dur, err := m.leaseFor(seconds)
	if err != nil {
		return client.Desktop{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.desktops[id]
	if d == nil {
		return client.Desktop{}, fmt.Errorf("desktop %q does not exist (released, expired or never leased): %w", id, ErrNotFound)
	}
	if err := m.leasedLocked(d); err != nil {
		return client.Desktop{}, err
	}
	m.leaseLocked(d, dur)
	return d.view(), nil
}

// Release gives a desktop back. Releasing one that is gone succeeds; a warm
// desktop released by id leaves its pool.
func (m *Manager) Release(id string) error {
	m.mu.Lock()
	d := m.desktops[id]
	m.mu.Unlock()
	if d == nil {
		return nil
	}
	d.op.Lock()
	defer d.op.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.desktops[id] != d {
		return nil
	}
	switch d.state {
	case client.StateLeased, client.StateFailed:
		m.retireLocked(d)
	case client.StateReady:
		if p := m.pools[d.shape]; p != nil {
			p.remove(d)
		}
		m.retireLocked(d)
	}
	return nil
}

// Revert returns a clean desktop of the leased one's shape, or one started
// from the named snapshot: a warm one swapped in at once when the pool has
// it (the answer then has a new id), else the same desktop reset in place,
// else a new one.
func (m *Manager) Revert(ctx context.Context, id, snapshot string) (client.Desktop, error) {
	t0 := time.Now()
	if snapshot != "" {
		if err := checkSnapshotName(snapshot); err != nil {
			return client.Desktop{}, err
		}
	}
	d, err := m.lookup(id)
	if err != nil {
		return client.Desktop{}, err
	}
	d.op.Lock()
	defer d.op.Unlock()
	m.mu.Lock()
	failed := d.state == client.StateFailed && m.desktops[d.id] == d
	if err := m.leasedLocked(d); err != nil && !failed {
		m.mu.Unlock()
		return client.Desktop{}, err
	}
	target := d.shape
	target.Snapshot = snapshot
	snapDir, err := m.snapDirLocked(snapshot)
	if err != nil {
		m.mu.Unlock()
		return client.Desktop{}, err
	}
	holder := d.holder
	if w := m.takeWarmLocked(target, snapDir); w != nil {
		w.holder = holder
		m.leaseLocked(w, d.lease)
		m.retireLocked(d)
		v := w.view()
		m.mu.Unlock()
		m.kickFiller()
		m.met.revert.observe("swap", time.Since(t0))
		return v, nil
	}
	if target == d.shape && snapDir == d.snapDir {
		m.mu.Unlock()
		m.kickFiller()
		return m.resetInPlace(ctx, d, t0)
	}
	// Another snapshot and no warm desktop of it: start one. The old desktop
	// goes to recycling first, which frees its slot when at capacity.
	lease := d.lease
	if len(m.desktops)+m.reserved >= m.cfg.Capacity {
		// Its slot is the new desktop's: remove it before the start, so the
		// engine never holds more than Capacity.
		d.timer.Stop()
		d.state = client.StateRecycling
		m.retireIDLocked(d)
		m.unpersist(d.sess.ID)
		m.mu.Unlock()
		m.destroy(d)
		m.mu.Lock()
	} else {
		m.retireLocked(d)
	}
	w, evicted, snapDir, err := m.acquireLocked(ctx, target)
	if err != nil {
		m.mu.Unlock()
		m.met.failure("revert")
		return client.Desktop{}, err
	}
	if w != nil { // a warm one appeared while we waited for a slot
		w.holder = holder
		m.leaseLocked(w, lease)
		v := w.view()
		m.mu.Unlock()
		m.met.revert.observe("swap", time.Since(t0))
		return v, nil
	}
	m.mu.Unlock()
	v, err := m.startLeased(ctx, target, snapDir, evicted, lease, holder)
	if err != nil {
		m.met.failure("revert")
		return client.Desktop{}, err
	}
	m.met.revert.observe("create", time.Since(t0))
	return v, nil
}

// resetInPlace resets a leased desktop with its op lock held; the lease runs
// on from the end of the reset.
func (m *Manager) resetInPlace(ctx context.Context, d *desktop, t0 time.Time) (client.Desktop, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CreateTimeout)
	defer cancel()
	sess, err := m.eng.Reset(cctx, d.sess.ID)
	m.met.reset.observe("", time.Since(t0))
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.met.failure("revert")
		if m.desktops[d.id] == d && (d.state == client.StateLeased || d.state == client.StateFailed) {
			m.retireLocked(d) // broken: recycle tries a reset again, else removes it
		}
		return client.Desktop{}, fmt.Errorf("reset desktop %s: %w", d.id, err)
	}
	if m.desktops[d.id] != d || (d.state != client.StateLeased && d.state != client.StateFailed) {
		return client.Desktop{}, fmt.Errorf("desktop %q went away during its reset: %w", d.id, ErrNotFound)
	}
	d.sess, d.failure, d.takeover = sess, "", false
	m.watchLocked(d)
	m.leaseLocked(d, d.lease)
	m.met.revert.observe("reset", time.Since(t0))
	return d.view(), nil
}
