package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The state directory of a prefix, <StateDir>/<prefix>/, is what makes
// sessions outlive the process that created them:
//
//	lock                     flock: slot allocation and sweeps
//	sessions/<id>/
//	    lock                 flock: held while the session is being created,
//	                         reset or removed (a crashed holder releases it)
//	    session.json         the record: Session, plan, request, init's identity
//	    init.log             init's and the desktop's output
//	    control.sock         init's control socket
//	    exit.json            why init ended the session, if it did
//	    base/                mount point of the session's private tmpfs
//	    upper/ work/         the upper layer, when on disk
type record struct {
	Session Session `json:"session"`
	Plan    *Plan   `json:"plan"`
	Request Request `json:"request"`
	// InitStart is init's start time in clock ticks since boot
	// (/proc/<pid>/stat field 22): with InitPID, it tells init from a
	// process that reused its pid.
	InitStart uint64 `json:"init_start"`
	UpperFD   int    `json:"upper_fd"`
	// Standby is the session's standby init (standby_linux.go), if one
	// was started: whoever removes the session kills it too.
	Standby *initRef `json:"standby,omitempty"`
	// Spare says the session is a spare (spare_linux.go), no session of
	// anyone's yet: List and Get do not show it.
	Spare bool `json:"spare,omitempty"`
	// claim and idClaim are the session's address and id claims between
	// its allocation (or a reset's reclaim) and the start of the init
	// that inherits them.
	claim, idClaim *os.File
}

// initRef names an init: its pid, and its start time to tell it from a
// process that reused the pid.
type initRef struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

func (e *Engine) sessionsDir() string         { return filepath.Join(e.dir, "sessions") }
func (e *Engine) sessionDir(id string) string { return filepath.Join(e.sessionsDir(), id) }

func (e *Engine) readRecord(id string) (*record, error) {
	b, err := os.ReadFile(filepath.Join(e.sessionDir(id), "session.json"))
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("parse record of %s: %w", id, err)
	}
	return &r, nil
}

// writeRecord replaces the record atomically.
func (e *Engine) writeRecord(r *record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode record: %w", err)
	}
	dir := e.sessionDir(r.Session.ID)
	tmp := filepath.Join(dir, ".session.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "session.json")); err != nil {
		return fmt.Errorf("write record: %w", err)
	}
	return nil
}

// ids lists the session directories of this prefix, sorted: none before
// the state directory is made.
func (e *Engine) ids() ([]string, error) {
	entries, err := os.ReadDir(e.sessionsDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", e.sessionsDir(), err)
	}
	var out []string
	for _, d := range entries {
		if _, ok := parseID(e.cfg.Prefix, d.Name()); ok && d.IsDir() {
			out = append(out, d.Name())
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, _ := parseID(e.cfg.Prefix, out[i])
		b, _ := parseID(e.cfg.Prefix, out[j])
		return a < b
	})
	return out, nil
}

// fileLock is an flock(2) on a file; the kernel releases it when its holder
// dies, so a crashed process never leaves a session locked.
type fileLock struct{ f *os.File }

func openLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", path, err)
	}
	return f, nil
}

// lock takes path's lock, waiting until ctx ends.
func lock(ctx context.Context, path string) (*fileLock, error) {
	return flockWait(ctx, path, unix.LOCK_EX)
}

// lockShared takes path's lock shared with other shared holders, waiting
// until ctx ends while it is held exclusively.
func lockShared(ctx context.Context, path string) (*fileLock, error) {
	return flockWait(ctx, path, unix.LOCK_SH)
}

// flockWait takes path's lock of kind how (LOCK_EX or LOCK_SH).
func flockWait(ctx context.Context, path string, how int) (*fileLock, error) {
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if unix.Flock(int(f.Fd()), how|unix.LOCK_NB) == nil {
		return &fileLock{f}, nil
	}
	// Held: wait in a goroutine (flock cannot be cancelled); if ctx ends
	// first, the goroutine releases the lock as soon as it gets it.
	got := make(chan error, 1)
	go func() { got <- unix.Flock(int(f.Fd()), how) }()
	select {
	case err := <-got:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return &fileLock{f}, nil
	case <-ctx.Done():
		go func() { <-got; f.Close() }()
		return nil, fmt.Errorf("lock %s: %w: %w", path, ErrBusy, ctx.Err())
	}
}

// tryLock takes path's lock if it is free; ok is false when it is held.
func tryLock(path string) (l *fileLock, ok bool, err error) {
	f, err := openLock(path)
	if err != nil {
		return nil, false, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	return &fileLock{f}, true, nil
}

func (l *fileLock) unlock() { l.f.Close() }

// procStart returns a process's start time (clock ticks since boot) and
// whether it is alive (not a zombie).
func procStart(pid int) (start uint64, alive bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64) // field 22
	if err != nil {
		return 0, false
	}
	return start, f[0] != "Z" && f[0] != "X"
}

// initAlive reports whether the record's init still runs.
func (r *record) initAlive() bool {
	return initRef{PID: r.Session.InitPID, Start: r.InitStart}.alive()
}

// alive reports whether the init named still runs, not a process that
// reused its pid.
func (i initRef) alive() bool {
	if i.PID <= 0 {
		return false
	}
	start, alive := procStart(i.PID)
	return alive && start == i.Start
}

// findInits scans /proc for session inits of prefix: `drums init <id>`.
// It finds the init of a session whose creator died before recording it.
func findInits(prefix string) map[string][]int {
	out := map[string][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) == 3 && argv[1] == InitCommand {
			if _, ok := parseID(prefix, argv[2]); ok {
				out[argv[2]] = append(out[argv[2]], pid)
			}
		}
	}
	return out
}

// InitCommand is the subcommand of drums-init that runs RunInit;
// cmd/drums-init dispatches it before anything else runs.
const InitCommand = "init"
