package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/drums-dev/drums/sessions/images"
)

// start brings a session up from its plan: host-side state (leftovers of the
// slot removed, nftables table, cgroups), then init, then the guestd probe.
// clear frees the slot's network for the new desktop (deleteLink of its
// host veth for a create; a reset also cuts the old desktop off): it runs
// while init starts, and init makes the new network only after it is done.
// On failure it kills the init it started; the caller removes the rest.
func (e *Engine) start(ctx context.Context, rec *record, clear func() error) error {
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
	// The slot's network is made ready for the new desktop while init
	// starts and the desktop with it (readySlot). Init makes no network,
	// so nothing reaches the desktop, before it gets "net", which waits
	// for it.
	netReady := make(chan error, 1)
	go func() { netReady <- readySlot(p, clear) }()
	// Every return waits for it: the caller's teardown must not race the
	// table's install or the veth's deletion.
	prepared := func(err error) error {
		if netReady != nil {
			err, netReady = errors.Join(err, <-netReady), nil
		}
		return err
	}
	hold, err := images.Hold(p.Root.Image)
	if err != nil {
		return prepared(fmt.Errorf("%w: %w", err, ErrNoImage))
	}
	defer hold.Close()
	if err := e.prepare(ctx, p); err != nil {
		return prepared(err)
	}
	os.Remove(filepath.Join(p.Root.SessionDir, exitFile))
	e.log.Debug("session host state", "id", p.ID, "ms", ms(time.Since(began)))

	inc, err := e.spawn(p, claim, idClaim, hold)
	if err != nil {
		return prepared(err)
	}
	rec.Session.InitPID, rec.InitStart = inc.pid, inc.start
	err = e.writeRecord(rec)
	if err == nil {
		err = inc.goAhead(false)
	}
	if err == nil {
		err, netReady = e.await(ctx, rec, inc, netReady), nil
	}
	if err == nil {
		rec.Session.State, rec.Session.Reason, rec.Session.Standby = StateReady, "", false
		err = e.writeRecord(rec)
	}
	if err != nil {
		inc.kill()
		return fmt.Errorf("session %s: %w%s", p.ID, prepared(err), e.logTail(p.ID))
	}
	e.hold(p, claim, idClaim)
	kept = true
	return nil
}

// prepare makes the host state an init of p needs before it starts: the
// session's cgroups with their limits (and none of what the last desktop
// made under its delegated one), an empty upper layer when it is on disk.
func (e *Engine) prepare(ctx context.Context, p *Plan) error {
	if err := e.setupCgroup(ctx, p.Cgroup); err != nil {
		return err
	}
	if p.Root.UpperDir != "" {
		for _, d := range []string{p.Root.UpperDir, p.Root.WorkDir} {
			if err := removeDir(d); err != nil {
				return err
			}
			if err := os.Mkdir(d, 0o755); err != nil {
				return fmt.Errorf("create %s: %w", d, err)
			}
		}
	}
	return nil
}

// incarnation is an init this process started for a session, and what
// it says on its sync socket.
type incarnation struct {
	plan  *Plan
	proc  *os.Process
	pid   int
	start uint64 // procStart
	syncF *os.File
	msgs  <-chan syncMsg // closed at the sync socket's end
	done  chan struct{}  // closed once reaped
	// ahead says it was started ahead of its use (startAhead): its steps
	// are not of a desktop being made ready (StepLog).
	ahead bool
}

// spawn starts an init of p (launch) and reads its messages.
func (e *Engine) spawn(p *Plan, files ...*os.File) (*incarnation, error) {
	cmd, syncF, err := e.launch(p, files...)
	if err != nil {
		return nil, err
	}
	inc := &incarnation{plan: p, proc: cmd.Process, pid: cmd.Process.Pid, syncF: syncF, done: e.reap(cmd)}
	inc.start, _ = procStart(inc.pid)
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
	inc.msgs = msgs
	return inc, nil
}

// goAhead places init in the session's cgroups (v1 has no
// clone-into-cgroup) and lets it start the desktop, as a standby or not.
func (inc *incarnation) goAhead(standby bool) error {
	if inc.plan.Cgroup.Version == 1 {
		if err := placeCgroup(inc.plan.Cgroup, inc.pid); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(inc.syncF).Encode(syncMsg{Type: "go", Standby: standby}); err != nil {
		return fmt.Errorf("send go to init: %w", err)
	}
	return nil
}

// kill kills init and waits until it is reaped.
func (inc *incarnation) kill() {
	inc.proc.Kill()
	<-inc.done
	inc.syncF.Close()
}

// await sends init "net" once netReady says the slot's network is ready
// for it, and waits until init says the session is ready and guestd
// answers GET /screenshot. It returns only after netReady has been
// received, whatever happened: the caller's teardown must not race the
// table's install or the slot's clearing.
func (e *Engine) await(ctx context.Context, rec *record, inc *incarnation, netReady <-chan error) (err error) {
	defer func() {
		if netReady != nil {
			err = errors.Join(err, <-netReady)
		}
	}()
	p := inc.plan
	// guestd is probed as soon as init says it listens, while the rest of
	// the stack (the window manager, the accessibility bus) comes up.
	guest := netip.AddrPortFrom(p.Net.Address.Addr(), uint16(p.GuestPort))
	probeCtx, cancelProbe := context.WithCancel(ctx)
	defer cancelProbe()
	probed := make(chan error, 1)
	startProbe := sync.OnceFunc(func() {
		go func() { probed <- probeGuest(probeCtx, guest) }()
	})
	msgs := inc.msgs
	for ready, answered := false, false; !ready || !answered; {
		select {
		case err := <-netReady:
			netReady = nil
			if err != nil {
				return err
			}
			if err := json.NewEncoder(inc.syncF).Encode(syncMsg{Type: "net"}); err != nil {
				return fmt.Errorf("send net to init: %w", err)
			}
		case m, ok := <-msgs:
			if !ok {
				if ready {
					msgs = nil // init closed the sync socket after "ready"
					continue
				}
				return fmt.Errorf("init exited before the session was ready: %w", ErrInit)
			}
			switch m.Type {
			case "step":
				if !inc.ahead {
					e.log.Debug(stepMessage, "id", p.ID, "step", m.Step, "ms", m.Millis)
				}
				if m.Step == "guestd" {
					startProbe()
				}
			case "error":
				return initError(m)
			case "ready":
				rec.UpperFD = m.UpperFD
				ready = true
				startProbe()
			}
		case err := <-probed:
			if err != nil {
				return fmt.Errorf("%w: %w", err, ErrStack)
			}
			answered = true
		case <-inc.done:
			return fmt.Errorf("init exited before the session was ready: %w", ErrInit)
		case <-ctx.Done():
			return fmt.Errorf("wait for init: %w", ctx.Err())
		}
	}
	inc.syncF.Close()
	return nil
}

// initError is the error an init's "error" message reports.
func initError(m syncMsg) error {
	kind := ErrInit
	if m.Kind == "stack" {
		kind = ErrStack
	}
	return fmt.Errorf("%s: %w", m.Message, kind)
}

// readySlot makes the slot's network ready for a desktop of plan p: the
// session's nftables table installed (the kernel's commit takes ~9 ms),
// IPv4 forwarding on if the desktop has egress, and the slot cleared by
// clear (deleting a veth takes 14-23 ms). All are idempotent: a reset
// finds them in place.
func readySlot(p *Plan, clear func() error) error {
	tabled := make(chan error, 1)
	go func() { tabled <- installTable(p) }()
	err := clear()
	if p.Net.Egress {
		err = errors.Join(err, enableForwarding())
	}
	return errors.Join(err, <-tabled)
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
	// right; on v1 init is moved there after the clone, so its forking
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
