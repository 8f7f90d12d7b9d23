package guestd

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// Path handling with the semantics of Python's posixpath and pathlib, since
// the paths clients send were written for them.

// expandUser is os.path.expanduser: "~" and "~/x" use home, "~name/x" the
// password database (left alone when the user is unknown); anything else is
// returned unchanged.
func expandUser(p, home string) string {
	if !strings.HasPrefix(p, "~") {
		return p
	}
	i := strings.IndexByte(p[1:], '/') + 1
	if i == 0 {
		i = len(p)
	}
	userhome := home
	if i > 1 {
		u, err := user.Lookup(p[1:i])
		if err != nil {
			return p
		}
		userhome = u.HomeDir
	}
	out := strings.TrimRight(userhome, "/") + p[i:]
	if out == "" {
		return "/"
	}
	return out
}

// varRef matches $name and ${...} the way posixpath.expandvars does
// (ASCII word characters).
var varRef = regexp.MustCompile(`\$([A-Za-z0-9_]+|\{[^}]*\})`)

// expandVars is os.path.expandvars: $NAME and ${NAME} are replaced when
// NAME is set in the environment; undefined variables are left as they are.
func expandVars(p string, lookup func(string) (string, bool)) string {
	if !strings.Contains(p, "$") {
		return p
	}
	var b strings.Builder
	last := 0
	for _, m := range varRef.FindAllStringSubmatchIndex(p, -1) {
		name := p[m[2]:m[3]]
		if strings.HasPrefix(name, "{") {
			name = name[1 : len(name)-1]
		}
		if v, ok := lookup(name); ok {
			b.WriteString(p[last:m[0]])
			b.WriteString(v)
			last = m[1]
		}
	}
	b.WriteString(p[last:])
	return b.String()
}

// pathlibStr is str(pathlib.PurePosixPath(p)): repeated slashes collapse
// (except exactly two leading ones), "." components and a trailing slash
// go, ".." stays; "" is ".".
func pathlibStr(p string) string {
	if p == "" {
		return "."
	}
	root := ""
	switch {
	case strings.HasPrefix(p, "//") && !strings.HasPrefix(p, "///"):
		root = "//"
	case strings.HasPrefix(p, "/"):
		root = "/"
	}
	var parts []string
	for _, part := range strings.Split(p, "/") {
		if part != "" && part != "." {
			parts = append(parts, part)
		}
	}
	s := root + strings.Join(parts, "/")
	if s == "" {
		return "."
	}
	return s
}

// baseName is os.path.basename: everything after the last slash.
func baseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}

// dirName is os.path.dirname: everything before the last slash, trailing
// slashes removed unless that is all there is.
func dirName(p string) string {
	return trimSlashes(p[:strings.LastIndexByte(p, '/')+1])
}

// splitExt is os.path.splitext: the extension starts at the last dot of
// the last component unless that component is all leading dots up to it.
func splitExt(p string) (root, ext string) {
	sep := strings.LastIndexByte(p, '/')
	dot := strings.LastIndexByte(p, '.')
	if dot > sep {
		for i := sep + 1; i < dot; i++ {
			if p[i] != '.' {
				return p[:dot], p[dot:]
			}
		}
	}
	return p, ""
}

// makeDirs is os.makedirs(name, exist_ok=True): it creates missing
// parents first and reports an error the way Python does (the path of the
// level that failed).
func makeDirs(name string) error {
	head, tail := filepath.Split(name)
	head = trimSlashes(head)
	if tail == "" {
		head, tail = filepath.Split(head)
		head = trimSlashes(head)
	}
	if head != "" && tail != "" && !exists(head) {
		if err := makeDirs(head); err != nil && !errors.Is(err, syscall.EEXIST) {
			return err
		}
		if tail == "." {
			return nil
		}
	}
	if err := syscall.Mkdir(name, 0o777); err != nil {
		if isDir(name) {
			return nil
		}
		return pyvalue.AsOSError(err, name)
	}
	return nil
}

// trimSlashes is what posixpath.split does to the head: trailing slashes
// go unless the head is only slashes.
func trimSlashes(head string) string {
	if t := strings.TrimRight(head, "/"); t != "" {
		return t
	}
	return head
}

// exists is os.path.exists: any error (including a dangling symlink or a
// NUL in the name) counts as "does not exist".
func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isDir is os.path.isdir (symlinks followed).
func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// processUmask reads the umask from /proc/self/status (setting and
// restoring it with umask(2) would race with files other requests create).
func processUmask() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022 // the usual default, for kernels without the field
}
