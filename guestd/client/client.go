package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/drums-dev/drums/internal/ctxtime"
)

// Client calls one desktop's guest server (guestd, or upstream main.py) the
// way OSWorld's PythonController and SetupController do. Each method says
// which OSWorld call it stands for and keeps that call's retries; the pause
// between attempts is Retry.Pause (OSWorld sleeps 5 s, sized for VMs whose
// server restarts slowly; a drums desktop answers in milliseconds).
type Client struct {
	base  string
	http  *http.Client
	Retry Retry
	// FileRetry is Retry for /file (get_file): OSWorld's full pause, since
	// getters read files that applications write lazily (Chromium flushes
	// its Preferences seconds after a start) and OSWorld's scores depend on
	// the 3 × 5 s it waits for a missing file.
	FileRetry Retry
}

// Retry is how often and how far apart a failed controller call is repeated.
type Retry struct {
	Attempts int           // OSWorld: 3
	Pause    time.Duration // OSWorld: 5 s
}

// DefaultRetry keeps OSWorld's attempt count with a shorter pause. The pause
// must stay above the time a busy guest needs to come back from a transient
// 5xx (a few hundred ms); OSWorld's 5 s is sized for VMs whose server
// restarts slowly.
var DefaultRetry = Retry{Attempts: 3, Pause: time.Second}

// OSWorldFileRetry is PythonController.get_file's retry: 3 attempts 5 s
// apart.
var OSWorldFileRetry = Retry{Attempts: 3, Pause: 5 * time.Second}

// New returns a client for the guest server at baseURL
// ("http://10.0.0.2:5000") that sends its requests with hc, or, when hc is
// nil, with a client of its own. Neither takes a proxy from the
// environment: a desktop is an address of this host.
func New(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
	}
	return &Client{
		base:      strings.TrimSuffix(baseURL, "/"),
		http:      hc,
		Retry:     DefaultRetry,
		FileRetry: OSWorldFileRetry,
	}
}

// Close drops idle connections.
func (g *Client) Close() { g.http.CloseIdleConnections() }

// Host is the guest's address without the port: Chromium's DevTools (9222)
// and VLC's HTTP interface (8080) listen there.
func (g *Client) Host() string {
	u, err := url.Parse(g.base)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// ExecResult is the JSON answer of /execute and /setup/execute.
type ExecResult struct {
	Status     string `json:"status"`
	Output     string `json:"output"`
	Error      string `json:"error"`
	ReturnCode int    `json:"returncode"`
	Message    string `json:"message"`
}

// Answer is a whole HTTP answer.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends one request to endpoint (a path, with its query) and reads the
// whole answer, whatever its status: for callers that compare answers
// (compat) or judge the status themselves. A Host in header becomes the
// request's Host. timeout 0 means none beyond ctx.
func (g *Client) Do(ctx context.Context, method, endpoint string, header http.Header, body []byte, timeout time.Duration) (Answer, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, g.base+endpoint, rd)
	if err != nil {
		return Answer{}, fmt.Errorf("build %s %s: %w", method, endpoint, err)
	}
	for k, v := range header {
		// The client writes Host from req.Host and ignores the header.
		if http.CanonicalHeaderKey(k) == "Host" {
			req.Host = v[0]
			continue
		}
		req.Header[http.CanonicalHeaderKey(k)] = v
	}
	return g.do(req, method+" "+endpoint)
}

// call is Do with only a Content-Type (none when contentType is empty).
func (g *Client) call(ctx context.Context, method, endpoint, contentType string, body []byte, timeout time.Duration) (Answer, error) {
	var h http.Header
	if contentType != "" {
		h = http.Header{"Content-Type": {contentType}}
	}
	return g.Do(ctx, method, endpoint, h, body, timeout)
}

// do sends req and reads the whole answer; what names the request in
// errors.
func (g *Client) do(req *http.Request, what string) (Answer, error) {
	resp, err := g.http.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, fmt.Errorf("read answer of %s: %w", what, err)
	}
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// GetURL is a GET of another service on the desktop (VLC's HTTP interface)
// with basic authentication.
func (g *Client) GetURL(ctx context.Context, rawURL, user, password string) (Answer, error) {
	ctx, cancel := context.WithTimeout(ctx, executeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Answer{}, fmt.Errorf("build GET %s: %w", rawURL, err)
	}
	req.SetBasicAuth(user, password)
	return g.do(req, "GET "+rawURL)
}

func (g *Client) postJSON(ctx context.Context, endpoint string, v any, timeout time.Duration) (Answer, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Answer{}, fmt.Errorf("encode %s request: %w", endpoint, err)
	}
	return g.call(ctx, http.MethodPost, endpoint, "application/json", b, timeout)
}

// post is one POST of v as JSON to an endpoint that answers 200 on
// success; its JSON answer is decoded into out unless out is nil.
func (g *Client) post(ctx context.Context, endpoint string, v, out any, timeout time.Duration) error {
	a, err := g.postJSON(ctx, endpoint, v, timeout)
	if err != nil {
		return err
	}
	return okJSON(endpoint, a, out)
}

func (g *Client) postForm(ctx context.Context, endpoint string, form url.Values) (Answer, error) {
	return g.call(ctx, http.MethodPost, endpoint, "application/x-www-form-urlencoded", []byte(form.Encode()), 0)
}

// okJSON checks that a is a 200 answer (else a *Error) and decodes its
// JSON into out unless out is nil.
func okJSON(endpoint string, a Answer, out any) error {
	if a.Status != http.StatusOK {
		return guestErr(endpoint, a)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(a.Body, out); err != nil {
		return fmt.Errorf("decode %s answer: %w", endpoint, err)
	}
	return nil
}

func guestErr(endpoint string, a Answer) error {
	body := strings.TrimSpace(string(a.Body))
	if len(body) > 300 {
		body = body[:300] + "…"
	}
	return &Error{Endpoint: endpoint, Status: a.Status, Body: body}
}

// retried runs fn up to Retry.Attempts times, pausing between attempts, as
// PythonController's methods do; it returns the last error.
func (g *Client) retried(ctx context.Context, fn func() error) error {
	return retry(ctx, g.Retry, fn)
}

func retry(ctx context.Context, r Retry, fn func() error) error {
	var err error
	n := max(r.Attempts, 1)
	for i := 0; i < n; i++ {
		if err = fn(); err == nil {
			return nil
		}
		if i < n-1 {
			if serr := ctxtime.Sleep(ctx, r.Pause); serr != nil {
				return errors.Join(err, serr)
			}
		}
	}
	return err
}

// executeTimeout bounds /execute on the client: the guest kills the command
// after 120 s, so the answer comes a little after that at worst.
const executeTimeout = 130 * time.Second

// Execute is one POST to endpoint (/execute or /setup/execute) with command
// and shell passed as the task gave them (the guest applies Python's
// truthiness to shell). A non-200 answer is a *Error.
func (g *Client) Execute(ctx context.Context, endpoint string, command, shell any) (ExecResult, error) {
	var r ExecResult
	if err := g.post(ctx, endpoint, map[string]any{"command": command, "shell": shell}, &r, executeTimeout); err != nil {
		return ExecResult{}, err
	}
	return r, nil
}

// PythonPrefix is what PythonController.execute_python_command puts before
// every command.
const PythonPrefix = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

// ExecutePython is PythonController.execute_python_command: python -c with
// pyautogui imported, retried on non-200 answers and transport errors.
func (g *Client) ExecutePython(ctx context.Context, code string) (ExecResult, error) {
	return g.ExecuteRetried(ctx, []string{"python", "-c", PythonPrefix + code}, false)
}

// ExecuteRetried is Execute on /execute, retried on non-200 answers and
// transport errors as PythonController's calls are.
func (g *Client) ExecuteRetried(ctx context.Context, command, shell any) (ExecResult, error) {
	var r ExecResult
	err := g.retried(ctx, func() error {
		var err error
		r, err = g.Execute(ctx, "/execute", command, shell)
		return err
	})
	return r, err
}

// Launch is one POST /setup/launch.
func (g *Client) Launch(ctx context.Context, command, shell any, timeout time.Duration) error {
	return g.post(ctx, "/setup/launch", map[string]any{"command": command, "shell": shell}, nil, timeout)
}

// OpenFile is POST /setup/open_file: the guest opens path (or starts the
// application) and waits for its window.
func (g *Client) OpenFile(ctx context.Context, p string, timeout time.Duration) error {
	a, err := g.postJSON(ctx, "/setup/open_file", map[string]any{"path": p}, timeout)
	if err != nil {
		return err
	}
	if a.Status >= 400 {
		return guestErr("/setup/open_file", a)
	}
	return nil
}

// Window is POST /setup/activate_window or /setup/close_window.
func (g *Client) Window(ctx context.Context, endpoint, name string, strict, byClass bool) error {
	return g.post(ctx, endpoint, map[string]any{"window_name": name, "strict": strict, "by_class": byClass}, nil, executeTimeout)
}

// ChangeWallpaper is POST /setup/change_wallpaper.
func (g *Client) ChangeWallpaper(ctx context.Context, p string) error {
	return g.post(ctx, "/setup/change_wallpaper", map[string]any{"path": p}, nil, executeTimeout)
}

// ExecuteWithVerification is POST /setup/execute_with_verification.
func (g *Client) ExecuteWithVerification(ctx context.Context, params map[string]any, timeout time.Duration) (map[string]any, error) {
	var m map[string]any
	if err := g.post(ctx, "/setup/execute_with_verification", params, &m, timeout); err != nil {
		return nil, err
	}
	return m, nil
}

// uploadTimeout is OSWorld's read timeout for /setup/upload.
const uploadTimeout = 600 * time.Second

// Upload is one POST /setup/upload of data to vmPath, as a multipart form
// with the fields OSWorld's MultipartEncoder sends.
func (g *Client) Upload(ctx context.Context, vmPath string, data []byte) error {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.WriteField("file_path", vmPath); err != nil {
		return fmt.Errorf("build upload of %s: %w", vmPath, err)
	}
	fw, err := w.CreateFormFile("file_data", path.Base(vmPath))
	if err != nil {
		return fmt.Errorf("build upload of %s: %w", vmPath, err)
	}
	if _, err := fw.Write(data); err != nil {
		return fmt.Errorf("build upload of %s: %w", vmPath, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("build upload of %s: %w", vmPath, err)
	}
	a, err := g.call(ctx, http.MethodPost, "/setup/upload", w.FormDataContentType(), buf.Bytes(), uploadTimeout)
	if err != nil {
		return err
	}
	if a.Status != http.StatusOK {
		return guestErr("/setup/upload", a)
	}
	return nil
}

// GetFile is PythonController.get_file: POST /file, retried; a file the
// guest does not have (after the retries) is ErrFileNotFound.
func (g *Client) GetFile(ctx context.Context, p string) ([]byte, error) {
	var data []byte
	err := retry(ctx, g.FileRetry, func() error {
		a, err := g.postForm(ctx, "/file", url.Values{"file_path": {p}})
		if err != nil {
			return err
		}
		if a.Status != http.StatusOK {
			return guestErr("/file", a)
		}
		data = a.Body
		return nil
	})
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && ge.Status == http.StatusNotFound {
			return nil, fmt.Errorf("get %s: %w", p, ErrFileNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", p, err)
	}
	return data, nil
}

// SetTakeover sets the live view's takeover switch (POST /live_view, drums'
// own route): on, its viewers drive the desktop; off, they only watch. It
// returns the state guestd reports. It is not retried.
func (g *Client) SetTakeover(ctx context.Context, on bool) (bool, error) {
	var st struct {
		Takeover *bool `json:"takeover"`
	}
	if err := g.post(ctx, "/live_view", map[string]bool{"takeover": on}, &st, 0); err != nil {
		return false, err
	}
	if st.Takeover == nil {
		return false, errors.New("/live_view answer has no takeover state")
	}
	return *st.Takeover, nil
}

// screenshotTimeout is PythonController's timeout for /screenshot.
const screenshotTimeout = 10 * time.Second

// Screenshot is PythonController.get_screenshot: 200 with PNG or JPEG bytes.
func (g *Client) Screenshot(ctx context.Context) ([]byte, error) {
	var img []byte
	err := g.retried(ctx, func() error {
		a, err := g.call(ctx, http.MethodGet, "/screenshot", "", nil, screenshotTimeout)
		if err != nil {
			return err
		}
		if a.Status != http.StatusOK {
			return guestErr("/screenshot", a)
		}
		ct := a.Header.Get("Content-Type")
		if !bytes.HasPrefix(a.Body, []byte("\x89PNG\r\n\x1a\n")) && !bytes.HasPrefix(a.Body, []byte("\xff\xd8")) &&
			!strings.HasPrefix(ct, "image/png") && !strings.HasPrefix(ct, "image/jpeg") {
			return fmt.Errorf("get /screenshot: answer is not an image (%s, %d bytes)", ct, len(a.Body))
		}
		img = a.Body
		return nil
	})
	return img, err
}

// Accessibility is PythonController.get_accessibility_tree: the AT field.
func (g *Client) Accessibility(ctx context.Context) (string, error) {
	var m struct {
		AT string `json:"AT"`
	}
	err := g.jsonCall(ctx, http.MethodGet, "/accessibility", "", nil, &m)
	return m.AT, err
}

// Terminal is PythonController.get_terminal_output; nil when no terminal
// has the focus.
func (g *Client) Terminal(ctx context.Context) (*string, error) {
	var m struct {
		Output *string `json:"output"`
	}
	err := g.jsonCall(ctx, http.MethodGet, "/terminal", "", nil, &m)
	return m.Output, err
}

// readyTimeout is SetupController.setup()'s timeout per /terminal probe.
const readyTimeout = 10 * time.Second

// Ready is SetupController.setup()'s readiness probe: GET /terminal answers
// with a status below 500. One attempt.
func (g *Client) Ready(ctx context.Context) error {
	a, err := g.call(ctx, http.MethodGet, "/terminal", "", nil, readyTimeout)
	if err != nil {
		return err
	}
	if a.Status >= 500 {
		return guestErr("/terminal", a)
	}
	return nil
}

// jsonCall is one retried call whose 200 answer is JSON decoded into out;
// timeout none beyond ctx.
func (g *Client) jsonCall(ctx context.Context, method, endpoint, contentType string, body []byte, out any) error {
	return g.retried(ctx, func() error {
		a, err := g.call(ctx, method, endpoint, contentType, body, 0)
		if err != nil {
			return err
		}
		return okJSON(endpoint, a, out)
	})
}

// ScreenSize is PythonController.get_vm_screen_size: {"width", "height"}.
func (g *Client) ScreenSize(ctx context.Context) (map[string]any, error) {
	var m map[string]any
	err := g.jsonCall(ctx, http.MethodPost, "/screen_size", "", nil, &m)
	return m, err
}

// WindowSize is PythonController.get_vm_window_size; nil when no window of
// that class exists (OSWorld returns None).
func (g *Client) WindowSize(ctx context.Context, class string) (map[string]any, error) {
	var m map[string]any
	err := g.jsonCall(ctx, http.MethodPost, "/window_size", "application/x-www-form-urlencoded",
		[]byte(url.Values{"app_class_name": {class}}.Encode()), &m)
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			return nil, nil
		}
		return nil, err
	}
	return m, nil
}

// Wallpaper is PythonController.get_vm_wallpaper: the image bytes, nil when
// the guest has none.
func (g *Client) Wallpaper(ctx context.Context) ([]byte, error) {
	var data []byte
	err := g.retried(ctx, func() error {
		a, err := g.call(ctx, http.MethodPost, "/wallpaper", "", nil, 0)
		if err != nil {
			return err
		}
		if a.Status != http.StatusOK {
			return guestErr("/wallpaper", a)
		}
		data = a.Body
		return nil
	})
	var ge *Error
	if errors.As(err, &ge) {
		return nil, nil
	}
	return data, err
}

// ListDirectory is PythonController.get_vm_directory_tree; nil when the
// guest refuses the path.
func (g *Client) ListDirectory(ctx context.Context, p string) (any, error) {
	b, err := json.Marshal(map[string]any{"path": p})
	if err != nil {
		return nil, fmt.Errorf("encode /list_directory request: %w", err)
	}
	var m map[string]any
	err = g.jsonCall(ctx, http.MethodPost, "/list_directory", "application/json", b, &m)
	var ge *Error
	if errors.As(err, &ge) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return m["directory_tree"], nil
}

// DesktopPath is PythonController.get_vm_desktop_path.
func (g *Client) DesktopPath(ctx context.Context) (string, error) {
	var m struct {
		DesktopPath string `json:"desktop_path"`
	}
	err := g.jsonCall(ctx, http.MethodPost, "/desktop_path", "", nil, &m)
	return m.DesktopPath, err
}
