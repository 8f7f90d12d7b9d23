package provider

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// Manager owns the daemon's desktops: the warm pools, the leases and their
// expiry, reverts, snapshots and the records on disk. Its methods are safe
// for concurrent use.
//
// Locking: mu guards every map and every desktop's state fields and is never
// held across an engine call that starts, stops or copies anything (Get, a
// record read, is the one exception). A desktop's op mutex serialises the long
// operations on it (revert, snapshot, release, expiry) and is taken before
// mu, never after.
type Manager struct {
	cfg Config
	eng Engine
	log *slog.Logger
	st  store
	met *metrics

	bgCtx    context.Context // canceled by Close: background work stops
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
	kick     chan struct{}
	lockFile *os.File
	started  time.Time

	mu       sync.Mutex
	desktops map[string]*desktop
	pools    map[Shape]*pool
	snaps    map[string]snapshotRecord
	reserved int            // engine creates in flight, counted against Capacity
	creating int            // of those, the pool's (bounded by MaxParallelCreates)
	pending  map[string]int // snapshot dirs that creates in flight start from
	// changed is closed (and replaced) whenever a slot may have been freed
	// or a warm desktop appeared; a lease at capacity waits on it.
	changed chan struct{}
	// closing is set by Close before it waits for background work: from
	// then on no lease expires, so no timer can start a recycle.
	closing bool
}

// desktop is one engine session as the daemon manages it.
type desktop struct {
	op sync.Mutex

	// id is the API's: the session's id and a random generation, new each
	// time the desktop goes back to a pool, so a request meant for an
	// earlier lease (a retried release, say) never acts on a later one.
	id      string
	sess    *sessions.Session
	shape   Shape
	snapDir string
	created time.Time
	// state is one of client.State*; leaseExpires, lease and timer are set
	// while it is leased.
	state        string
	failure      string // why it died, when state is failed
	lease        time.Duration
	leaseExpires time.Time
	timer        *time.Timer
}

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

// NewManager makes a manager; Start adopts what a previous daemon left and
// starts the pools.
func NewManager(cfg Config, eng Engine, log *slog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		cfg:      cfg,
		eng:      eng,
		log:      log.With("component", "provider"),
		st:       store{dir: cfg.StateDir},
		met:      newMetrics(),
		bgCtx:    ctx,
		bgCancel: cancel,
		kick:     make(chan struct{}, 1),
		desktops: map[string]*desktop{},
		pools:    map[Shape]*pool{},
		snaps:    map[string]snapshotRecord{},
		pending:  map[string]int{},
		changed:  make(chan struct{}),
	}, nil
}

// notifyLocked wakes the leases waiting for a slot or a warm desktop.
func (m *Manager) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// view is the API object of d. Call with mu held.
func (d *desktop) view() client.Desktop {
	v := client.Desktop{
		ID:       d.id,
		Width:    d.shape.Width,
		Height:   d.shape.Height,
		State:    d.state,
		Snapshot: d.shape.Snapshot,
		Image:    d.shape.Image,
		Created:  d.created,
	}
	if d.sess != nil {
		v.Address = d.sess.Address
		v.GuestPort = d.sess.GuestPort
		v.GuestURL = fmt.Sprintf("http://%s:%d", d.sess.Address, d.sess.GuestPort)
	}
	if d.state == client.StateLeased {
		v.LeaseExpires = d.leaseExpires
	}
	return v
}

func (d *desktop) record() desktopRecord {
	r := desktopRecord{ID: d.id, Session: d.sess.ID, Shape: d.shape, SnapshotDir: d.snapDir, State: d.state, Created: d.created}
	if d.state == client.StateLeased {
		r.LeaseExpires = d.leaseExpires
		r.LeaseSeconds = int(d.lease / time.Second)
	}
	return r
}

// persistLocked writes d's record. A failed write does not fail the request
// (the desktop works); it only means a restart would not adopt it, so it is
// logged and counted.
func (m *Manager) persistLocked(d *desktop) {
	if err := m.st.putDesktop(d.record()); err != nil {
		m.met.failure("persist")
		m.log.Warn("persist desktop", "id", d.id, "err", err)
	}
}

func (m *Manager) unpersist(id string) {
	if err := m.st.deleteDesktop(id); err != nil {
		m.met.failure("persist")
		m.log.Warn("unpersist desktop", "id", id, "err", err)
	}
}

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

// newDesktopID is a desktop's API id for session sess: never the same
// twice (64 random bits).
func newDesktopID(sess string) string {
	return sess + "." + rand.Text()[:13]
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

// snapDirLocked is the directory of the named snapshot's current files.
func (m *Manager) snapDirLocked(name string) (string, error) {
	if name == "" {
		return "", nil
	}
	r, ok := m.snaps[name]
	if !ok {
		return "", fmt.Errorf("snapshot %q does not exist: %w", name, ErrUnknownSnapshot)
	}
	return r.Dir, nil
}

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

// retireLocked takes d out of service: it stops its lease, drops its record,
// and recycles it in the background (back to a pool after a reset, or
// removed). The caller has taken d out of any pool's ready list.
func (m *Manager) retireLocked(d *desktop) {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.state = client.StateRecycling
	m.unpersist(d.sess.ID)
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.recycle(d)
	}()
}

// reserveLocked counts one engine create against Capacity. At capacity it
// evicts the warm desktop of the least recently leased pool and returns it:
// the caller must destroy it before starting the create.
func (m *Manager) reserveLocked(snapDir string) (evicted *desktop, err error) {
	if len(m.desktops)+m.reserved >= m.cfg.Capacity {
		var victim *pool
		for _, p := range m.pools {
			if len(p.ready) > 0 && (victim == nil || p.lastUsed.Before(victim.lastUsed)) {
				victim = p
			}
		}
		if victim == nil {
			return nil, fmt.Errorf("all %d desktops are in use (leased, starting or recycling); release one or raise --capacity: %w", m.cfg.Capacity, ErrCapacity)
		}
		evicted = victim.ready[0]
		victim.ready = victim.ready[1:]
		evicted.state = client.StateRecycling
		m.unpersist(evicted.sess.ID)
	}
	m.reserved++
	if snapDir != "" {
		m.pending[snapDir]++
	}
	return evicted, nil
}

func (m *Manager) unreserveLocked(snapDir string) {
	defer m.notifyLocked()
	m.reserved--
	if snapDir != "" {
		if m.pending[snapDir]--; m.pending[snapDir] <= 0 {
			delete(m.pending, snapDir)
		}
	}
}

// create starts a desktop of shape s for a reservation made with
// reserveLocked, and releases that reservation. The start is not bound to
// the caller's context: a client that goes away mid-start leaves a desktop
// that the pool can use.
func (m *Manager) create(ctx context.Context, s Shape, snapDir string) (*desktop, error) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CreateTimeout)
	defer cancel()
	t0 := time.Now()
	sess, err := m.eng.Create(cctx, s.request(snapDir))
	m.met.create.observe("", time.Since(t0))
	if err != nil {
		m.mu.Lock()
		m.unreserveLocked(snapDir)
		m.mu.Unlock()
		m.met.failure("create")
		m.kickFiller()
		return nil, fmt.Errorf("start desktop %s: %w", s, err)
	}
	d := &desktop{id: newDesktopID(sess.ID), sess: sess, shape: s, snapDir: snapDir, created: time.Now(), state: client.StateCreating}
	m.mu.Lock()
	m.unreserveLocked(snapDir)
	m.desktops[d.id] = d
	m.watchLocked(d)
	m.mu.Unlock()
	return d, nil
}

// destroy removes d from the engine and from the daemon's books. A failed
// removal is logged: the engine's sweep at the next start collects it.
func (m *Manager) destroy(d *desktop) {
	ctx, cancel := context.WithTimeout(m.bgCtx, m.cfg.CreateTimeout)
	err := m.eng.Remove(ctx, d.sess.ID)
	cancel()
	if err != nil {
		m.met.failure("remove")
		m.log.Warn("remove desktop", "id", d.id, "err", err)
	}
	m.mu.Lock()
	if m.desktops[d.id] == d {
		delete(m.desktops, d.id)
	}
	m.unpersist(d.sess.ID)
	m.gcSnapshotsLocked()
	m.notifyLocked()
	m.mu.Unlock()
	m.kickFiller()
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
			// A new hand-out, a new id: the released one is gone for good.
			delete(m.desktops, d.id)
			d.id = newDesktopID(sess.ID)
			m.desktops[d.id] = d
			d.sess = sess
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
		m.leaseLocked(warm, dur)
		v := warm.view()
		m.mu.Unlock()
		m.kickFiller()
		m.met.lease.observe("warm", time.Since(t0))
		return v, nil
	}
	m.mu.Unlock()
	m.kickFiller() // so the next lease of this shape finds a warm one
	v, err := m.startLeased(ctx, s, snapDir, evicted, dur)
	if err != nil {
		m.met.failure("lease")
		return client.Desktop{}, err
	}
	m.met.lease.observe("cold", time.Since(t0))
	return v, nil
}

// startLeased starts a desktop of shape s in the slot acquireLocked
// reserved, once the desktop it evicted for it (if any) is gone, and leases
// it for dur. Called without mu.
func (m *Manager) startLeased(ctx context.Context, s Shape, snapDir string, evicted *desktop, dur time.Duration) (client.Desktop, error) {
	if evicted != nil {
		m.destroy(evicted)
	}
	d, err := m.create(ctx, s, snapDir)
	if err != nil {
		return client.Desktop{}, err
	}
	m.mu.Lock()
	m.leaseLocked(d, dur)
	m.poolLocked(s).lastUsed = time.Now() // a shape that starts: keep it warm
	v := d.view()
	m.mu.Unlock()
	return v, nil
}

// lookup finds a desktop by id.
func (m *Manager) lookup(id string) (*desktop, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.desktops[id]
	if d == nil {
		return nil, fmt.Errorf("desktop %q does not exist (released, expired or never leased): %w", id, ErrNotFound)
	}
	return d, nil
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

// Get returns one desktop.
func (m *Manager) Get(id string) (client.Desktop, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.desktops[id]
	if d == nil {
		return client.Desktop{}, fmt.Errorf("desktop %q does not exist (released, expired or never leased): %w", id, ErrNotFound)
	}
	return d.view(), nil
}

// List returns every desktop, leased ones first, then by id.
func (m *Manager) List() []client.Desktop {
	m.mu.Lock()
	out := make([]client.Desktop, 0, len(m.desktops))
	for _, d := range m.desktops {
		out = append(out, d.view())
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		li, lj := out[i].State == client.StateLeased, out[j].State == client.StateLeased
		if li != lj {
			return li
		}
		return out[i].ID < out[j].ID
	})
	return out
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
	if w := m.takeWarmLocked(target, snapDir); w != nil {
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
		m.unpersist(d.id)
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
		m.leaseLocked(w, lease)
		v := w.view()
		m.mu.Unlock()
		m.met.revert.observe("swap", time.Since(t0))
		return v, nil
	}
	m.mu.Unlock()
	v, err := m.startLeased(ctx, target, snapDir, evicted, lease)
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
	d.sess, d.failure = sess, ""
	m.watchLocked(d)
	m.leaseLocked(d, d.lease)
	m.met.revert.observe("reset", time.Since(t0))
	return d.view(), nil
}

// health is the body of GET /v1/health.
func (m *Manager) health() client.Health {
	return client.Health{Status: "ok", Started: m.started, Capacity: m.cfg.Capacity, Desktops: m.countByState()}
}

func (m *Manager) countByState() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[string]int{client.StateCreating: m.reserved, client.StateReady: 0, client.StateLeased: 0, client.StateRecycling: 0, client.StateFailed: 0}
	for _, d := range m.desktops {
		c[d.state]++
	}
	return c
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
	t := time.NewTicker(maintenanceInterval)
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
