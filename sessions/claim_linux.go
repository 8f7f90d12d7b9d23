package sessions

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Claims make a resource of a session unique on the host, whichever engine
// (prefix) asks: every engine claims here before it uses one, so engines
// whose ranges overlap (a daemon, the tasks daemon, compat, tests of several
// packages at once) can never hand out the same one, even when they create
// at the same moment. A claim directory holds one file per claimed
// resource, named after it and holding the id of the session that claimed
// it:
//
//	AddrClaimDir  /run/drums/addr/<block>   a slot's /30 of addresses
//	IDClaimDir    /run/drums/ids/<host id>  a range of host uids and gids
//
// A claim is an flock(2) on the file, taken by the engine and inherited by
// the session's init (fds 6 and 7), which holds it for the session's life:
// the kernel drops it when the last holder dies, so a crashed engine or a
// killed session never leaves a resource claimed. A free file is garbage;
// whoever finds one free may remove it while holding its lock, and a
// claimer checks after locking that the path still names the file it
// locked.
const (
	AddrClaimDir = "/run/drums/addr"
	IDClaimDir   = "/run/drums/ids"
)

// addrKey names the claim of the /30 holding addr.
func addrKey(addr netip.Prefix) string {
	return netip.PrefixFrom(addr.Addr(), slotBits).Masked().Addr().String()
}

// idKey names the claim of the id range starting at host id base.
func idKey(base int) string { return strconv.Itoa(base) }

// isAddrKey and isIDKey tell claim files from anything else in their
// directories.
func isAddrKey(name string) bool {
	a, err := netip.ParseAddr(name)
	return err == nil && a.Is4()
}

func isIDKey(name string) bool {
	n, err := strconv.Atoi(name)
	return err == nil && n > 0 && strconv.Itoa(n) == name
}

// claimPath is the claim file of key.
func claimPath(dir, key string) string { return filepath.Join(dir, key) }

// tryClaim claims key for owner (a session id). It returns the locked
// file, or ok false when another session holds it.
func tryClaim(dir, key, owner string) (*os.File, bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, fmt.Errorf("create claim directory %s: %w", dir, err)
	}
	path := claimPath(dir, key)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, false, fmt.Errorf("open claim %s: %w", path, err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("lock claim %s: %w", path, err)
		}
		if !samePath(f, path) {
			f.Close() // removed by a release between open and lock: claim the new one
			continue
		}
		err = f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt([]byte(owner+"\n"), 0)
		}
		if err != nil {
			f.Close()
			return nil, false, fmt.Errorf("write claim %s: %w", path, err)
		}
		return f, true, nil
	}
}

// samePath reports whether path still names the open file f.
func samePath(f *os.File, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(int(f.Fd()), &a) != nil || unix.Stat(path, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// releaseClaim removes the claim file of key if nobody holds it (the
// session's init is gone). A held file is left alone: another session may
// have claimed it meanwhile, or a dying init still holds it (a sweep
// removes it later). It reports whether it removed the file.
func releaseClaim(dir, key string) (bool, error) {
	path := claimPath(dir, key)
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open claim %s: %w", path, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("lock claim %s: %w", path, err)
	}
	if !samePath(f, path) {
		return false, nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("remove claim %s: %w", path, err)
	}
	return true, nil
}

// claimHeld reports whether another process holds the claim of key for
// owner (a live engine that keeps a dead session claimed for its lease).
func claimHeld(dir, key, owner string) bool {
	path := claimPath(dir, key)
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false
	}
	return claimOwner(path) == owner
}

// claimOwner reads the session id a claim file names ("" when unreadable).
func claimOwner(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// sweepClaims removes the free claim files of prefix's sessions in dir
// (and empty ones, which a claimer that died before writing left) and
// returns their paths; key says which names are claims. Claims of live
// sessions are held, so they are never free.
func sweepClaims(dir, prefix string, key func(name string) bool) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", dir, err)
	}
	var out []string
	var errs []error
	for _, d := range entries {
		if !key(d.Name()) {
			continue
		}
		path := filepath.Join(dir, d.Name())
		owner := claimOwner(path)
		if _, ok := parseID(prefix, owner); !ok && owner != "" {
			continue
		}
		removed, err := releaseClaim(dir, d.Name())
		errs = append(errs, err)
		if removed {
			out = append(out, path)
		}
	}
	return out, errors.Join(errs...)
}

// takeClaim duplicates the claim a running init holds (its descriptor fd)
// into this process, so that the claim holds while a reset replaces that
// init. It returns nil when init is gone, or the kernel lacks pidfd_getfd
// (Linux 5.6) or refuses it (Yama ptrace_scope 3): the caller then claims
// again once the old init is dead.
func takeClaim(pid int, start uint64, fd int, path string) *os.File {
	if pid <= 0 {
		return nil
	}
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil
	}
	defer unix.Close(pfd)
	if s, alive := procStart(pid); !alive || s != start {
		return nil
	}
	got, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(got), "claim")
	if !samePath(f, path) {
		f.Close()
		return nil
	}
	return f
}

// reclaim claims one of a session's resources again during a reset when
// the old init's claim could not be taken over (takeClaim): at once if it
// is free, else once the old init, which holds it, is gone (oldGone
// closed).
func reclaim(ctx context.Context, id, dir, key string, oldGone <-chan struct{}) (*os.File, error) {
	f, ok, err := tryClaim(dir, key, id)
	if err != nil || ok {
		return f, err
	}
	select {
	case <-oldGone:
	case <-ctx.Done():
		return nil, fmt.Errorf("claim %s: %w", claimPath(dir, key), ctx.Err())
	}
	f, ok, err = tryClaim(dir, key, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%s was claimed by %s while session %s was down: %w",
			claimPath(dir, key), claimOwnerOr(claimPath(dir, key)), id, ErrCapacity)
	}
	return f, nil
}

// claimOwnerOr names the holder of a claim file for an error message.
func claimOwnerOr(path string) string {
	if o := claimOwner(path); o != "" {
		return o
	}
	return "another engine"
}

// overlapsAny reports whether p overlaps one of nets.
func overlapsAny(p netip.Prefix, nets []netip.Prefix) bool {
	for _, n := range nets {
		if n.Overlaps(p) {
			return true
		}
	}
	return false
}
