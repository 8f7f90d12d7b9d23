package guestd

import (
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"os"
	"path/filepath"
	"syscall"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/labstack/echo/v4"
)

// handleUpload is POST /setup/upload: multipart field file_path (~ and $VAR
// expanded) and file part file_data. Parents are created as upstream
// creates them; the content is written to a temporary file beside the
// target and renamed over it, so a failed upload never truncates or
// deletes an existing file (upstream deletes it).
func (s *Server) handleUpload(c echo.Context) error {
	var up upload
	defer up.discard()
	f, err := s.readForm(c, func(name string, part *multipart.Part, fields form) error {
		if name != "file_data" || up.started {
			_, err := io.Copy(io.Discard, part)
			return err
		}
		// With file_path already known (requests and OSWorld send it
		// first), spool straight beside the target.
		dirs := []string{s.cfg.TempDir}
		if raw, ok := fields.get("file_path"); ok {
			target := s.abs(s.expandPath(raw))
			if makeDirs(dirName(target)) == nil {
				dirs = []string{dirName(target), s.cfg.TempDir}
			}
		}
		return up.spool(dirs, part)
	})
	if err != nil {
		return err
	}
	raw, ok := f.get("file_path")
	if !ok || !up.started {
		return reply(ErrBadRequest, "file_path and file_data are required")
	}
	path := s.expandPath(raw)
	if dir := dirName(path); dir != "" {
		if err := makeDirs(s.abs(dir)); err != nil {
			return reply(nil, "Failed to upload file: %s", err)
		}
	}
	size, err := up.commit(s.abs(path), s.umask)
	if err != nil {
		return reply(nil, "Failed to upload file: %s", err)
	}
	return text(c, 200, fmt.Sprintf("File Uploaded: %d bytes", size))
}

// upload is a file part on its way to its target.
type upload struct {
	started bool
	tmp     *os.File // the spooled content, nil once committed
	err     error    // spooling failed; reported at commit like a failed write
}

// spool copies the part into a new temporary file in the first of dirs
// that takes one.
func (u *upload) spool(dirs []string, part io.Reader) error {
	u.started = true
	var err error
	for _, dir := range dirs {
		if u.tmp, err = os.CreateTemp(dir, ".guestd-upload-*"); err == nil {
			break
		}
	}
	if u.tmp == nil {
		u.err = err
		_, err = io.Copy(io.Discard, part)
		return err
	}
	_, err = io.Copy(u.tmp, part)
	var pe *os.PathError
	switch {
	case err == nil:
	case errors.As(err, &pe): // a write error (a full disk)
		u.err = err
	default: // the request body broke off or was too large
		return err
	}
	return nil
}

// commit puts the content at target with the result Python's
// open(target, "wb") would have: through a symlink, keeping an existing
// file's mode (and owner, when root), 0666 minus the umask for a new one.
// It returns the size stat reports afterwards.
func (u *upload) commit(target string, umask os.FileMode) (int64, error) {
	if u.err != nil {
		return 0, pyvalue.AsOSError(u.err, target)
	}
	if resolved, err := filepath.EvalSymlinks(target); err == nil {
		target = resolved
	}
	mode := 0o666 &^ umask
	var owner *syscall.Stat_t
	if st, err := os.Stat(target); err == nil {
		if st.IsDir() {
			return 0, pyvalue.NewOSError(syscall.EISDIR, target)
		}
		mode = st.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
			owner = sys
		}
	}
	if dirName(u.tmp.Name()) != dirName(target) {
		// Spooled elsewhere: copy into a temporary file beside the
		// target, or into the target itself when its directory does not
		// let us create one (upstream can write there too).
		beside, err := os.CreateTemp(dirName(target), ".guestd-upload-*")
		if err != nil {
			return u.writeInPlace(target)
		}
		src := u.tmp
		u.tmp = beside
		_, err = io.Copy(beside, seekStart(src))
		src.Close()
		os.Remove(src.Name())
		if err != nil {
			return 0, pyvalue.AsOSError(err, target)
		}
	}
	if err := u.tmp.Chmod(mode); err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	if owner != nil {
		if err := u.tmp.Chown(int(owner.Uid), int(owner.Gid)); err != nil {
			return 0, pyvalue.AsOSError(err, target)
		}
	}
	if err := u.tmp.Close(); err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	if err := os.Rename(u.tmp.Name(), target); err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	u.tmp = nil
	return statSize(target)
}

// writeInPlace overwrites target with the spooled content.
func (u *upload) writeInPlace(target string) (int64, error) {
	out, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	_, err = io.Copy(out, seekStart(u.tmp))
	if err = errors.Join(err, out.Close()); err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	return statSize(target)
}

func seekStart(f *os.File) io.Reader {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return &errReader{err}
	}
	return f
}

type errReader struct{ err error }

func (r *errReader) Read([]byte) (int, error) { return 0, r.err }

func statSize(p string) (int64, error) {
	st, err := os.Stat(p)
	if err != nil {
		return 0, pyvalue.AsOSError(err, p)
	}
	return st.Size(), nil
}

// discard removes spooled content that was not committed.
func (u *upload) discard() {
	if u.tmp != nil {
		u.tmp.Close()
		os.Remove(u.tmp.Name())
	}
}
