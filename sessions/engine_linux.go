package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/treecopy"
	"github.com/drums-dev/drums/sessions/images"
)

// Engine creates, resets and removes the sessions of one host prefix. Its
// state is on disk (see state_linux.go), so several processes (a daemon,
// the CLI) can use the same prefix and a restarted daemon adopts what its
// predecessor left. All methods are safe for concurrent use.
type Engine struct {
	cfg    Config
	dir    string // <StateDir>/<prefix>
	log    *slog.Logger
	facts  hostFacts
	images *images.Store

	mu sync.Mutex
	// children are the inits this process started, each closed once reaped.
	children map[int]chan struct{}
	held     map[string]heldClaims // by session id (watch_linux.go)
}

// New checks the host and prepares the prefix's state directory.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("sessions need root (namespaces, mounts, veths, nftables, cgroups): %w", ErrUnsupported)
	}
	e := &Engine{cfg: cfg, dir: filepath.Join(cfg.StateDir, cfg.Prefix), log: cfg.Logger, children: map[int]chan struct{}{}, held: map[string]heldClaims{}}
	if e.facts, err = gatherFacts(cfg); err != nil {
		return nil, err
	}
	if e.images, err = images.Open(cfg.ImageDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(e.sessionsDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	if err := os.Chmod(e.dir, 0o700); err != nil {
		return nil, fmt.Errorf("chmod state directory: %w", err)
	}
	return e, nil
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
	name := req.Image
	if name == "" {
		name = cfg.Image
	}
	im, err := store.Get(name)
	if errors.Is(err, images.ErrNotFound) {
		return nil, fmt.Errorf("%w: %w", err, ErrNoImage)
	}
	if errors.Is(err, images.ErrBadRequest) {
		return nil, fmt.Errorf("%w: %w", err, ErrBadRequest)
	}
	return im, err
}

// Create makes a session and returns when its guestd answers GET
// /screenshot with a PNG. A failure leaves nothing behind.
func (e *Engine) Create(ctx context.Context, req Request) (*Session, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.ReadyTimeout)
	defer cancel()
	for _, f := range []struct{ what, path string }{{"drums binary", e.cfg.Binary}, {"guestd", e.cfg.Guestd}} {
		if st, err := os.Stat(f.path); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%s %s: not found (build it, or set DRUMS_BIN): %w", f.what, f.path, ErrUnsupported)
		}
	}
	if req.Snapshot != "" {
		if st, err := os.Stat(req.Snapshot); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("snapshot %s: not a directory: %w", req.Snapshot, ErrBadRequest)
		}
	}
	rec, lk, err := e.allocate(ctx, req)
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	if err := e.start(ctx, rec); err != nil {
		cctx, ccancel := cleanupContext()
		defer ccancel()
		err = errors.Join(err, e.teardown(cctx, rec), removeDir(e.sessionDir(rec.Session.ID)))
		e.removeBases()
		return nil, err
	}
	e.log.Info("session ready", "id", rec.Session.ID, "address", rec.Session.Address)
	return rec.session(), nil
}

// ms is a duration in milliseconds, for logs.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// cleanupContext bounds cleanups that run after the caller's context ended.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// allocate takes the lowest free slot whose address block it can claim
// host-wide and records the new session, under the prefix lock, and returns
// the session's lock held and the claim in the record.
func (e *Engine) allocate(ctx context.Context, req Request) (*record, *fileLock, error) {
	pl, err := lock(ctx, filepath.Join(e.dir, "lock"))
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
	rec, lk, err := e.record(req, id, slot, idBase)
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
func (e *Engine) record(req Request, id string, slot, idBase int) (*record, *fileLock, error) {
	p, err := planWith(e.cfg, e.facts, e.images, req, id, slot, idBase)
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
	image := req.Image
	if image == "" {
		image = e.cfg.Image
	}
	rec := &record{Plan: p, Request: req, Session: Session{
		ID: id, Address: p.Net.Address.Addr().String(), GuestPort: p.GuestPort,
		Width: p.Screen.Width, Height: p.Screen.Height, Slot: slot, Created: time.Now().UTC(),
		State: StateCreating, Image: image, ImageID: filepath.Base(p.Root.Image), Snapshot: req.Snapshot,
	}}
	if err := e.writeRecord(rec); err != nil {
		lk.unlock()
		return nil, nil, errors.Join(err, removeDir(dir))
	}
	return rec, lk, nil
}

// start brings a session up from its plan: host-side state (leftovers of the
// slot removed, nftables table, cgroups), then init, then the guestd probe.
// On failure it kills the init it started; the caller removes the rest.
func (e *Engine) start(ctx context.Context, rec *record) error {
	began := time.Now()
	p := rec.Plan
	// init inherits the claims and the image's use lock and holds them
	// from its start; this process keeps its copies of the claims while
	// the session is its (hold), or lets them go if the start fails.
	claim, idClaim := rec.claim, rec.idClaim
	rec.claim, rec.idClaim = nil, nil
	kept := false
	defer func() {
		if !kept {
			heldClaims{addr: claim, ids: idClaim}.close()
		}
	}()
	hold, err := images.Hold(p.Root.Image)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrNoImage)
	}
	defer hold.Close()
	// The slot's veth may outlive a previous init for a moment (the kernel
	// tears network namespaces down asynchronously): delete it.
	if err := deleteLink(p.Net.HostVeth); err != nil {
		return err
	}
	if p.Net.Egress {
		if err := enableForwarding(); err != nil {
			return err
		}
	}
	// The session's table is installed while init starts (the kernel's
	// commit takes ~9 ms): nothing of the desktop runs before init gets
	// "go", which waits for it.
	tabled := make(chan error, 1)
	go func() { tabled <- installTable(p) }()
	// Every return before it waits for it: the caller's teardown must not
	// race the table's install.
	withTable := func(err error) error { return errors.Join(err, <-tabled) }
	if err := setupCgroup(e.facts.cgroups, p.Cgroup); err != nil {
		return withTable(err)
	}
	if p.Root.UpperDir != "" {
		for _, d := range []string{p.Root.UpperDir, p.Root.WorkDir} {
			if err := removeDir(d); err != nil {
				return withTable(err)
			}
			if err := os.Mkdir(d, 0o755); err != nil {
				return withTable(fmt.Errorf("create %s: %w", d, err))
			}
		}
	}
	os.Remove(filepath.Join(p.Root.SessionDir, exitFile))
	e.log.Debug("session host state", "id", p.ID, "ms", ms(time.Since(began)))

	cmd, syncF, err := e.launch(p, claim, idClaim, hold)
	if err != nil {
		return withTable(err)
	}
	defer syncF.Close()
	pid := cmd.Process.Pid
	done := e.reap(cmd)
	fail := func(err error) error {
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("session %s: %w%s", p.ID, err, e.logTail(p.ID))
	}
	start, _ := procStart(pid)
	rec.Session.InitPID, rec.InitStart = pid, start
	if err := e.writeRecord(rec); err != nil {
		return fail(withTable(err))
	}
	if p.Cgroup.Version == 1 {
		if err := placeCgroup(p.Cgroup, pid); err != nil {
			return fail(withTable(err))
		}
	}
	if err := withTable(nil); err != nil {
		return fail(err)
	}
	msgs := make(chan syncMsg, 16)
	go func() {
		defer close(msgs)
		dec := json.NewDecoder(syncF)
		for {
			var m syncMsg
			if dec.Decode(&m) != nil {
				return
			}
			msgs <- m
		}
	}()
	if err := json.NewEncoder(syncF).Encode(syncMsg{Type: "go"}); err != nil {
		return fail(fmt.Errorf("send go to init: %w", err))
	}
	// guestd is probed as soon as init says it listens, while the rest of
	// the stack (the window manager, the accessibility bus) comes up.
	guest := netip.AddrPortFrom(p.Net.Address.Addr(), uint16(p.GuestPort))
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	probed := make(chan error, 1)
	startProbe := sync.OnceFunc(func() {
		go func() { probed <- probeGuest(probeCtx, guest) }()
	})
	for ready, answered := false, false; !ready || !answered; {
		select {
		case m, ok := <-msgs:
			if !ok {
				if ready {
					msgs = nil // init closed the sync socket after "ready"
					continue
				}
				return fail(fmt.Errorf("init exited before the session was ready: %w", ErrInit))
			}
			switch m.Type {
			case "step":
				e.log.Debug("session step", "id", p.ID, "step", m.Step, "ms", m.Millis)
				if m.Step == "guestd" {
					startProbe()
				}
			case "error":
				kind := ErrInit
				if m.Kind == "stack" {
					kind = ErrStack
				}
				return fail(fmt.Errorf("%s: %w", m.Message, kind))
			case "ready":
				rec.UpperFD = m.UpperFD
				ready = true
				startProbe()
			}
		case err := <-probed:
			if err != nil {
				return fail(fmt.Errorf("%w: %w", err, ErrStack))
			}
			answered = true
		case <-done:
			return fail(fmt.Errorf("init exited before the session was ready: %w", ErrInit))
		case <-ctx.Done():
			return fail(fmt.Errorf("wait for init: %w", ctx.Err()))
		}
	}
	syncF.Close()
	rec.Session.State, rec.Session.Reason = StateReady, ""
	if err := e.writeRecord(rec); err != nil {
		return fail(err)
	}
	e.hold(p, claim, idClaim)
	kept = true
	return nil
}

// installTable installs the session's nftables table unless it is in
// place: a reset finds it (names derive from the slot and the plan did not
// change).
func installTable(p *Plan) error {
	nft, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	if _, err := nft.ListTableOfFamily(p.Net.Table, nftables.TableFamilyINet); err == nil {
		return nil
	}
	return applyTable(nft, sessionRuleset(p.Prefix, p.Net))
}

// launch re-executes the drums binary as the session's init in new mount,
// PID, IPC, UTS, network and cgroup namespaces. The init starts
// its own session (setsid) and no death signal ties it to this process:
// sessions outlive their creator, and the state directory says who they are.
func (e *Engine) launch(p *Plan, claims ...*os.File) (*exec.Cmd, *os.File, error) {
	planR, planW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("plan pipe: %w", err)
	}
	defer planR.Close()
	// Non-blocking, so that closing syncF ends a read in progress (a
	// blocking *os.File would keep the descriptor open until the read
	// returns, and init would never see EOF). exec makes init's end
	// blocking again (its own open file description).
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		planW.Close()
		return nil, nil, fmt.Errorf("sync socket: %w", err)
	}
	syncF, childSync := os.NewFile(uintptr(pair[0]), "sync"), os.NewFile(uintptr(pair[1]), "sync-init")
	defer childSync.Close()
	hostNS, err := os.Open("/proc/self/ns/net")
	if err != nil {
		planW.Close()
		syncF.Close()
		return nil, nil, fmt.Errorf("open host network namespace: %w", err)
	}
	defer hostNS.Close()
	logF, err := os.OpenFile(e.LogPath(p.ID), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		planW.Close()
		syncF.Close()
		return nil, nil, fmt.Errorf("open init log: %w", err)
	}
	defer logF.Close()
	// A cgroup namespace is rooted at the cgroup its creator is in: on v2
	// init is born in the session's cgroup (clone3 into it), so its own is
	// right; on v1 init is moved there after the clone, so its spawner
	// thread unshares another one for the session's processes.
	attr := &syscall.SysProcAttr{
		Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS |
			unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP,
		Setsid: true,
	}
	if p.Cgroup.Version == 2 {
		cg, err := os.Open(p.Cgroup.Dirs[""])
		if err != nil {
			planW.Close()
			syncF.Close()
			return nil, nil, fmt.Errorf("open cgroup: %w", err)
		}
		defer cg.Close()
		attr.UseCgroupFD, attr.CgroupFD = true, int(cg.Fd())
	}
	cmd := &exec.Cmd{
		Path: e.cfg.Binary,
		Args: []string{"drums", InitCommand, p.ID},
		// init mostly waits in system calls; one P keeps its runtime
		// about 0.6 MiB smaller in every desktop.
		Env:         []string{"PATH=" + sessionPath, "GOMAXPROCS=1"},
		Dir:         "/",
		Stdout:      logF,
		Stderr:      logF,
		ExtraFiles:  append([]*os.File{planR, childSync, hostNS}, claims...), // fds 3, 4, 5, then 6, 7, 8 (sync.go)
		SysProcAttr: attr,
	}
	if err := cmd.Start(); err != nil {
		planW.Close()
		syncF.Close()
		return nil, nil, fmt.Errorf("start init: %w: %w", err, ErrInit)
	}
	err = json.NewEncoder(planW).Encode(p)
	planW.Close()
	if err != nil {
		cmd.Process.Kill()
		<-e.reap(cmd)
		syncF.Close()
		return nil, nil, fmt.Errorf("send plan to init: %w", err)
	}
	return cmd, syncF, nil
}

// reap waits for an init this process started, so it never stays a zombie,
// and returns a channel closed once it is reaped.
func (e *Engine) reap(cmd *exec.Cmd) chan struct{} {
	pid := cmd.Process.Pid
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch, ok := e.children[pid]; ok {
		return ch
	}
	ch := make(chan struct{})
	e.children[pid] = ch
	go func() {
		cmd.Wait()
		e.mu.Lock()
		delete(e.children, pid)
		e.mu.Unlock()
		close(ch)
	}()
	return ch
}

// LogPath is the file where a session's init and desktop write their output.
func (e *Engine) LogPath(id string) string { return filepath.Join(e.sessionDir(id), "init.log") }

// logTail quotes the end of a session's init.log for an error message.
func (e *Engine) logTail(id string) string {
	b, err := os.ReadFile(e.LogPath(id))
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 12 {
		lines = lines[len(lines)-12:]
	}
	return "\n\tinit.log: " + strings.Join(lines, "\n\tinit.log: ")
}

// stopInit kills a session's init and waits until it is gone; with it go
// every process, mount and the network namespace of the session. The pid is
// trusted only while its start time matches the record. meanwhile runs
// while the kernel tears the namespaces down (deleting the host veth then
// overlaps the processes' deaths instead of following them).
func (e *Engine) stopInit(ctx context.Context, pid int, start uint64, meanwhile ...func() error) error {
	fd, err := killInit(pid, start)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range meanwhile {
		errs = append(errs, f())
	}
	if fd >= 0 {
		errs = append(errs, e.waitInit(ctx, pid, fd))
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// killInit sends SIGKILL to init and returns a pidfd to wait on, or -1 when
// the process is already gone (or the pid is another process's now).
func killInit(pid int, start uint64) (int, error) {
	if pid <= 0 {
		return -1, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open init %d: %w", pid, err)
	}
	if s, _ := procStart(pid); s != start { // the pidfd pins the process: check it is init
		unix.Close(fd)
		return -1, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		unix.Close(fd)
		return -1, fmt.Errorf("kill init %d: %w", pid, err)
	}
	return fd, nil
}

// waitInit waits until the pidfd of a killed init is readable, which for a
// PID namespace's init is after every other process in it is gone, and for
// an init this process started until it is reaped (so it has left its
// cgroups).
func (e *Engine) waitInit(ctx context.Context, pid, fd int) error {
	for {
		// The timeout only lets ctx be checked; the wait is for the pidfd.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 50)
		if n > 0 {
			break
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for init %d: %w", pid, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for init %d: %w", pid, ctx.Err())
		}
	}
	e.mu.Lock()
	ch := e.children[pid]
	e.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return nil
}

// teardown removes everything of a session but its directory: init (and so
// its processes, mounts and namespaces), the host veth, the nftables table
// and the cgroups. Absent things are success.
func (e *Engine) teardown(ctx context.Context, rec *record) error {
	var errs []error
	veth := hostVeth(e.cfg.Prefix, rec.Session.Slot)
	recorded := rec.initAlive()
	// A frozen session's processes die of SIGKILL only once thawed (cgroup
	// v1's freezer): thaw it after the kill.
	errs = append(errs, e.stopInit(ctx, rec.Session.InitPID, rec.InitStart,
		func() error { return deleteLink(veth) }, func() error { return e.thawOrphan(ctx, rec) }))
	if !recorded {
		// The record names no running init: its creator may have died
		// between starting one and recording it. Find it by command line.
		for _, pid := range findInits(e.cfg.Prefix)[rec.Session.ID] {
			start, _ := procStart(pid)
			errs = append(errs, e.stopInit(ctx, pid, start))
		}
	}
	errs = append(errs, e.teardownSlot(ctx, rec.Session.Slot, rec.Session.ID))
	addr := sessionAddr(e.cfg.Network, rec.Session.Slot)
	if rec.Plan != nil {
		addr = rec.Plan.Net.Address
	}
	// The host's sockets to the address die with it, before the address
	// can go to another session: a client's kept-alive connection then
	// fails at once instead of reaching the next desktop there.
	if err := destroySockets(addr.Addr()); err != nil && !errors.Is(err, errNoSockDestroy) {
		errs = append(errs, err)
	}
	// init is gone, and with it its hold on the claims; this process lets
	// go of its own.
	errs = append(errs, e.drop(rec.Session.ID))
	_, err := releaseClaim(AddrClaimDir, addrKey(addr))
	errs = append(errs, err)
	if rec.Plan != nil {
		_, err := releaseClaim(IDClaimDir, idKey(rec.Plan.IDs.Host))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// teardownSlot removes the host-global state named after a slot and id.
func (e *Engine) teardownSlot(ctx context.Context, slot int, id string) error {
	var errs []error
	errs = append(errs, deleteLink(hostVeth(e.cfg.Prefix, slot)))
	if nft, err := nftables.New(); err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		errs = append(errs, deleteTable(nft, tableName(e.cfg.Prefix, slot)))
	}
	errs = append(errs, removeCgroup(ctx, e.facts.cgroups.plan(id, Limits{})))
	return errors.Join(errs...)
}

// sessionAddr is the session address of slot.
func sessionAddr(network netip.Prefix, slot int) netip.Prefix {
	_, addr := slotAddrs(network, slot)
	return addr
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

// recordOf reads the record of session id, ErrNotFound if there is none.
func (e *Engine) recordOf(id string) (*record, error) {
	if _, ok := parseID(e.cfg.Prefix, id); !ok {
		return nil, fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	rec, err := e.readRecord(id)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	return rec, err
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

// List returns every session of the prefix, by slot.
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
// already gone is success.
func (e *Engine) Remove(ctx context.Context, id string) error {
	slot, ok := parseID(e.cfg.Prefix, id)
	if !ok {
		return fmt.Errorf("session %q: %w", id, ErrNotFound)
	}
	dir := e.sessionDir(id)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return e.drop(id) // removed by another process: this one's claims go too
	}
	lk, err := lock(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return err
	}
	defer lk.unlock()
	rec, err := e.readRecord(id)
	if err != nil {
		if _, serr := os.Stat(dir); errors.Is(serr, os.ErrNotExist) {
			return e.drop(id) // removed while we waited for the lock
		}
		// A record never written: what exists is named after the slot.
		rec = &record{Session: Session{ID: id, Slot: slot}}
	}
	if err := e.teardown(ctx, rec); err != nil {
		return err
	}
	if err := removeDir(dir); err != nil {
		return err
	}
	e.removeBases()
	e.log.Info("session removed", "id", id)
	return nil
}

// removeBases removes the prefix's cgroup directories once they are empty.
func (e *Engine) removeBases() {
	for _, base := range e.facts.cgroups.Bases {
		unix.Rmdir(base) // fails while another session has a cgroup there
	}
}

// Reset returns a session to a clean state under the same id: its init is
// killed (and with it every process, the upper layer and the network
// namespace), every host socket connected or connecting to it is destroyed,
// and a new init brings the desktop up from the same plan. A request made
// before the reset can never act on the desktop after it: its connection
// died with the old namespace or was destroyed.
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
	lk, err := lock(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	defer lk.unlock()
	rec, err := e.readRecord(id)
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
	// The old desktop is killed and cut off (its veth deleted, every host
	// socket to it destroyed) before the new one starts; the kernel's
	// teardown of the old namespaces then overlaps the new start, unless
	// the upper layer is on disk, where the new one must not start before
	// the old overlay is gone.
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
	if err == nil {
		err = deleteLink(rec.Plan.Net.HostVeth)
	}
	if err == nil {
		err = destroySockets(rec.Plan.Net.Address.Addr())
		if errors.Is(err, errNoSockDestroy) {
			e.log.Warn("reset cannot cut pending connections", "id", id, "err", err)
			err = nil
		}
	}
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
		err = e.start(ctx, rec)
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
	e.log.Info("session reset", "id", id, "resets", rec.Session.Resets)
	return rec.session(), nil
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
	lk, err := lock(ctx, filepath.Join(dir, "lock"))
	if err != nil {
		return nil, nil, err
	}
	rec, err := e.readRecord(id)
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

// SaveUpper copies the session's upper layer (every file it wrote, deleted
// or made opaque) into dir, which must not exist or be empty. The session
// is frozen meanwhile, so the copy is consistent; a Request.Snapshot of dir
// starts a session from it.
func (e *Engine) SaveUpper(ctx context.Context, id, dir string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("save upper layer to %s: not empty: %w", dir, ErrBadRequest)
	}
	rec, lk, err := e.ready(ctx, id)
	if err != nil {
		return err
	}
	defer lk.unlock()
	src := rec.Plan.Root.UpperDir
	if src == "" {
		src = fmt.Sprintf("/proc/%d/fd/%d/upper", rec.Session.InitPID, rec.UpperFD)
	}
	// The freeze has a deadline: a copy that outlasts FreezeLimit is
	// abandoned. If this process dies meanwhile, the session stays frozen
	// until the next holder of its lock thaws it (thawOrphan).
	fctx, cancelFreeze := context.WithTimeout(ctx, e.cfg.FreezeLimit)
	defer cancelFreeze()
	err = freeze(fctx, rec.Plan.Cgroup, true)
	if err == nil {
		err = treecopy.Copy(fctx, src, dir, treecopy.Unshift(rec.Plan.IDs.Host, rec.Plan.IDs.Size))
	}
	cctx, cancel := cleanupContext()
	defer cancel()
	return errors.Join(err, freeze(cctx, rec.Plan.Cgroup, false))
}

// thawOrphan thaws a session that a SaveUpper left frozen when its process
// died (the kernel keeps a freezer's state; nobody else would undo it). The
// caller holds the session's lock, which SaveUpper holds while frozen, so
// a frozen session found then has no live freezer. A session without a
// cgroup is success.
func (e *Engine) thawOrphan(ctx context.Context, rec *record) error {
	cg := e.facts.cgroups.plan(rec.Session.ID, Limits{})
	if rec.Plan != nil {
		cg = rec.Plan.Cgroup
	}
	frozen, err := isFrozen(cg)
	if err != nil || !frozen {
		return err
	}
	e.log.Warn("session left frozen by a process that died: thawing it", "id", rec.Session.ID)
	return freeze(ctx, cg, false)
}

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

// Sweep removes every leftover of this prefix that is not a live session:
// records of dead or interrupted sessions and, found by name alone,
// processes, veths, nftables tables, cgroups and directories of sessions
// that left no record. Sessions being created or reset by a live process
// are left alone.
func (e *Engine) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	pl, err := lock(ctx, filepath.Join(e.dir, "lock"))
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
			if !d.IsDir() || liveIDs[d.Name()] {
				continue
			}
			if _, ok := parseID(e.cfg.Prefix, d.Name()); !ok {
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
	}
	return rep, errors.Join(errs...)
}
