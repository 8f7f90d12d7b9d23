// Package treecopy copies a directory tree as an overlay layer needs it:
// owners (optionally mapped), modes, times, extended attributes, links and
// device nodes. Sessions copy snapshots into and out of upper layers with
// it.
package treecopy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// IDs maps an owner (uid, gid) of src to the one its copy gets.
type IDs func(uid, gid int) (int, int)

// Shift maps ids 0..size-1 (a snapshot's) to base..base+size-1 (a
// desktop's user namespace on the host); others are kept.
func Shift(base, size int) IDs {
	return func(uid, gid int) (int, int) {
		return shift(uid, 0, base, size), shift(gid, 0, base, size)
	}
}

// Unshift maps host ids base..base+size-1 (a desktop's) back to 0..size-1;
// an id outside them (what the host's root made, such as a mount point)
// becomes 0, the desktop's root.
func Unshift(base, size int) IDs {
	return func(uid, gid int) (int, int) {
		return shift(uid, base, 0, size), shift(gid, base, 0, size)
	}
}

func shift(id, from, to, size int) int {
	if id >= from && id < from+size {
		return id - from + to
	}
	if from == 0 {
		return id
	}
	return 0
}

// Copy copies the tree at src into dst (created if missing) as an overlay
// layer needs it: owners (through ids), modes, times and extended
// attributes (trusted.overlay.opaque marks opaque directories), symlinks,
// and device nodes (a 0/0 character device is a whiteout, a deleted file).
// It needs CAP_MKNOD and CAP_SYS_ADMIN for those. Sockets are skipped; hard
// links become separate files. It stops, with ctx's error, when ctx ends.
func Copy(ctx context.Context, src, dst string, ids IDs) error {
	st, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("copy %s: not a directory", src)
	}
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return fmt.Errorf("copy to %s: %w", dst, err)
	}
	return copyEntry(ctx, src, dst, st, ids)
}

func copyEntry(ctx context.Context, src, dst string, st os.FileInfo, ids IDs) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("copy %s: %w", src, err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	mode := st.Mode()
	switch {
	case mode.IsDir():
		if err := os.Mkdir(dst, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create directory %s: %w", dst, err)
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return fmt.Errorf("read directory %s: %w", src, err)
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				return fmt.Errorf("stat %s: %w", filepath.Join(src, e.Name()), err)
			}
			if err := copyEntry(ctx, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), info, ids); err != nil {
				return err
			}
		}
	case mode.IsRegular():
		if err := copyFile(ctx, src, dst); err != nil {
			return err
		}
	case mode&os.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return fmt.Errorf("read link %s: %w", src, err)
		}
		if err := os.Symlink(target, dst); err != nil {
			return fmt.Errorf("create link %s: %w", dst, err)
		}
	case mode&(os.ModeDevice|os.ModeCharDevice|os.ModeNamedPipe) != 0:
		if err := unix.Mknod(dst, sys.Mode, int(sys.Rdev)); err != nil {
			return fmt.Errorf("create node %s: %w", dst, err)
		}
	default:
		return nil // sockets
	}
	uid, gid := ids(int(sys.Uid), int(sys.Gid))
	if err := os.Lchown(dst, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", dst, err)
	}
	if mode&os.ModeSymlink == 0 {
		// Chmod after chown: chown clears setuid and setgid bits.
		if err := unix.Chmod(dst, sys.Mode&07777); err != nil {
			return fmt.Errorf("chmod %s: %w", dst, err)
		}
	}
	if err := copyXattrs(src, dst); err != nil {
		return err
	}
	ts := []unix.Timespec{unix.NsecToTimespec(sys.Atim.Nano()), unix.NsecToTimespec(sys.Mtim.Nano())}
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("set times of %s: %w", dst, err)
	}
	return nil
}

func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	// In chunks, each still a copy_file_range, so a large file stops soon
	// after ctx ends.
	for {
		err := ctx.Err()
		if err == nil {
			_, err = io.CopyN(out, in, copyChunk)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			out.Close()
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("close %s: %w", dst, err)
	}
	return nil
}

// copyChunk is how much of a file is copied between checks of the context.
const copyChunk = 64 << 20

func copyXattrs(src, dst string) error {
	size, err := unix.Llistxattr(src, nil)
	if err != nil || size == 0 {
		return nil // no xattrs, or a filesystem without them
	}
	buf := make([]byte, size)
	size, err = unix.Llistxattr(src, buf)
	if err != nil {
		return fmt.Errorf("list xattrs of %s: %w", src, err)
	}
	for _, name := range splitNull(buf[:size]) {
		vsize, err := unix.Lgetxattr(src, name, nil)
		if err != nil {
			return fmt.Errorf("read xattr %s of %s: %w", name, src, err)
		}
		val := make([]byte, vsize)
		if vsize, err = unix.Lgetxattr(src, name, val); err != nil {
			return fmt.Errorf("read xattr %s of %s: %w", name, src, err)
		}
		if err := unix.Lsetxattr(dst, name, val[:vsize], 0); err != nil {
			return fmt.Errorf("set xattr %s of %s: %w", name, dst, err)
		}
	}
	return nil
}

func splitNull(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}
