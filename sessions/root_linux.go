package sessions

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/treecopy"
)

// root holds what init keeps of the host after pivot_root.
type root struct {
	baseFD     int // the private tmpfs, held open for the engine (SaveUpper)
	sessionDir *os.File
	control    *net.UnixListener
}

var mountFlags = map[string]uintptr{
	"ro": unix.MS_RDONLY, "nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
}

// buildRoot makes the session's root in init's mount namespace (made
// private by init first: Cloneflags gave a copy of the host's mounts with
// their propagation) and pivots into it. Every mount it makes lives in that
// namespace only and goes away with it. userns is the desktop's user
// namespace (enter_linux.go): the image is mounted mapped to it, so its
// files keep their owners inside; -1 mounts it unmapped (RunInImage, where
// nothing runs in a user namespace).
func buildRoot(p *Plan, userns int) (*root, error) {
	rp := p.Root
	data := "mode=700"
	if rp.TmpfsSize > 0 {
		data += ",size=" + strconv.FormatInt(rp.TmpfsSize, 10)
	}
	if err := unix.Mount("drums", rp.Base, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		return nil, fmt.Errorf("mount tmpfs on %s: %w", rp.Base, err)
	}
	lower := filepath.Join(rp.Base, "image")
	merged := filepath.Join(rp.Base, "merged")
	upper, work := rp.UpperDir, rp.WorkDir
	if upper == "" {
		upper, work = filepath.Join(rp.Base, "upper"), filepath.Join(rp.Base, "work")
	}
	for _, d := range []string{lower, merged, upper, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", d, err)
		}
	}
	// The merged root directory takes the upper directory's owner and
	// mode: the desktop's root owns / as in a VM.
	if err := os.Chown(upper, p.IDs.ToHost(0), p.IDs.ToHost(0)); err != nil {
		return nil, fmt.Errorf("chown %s: %w", upper, err)
	}
	if rp.Snapshot != "" {
		if err := treecopy.Copy(context.Background(), rp.Snapshot, upper, treecopy.Shift(p.IDs.Host, p.IDs.Size)); err != nil {
			return nil, fmt.Errorf("copy snapshot: %w", err)
		}
	}
	if err := mountImage(rp.Image, lower, userns); err != nil {
		return nil, err
	}
	var lowers []string
	for _, l := range rp.Layers {
		lowers = append(lowers, filepath.Join(lower, l))
	}
	// nodev: no device node of the image or the upper layer opens (the
	// desktop's own are on /dev); no nosuid: sudo is setuid root of the
	// desktop's user namespace.
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(lowers, ":"), upper, work)
	if err := unix.Mount("overlay", merged, "overlay", unix.MS_NODEV, opts); err != nil {
		return nil, fmt.Errorf("mount overlay (%s): %w", opts, err)
	}
	baseFD, err := unix.Open(rp.Base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", rp.Base, err)
	}
	r := &root{baseFD: baseFD}

	for _, m := range rp.Mounts {
		if err := mountIn(merged, m); err != nil {
			return nil, err
		}
	}
	for _, d := range rp.Dirs {
		path := filepath.Join(merged, d.Path)
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", d.Path, err)
		}
		if err := os.Lchown(path, d.UID, d.GID); err != nil {
			return nil, fmt.Errorf("chown %s: %w", d.Path, err)
		}
		if err := unix.Chmod(path, d.Mode); err != nil {
			return nil, fmt.Errorf("chmod %s: %w", d.Path, err)
		}
	}
	for _, d := range rp.Devices {
		path := filepath.Join(merged, d.Path)
		if err := unix.Mknod(path, unix.S_IFCHR|d.Mode, int(unix.Mkdev(d.Major, d.Minor))); err != nil {
			return nil, fmt.Errorf("create device %s: %w", d.Path, err)
		}
		if err := os.Lchown(path, p.IDs.ToHost(0), p.IDs.ToHost(0)); err != nil {
			return nil, fmt.Errorf("chown %s: %w", d.Path, err)
		}
		if err := unix.Chmod(path, d.Mode); err != nil { // the umask applied to mknod
			return nil, fmt.Errorf("chmod %s: %w", d.Path, err)
		}
	}
	for _, l := range rp.Links {
		if err := os.Symlink(l.Target, filepath.Join(merged, l.Path)); err != nil {
			return nil, fmt.Errorf("create link %s: %w", l.Path, err)
		}
	}
	for _, path := range rp.ReadOnly {
		if err := bindReadOnly(filepath.Join(merged, path), filepath.Join(merged, path)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("make %s read-only: %w", path, err)
		}
	}
	for _, path := range rp.Masks {
		if err := mask(merged, path); err != nil {
			return nil, err
		}
	}
	if userns >= 0 {
		if err := bindUserns(merged, userns); err != nil {
			return nil, err
		}
	}

	// What a session's init keeps of the host: the session directory (for
	// exit.json) and the control socket, bound while the host's paths
	// still resolve.
	if rp.Control != "" {
		if r.sessionDir, err = os.OpenFile(rp.SessionDir, os.O_RDONLY|unix.O_DIRECTORY, 0); err != nil {
			return nil, fmt.Errorf("open session directory: %w", err)
		}
		if r.control, err = listenControl(rp.Control); err != nil {
			return nil, err
		}
	}

	if err := pivot(merged); err != nil {
		return nil, err
	}
	if err := unix.Sethostname([]byte(p.Hostname)); err != nil {
		return nil, fmt.Errorf("set hostname: %w", err)
	}
	return r, nil
}

// mountImage mounts the image directory at target, read-only, without
// devices, and with its ids mapped through the user namespace userns: the
// image's root (uid 0) is the desktop's root, a host uid of its own. The
// image on disk is not changed, and every desktop of it shares its pages.
func mountImage(image, target string, userns int) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, image, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone the image mount %s: %w", image, err)
	}
	defer unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NODEV}
	if userns >= 0 {
		attr.Attr_set |= unix.MOUNT_ATTR_IDMAP
		attr.Userns_fd = uint64(userns)
	}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr); err != nil {
		return fmt.Errorf("map the image's ids (idmapped mounts need Linux 5.12 and a filesystem that has them, such as ext4, xfs or btrfs, for %s): %w", image, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach the image at %s: %w", target, err)
	}
	return nil
}

func mountIn(merged string, m Mount) error {
	target := filepath.Join(merged, m.Target)
	var flags uintptr
	for _, f := range m.Flags {
		flags |= mountFlags[f]
	}
	if m.Type == "bind" {
		st, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("bind %s: %w", m.Source, err)
		}
		if err := ensureTarget(target, st.IsDir()); err != nil {
			return err
		}
		if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", m.Source, m.Target, err)
		}
		if flags != 0 {
			if err := unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|flags, ""); err != nil {
				return fmt.Errorf("remount %s (%v): %w", m.Target, m.Flags, err)
			}
		}
		return nil
	}
	if err := ensureTarget(target, true); err != nil {
		return err
	}
	if err := unix.Mount(m.Type, target, m.Type, flags, m.Data); err != nil {
		return fmt.Errorf("mount %s on %s: %w", m.Type, m.Target, err)
	}
	return nil
}

// ensureTarget makes a mount point. A missing one is created in the
// session's view (the upper layer or a tmpfs), never on the host.
func ensureTarget(path string, dir bool) error {
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	if dir {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return fmt.Errorf("create mount point %s: %w", path, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create mount point %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("create mount point %s: %w", path, err)
	}
	return f.Close()
}

func bindReadOnly(src, target string) error {
	if _, err := os.Lstat(target); err != nil {
		return err
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// mask hides path in the session if it exists there.
func mask(merged, path string) error {
	target := filepath.Join(merged, path)
	st, err := os.Stat(target)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", path, err)
	}
	if st.IsDir() {
		err = unix.Mount("drums-mask", target, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=755")
	} else {
		err = unix.Mount(filepath.Join(merged, "dev/null"), target, "", unix.MS_BIND, "")
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", path, err)
	}
	return nil
}

// pivot makes merged the root. pivot_root(".", ".") stacks the old root
// under the new one, so no directory for it is needed in the session's
// view; it is then detached.
func pivot(merged string) error {
	if err := unix.Chdir(merged); err != nil {
		return fmt.Errorf("enter new root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("enter /: %w", err)
	}
	return nil
}
