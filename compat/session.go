package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drums-dev/drums/sessions"
)

// SessionEngine is what the session desktop needs from the session engine;
// the real one is *sessions.Engine (asserted where it is built, in
// internal/drumscli), tests may use a fake.
type SessionEngine interface {
	Create(ctx context.Context, req sessions.Request) (*sessions.Session, error)
	Exec(ctx context.Context, id string, argv []string, opts sessions.ExecOptions) (sessions.ExecResult, error)
	Remove(ctx context.Context, id string) error
}

// Ports inside the session: upstream's port is fixed by main.py; guestd
// takes the next one through Request.GuestPort.
const (
	upstreamPort = 5000
	guestdPort   = 5001
)

// Paths inside the session. The server directory mirrors an OSWorld VM
// (/home/user/server, owned by the user, who must be able to write its
// screenshots/ directory); the rest is the harness's own.
const (
	sessionServerDir   = "/home/user/server"
	sessionPythonPath  = "/opt/drums-compat/pythonpath"
	sessionNoCV        = "/opt/drums-compat/nocv"
	sessionUpstreamLog = "/tmp/drums-compat-upstream.log"
	sessionUID         = 1000
)

// upstreamReadyTimeout bounds main.py's start: Flask with the reloader
// imports pyautogui, lxml and pyatspi twice, a few seconds on a loaded
// 2-core machine; it stays well above that.
const upstreamReadyTimeout = 90 * time.Second

// SessionDesktop is one drums session with guestd on guestdPort (the
// engine starts it) and upstream main.py on upstreamPort, started inside
// the session as its user (see doc.go).
type SessionDesktop struct {
	eng      SessionEngine
	sess     *sessions.Session
	snapshot string
	upstream bool // main.py runs in it
}

var _ Desktop = (*SessionDesktop)(nil)

// NewSessionDesktop stages the upstream tree as the session's starting
// files, creates the session and starts main.py in it. Progress goes to
// log. Close removes everything it made. A zero tree (no upstream on this
// host) makes a desktop with guestd alone, whose URL(Upstream) is ""; image
// "" is the engine's default.
func NewSessionDesktop(ctx context.Context, eng SessionEngine, tree UpstreamTree, image string, log io.Writer) (_ *SessionDesktop, err error) {
	d := &SessionDesktop{eng: eng, upstream: tree.Dir != ""}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.Close())
		}
	}()
	if d.upstream {
		fmt.Fprintf(log, "compat: staging upstream %s into the session's files\n", tree.Dir)
		if d.snapshot, err = stageUpstream(tree); err != nil {
			return nil, err
		}
	}
	fmt.Fprintln(log, "compat: creating a session (guestd on port 5001)")
	if d.sess, err = eng.Create(ctx, sessions.Request{Image: image, GuestPort: guestdPort, Snapshot: d.snapshot}); err != nil {
		return nil, fmt.Errorf("create compat session: %w", err)
	}
	if !d.upstream {
		return d, nil
	}
	fmt.Fprintf(log, "compat: session %s at %s; starting upstream main.py on port %d\n", d.sess.ID, d.sess.Address, upstreamPort)
	var pp []string
	pp = append(pp, sessionNoCV)
	for i := range tree.PythonPath {
		pp = append(pp, fmt.Sprintf("%s/%d", sessionPythonPath, i))
	}
	// setsid -f: main.py outlives this Exec and dies with the session.
	start := fmt.Sprintf("cd && XDG_SESSION_TYPE=x11 PYTHONPATH=%s setsid -f /usr/bin/python3 %s/main.py >%s 2>&1 </dev/null",
		strings.Join(pp, ":"), sessionServerDir, sessionUpstreamLog)
	res, err := d.Exec(ctx, []string{"/bin/sh", "-c", start})
	if err != nil || res.Code != 0 {
		return nil, fmt.Errorf("start upstream main.py: %v %s", err, res.Stderr)
	}
	if err := d.waitUpstream(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// waitUpstream polls main.py until it answers: it prints its readiness
// only to its own log inside the session, so an HTTP 200 is what can be
// awaited.
func (d *SessionDesktop) waitUpstream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, upstreamReadyTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		resp := send(ctx, client, d.URL(Upstream), &Request{Method: "GET", Path: "/platform", Timeout: 5})
		if resp.Err == nil && resp.Status == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			out, _ := d.Exec(context.Background(), []string{"tail", "-n", "20", sessionUpstreamLog})
			return fmt.Errorf("%w: upstream main.py did not answer within %s; its log ends:\n%s", ErrServerNotReady, upstreamReadyTimeout, out.Stdout)
		case <-time.After(untilInterval):
		}
	}
}

// URL implements Desktop; URL(Upstream) is "" when the desktop has
// guestd alone.
func (d *SessionDesktop) URL(s Server) string {
	port := guestdPort
	if s == Upstream {
		if !d.upstream {
			return ""
		}
		port = upstreamPort
	}
	return fmt.Sprintf("http://%s:%d", d.sess.Address, port)
}

// Exec implements Desktop through the engine, as the session's user.
func (d *SessionDesktop) Exec(ctx context.Context, argv []string) (ExecResult, error) {
	var out, errb bytes.Buffer
	res, err := d.eng.Exec(ctx, d.sess.ID, argv, sessions.ExecOptions{User: "user", Stdout: &out, Stderr: &errb})
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %s in session %s: %w", argv[0], d.sess.ID, err)
	}
	return ExecResult{Stdout: out.Bytes(), Stderr: errb.Bytes(), Code: res.ExitCode}, nil
}

// Session is the drums session under the desktop (its id, address and
// plan, whose cgroups say what its processes cost).
func (d *SessionDesktop) Session() *sessions.Session { return d.sess }

// Describe says how the servers share the desktop, for the report.
func (d *SessionDesktop) Describe() string {
	if !d.upstream {
		return fmt.Sprintf("one drums session (1920x1080): guestd on port %d started by the engine, no upstream main.py", guestdPort)
	}
	return fmt.Sprintf("one drums session (1920x1080): guestd on port %d started by the engine, upstream main.py on port %d started inside it as user from %s, both on the same display, buses, home and processes",
		guestdPort, upstreamPort, sessionServerDir)
}

// Close removes the session (and with it main.py and every program the
// cases started) and the staged files. Idempotent.
func (d *SessionDesktop) Close() error {
	var errs []error
	if d.sess != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := d.eng.Remove(ctx, d.sess.ID); err != nil {
			errs = append(errs, fmt.Errorf("remove compat session %s: %w", d.sess.ID, err))
		}
		d.sess = nil
	}
	if d.snapshot != "" {
		if err := os.RemoveAll(d.snapshot); err != nil {
			errs = append(errs, fmt.Errorf("remove staged upstream: %w", err))
		}
		d.snapshot = ""
	}
	return errors.Join(errs...)
}

// stageUpstream builds the session's starting files: main.py and
// pyxcursor.py in the user's server directory, each PYTHONPATH entry under
// sessionPythonPath, and a cv2 that refuses to import (pyscreeze imports
// OpenCV when present, which triples the cost of every pyautogui call and
// changes nothing the API answers).
func stageUpstream(t UpstreamTree) (dir string, err error) {
	dir, err = os.MkdirTemp("", "drums-compat-upstream-")
	if err != nil {
		return "", fmt.Errorf("stage upstream: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("stage upstream: %w", err)
	}
	server := filepath.Join(dir, sessionServerDir)
	for _, f := range []string{"main.py", "pyxcursor.py"} {
		if err := copyFileTo(filepath.Join(t.Dir, f), filepath.Join(server, f)); err != nil {
			return "", err
		}
	}
	for i, p := range t.PythonPath {
		if err := copyDir(p, filepath.Join(dir, sessionPythonPath, fmt.Sprint(i))); err != nil {
			return "", err
		}
	}
	cv2 := filepath.Join(dir, sessionNoCV, "cv2.py")
	if err := writeFileAll(cv2, []byte("raise ImportError('OpenCV is kept out of the compat run')\n")); err != nil {
		return "", err
	}
	// The user owns its home part, as in an OSWorld VM.
	home := filepath.Join(dir, "home", "user")
	err = filepath.WalkDir(home, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, sessionUID, sessionUID)
	})
	if err != nil {
		return "", fmt.Errorf("stage upstream: chown: %w", err)
	}
	return dir, nil
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("stage %s: %w", src, err)
		}
		rel, _ := filepath.Rel(src, p)
		if e.IsDir() {
			if e.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		return copyFileTo(p, filepath.Join(dst, rel))
	})
}

func copyFileTo(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("stage upstream: %w", err)
	}
	return writeFileAll(dst, data)
}

func writeFileAll(dst string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("stage upstream: %w", err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		return fmt.Errorf("stage upstream: %w", err)
	}
	return nil
}
