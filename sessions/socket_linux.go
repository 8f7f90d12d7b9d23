package sessions

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// socketWatch says when a process starts listening on a Unix socket: an
// inotify watch on the socket's directory reports the socket's creation
// (its bind), and a connection then says whether it accepts yet. The
// abstract socket of the same name counts too: Xvfb listens on it before
// it binds the file (libxcb tries it first), so it accepts even when Xvfb
// is preempted between the file's bind and listen.
type socketWatch struct {
	f    *os.File // the inotify instance, non-blocking: Close ends a wait
	path string
}

// watchSocket watches for path. Make it before starting the process that
// binds path, or the creation may come before the watch.
func watchSocket(path string) (*socketWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("watch %s: %w", filepath.Dir(path), err)
	}
	return &socketWatch{f: os.NewFile(uintptr(fd), "inotify "+path), path: path}, nil
}

// wait returns nil once the socket accepts a connection. It returns an
// error when the watch is closed first, or when the socket was made but did
// not accept at once (bound, not yet listening: no event comes for listen,
// so the caller falls back to the process's own readiness).
func (w *socketWatch) wait() error {
	if accepts(w.path) == nil {
		return nil
	}
	base := []byte(filepath.Base(w.path))
	buf := make([]byte, 4096)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return err
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if bytes.Equal(bytes.TrimRight(name, "\x00"), base) {
				return accepts(w.path)
			}
		}
	}
}

func (w *socketWatch) Close() error { return w.f.Close() }

// accepts connects to the abstract Unix socket named path, or else to the
// one at path, and hangs up.
func accepts(path string) error {
	var err error
	for _, name := range []string{"@" + path, path} {
		var fd int
		if fd, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		err = unix.Connect(fd, &unix.SockaddrUnix{Name: name})
		unix.Close(fd)
		if err == nil {
			return nil
		}
	}
	return err
}
