package guestd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"

	"github.com/drums-dev/drums/internal/pyvalue"
)

const (
	mimeHTML = "text/html; charset=utf-8"
	mimeJSON = "application/json"
)

// Deps are the parts of the desktop guestd drives. Actions may be nil (no
// fast path, no extra child environment).
type Deps struct {
	Display       Display
	Accessibility Accessibility
	Actions       Actions
	// Takeover, when set, is the live view's switch that POST /live_view
	// turns (nil: no live view, the route is a 404).
	Takeover *Takeover
}

// Server answers OSWorld's guest API. It is safe for concurrent requests.
type Server struct {
	cfg   Config
	deps  Deps
	log   *slog.Logger
	echo  *echo.Echo
	byURL map[string]route
	pages requestFilter // refuses what a web page could send
	mime  *mimeDB
	rec   recorder
	umask os.FileMode // applied to files guestd creates, as Python's open()
	arm   bool        // uname -m is an ARM machine (upstream swaps Chrome for Chromium)
}

// route is one upstream endpoint.
type route struct {
	path   string
	method string // GET or POST; GET routes also answer HEAD
	style  errorStyle
	handle echo.HandlerFunc
}

// allow is Werkzeug's Allow header for the route.
func (rt route) allow() string {
	if rt.method == http.MethodGet {
		return "HEAD, OPTIONS, GET"
	}
	return "OPTIONS, " + rt.method
}

// New builds a server over deps. Display and Accessibility are required.
func New(cfg Config, deps Deps) (*Server, error) {
	if deps.Display == nil || deps.Accessibility == nil {
		return nil, errors.New("new guestd server: a Display and an Accessibility are required")
	}
	cfg = cfg.withDefaults()
	pages, err := newRequestFilter(cfg)
	if err != nil {
		return nil, fmt.Errorf("new guestd server: %w", err)
	}
	s := &Server{
		cfg:   cfg,
		deps:  deps,
		log:   cfg.Logger.With("component", "guestd"),
		byURL: map[string]route{},
		pages: pages,
		mime:  loadMimeDB(),
		umask: processUmask(),
		arm:   machineIsARM(),
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Pre(s.logRequests, s.refusePages)
	e.HTTPErrorHandler = s.routerError
	for _, rt := range s.routes() {
		s.byURL[rt.path] = rt
		e.Any(rt.path, s.dispatch(rt))
	}
	s.echo = e
	return s, nil
}

// ServeHTTP makes the server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Werkzeug routes on the decoded path; echo would use the raw one.
	r.URL.RawPath = ""
	// Werkzeug's router merges runs of slashes ("//platform" is
	// "/platform"); a trailing slash still does not match.
	r.URL.Path = mergeSlashes(r.URL.Path)
	s.echo.ServeHTTP(w, r)
}

// mergeSlashes replaces every run of "/" in p by one.
func mergeSlashes(p string) string {
	if !strings.Contains(p, "//") {
		return p
	}
	var b strings.Builder
	b.Grow(len(p))
	for i := 0; i < len(p); i++ {
		if p[i] == '/' && i > 0 && p[i-1] == '/' {
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

// Close stops a recording in progress so that no ffmpeg outlives the
// server.
func (s *Server) Close() error {
	return s.rec.abandon(s.cfg.RecordingStop)
}

func (s *Server) routes() []route {
	post := func(path string, style errorStyle, h echo.HandlerFunc) route {
		return route{path: path, method: http.MethodPost, style: style, handle: h}
	}
	get := func(path string, style errorStyle, h echo.HandlerFunc) route {
		return route{path: path, method: http.MethodGet, style: style, handle: h}
	}
	return []route{
		post("/execute", styleMessage, s.handleExecute),
		post("/setup/execute", styleMessage, s.handleExecute),
		post("/execute_with_verification", styleMessage, s.handleExecuteVerified),
		post("/setup/execute_with_verification", styleMessage, s.handleExecuteVerified),
		post("/setup/launch", styleMessage, s.handleLaunch),
		post("/run_python", styleMessage, s.handleRunPython),
		post("/run_bash_script", styleScript, s.handleRunBash),
		get("/screenshot", styleMessage, s.handleScreenshot),
		get("/accessibility", styleMessage, s.handleAccessibility),
		get("/terminal", styleMessage, s.handleTerminal),
		post("/screen_size", styleMessage, s.handleScreenSize),
		post("/window_size", styleError, s.handleWindowSize),
		get("/cursor_position", styleMessage, s.handleCursorPosition),
		get("/platform", styleText, s.handlePlatform),
		post("/desktop_path", styleError, s.handleDesktopPath),
		post("/list_directory", styleError, s.handleListDirectory),
		post("/file", styleError, s.handleFile),
		post("/setup/upload", styleError, s.handleUpload),
		post("/setup/download_file", styleText, s.handleDownloadFile),
		post("/wallpaper", stylePage, s.handleWallpaper),
		post("/setup/change_wallpaper", styleText, s.handleChangeWallpaper),
		post("/setup/open_file", styleText, s.handleOpenFile),
		post("/setup/activate_window", styleText, s.handleActivateWindow),
		post("/setup/close_window", styleText, s.handleCloseWindow),
		post("/start_recording", styleMessage, s.handleStartRecording),
		post("/end_recording", styleMessage, s.handleEndRecording),
		post("/live_view", styleMessage, s.handleLiveView),
	}
}

// dispatch answers a path's declared method (and HEAD for GET routes),
// OPTIONS with the Allow header, and anything else with Werkzeug's 405.
func (s *Server) dispatch(rt route) echo.HandlerFunc {
	return func(c echo.Context) error {
		m := c.Request().Method
		switch {
		case m == rt.method || rt.method == http.MethodGet && m == http.MethodHead:
			if err := rt.handle(c); err != nil {
				return s.writeError(c, rt.style, err)
			}
			return nil
		case m == http.MethodOptions:
			c.Response().Header().Set("Allow", rt.allow())
			return blob(c, http.StatusOK, mimeHTML, nil)
		default:
			return s.methodNotAllowed(c, rt)
		}
	}
}

func (s *Server) methodNotAllowed(c echo.Context, rt route) error {
	c.Response().Header().Set("Allow", rt.allow())
	return s.writeError(c, stylePage, reply(ErrMethodNotAllowed, descMethodNotAllowed))
}

// routerError answers what echo's router rejects: unknown paths (Werkzeug's
// 404 page, also for GET /) and methods echo has no name for.
func (s *Server) routerError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	if errors.As(err, &he) && he.Code == http.StatusMethodNotAllowed {
		if rt, ok := s.byURL[c.Request().URL.Path]; ok {
			_ = s.methodNotAllowed(c, rt)
			return
		}
	}
	if errors.As(err, &he) && he.Code == http.StatusNotFound {
		_ = s.writeError(c, stylePage, reply(ErrNotFound, descNotFound))
		return
	}
	_ = s.writeError(c, stylePage, err)
}

// logRequests logs each request after it was answered, as Werkzeug does.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		r := c.Request()
		s.log.Info("request", "method", r.Method, "path", r.URL.Path,
			"status", c.Response().Status, "duration", time.Since(start).Round(time.Microsecond))
		return err
	}
}

// refusePages answers a request a web page could have sent (origin.go)
// with 403 before routing, so that no handler runs and no body is read; a
// known route's refusal has its JSON error shape.
func (s *Server) refusePages(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if err := s.pages.check(r); err != nil {
			s.log.Warn("refused a request a web page could have sent", "method", r.Method, "path", r.URL.Path,
				"origin", r.Header.Values("Origin"), "host", r.Host)
			style := styleMessage
			if rt, ok := s.byURL[r.URL.Path]; ok {
				style = rt.style
			}
			return s.writeError(c, style, err)
		}
		return next(c)
	}
}

// readBody reads the whole body, at most limit bytes (and MaxBody).
func (s *Server) readBody(c echo.Context, limit int64) ([]byte, error) {
	limit = min(limit, s.cfg.MaxBody)
	r := c.Request()
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	b, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(limit)
		}
		return nil, badInput("read request body: %v", err)
	}
	return b, nil
}

func tooLarge(limit int64) error {
	return &replyError{class: ErrTooLarge, msg: fmt.Sprintf("request body larger than %d bytes", limit), input: true}
}

// jsonObject is Flask's request.json for handlers that then call .get on
// it: the body must be JSON (by Content-Type, else 415 as Flask) and an
// object (upstream crashes on anything else; guestd answers 400).
func (s *Server) jsonObject(c echo.Context) (map[string]any, error) {
	mt, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	if mt != "application/json" && !(strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil, &replyError{class: ErrUnsupportedMedia, input: true,
			msg: "Did not attempt to load JSON data because the request Content-Type was not 'application/json'."}
	}
	body, err := s.readBody(c, maxInMemoryBody)
	if err != nil {
		return nil, err
	}
	v, err := pyvalue.Decode(body)
	if err != nil {
		return nil, badInput("Failed to decode JSON object: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, badInput("the request body must be a JSON object, not %s", pyvalue.TypeName(v))
	}
	return obj, nil
}

// requiredString is data[key] as upstream's routes read a required field:
// a falsy value is answered 400 with missing (upstream's wording), any other
// value that is not a string is bad input.
func requiredString(data map[string]any, key, missing string) (string, error) {
	v := data[key]
	if !pyvalue.Truthy(v) {
		return "", reply(ErrBadRequest, "%s", missing)
	}
	s, ok := v.(string)
	if !ok {
		return "", badInput("'%s' must be a string, not %s", key, pyvalue.TypeName(v))
	}
	return s, nil
}

// blob writes a whole body with its Content-Length, as Werkzeug sends
// every response it has in memory (echo would chunk larger ones).
func blob(c echo.Context, status int, contentType string, body []byte) error {
	h := c.Response().Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.Response().WriteHeader(status)
	_, err := c.Response().Write(body)
	return err
}

// text answers a Python str return value: 200 text/html.
func text(c echo.Context, status int, body string) error {
	return blob(c, status, mimeHTML, []byte(body))
}

// jsonReply answers pyvalue.Jsonify(v).
func jsonReply(c echo.Context, status int, v any) error {
	return blob(c, status, mimeJSON, pyvalue.Jsonify(v))
}

// childEnv is the environment of every child: the configured environment
// with HOME set to the home directory, then what the native pyautogui
// needs (its entries win; its PYTHONPATH already carries the process's
// own).
func (s *Server) childEnv() []string {
	env := make([]string, 0, len(s.cfg.Environ)+4)
	for _, kv := range s.cfg.Environ {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	env = append(env, "HOME="+s.cfg.Home)
	if s.deps.Actions != nil {
		// exec keeps the last of duplicate keys.
		env = append(env, s.deps.Actions.ChildEnv()...)
	}
	return env
}

// lookupVar reads the server's environment for $VAR expansion.
func (s *Server) lookupVar(name string) (string, bool) {
	if name == "HOME" {
		return s.cfg.Home, true
	}
	return lookupEnv(s.cfg.Environ, name)
}

// abs resolves a client path against the home directory, the working
// directory upstream runs in.
func (s *Server) abs(p string) string {
	if strings.HasPrefix(p, "/") || p == "" {
		return p
	}
	return strings.TrimSuffix(s.cfg.Home, "/") + "/" + p
}

// expandPath is os.path.expandvars(os.path.expanduser(p)), the expansion
// of the file routes.
func (s *Server) expandPath(p string) string {
	return expandVars(expandUser(p, s.cfg.Home), s.lookupVar)
}

// machineIsARM is upstream's _get_machine_architecture() == "arm".
func machineIsARM() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	switch strings.ToLower(unix.ByteSliceToString(u.Machine[:])) {
	case "arm64", "aarch64", "aarch32":
		return true
	}
	return false
}
