package term

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY returns a new pseudo-terminal's controlling side and its
// terminal, closed when the test ends.
func openPTY(t *testing.T) (ptm, pts *os.File) {
	t.Helper()
	ptm, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ptm.Close() })
	if err := unix.IoctlSetPointerInt(int(ptm.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	fd, err := unix.IoctlRetInt(int(ptm.Fd()), unix.TIOCGPTPEER)
	if err != nil {
		t.Fatalf("open pty peer: %v", err)
	}
	pts = os.NewFile(uintptr(fd), "pts")
	t.Cleanup(func() { pts.Close() })
	return ptm, pts
}

func TestIsTerminal(t *testing.T) {
	_, pts := openPTY(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if !IsTerminal(pts) {
		t.Error("a pty is not a terminal")
	}
	if IsTerminal(r) || IsTerminal(w) {
		t.Error("a pipe is a terminal")
	}
}

func TestMakeRaw(t *testing.T) {
	_, pts := openPTY(t)
	fd := int(pts.Fd())
	before, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if before.Lflag&unix.ICANON == 0 {
		t.Fatal("a new pty is already raw")
	}
	restore, err := MakeRaw(pts)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if raw.Lflag&(unix.ECHO|unix.ICANON|unix.ISIG|unix.IEXTEN) != 0 || raw.Iflag&(unix.ICRNL|unix.IXON) != 0 ||
		raw.Oflag&unix.OPOST != 0 || raw.Cflag&unix.CSIZE != unix.CS8 || raw.Cc[unix.VMIN] != 1 || raw.Cc[unix.VTIME] != 0 {
		t.Errorf("not raw: %+v", raw)
	}
	restore()
	after, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if *after != *before {
		t.Errorf("restored %+v, was %+v", after, before)
	}
}

func TestMakeRawNotTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if _, err := MakeRaw(r); !errors.Is(err, ErrNotTerminal) {
		t.Errorf("MakeRaw(pipe): %v, want ErrNotTerminal", err)
	}
}

// WatchSize reports the size at once, then after each SIGWINCH, and
// nothing after stop.
func TestWatchSize(t *testing.T) {
	_, pts := openPTY(t)
	setSize := func(rows, cols uint16) {
		t.Helper()
		if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
			t.Fatal(err)
		}
	}
	setSize(24, 80)
	sizes := make(chan Size, 8)
	stop := WatchSize(pts, func(s Size) { sizes <- s })
	want := func(w Size) {
		t.Helper()
		select {
		case s := <-sizes:
			if s != w {
				t.Errorf("size %+v, want %+v", s, w)
			}
		case <-time.After(10 * time.Second): // a bound, not a readiness wait
			t.Fatalf("no size reported, want %+v", w)
		}
	}
	want(Size{Rows: 24, Cols: 80})
	setSize(50, 132)
	if err := syscall.Kill(os.Getpid(), syscall.SIGWINCH); err != nil {
		t.Fatal(err)
	}
	want(Size{Rows: 50, Cols: 132})
	stop()
	close(sizes) // a report after stop would panic
}
