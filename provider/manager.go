package provider

import (
	"context"
	"crypto/rand"
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
	// thumbs caches the desktops' thumbnails; its HTTP client also
	// carries the takeover calls to guestd.
	thumbs *thumbnails

	// maintenance is maintenanceInterval (tests stretch it, so that only
	// a kick can start the filler).
	maintenance time.Duration

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
	// time it is released or expires (retireIDLocked), so a request meant for an
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
	// holder and takeover belong to the lease: cleared when it ends or
	// the desktop is reset (its guestd starts again view-only).
	holder   string
	takeover bool
}

// NewManager makes a manager; Start adopts what a previous daemon left and
// starts the pools.
func NewManager(cfg Config, eng Engine, log *slog.Logger) (*Manager, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		cfg:         cfg,
		eng:         eng,
		log:         log.With("component", "provider"),
		st:          store{dir: cfg.StateDir},
		maintenance: maintenanceInterval,
		bgCtx:       ctx,
		bgCancel:    cancel,
		kick:        make(chan struct{}, 1),
		desktops:    map[string]*desktop{},
		pools:       map[Shape]*pool{},
		snaps:       map[string]snapshotRecord{},
		pending:     map[string]int{},
		changed:     make(chan struct{}),
		thumbs:      newThumbnails(ctx),
	}
	m.met = newMetrics(m.countByState, cfg.Capacity, m.log)
	return m, nil
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
		if p := d.sess.Published; p != nil {
			v.Address = p.Address.String()
			v.GuestPort = int(p.Ports[0].Host)
			v.Ports = client.Ports{Guest: v.GuestPort, Chromium: int(p.Ports[1].Host), VNC: int(p.Ports[2].Host), VLC: int(p.Ports[3].Host)}
		}
		v.GuestURL = fmt.Sprintf("http://%s:%d", v.Address, v.GuestPort)
	}
	if d.state == client.StateLeased {
		v.LeaseExpires = d.leaseExpires
		v.Holder = d.holder
	}
	v.Takeover = d.takeover
	return v
}

func (d *desktop) record() desktopRecord {
	r := desktopRecord{ID: d.id, Session: d.sess.ID, Shape: d.shape, SnapshotDir: d.snapDir, State: d.state, Created: d.created}
	if d.state == client.StateLeased {
		r.LeaseExpires = d.leaseExpires
		r.LeaseSeconds = int(d.lease / time.Second)
		r.Holder = d.holder
		r.Takeover = d.takeover
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

// newDesktopID is a desktop's API id for session sess: never the same
// twice (64 random bits).
func newDesktopID(sess string) string {
	return sess + "." + rand.Text()[:13]
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

// retireLocked takes d out of service: it stops its lease, drops its record,
// and recycles it in the background (back to a pool after a reset, or
// removed). The caller has taken d out of any pool's ready list.
func (m *Manager) retireLocked(d *desktop) {
	if d.timer != nil {
		d.timer.Stop()
	}
	d.state = client.StateRecycling
	d.holder, d.takeover = "", false
	m.retireIDLocked(d)
	m.unpersist(d.sess.ID)
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		m.recycle(d)
	}()
}

// retireIDLocked takes d's API id out of use at once: from here on a
// request with it is a 404 (a retried release, a late renew), while the
// desktop is reset or removed in the background under a new id.
func (m *Manager) retireIDLocked(d *desktop) {
	delete(m.desktops, d.id)
	d.id = newDesktopID(d.sess.ID)
	m.desktops[d.id] = d
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

// lookup finds a desktop by id.
func (m *Manager) lookup(id string) (*desktop, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookupLocked(id)
}

// lookupLocked is lookup with m.mu held.
func (m *Manager) lookupLocked(id string) (*desktop, error) {
	d := m.desktops[id]
	if d == nil {
		return nil, fmt.Errorf("desktop %q does not exist (released, expired or never leased): %w", id, ErrNotFound)
	}
	return d, nil
}

// Get returns one desktop.
func (m *Manager) Get(id string) (client.Desktop, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, err := m.lookupLocked(id)
	if err != nil {
		return client.Desktop{}, err
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

// advertiseURL is Config.AdvertiseURL; "" for a nil Manager (the route
// table's tests).
func (m *Manager) advertiseURL() string {
	if m == nil {
		return ""
	}
	return m.cfg.AdvertiseURL
}
