package guestd

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/labstack/echo/v4"
)

// handleFile is POST /file: the file at form field file_path (~ and $VAR
// expanded) as an attachment.
func (s *Server) handleFile(c echo.Context) error {
	f, err := s.readForm(c, nil)
	if err != nil {
		return err
	}
	raw, ok := f.get("file_path")
	if !ok {
		return reply(ErrBadRequest, "file_path is required")
	}
	path := s.abs(s.expandPath(raw))
	if !exists(path) {
		return reply(ErrNotFound, "File not found")
	}
	file, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return reply(ErrNotFound, "File not found")
		}
		return reply(nil, "Failed to serve file: %s", pyvalue.AsOSError(err, path))
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return reply(nil, "Failed to serve file: %s", pyvalue.AsOSError(err, path))
	}
	if st.IsDir() {
		// Python's open() refuses directories where Go's succeeds.
		return reply(nil, "Failed to serve file: %s", pyvalue.NewOSError(syscall.EISDIR, path))
	}
	return s.sendFile(c, download{
		name:     baseName(path),
		attach:   true,
		size:     st.Size(),
		mtime:    st.ModTime(),
		etagPath: path,
		body:     file,
	})
}

// handleDesktopPath is POST /desktop_path: $HOME/Desktop when it exists.
func (s *Server) handleDesktopPath(c echo.Context) error {
	p := filepath.Join(pathlibStr(s.cfg.Home), "Desktop")
	if !exists(p) {
		return reply(ErrNotFound, "Unsupported operating system or desktop path not found")
	}
	return jsonReply(c, 200, map[string]any{"desktop_path": p})
}

// handleListDirectory is POST /list_directory: the tree under "path"
// (no expansion), children in readdir order.
func (s *Server) handleListDirectory(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	raw, ok := data["path"]
	if !ok {
		return reply(ErrBadRequest, "Missing 'path' parameter")
	}
	path, ok := raw.(string)
	if !ok || !isDir(s.abs(path)) {
		return reply(ErrBadRequest, "The provided path is not a directory")
	}
	return jsonReply(c, 200, map[string]any{"directory_tree": listTree(path, s.abs(path), nil)})
}

// dirID identifies a directory on the current path, to stop symlink
// loops.
type dirID struct{ dev, ino uint64 }

// listTree builds one directory node. name is the path as the client sees
// it (its base name is the node's name), real the path to read; ancestors
// are the directories above. A directory that cannot be read, or that is
// one of its own ancestors through a symlink (upstream recurses until the
// path is too long), becomes {"error": …}.
func listTree(name, real string, ancestors []dirID) map[string]any {
	var st syscall.Stat_t
	if err := syscall.Stat(real, &st); err != nil {
		return map[string]any{"error": pyvalue.AsOSError(err, name).Error()}
	}
	id := dirID{uint64(st.Dev), st.Ino}
	for _, a := range ancestors {
		if a == id {
			return map[string]any{"error": pyvalue.NewOSError(syscall.ELOOP, name).Error()}
		}
	}
	d, err := os.Open(real)
	if err != nil {
		return map[string]any{"error": pyvalue.AsOSError(err, name).Error()}
	}
	entries, err := d.Readdirnames(-1) // directory order, like os.listdir
	d.Close()
	if err != nil {
		return map[string]any{"error": pyvalue.AsOSError(err, name).Error()}
	}
	children := make([]any, 0, len(entries))
	ancestors = append(ancestors, id)
	for _, e := range entries {
		childName, childReal := joinPath(name, e), joinPath(real, e)
		if isDir(childReal) {
			children = append(children, listTree(childName, childReal, ancestors))
		} else {
			children = append(children, map[string]any{"type": "file", "name": e})
		}
	}
	return map[string]any{"type": "directory", "name": baseName(name), "children": children}
}

// joinPath is os.path.join(dir, name) for a plain name.
func joinPath(dir, name string) string {
	if dir == "" || dir[len(dir)-1] == '/' {
		return dir + name
	}
	return dir + "/" + name
}
