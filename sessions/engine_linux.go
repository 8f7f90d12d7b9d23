package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/sessions/images"
)

// Engine creates, resets and removes the sessions of one host prefix. Its
// state is on disk (see state_linux.go), so several processes (a daemon,
// the CLI) can use the same prefix and a restarted daemon adopts what its
// predecessor left. All methods are safe for concurrent use.
type Engine struct {
	cfg   Config
	dir   string // <StateDir>/<prefix>
	log   *slog.Logger
	facts hostFacts

	imagesMu sync.Mutex
	images   *images.Store // opened by the first create (imageStore)

	mu sync.Mutex
	// children are the inits this process started, each closed once reaped.
	children map[int]chan struct{}
	held     map[string]heldClaims // by session id (watch_linux.go)
	// standbys are the sessions' standbys this process keeps
	// (standby_linux.go), by session id; launching counts the standbys
	// being started, starting has each one's channel, closed once it is
	// started or not, and closed stops new ones (Close). dying has, by
	// session id, the desktop a warm reset left dying, closed once it is
	// gone: the next standby, which takes its names, waits for it.
	// standbySlots holds a value for each standby that starts or is
	// about to (standbyStarts at most), and onStandby, if set (tests), is
	// told of each change of a standby's (standbyChangedLocked). closing
	// is closed by Close, for what waits to start.
	standbys     map[string]*standby
	starting     map[string]chan struct{}
	dying        map[string]<-chan struct{}
	launching    sync.WaitGroup
	closed       bool
	closing      chan struct{}
	standbySlots chan struct{}
	onStandby    func(id, what string)
	// spares are the spare desktops this process keeps (spare_linux.go),
	// oldest first, up or starting; endedSpares those taken off them for
	// the filler to remove; filling says the filler runs (counted in
	// launching). spareFails counts the spares failed since one was last
	// handed out, and sparesOff, once they are spareRetries, stops the
	// filler and says why. spareChange is closed (and replaced) at every
	// change of these (WaitSpares).
	// sparesOn says StartSpares was called; sparesFull that the filler
	// last stopped at capacity (logged once until a spare starts).
	spares      []*spare
	endedSpares []spareEnd
	sparesOn    bool
	filling     bool
	sparesFull  bool
	spareFails  int
	sparesOff   error
	spareChange chan struct{}
}

// New checks the host. It creates nothing (spares neither: StartSpares
// starts those): the prefix's state directory is made by the first create
// or sweep (prefixLock) and the image store is opened by the first create
// (imageStore), so that reading (List, Get, `drums session ls`) leaves no
// trace on the host.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("sessions need root (namespaces, mounts, veths, nftables, cgroups): %w", ErrUnsupported)
	}
	e := &Engine{cfg: cfg, dir: filepath.Join(cfg.StateDir, cfg.Prefix), log: cfg.Logger, children: map[int]chan struct{}{}, held: map[string]heldClaims{}, standbys: map[string]*standby{}, starting: map[string]chan struct{}{}, dying: map[string]<-chan struct{}{}, closing: make(chan struct{}), standbySlots: make(chan struct{}, standbyStarts), spareChange: make(chan struct{})}
	if e.facts, err = gatherFacts(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// prefixLock takes the prefix's lock (slot allocation, sweeps), making the
// prefix's state directory first: only its owner may reach the records and
// control sockets in it.
func (e *Engine) prefixLock(ctx context.Context) (*fileLock, error) {
	if err := os.MkdirAll(e.sessionsDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if err := os.Chmod(e.dir, 0o700); err != nil {
		return nil, fmt.Errorf("chmod state directory: %w", err)
	}
	return lock(ctx, filepath.Join(e.dir, "lock"))
}

// imageStore opens the image store once. A failure is not kept: the next
// create tries again.
func (e *Engine) imageStore() (*images.Store, error) {
	e.imagesMu.Lock()
	defer e.imagesMu.Unlock()
	if e.images == nil {
		s, err := images.Open(e.cfg.ImageDir)
		if err != nil {
			return nil, err
		}
		e.images = s
	}
	return e.images, nil
}

// hostFacts are what plans read from the host: where cgroups go, its
// resolvers.
type hostFacts struct {
	cgroups cgroupLayout
	dns     []netip.Addr
}

func gatherFacts(cfg Config) (hostFacts, error) {
	var h hostFacts
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return h, fmt.Errorf("read mount table: %w", err)
	}
	mounts, err := parseMountInfo(f)
	f.Close()
	if err != nil {
		return h, err
	}
	if h.cgroups, err = discoverCgroups(cfg.Prefix, mounts); err != nil {
		return h, err
	}
	h.dns = cfg.DNS
	if h.dns == nil {
		h.dns = resolvers()
	}
	return h, nil
}

// PlanFor returns the plan a request would get in slot on this host,
// without creating anything (`drums session plan`).
func PlanFor(cfg Config, req Request, slot int) (*Plan, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	facts, err := gatherFacts(cfg)
	if err != nil {
		return nil, err
	}
	store, err := images.Open(cfg.ImageDir)
	if err != nil {
		return nil, err
	}
	return planWith(cfg, facts, store, req, newID(cfg.Prefix, slot), slot, cfg.IDBase+slot*idRangeSize)
}

func planWith(cfg Config, facts hostFacts, store *images.Store, req Request, id string, slot, idBase int) (*Plan, error) {
	im, err := openImage(cfg, store, req)
	if err != nil {
		return nil, err
	}
	return newPlan(planInput{cfg: cfg, req: req, id: id, slot: slot, image: infoOf(im), idBase: idBase,
		cgroups: facts.cgroups, dns: facts.dns})
}

// openImage finds the image a request names.
func openImage(cfg Config, store *images.Store, req Request) (*images.Image, error) {
	im, err := store.Get(req.image(cfg))
	if errors.Is(err, images.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", err, ErrNoImage)
	}
	if errors.Is(err, images.ErrBadRequest) {
		return nil, fmt.Errorf("%w: %w", err, ErrBadRequest)
	}
	return im, err
}

// Create makes a session and returns when its guestd answers GET
// /screenshot with a PNG. A failure leaves nothing behind. With
// Config.Spares, a request of the same desktop as Request{} takes an up
// spare (spare_linux.go; Session.Spare says so), and the engine starts
// its replacement; without one up it starts cold.
func (e *Engine) Create(ctx context.Context, req Request) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	for _, f := range []struct{ what, path string }{{InitBinary, e.cfg.Binary}, {"guestd", e.cfg.Guestd}} {
		if st, err := os.Stat(f.path); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s %s: not found (build it, or set DRUMS_BIN): %w", f.what, f.path, ErrUnsupported)
		}
	}
	if err := checkBusybox(e.cfg.Busybox); err != nil {
		return nil, err
	}
	if req.Snapshot != "" {
		if st, err := os.Stat(req.Snapshot); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("snapshot %s: not a directory: %w", req.Snapshot, ErrBadRequest)
		}
	}
	if sp := e.takeSpare(req); sp != nil {
		s, err := e.createFromSpare(ctx, sp, req)
		if err == nil {
			e.log.Info("session ready", "id", s.ID, "address", s.Address, "spare", true)
			e.keepStandby(s.ID, nil)
			return s, nil // takeSpare started the replacement
		}
		e.log.Warn("session created without a spare", "err", err)
	}
	rec, lk, err := e.allocate(ctx, req, false)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	// The slot's veth may outlive a previous init for a moment (the kernel
	// tears network namespaces down asynchronously): it is deleted.
	veth := rec.Plan.Net.HostVeth
	if err := e.start(ctx, rec, func() error { return deleteLink(veth) }); err != nil {
		cctx, ccancel := cleanupContext()
		defer ccancel()
		err = errors.Join(err, e.teardown(cctx, rec), removeDir(e.sessionDir(rec.Session.ID)))
		e.removeBases()
		e.fillSpares() // its slot is free
		return nil, err
	}
	e.log.Info("session ready", "id", rec.Session.ID, "address", rec.Session.Address)
	e.keepStandby(rec.Session.ID, nil)
	e.spareWorks(req)
	return rec.session(), nil
}

// ms is a duration in milliseconds, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cleanupContext bounds cleanups that run after the caller's context ended.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// allocate takes the lowest free slot whose address block it can claim
// host-wide and records the new session (a spare's, spare_linux.go, if
// spare), under the prefix lock, and returns the session's lock held and
// the claim in the record.
func (e *Engine) allocate(ctx context.Context, req Request, spare bool) (*record, *fileLock, error) {
	pl, err := e.prefixLock(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer pl.unlock()
	ids, err := e.ids()
	if err != nil {
		return nil, nil, err
	}
	if len(ids) >= e.cfg.MaxSessions {
		return nil, nil, fmt.Errorf("%d sessions of prefix %s exist: %w", len(ids), e.cfg.Prefix, ErrCapacity)
	}
	used := map[int]bool{}
	for _, id := range ids {
		s, _ := parseID(e.cfg.Prefix, id)
		used[s] = true
	}
	// A slot overlapping a network of the host's addresses belongs to
	// someone else (another engine's session, a LAN, a bridge); a slot
	// another engine claimed (AddrClaimDir) is that engine's, even if its
	// session has no address yet. The claim is what makes two engines
	// creating at once never share an address.
	nets, err := hostNets()
	if err != nil {
		return nil, nil, err
	}
	var id string
	var claim *os.File
	var addr netip.Prefix
	slot := 0
	for ; slot < e.cfg.MaxSessions; slot++ {
		_, addr = slotAddrs(e.cfg.Network, slot)
		if used[slot] || overlapsAny(addr.Masked(), nets) {
			continue
		}
		id = newID(e.cfg.Prefix, slot)
		f, ok, err := tryClaim(AddrClaimDir, addrKey(addr), id)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			claim = f
			break
		}
	}
	if claim == nil {
		return nil, nil, fmt.Errorf("every address block of %s is claimed by a session or overlaps a network of the host (choose another range): %w", e.cfg.Network, ErrCapacity)
	}
	idBase, idClaim, err := e.claimIDs(id)
	if err != nil {
		claim.Close()
		_, rerr := releaseClaim(AddrClaimDir, addrKey(addr))
		return nil, nil, errors.Join(err, rerr)
	}
	rec, lk, err := e.record(req, id, slot, idBase, spare)
	if err != nil {
		claim.Close()
		idClaim.Close()
		_, rerr := releaseClaim(AddrClaimDir, addrKey(addr))
		_, ierr := releaseClaim(IDClaimDir, idKey(idBase))
		return nil, nil, errors.Join(err, rerr, ierr)
	}
	rec.claim, rec.idClaim = claim, idClaim
	return rec, lk, nil
}

// claimIDs claims the lowest free range of host ids for a desktop.
func (e *Engine) claimIDs(owner string) (int, *os.File, error) {
	for i := range e.cfg.IDRanges {
		base := e.cfg.IDBase + i*idRangeSize
		f, ok, err := tryClaim(IDClaimDir, idKey(base), owner)
		if err != nil {
			return 0, nil, err
		}
		if ok {
			return base, f, nil
		}
	}
	return 0, nil, fmt.Errorf("all %d id ranges from host id %d are claimed: %w", e.cfg.IDRanges, e.cfg.IDBase, ErrCapacity)
}

// record plans a session in a claimed slot, makes its directory and writes
// its record, and returns the session's lock held.
func (e *Engine) record(req Request, id string, slot, idBase int, spare bool) (*record, *fileLock, error) {
	store, err := e.imageStore()
	if err != nil {
		return nil, nil, err
	}
	p, err := planWith(e.cfg, e.facts, store, req, id, slot, idBase)
	if err != nil {
		return nil, nil, err
	}
	dir := e.sessionDir(id)
	if err := os.MkdirAll(filepath.Join(dir, "base"), 0o700); err != nil {
		return nil, nil, fmt.Errorf("create session directory: %w", err)
	}
	lk, _, err := tryLock(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, nil, errors.Join(err, removeDir(dir))
	}
	image := req.withDefaults(e.cfg).Image
	rec := &record{Plan: p, Request: req, Spare: spare, Session: Session{
		ID: id, Address: p.Net.Address.Addr().String(), GuestPort: p.GuestPort,
		Width: p.Screen.Width, Height: p.Screen.Height, Slot: slot, Created: time.Now().UTC(),
		State: StateCreating, Image: image, ImageID: filepath.Base(p.Root.Image), Snapshot: req.Snapshot,
		Published: p.Net.Published,
	}}
	if err := e.writeRecord(rec); err != nil {
		lk.unlock()
		return nil, nil, errors.Join(err, removeDir(dir))
	}
	return rec, lk, nil
}

func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}

// Get returns a session, with its state checked against the running init.
func (e *Engine) Get(id string) (*Session, error) {
	rec, err := e.recordOf(id)
	if err != nil {
		return nil, err
	}
	e.refresh(rec)
	return rec.session(), nil
}

// recordOf reads the record of session id, ErrNotFound if there is none
// or it is a spare's (no session of anyone's yet).
func (e *Engine) recordOf(id string) (*record, error) {
	if _, ok := parseID(e.cfg.Prefix, id); !ok {
		return nil, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	rec, err := e.readRecord(id)
	if errors.Is(err, os.ErrNotExist) || (err == nil && rec.Spare) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return rec, err
}

// lockSession takes the lock of session id for Remove, Reset and the
// calls of a ready session, and returns the record read under it (or
// readErr, the error of that read, with the lock still held):
// ErrNotFound, without waiting, for a spare's id (whose lock its engine
// holds for as long as it is one), and for one that turned out a spare's
// once the lock was taken.
func (e *Engine) lockSession(ctx context.Context, id string) (lk *fileLock, rec *record, readErr error, err error) {
	if r, err := e.readRecord(id); err == nil && r.Spare {
		return nil, nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if lk, err = lock(ctx, filepath.Join(e.sessionDir(id), "lock")); err != nil {
		return nil, nil, nil, err
	}
	rec, readErr = e.readRecord(id)
	if readErr == nil && rec.Spare {
		lk.unlock()
		return nil, nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return lk, rec, readErr, nil
}

// refresh marks a session failed when its init is gone.
func (e *Engine) refresh(rec *record) {
	if rec.Session.State == StateFailed || rec.initAlive() {
		return
	}
	if rec.Session.State != StateReady {
		// Creating or resetting: fine while someone holds the lock.
		lk, free, err := tryLock(filepath.Join(e.sessionDir(rec.Session.ID), "lock"))
		if err != nil || !free {
			return
		}
		lk.unlock()
	}
	rec.Session.State = StateFailed
	rec.Session.Reason = "init exited"
	if b, err := os.ReadFile(filepath.Join(e.sessionDir(rec.Session.ID), exitFile)); err == nil {
		var x exitRecord
		if json.Unmarshal(b, &x) == nil && x.Reason != "" {
			rec.Session.Reason = x.Reason
		}
	}
}

func (r *record) session() *Session {
	s := r.Session
	s.Plan = r.Plan
	return &s
}

// List returns every session of the prefix, by slot; spares are none.
func (e *Engine) List() []*Session {
	ids, err := e.ids()
	if err != nil {
		return nil
	}
	var out []*Session
	for _, id := range ids {
		if s, err := e.Get(id); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// Remove ends a session and removes all it had. Removing a session that is
// already gone is success; a spare's id is ErrNotFound (no session).
func (e *Engine) Remove(ctx context.Context, id string) error {
	slot, ok := parseID(e.cfg.Prefix, id)
	if !ok {
		return fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	dir := e.sessionDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return e.drop(id) // removed by another process: this one's claims go too
	}
	lk, rec, err, lerr := e.lockSession(ctx, id)
	if lerr != nil {
		return lerr
	}
	defer lk.unlock()
	if err != nil {
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return e.drop(id) // removed while we waited for the lock
		}
		// A record never written: what exists is named after the slot.
		rec = &record{Session: Session{ID: id, Slot: slot}}
	}
	standbyGone := e.dropStandby(id)
	err = e.teardown(ctx, rec)
	standbyGone()
	if err != nil {
		return err
	}
	if err := removeDir(dir); err != nil {
		return err
	}
	e.removeBases()
	e.log.Info("session removed", "id", id)
	e.fillSpares() // a slot is free
	return nil
}

// The prefix's cgroup directories are made by every create's setupCgroup
// and removed, once empty, by a remove's removeBases, in this process or
// another one of the prefix. A removal between a create's making of the
// prefix directory and of the session's own in it would fail the create
// (ENOENT, or ENODEV reading a removed cpuset's cpus), so a create holds
// the prefix's cgroup lock shared while it sets up, and a remove removes
// the directories only when it can take the lock alone: otherwise a create
// is about to use them, and the remove of its session (or its own cleanup)
// removes them later.
func (e *Engine) cgroupLock() string { return filepath.Join(e.dir, "cgroup.lock") }

// setupCgroup clears what the last desktop of p's names made under its
// delegated cgroup (clearDelegated), then runs setupCgroup holding the
// prefix's cgroup lock shared (cgroupLock), so that no removeBases removes
// the prefix's directories under it.
func (e *Engine) setupCgroup(ctx context.Context, p CgroupPlan) error {
	if err := clearDelegated(ctx, p); err != nil {
		return err
	}
	lk, err := lockShared(ctx, e.cgroupLock())
	if err != nil {
		return err
	}
	defer lk.unlock()
	return setupCgroup(e.facts.cgroups, p)
}

// removeBases removes the prefix's cgroup directories once they are empty.
func (e *Engine) removeBases() {
	lk, alone, err := tryLock(e.cgroupLock())
	if err != nil || !alone {
		return // a create is setting up: the directories stay
	}
	defer lk.unlock()
	for _, base := range e.facts.cgroups.Bases {
		unix.Rmdir(base) // fails while another session has a cgroup there
	}
}

// ready reads a session's record under its lock and checks it runs.
func (e *Engine) ready(ctx context.Context, id string) (*record, *fileLock, error) {
	if _, ok := parseID(e.cfg.Prefix, id); !ok {
		return nil, nil, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	dir := e.sessionDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	lk, rec, err, lerr := e.lockSession(ctx, id)
	if lerr != nil {
		return nil, nil, lerr
	}
	if err != nil {
		lk.unlock()
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
		}
		return nil, nil, err
	}
	if rec.Session.State != StateReady || !rec.initAlive() {
		lk.unlock()
		return nil, nil, fmt.Errorf("session %s is %s: %w", id, rec.Session.State, ErrNotReady)
	}
	return rec, lk, nil
}
