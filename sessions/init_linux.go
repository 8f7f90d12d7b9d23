package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// initProc is a session's init: PID 1 of the session's namespaces.
type initProc struct {
	plan    *Plan
	started time.Time
	log     io.Writer
	devNull *os.File

	syncMu sync.Mutex
	syncW  *json.Encoder
	ready  atomic.Bool // the engine got "ready": its going away no longer matters

	root   *root
	reaper *reaper
	forker *forker // starts the desktop's processes (stack_linux.go's spawn)
	// busybox is the host's busybox and exe init's own binary, which
	// every process of the desktop is started through (enter_linux.go),
	// both opened before the pivot.
	busybox, exe int

	mu    sync.Mutex
	procs map[string]*stackProc
	// end says which essential process exited (and how), once the stack
	// is up: a standby waiting for "net" ends on it as serve does.
	end <-chan string

	// trim gives the memory that serving the control socket took back to
	// the kernel once the socket has been quiet for initTrimAfter.
	trim *time.Timer
}

// RunInit is `drums init ID`, the privileged child the engine re-executes
// with new namespaces (see sync.go for the contract). It is PID 1 of the
// session: it builds the root, starts the desktop, then reaps zombies,
// forwards signals and serves the control socket until the session ends.
// It returns the process exit status; it must run before anything else in
// the process (no goroutines, no signal handlers).
func RunInit(args []string) int {
	// Every desktop carries an init: no heap profile (its bucket table
	// alone is 1.4 MiB of address space, touched by each sample).
	runtime.MemProfileRate = 0
	in := &initProc{started: time.Now(), log: os.Stderr, procs: map[string]*stackProc{}}
	// No inherited descriptor may reach the session's processes: fd 5 is
	// the host's network namespace, and whatever the engine's own parent
	// leaked into it would follow. The sync socket is made non-blocking so
	// that Go's poller owns it.
	if err := unix.CloseRange(fdPlan, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		fmt.Fprintf(in.log, "init: mark descriptors close-on-exec: %v\n", err)
		return 1
	}
	unix.SetNonblock(fdSync, true)
	syncF := os.NewFile(fdSync, "sync")
	in.syncW = json.NewEncoder(syncF)
	if err := in.run(args, syncF); err != nil {
		kind := "init"
		if errors.Is(err, ErrStack) {
			kind = "stack"
		}
		fmt.Fprintf(in.log, "init: %v\n", err)
		in.send(syncMsg{Type: "error", Kind: kind, Message: err.Error()})
		return 1
	}
	return in.serve()
}

func (in *initProc) run(args []string, syncF *os.File) error {
	if os.Getpid() != 1 {
		return fmt.Errorf("not PID 1 of a new PID namespace (pid %d): drums init is started by the engine", os.Getpid())
	}
	var err error
	planF := os.NewFile(fdPlan, "plan")
	var p Plan
	if err := json.NewDecoder(planF).Decode(&p); err != nil {
		return fmt.Errorf("read plan: %w", err)
	}
	planF.Close()
	if len(args) != 1 || args[0] != p.ID {
		return fmt.Errorf("plan is for %s, arguments say %v", p.ID, args)
	}
	in.plan = &p
	hostNS := os.NewFile(fdHostNS, "hostns")
	if p.MemoryMerge {
		// Before the first fork: the kernel keeps the mark across fork and
		// exec (TestMemoryMerge checks it on 6.18; older kernels are not
		// tested here), so it reaches every process of the desktop.
		if err := unix.Prctl(unix.PR_SET_MEMORY_MERGE, 1, 0, 0, 0); err != nil {
			return fmt.Errorf("mark the desktop's memory for same-page merging (PR_SET_MEMORY_MERGE, Linux 6.4+): %w", err)
		}
	}

	// The session's own /proc, before anything else: pids of the
	// session's processes (the holder's, for its maps and its user
	// namespace) and netlink's namespace handles (/proc/self) must name
	// the session's, not the host's. It stays in init's view only; the
	// desktop's /proc is mounted in its root.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount the session's /proc: %w", err)
	}
	if err := netSysctls(p.IDs); err != nil {
		return err
	}
	if in.busybox, err = openHigh("busybox", p.Busybox); err != nil {
		return err
	}
	if in.exe, err = openHigh("own binary", "/proc/self/exe"); err != nil {
		return err
	}
	in.reaper = newReaper()
	h, err := startHolder(in.reaper, p.IDs, in.busybox)
	if err != nil {
		return err
	}
	userns, err := h.userns()
	if err != nil {
		h.end()
		return err
	}
	in.step("userns")
	in.root, err = buildRoot(&p, int(userns.Fd()))
	userns.Close()
	if err := errors.Join(err, h.end()); err != nil {
		return err
	}
	in.step("root")
	if in.devNull, err = os.OpenFile("/dev/null", os.O_RDWR, 0); err != nil { // the session's own
		return fmt.Errorf("open /dev/null: %w", err)
	}

	// The engine places init in the session's cgroups meanwhile (cgroup
	// v1 has no clone-into-cgroup) and then says "go": nothing of the
	// desktop starts before.
	dec := json.NewDecoder(syncF)
	var msg syncMsg
	if err := dec.Decode(&msg); err != nil || msg.Type != "go" {
		return fmt.Errorf("wait for the engine's go (got %+v): %v", msg, err)
	}
	standby := msg.Standby
	// From here the engine only says "net" (the slot's network is free);
	// if it goes away before the session is ready, nobody will use or
	// remove the session: stop.
	netFree := make(chan struct{})
	go func() {
		var once sync.Once
		for dec.Decode(&msg) == nil {
			if msg.Type == "net" {
				once.Do(func() { close(netFree) })
			}
		}
		syncF.Close()
		if !in.ready.Load() {
			fmt.Fprintln(in.log, "init: the engine went away before the session was ready")
			os.Exit(1)
		}
	}()

	// The network comes up while the desktop starts, once the engine says
	// "net": until then it deletes the slot's old veth (the new one's name)
	// and, in a reset, cuts the old desktop off.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	netErr := make(chan error, 1)
	go func() {
		select {
		case <-netFree:
		case <-ctx.Done():
			netErr <- ctx.Err()
			return
		}
		err := setupNet(ctx, p.Net, hostNS)
		hostNS.Close()
		if err == nil {
			in.step("net")
		}
		netErr <- err
	}()
	// On cgroup v1 init is in the session's cgroups only now: the forking
	// thread's cgroup namespace is rooted there.
	if in.forker, err = startForker(in.reaper, len(p.Cgroup.Delegated) > 0); err != nil {
		return err
	}
	stackErr := make(chan error, 1)
	go func() { stackErr <- in.startStack(ctx) }()
	for range 2 {
		select {
		case err := <-netErr:
			if err != nil {
				return err
			}
		case reason := <-in.end:
			// A standby whose X or bus died while it waited: it ends, and
			// the reset that would have taken it goes cold instead.
			return fmt.Errorf("%s before the network was up: %w", reason, ErrStack)
		case err := <-stackErr:
			if err != nil {
				return err
			}
			in.end = in.watchEssential()
			// A standby (standby_linux.go) waits here, its desktop up
			// and no network, until a reset takes it.
			if standby {
				if err := warmGuest(ctx, p.GuestPort); err != nil {
					return err
				}
			}
			in.send(syncMsg{Type: "up", Millis: in.ms()})
		}
	}
	in.ready.Store(true)
	in.send(syncMsg{Type: "ready", UpperFD: in.root.baseFD, Millis: in.ms()})
	// Init idles from here on: give back what building the session took
	// (it counts in every desktop's memory), and from now on collect
	// early. Its own settings, not its children's: they get the plan's
	// environment.
	debug.SetGCPercent(initGCPercent)
	debug.SetMemoryLimit(initMemoryLimit)
	debug.FreeOSMemory()
	return nil
}

// An idle init holds about 0.4 MiB of live heap, but serving the control
// socket (exec, status) makes garbage, and with Go's defaults (a 4 MiB
// minimum heap goal) an init that served a burst of requests stayed larger:
// 3.6 MiB anonymous memory after 190 execs, against 2.1-2.4 MiB fresh. At
// 25% the heap goal is about 1 MiB, a collection of so small a heap takes
// well under a millisecond of a request, and once the socket has been quiet
// for initTrimAfter init returns what it freed (2.7 MiB, 15 s after 150
// execs). The limit only bounds a runaway: it must stay far above the live
// heap, or init would collect continuously.
const (
	initGCPercent   = 25
	initMemoryLimit = 16 << 20
)

// initTrimAfter is how long the control socket stays quiet before init
// returns freed memory (a forced collection and scavenge, about a
// millisecond): long enough not to run between the requests of a burst
// (compat sends dozens), short enough that an idle desktop is lean.
const initTrimAfter = 10 * time.Second

// serve runs the session: the control socket, the essential processes'
// watch and signal forwarding, until the session ends.
func (in *initProc) serve() int {
	in.trim = time.AfterFunc(initTrimAfter, debug.FreeOSMemory)
	go in.serveControl()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	for {
		select {
		case reason := <-in.end:
			// The desktop cannot go on without it: say why where the
			// engine looks, and end the session (the kernel kills the rest).
			fmt.Fprintf(in.log, "init: %s: ending the session\n", reason)
			in.writeExit(reason)
			return 1
		case sig := <-sigs:
			s := sig.(syscall.Signal)
			unix.Kill(-1, s) // every process of the session but init
			if s == syscall.SIGTERM || s == syscall.SIGINT {
				in.writeExit("stopped by " + unix.SignalName(s))
				in.waitStack(2 * time.Second)
				return 0
			}
		}
	}
}

// watchEssential returns a channel that gets which essential process of
// the stack exited first, and how.
func (in *initProc) watchEssential() <-chan string {
	end := make(chan string, 1)
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, p := range in.procs {
		if p.essential {
			go func() {
				<-p.exited
				select {
				case end <- fmt.Sprintf("%s %s", p.name, describeString(p.status)):
				default:
				}
			}()
		}
	}
	return end
}

// waitStack gives the stack processes up to d to exit.
func (in *initProc) waitStack(d time.Duration) {
	deadline := time.After(d)
	in.mu.Lock()
	procs := make([]*stackProc, 0, len(in.procs))
	for _, p := range in.procs {
		procs = append(procs, p)
	}
	in.mu.Unlock()
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline:
			return
		}
	}
}

// writeExit records why the session ended in exit.json next to its record.
func (in *initProc) writeExit(reason string) {
	b, _ := json.Marshal(exitRecord{Reason: reason, Time: time.Now().UTC()})
	fd, err := unix.Openat(int(in.root.sessionDir.Fd()), exitFile, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		fmt.Fprintf(in.log, "init: record exit: %v\n", err)
		return
	}
	f := os.NewFile(uintptr(fd), exitFile)
	f.Write(b)
	f.Close()
}

// exitRecord is exit.json: why init ended a session.
type exitRecord struct {
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
}

const exitFile = "exit.json"

func (in *initProc) ms() float64 { return float64(time.Since(in.started).Microseconds()) / 1000 }

func (in *initProc) step(name string) {
	in.send(syncMsg{Type: "step", Step: name, Millis: in.ms()})
}

// send writes a message to the engine. Before "ready", failing to reach the
// engine ends init (nobody would use the session); after, it is ignored.
func (in *initProc) send(m syncMsg) {
	in.syncMu.Lock()
	defer in.syncMu.Unlock()
	if in.syncW == nil {
		return
	}
	if err := in.syncW.Encode(m); err != nil && !in.ready.Load() {
		fmt.Fprintf(in.log, "init: the engine went away: %v\n", err)
		os.Exit(1)
	}
	if m.Type == "ready" || m.Type == "error" {
		in.syncW = nil
	}
}
