package sessions

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSocketWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "X0")
	w := newWatch(t, path)
	done := make(chan error, 1)
	go func() { done <- w.wait() }()
	listenAsXvfb(t, path)
	if err := <-done; err != nil {
		t.Fatalf("wait for a socket that listens: %v", err)
	}
	// Already listening when the wait starts.
	if err := w.wait(); err != nil {
		t.Fatalf("wait for a socket already listening: %v", err)
	}
}

func newWatch(t *testing.T, path string) *socketWatch {
	w, err := watchSocket(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// listenAsXvfb listens as Xvfb does: on the abstract socket named path,
// then on the file (whose creation the watch sees between its bind and
// listen).
func listenAsXvfb(t *testing.T, path string) {
	for _, name := range []string{"@" + path, path} {
		l, err := net.Listen("unix", name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
	}
}

// A socket bound but not listening is not ready, and no event will say
// when it is: the wait gives up rather than wait for ever.
func TestSocketWatchBoundOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "X0")
	w := newWatch(t, path)
	done := make(chan error, 1)
	go func() { done <- w.wait() }()
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("wait for a socket bound, not listening: %v, want ECONNREFUSED", err)
	}
}

// Other files made in the directory do not end the wait.
func TestSocketWatchOtherFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "X0")
	w := newWatch(t, path)
	// Queued before the socket's creation: a wait that took it for the
	// socket would fail to connect.
	if err := os.WriteFile(filepath.Join(dir, "X1"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	listenAsXvfb(t, path)
	if err := w.wait(); err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// Closing the watch ends a wait for a socket that never comes.
func TestSocketWatchClose(t *testing.T) {
	w := newWatch(t, filepath.Join(t.TempDir(), "X0"))
	done := make(chan error, 1)
	go func() { done <- w.wait() }()
	w.Close()
	if err := <-done; !errors.Is(err, os.ErrClosed) {
		t.Fatalf("wait after Close: %v, want os.ErrClosed", err)
	}
}
