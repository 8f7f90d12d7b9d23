package guestd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/labstack/echo/v4"
)

// recorder holds the one ffmpeg screen recording a server may run. Its
// mutex serialises /start_recording and /end_recording (upstream has a
// global and no lock).
type recorder struct {
	mu  sync.Mutex
	cur *recording
}

// recording is a running ffmpeg.
type recording struct {
	cmd     *exec.Cmd
	exited  chan struct{} // closed once ffmpeg was reaped
	drained chan struct{} // closed once its stderr reached EOF
	stderr  *headTail
}

func (r *recording) running() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// finish waits up to d for ffmpeg to exit and its stderr to end; it
// reports false when the time ran out.
func (r *recording) finish(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, ch := range []chan struct{}{r.exited, r.drained} {
		select {
		case <-ch:
		case <-t.C:
			return false
		}
	}
	return true
}

// kill ends ffmpeg for good and waits for it and its stderr.
func (r *recording) kill() {
	_ = r.cmd.Process.Kill()
	<-r.exited
	<-r.drained
}

// stderrText is the captured stderr as Python's text mode reads it.
func (r *recording) stderrText() string {
	b := r.stderr.Bytes()
	if s, err := pyvalue.Text(b); err == nil {
		return s
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// handleStartRecording is POST /start_recording: ffmpeg x11grab of the
// whole screen of the server's display into RecordingPath; success once
// ffmpeg survived its first two seconds.
func (s *Server) handleStartRecording(c echo.Context) error {
	s.rec.mu.Lock()
	defer s.rec.mu.Unlock()
	if s.rec.cur != nil && s.rec.cur.running() {
		return reply(ErrBadRequest, "Recording is already in progress.")
	}
	path := s.cfg.RecordingPath
	if exists(path) {
		if err := syscall.Unlink(path); err != nil {
			return reply(nil, "Failed to remove old recording file: %s", pyvalue.AsOSError(err, path))
		}
	}
	w, h, err := s.deps.Display.ScreenSize(c.Request().Context())
	if err != nil {
		return fmt.Errorf("read screen size: %w", err)
	}
	rec, err := s.startFFmpeg(w, h)
	if err != nil {
		return reply(nil, "%s", err)
	}
	s.rec.cur = rec
	if !rec.finish(s.cfg.RecordingStartup) {
		return jsonReply(c, 200, map[string]any{"status": "success", "message": "Started recording successfully."})
	}
	return reply(nil, "Failed to start recording. ffmpeg terminated unexpectedly. Error: %s", rec.stderrText())
}

func (s *Server) startFFmpeg(w, h int) (*recording, error) {
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create ffmpeg stderr pipe: %w", err)
	}
	p := s.proc([]string{"ffmpeg", "-y", "-f", "x11grab", "-draw_mouse", "1",
		"-s", fmt.Sprintf("%dx%d", w, h), "-i", s.cfg.Display,
		"-c:v", "libx264", "-r", "30", s.cfg.RecordingPath})
	p.stderr = wr
	cmd, err := p.start()
	wr.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	rec := &recording{cmd: cmd, exited: make(chan struct{}), drained: make(chan struct{}), stderr: &headTail{}}
	go func() {
		// Draining all the time keeps ffmpeg from blocking on a full
		// pipe during long recordings (upstream reads only at the end).
		_, _ = io.Copy(rec.stderr, r)
		r.Close()
		close(rec.drained)
	}()
	go func() { _ = cmd.Wait(); close(rec.exited) }()
	return rec, nil
}

// handleEndRecording is POST /end_recording: SIGINT, up to 15 s for ffmpeg
// to finish the file, then the video as an attachment.
func (s *Server) handleEndRecording(c echo.Context) error {
	s.rec.mu.Lock()
	rec := s.rec.cur
	s.rec.cur = nil
	if rec == nil || !rec.running() {
		s.rec.mu.Unlock()
		return reply(ErrBadRequest, "No recording in progress to stop.")
	}
	_ = rec.cmd.Process.Signal(syscall.SIGINT)
	if !rec.finish(s.cfg.RecordingStop) {
		rec.kill()
		s.rec.mu.Unlock()
		return reply(nil, "Recording process was unresponsive and had to be killed. Stderr: %s", rec.stderrText())
	}
	s.rec.mu.Unlock()

	path := s.cfg.RecordingPath
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			return s.sendFile(c, download{
				name: baseName(path), attach: true,
				size: st.Size(), mtime: st.ModTime(), etagPath: path, body: f,
			})
		}
	}
	e := reply(nil, "Recording failed. The output file is missing or empty. ffmpeg stderr: %s", rec.stderrText())
	e.page = true
	return e
}

// abandon stops a recording when the server shuts down.
func (r *recorder) abandon(grace time.Duration) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := r.cur
	r.cur = nil
	if rec == nil || !rec.running() {
		return nil
	}
	if err := rec.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop ffmpeg: %w", err)
	}
	if !rec.finish(grace) {
		rec.kill()
	}
	return nil
}

// headTail keeps the first and the last bytes written to it, so that a
// recording of any length holds ffmpeg's banner and errors and its final
// summary in bounded memory.
type headTail struct {
	mu      sync.Mutex
	head    []byte
	tail    []byte // a ring once full
	pos     int    // next write position in tail when full
	dropped int64
}

// The head must hold ffmpeg's banner and input/output description (a few
// KiB); the tail its last progress lines and summary.
const (
	headTailHead = 64 << 10
	headTailTail = 192 << 10
)

func (b *headTail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(p)
	if room := headTailHead - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < headTailTail {
			k := min(headTailTail-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		k := min(headTailTail-b.pos, len(p))
		copy(b.tail[b.pos:], p[:k])
		b.dropped += int64(k)
		b.pos = (b.pos + k) % headTailTail
		p = p[k:]
	}
	return n, nil
}

// Bytes is the head, a marker if anything was dropped, and the tail.
func (b *headTail) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := append([]byte(nil), b.head...)
	if b.dropped > 0 {
		out = append(out, fmt.Sprintf("\n[… %d bytes of ffmpeg output omitted …]\n", b.dropped)...)
		out = append(out, b.tail[b.pos:]...)
		return append(out, b.tail[:b.pos]...)
	}
	return append(out, b.tail...)
}
