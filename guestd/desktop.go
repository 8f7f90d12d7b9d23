package guestd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/internal/ctxtime"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// handleOpenFile is POST /setup/open_file: xdg-open an existing path (or
// start an application by name), then poll `wmctrl -l` every second for a
// window whose line contains the name (or its stem) and activate it with
// `wmctrl -i -a`; up to 1800 s.
func (s *Server) handleOpenFile(c echo.Context) error {
	raw, target, err := s.setupPath(c)
	if err != nil {
		return err
	}
	var argv []string
	var name, stem string
	if exists(s.abs(target)) {
		argv = []string{"xdg-open", target}
		name = baseName(target)
		stem, _ = splitExt(name)
	} else {
		if !s.which(raw) {
			return reply(ErrNotFound, "Application/file not found: %s", raw)
		}
		argv = []string{raw}
		name, stem = raw, raw
	}
	p := s.proc(argv)
	p.stdout, p.stderr = s.cfg.Stdout, s.cfg.Stderr
	if err := startDetached(p); err != nil {
		return reply(nil, "Failed to open %s. Error: %s", raw, err)
	}

	// The deadline bounds each wmctrl call too: a hung one must not hold
	// the request past it.
	ctx := c.Request().Context()
	wait, cancel := context.WithTimeout(ctx, s.cfg.OpenFileTimeout)
	defer cancel()
	warned := false
	for wait.Err() == nil {
		found, err := s.activateMatching(wait, name, stem)
		switch {
		case found:
			return text(c, 200, "File opened and window activated successfully")
		case wait.Err() != nil:
			// The round was cut short, by the deadline or the client: the
			// loop ends.
			continue
		case errors.Is(err, errWmctrl):
			// The window manager may not be ready yet; upstream logs
			// this once and keeps polling.
			if !warned {
				s.log.Warn("wmctrl is not ready, will keep retrying", "error", err)
				warned = true
			}
		case err != nil:
			return reply(nil, "Failed to open %s. Error: %s", raw, err)
		}
		_ = ctxtime.Sleep(wait, s.cfg.OpenFilePoll) // its end is the loop's
	}
	if err := ctx.Err(); err != nil {
		// The client has gone; nobody is left to answer.
		return err
	}
	return reply(nil, "Failed to find window for %s within %s seconds.", name, pySeconds(s.cfg.OpenFileTimeout))
}

// setupPath reads the path of an open_file or change_wallpaper request as
// upstream does: required, then ~ expanded and printed as pathlib does.
// raw is the path as sent.
func (s *Server) setupPath(c echo.Context) (raw, path string, err error) {
	data, err := s.jsonObject(c)
	if err != nil {
		return "", "", err
	}
	if raw, err = requiredString(data, "path", "Path not supplied!"); err != nil {
		return "", "", err
	}
	return raw, pathlibStr(s.expandPath(raw)), nil
}

// errWmctrl marks wmctrl failures that upstream swallows while polling (a
// non-zero exit or a missing wmctrl).
var errWmctrl = errors.New("wmctrl failed")

// activateMatching is one polling round: the first `wmctrl -l` line that
// contains name or stem is activated by its window id.
func (s *Server) activateMatching(ctx context.Context, name, stem string) (bool, error) {
	res, err := runCaptured(ctx, s.proc([]string{"wmctrl", "-l"}), runOptions{noTimeout: true})
	if err != nil {
		var oe *pyvalue.OSError
		if errors.As(err, &oe) && oe.Errno == syscall.ENOENT {
			return false, fmt.Errorf("%w: %w", errWmctrl, err)
		}
		return false, err
	}
	if res.code != 0 {
		return false, fmt.Errorf("%w: wmctrl -l exited with status %d", errWmctrl, res.code)
	}
	listing, err := pyvalue.Text(res.stdout)
	if err != nil {
		return false, err
	}
	if strings.TrimSpace(listing) == "" {
		return false, nil
	}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		if !strings.Contains(line, name) && !strings.Contains(line, stem) {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 {
			return false, errEmptyArgv // window.split()[0] on a blank line
		}
		res, err := runCaptured(ctx, s.proc([]string{"wmctrl", "-i", "-a", fields[0]}), runOptions{noTimeout: true})
		if err != nil {
			return false, fmt.Errorf("%w: %w", errWmctrl, err)
		}
		if res.code != 0 {
			return false, fmt.Errorf("%w: wmctrl -i -a %s exited with status %d", errWmctrl, fields[0], res.code)
		}
		return true, nil
	}
	return false, nil
}

// which is shutil.which(name) != None over the server's PATH.
func (s *Server) which(name string) bool {
	executable := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir() && syscall.Access(p, 1 /* X_OK */) == nil
	}
	if strings.Contains(name, "/") {
		return executable(s.abs(name))
	}
	path, ok := lookupEnv(s.cfg.Environ, "PATH")
	if !ok {
		path = "/bin:/usr/bin"
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		if executable(s.abs(joinPath(dir, name))) {
			return true
		}
	}
	return false
}

// windowFlag is upstream's wmctrl option word: -a/-c with x (by class) and
// F (strict) inserted.
func windowFlag(data map[string]any, action string) string {
	flag := "-"
	if pyvalue.Truthy(data["by_class"]) {
		flag += "x"
	}
	if pyvalue.Truthy(data["strict"]) {
		flag += "F"
	}
	return flag + action
}

// handleActivateWindow is POST /setup/activate_window: `wmctrl -a NAME`
// (flags by_class/strict), always 200 whatever wmctrl says.
func (s *Server) handleActivateWindow(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	if !pyvalue.Truthy(data["window_name"]) {
		return reply(ErrBadRequest, "window_name required")
	}
	if err := s.wmctrlWindow(data, "a"); err != nil {
		return err
	}
	return text(c, 200, "Window activated successfully")
}

// handleCloseWindow is POST /setup/close_window: `wmctrl -c NAME`; the name
// must be present but may be empty.
func (s *Server) handleCloseWindow(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	if _, ok := data["window_name"]; !ok {
		return reply(ErrBadRequest, "window_name required")
	}
	if err := s.wmctrlWindow(data, "c"); err != nil {
		return err
	}
	return text(c, 200, "Window closed successfully.")
}

func (s *Server) wmctrlWindow(data map[string]any, action string) error {
	name, ok := data["window_name"].(string)
	if !ok {
		return badInput("'window_name' must be a string, not %s", pyvalue.TypeName(data["window_name"]))
	}
	p := s.proc([]string{"wmctrl", windowFlag(data, action), name})
	p.stdout, p.stderr = s.cfg.Stdout, s.cfg.Stderr
	if _, err := runInherited(p); err != nil {
		return reply(nil, "%s", err)
	}
	return nil
}

// handleWallpaper is POST /wallpaper: the file gsettings names as
// org.gnome.desktop.background picture-uri ("file://" and quotes removed),
// labelled image/png whatever it is.
func (s *Server) handleWallpaper(c echo.Context) error {
	res, err := runCaptured(c.Request().Context(), s.proc([]string{"gsettings", "get", "org.gnome.desktop.background", "picture-uri"}),
		runOptions{noTimeout: true})
	if err != nil {
		return reply(nil, "%s", err)
	}
	if res.code != 0 {
		s.log.Warn("gsettings get picture-uri failed", "status", res.code, "stderr", string(res.stderr))
		return reply(ErrNotFound, "Wallpaper file not found")
	}
	out, err := pyvalue.DecodeUTF8(res.stdout)
	if err != nil {
		return reply(nil, "%s", err)
	}
	path := strings.ReplaceAll(strings.ReplaceAll(pyvalue.Strip(out), "file://", ""), "'", "")
	if path == "" {
		return reply(ErrNotFound, "Wallpaper file not found")
	}
	full := s.abs(path)
	f, err := os.Open(full)
	if err != nil {
		s.log.Warn("serve wallpaper", "path", full, "error", err)
		return reply(nil, "Unable to serve the wallpaper file")
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return reply(nil, "Unable to serve the wallpaper file")
	}
	return s.sendFile(c, download{
		name: baseName(full), mimetype: "image/png",
		size: st.Size(), mtime: st.ModTime(), etagPath: full, body: f,
	})
}

// handleChangeWallpaper is POST /setup/change_wallpaper: gsettings set
// picture-uri file://PATH (exit status ignored).
func (s *Server) handleChangeWallpaper(c echo.Context) error {
	_, path, err := s.setupPath(c)
	if err != nil {
		return err
	}
	if !exists(s.abs(path)) {
		return reply(ErrNotFound, "File not found: %s", path)
	}
	p := s.proc([]string{"gsettings", "set", "org.gnome.desktop.background", "picture-uri", "file://" + path})
	p.stdout, p.stderr = s.cfg.Stdout, s.cfg.Stderr
	if _, err := runInherited(p); err != nil {
		return reply(nil, "Failed to change wallpaper. Error: %s", err)
	}
	return text(c, 200, "Wallpaper changed successfully")
}
