package term

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// ErrNotTerminal is MakeRaw's error for a file that is not a terminal.
var ErrNotTerminal = errors.New("not a terminal")

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// MakeRaw puts the terminal f in raw mode, as cfmakeraw does: bytes pass
// through unchanged, one at a time, with no echo, line editing or signal
// keys, so that the shell at the other end interprets them. restore puts
// back the mode f had.
func MakeRaw(f *os.File) (restore func(), err error) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, ErrNotTerminal
	}
	raw := *old
	raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	raw.Oflag &^= unix.OPOST
	raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	raw.Cflag &^= unix.CSIZE | unix.PARENB
	raw.Cflag |= unix.CS8
	raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &raw); err != nil {
		return nil, fmt.Errorf("raw mode: %w", err)
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}

// Size is a terminal's size in character cells.
type Size struct{ Rows, Cols uint16 }

// WatchSize calls resized with the size of the terminal f now and after
// every SIGWINCH (on a goroutine of its own) until stop, which returns once
// no call is under way or can come. A size that cannot be read is not
// reported.
func WatchSize(f *os.File, resized func(Size)) (stop func()) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGWINCH)
	send := func() {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil {
			resized(Size{Rows: ws.Row, Cols: ws.Col})
		}
	}
	send()
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case <-sigs:
				send()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-finished
	}
}
