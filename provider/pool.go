package provider

import (
	"context"
	"sort"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// pool is the warm desktops of one shape.
type pool struct {
	shape    Shape
	ready    []*desktop // oldest first
	inflight int        // creates and resets that will land here
	lastUsed time.Time
	pinned   bool // listed in Config.Warm: never dropped for idleness
	failures int  // consecutive failed creates, for the back-off
	retryAt  time.Time
}

// remove takes d out of p's warm desktops.
func (p *pool) remove(d *desktop) {
	for i, r := range p.ready {
		if r == d {
			p.ready = append(p.ready[:i], p.ready[i+1:]...)
			return
		}
	}
}

// Pool back-off after failed creates: doubling from the minimum, capped at the
// maximum, so a broken image does not burn the CPU in a create loop.
const (
	minCreateBackoff = time.Second
	maxCreateBackoff = time.Minute
)

// maintenanceInterval is how often idle pools are dropped and warm desktops
// checked for a dead stack (a lease checks the one it takes anyway); it must
// stay well below Config.PoolIdle's useful values (minutes).
const maintenanceInterval = 30 * time.Second

// poolLocked returns shape's pool, making it if needed.
func (m *Manager) poolLocked(s Shape) *pool {
	p := m.pools[s]
	if p == nil {
		p = &pool{shape: s, lastUsed: time.Now()}
		m.pools[s] = p
	}
	return p
}

// takeWarmLocked takes a warm desktop of shape s, if its pool has one, and
// marks the pool used. A shape gets a pool only once a desktop of it
// started, so a lease that cannot start (say, an unknown image) does not
// leave the filler retrying it.
func (m *Manager) takeWarmLocked(s Shape, snapDir string) *desktop {
	p := m.pools[s]
	if p == nil {
		return nil
	}
	p.lastUsed = time.Now()
	return m.popReadyLocked(p, snapDir)
}

// popReadyLocked takes the oldest warm desktop of p that started from the
// snapshot's current files and whose engine state is still ready (a warm
// desktop whose X server died must not be handed out).
func (m *Manager) popReadyLocked(p *pool, snapDir string) *desktop {
	for len(p.ready) > 0 {
		d := p.ready[0]
		p.ready = p.ready[1:]
		if d.snapDir == snapDir && m.aliveLocked(d) {
			return d
		}
		m.retireLocked(d) // stale or broken: recycling resets or removes it
	}
	return nil
}

// aliveLocked asks the engine whether a desktop is still ready; it reads a
// record and checks a pid, well under a millisecond.
func (m *Manager) aliveLocked(d *desktop) bool {
	s, err := m.eng.Get(d.sess.ID)
	if err != nil || s.State != sessions.StateReady {
		m.met.failure("warm-desktop-died")
		m.log.Warn("warm desktop is not ready", "id", d.id, "err", err)
		return false
	}
	return true
}

// recycle resets a released desktop into its shape's pool when that pool
// wants one (a reset is cheaper than a start), and removes it otherwise.
func (m *Manager) recycle(d *desktop) {
	m.mu.Lock()
	p := m.pools[d.shape]
	cur, err := m.snapDirLocked(d.shape.Snapshot)
	want := p != nil && err == nil && cur == d.snapDir && len(p.ready)+p.inflight < m.cfg.PoolSize
	if want {
		p.inflight++
	}
	m.mu.Unlock()
	if want {
		ctx, cancel := context.WithTimeout(m.bgCtx, m.cfg.CreateTimeout)
		t0 := time.Now()
		sess, err := m.eng.Reset(ctx, d.sess.ID)
		cancel()
		m.met.reset.observe("", time.Since(t0))
		m.mu.Lock()
		p.inflight--
		if err == nil && m.pools[d.shape] == p && m.desktops[d.id] == d {
			d.sess = sess // under the id retireLocked gave it
			m.watchLocked(d)
			m.readyLocked(p, d)
			m.mu.Unlock()
			m.kickFiller()
			return
		}
		m.mu.Unlock()
		if err != nil {
			m.met.failure("reset")
			m.log.Warn("reset released desktop", "id", d.id, "err", err)
		}
	}
	m.destroy(d)
}

// readyLocked puts d into pool p as a warm desktop and says so to those
// waiting for one.
func (m *Manager) readyLocked(p *pool, d *desktop) {
	d.state = client.StateReady
	p.ready = append(p.ready, d)
	m.persistLocked(d)
	m.notifyLocked()
}

// kickFiller asks the pool filler to look at the pools again.
func (m *Manager) kickFiller() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// filler keeps every pool at its size until Close.
func (m *Manager) filler() {
	defer m.bg.Done()
	t := time.NewTicker(m.maintenance)
	defer t.Stop()
	for {
		m.fill()
		select {
		case <-m.bgCtx.Done():
			return
		case <-m.kick:
		case <-t.C:
		}
	}
}

// fill drops idle pools and starts the creates the others lack.
func (m *Manager) fill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bgCtx.Err() != nil {
		return
	}
	now := time.Now()
	shapes := make([]Shape, 0, len(m.pools))
	for s := range m.pools {
		shapes = append(shapes, s)
	}
	// Most recently used first: under a tight capacity they get the slots.
	sort.Slice(shapes, func(i, j int) bool { return m.pools[shapes[i]].lastUsed.After(m.pools[shapes[j]].lastUsed) })
	for _, s := range shapes {
		p := m.pools[s]
		snapDir, err := m.snapDirLocked(s.Snapshot)
		if err != nil || (!p.pinned && now.Sub(p.lastUsed) > m.cfg.PoolIdle) {
			m.dropPoolLocked(p)
			continue
		}
		keep := p.ready[:0]
		for _, d := range p.ready {
			if m.aliveLocked(d) {
				keep = append(keep, d)
			} else {
				m.retireLocked(d)
			}
		}
		p.ready = keep
		for len(p.ready)+p.inflight < m.cfg.PoolSize && m.creating < m.cfg.MaxParallelCreates &&
			!now.Before(p.retryAt) && len(m.desktops)+m.reserved < m.cfg.Capacity {
			if _, err := m.reserveLocked(snapDir); err != nil {
				break
			}
			p.inflight++
			m.creating++
			m.bg.Add(1)
			go m.fillOne(p, snapDir)
		}
	}
}

// dropPoolLocked retires a pool's warm desktops and forgets it (unless a
// create for it is in flight: it is dropped when that lands).
func (m *Manager) dropPoolLocked(p *pool) {
	for _, d := range p.ready {
		m.retireLocked(d)
	}
	p.ready = nil
	if p.inflight == 0 {
		delete(m.pools, p.shape)
	}
}

func (m *Manager) fillOne(p *pool, snapDir string) {
	defer m.bg.Done()
	d, err := m.create(m.bgCtx, p.shape, snapDir)
	m.mu.Lock()
	p.inflight--
	m.creating--
	if err != nil {
		p.failures++
		backoff := min(minCreateBackoff<<min(p.failures-1, 10), maxCreateBackoff)
		p.retryAt = time.Now().Add(backoff)
		m.mu.Unlock()
		m.log.Warn("start warm desktop", "shape", p.shape.String(), "retry_in", backoff, "err", err)
		time.AfterFunc(backoff, m.kickFiller)
		return
	}
	p.failures = 0
	cur, cerr := m.snapDirLocked(p.shape.Snapshot)
	if m.pools[p.shape] == p && cerr == nil && cur == snapDir && len(p.ready) < m.cfg.PoolSize && m.bgCtx.Err() == nil {
		m.readyLocked(p, d)
		m.mu.Unlock()
		m.kickFiller()
		return
	}
	if m.pools[p.shape] == p && len(p.ready) == 0 && p.inflight == 0 && cerr != nil {
		delete(m.pools, p.shape)
	}
	if m.bgCtx.Err() != nil {
		// Shutting down: keep it as a warm desktop for the next daemon.
		d.state = client.StateReady
		m.persistLocked(d)
		m.mu.Unlock()
		return
	}
	m.retireLocked(d)
	m.mu.Unlock()
}
