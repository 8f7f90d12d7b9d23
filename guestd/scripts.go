package guestd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// handleRunPython is POST /run_python: the code goes to a file run by
// python3 with a 30 s timeout; the reply says "return_code" (not
// "returncode") and combines stdout and stderr into "message".
func (s *Server) handleRunPython(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	code := data["code"]
	if !pyvalue.Truthy(code) {
		return reply(ErrBadRequest, "Code not supplied!")
	}
	src, ok := code.(string)
	if !ok {
		// Upstream's f.write(code) raises this inside its try block.
		return runPythonError(fmt.Sprintf("TypeError: write() argument must be str, not %s", pyvalue.TypeName(code)),
			fmt.Sprintf("write() argument must be str, not %s", pyvalue.TypeName(code)))
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	file := filepath.Join(s.cfg.TempDir, "python_exec_"+hex.EncodeToString(id[:])+".py")
	defer os.Remove(file)
	if err := os.WriteFile(file, []byte(src), 0o666); err != nil {
		e := pyvalue.AsOSError(err, file)
		return runPythonError(exceptionLine(e), e.Error())
	}
	// The code runs to its end even when the client has gone, as upstream's.
	ctx := context.WithoutCancel(c.Request().Context())
	res, err := runCaptured(ctx, s.proc([]string{s.cfg.Python, file}), runOptions{timeout: s.cfg.RunPythonTimeout})
	if errors.Is(err, errTimedOut) {
		return &replyError{class: ErrTimeout, msg: "Execution timeout: Code took too long to execute",
			extra: map[string]any{"error": "TimeoutExpired", "need_more": false, "output": nil}}
	}
	if err != nil {
		return runPythonError(exceptionLine(err), err.Error())
	}
	out, err := decodeResult(res)
	if err != nil {
		return runPythonError("UnicodeDecodeError: "+err.Error(), err.Error())
	}
	message := out.stdout
	errText := out.stderr
	if errText != "" {
		if message != "" {
			message += "\n"
		}
		message += errText
	}
	status := "success"
	if out.code != 0 {
		status = "error"
		if errText == "" {
			errText = fmt.Sprintf("Process exited with code %d", out.code)
			if message != "" {
				message += "\n"
			}
			message += errText
		}
	}
	return jsonReply(c, 200, map[string]any{
		"status":      status,
		"message":     message,
		"need_more":   false,
		"output":      out.stdout,
		"error":       errText,
		"return_code": out.code,
	})
}

// runPythonError is the JSON 500 upstream's generic handler means to send
// (upstream itself fails to build it and answers a debugger page). "error"
// holds the last line of the traceback Python would have printed.
func runPythonError(excLine, msg string) error {
	return &replyError{msg: "Execution error: " + msg,
		extra: map[string]any{"error": excLine, "need_more": false, "output": nil}}
}

// exceptionLine is the "Type: message" line of a Python traceback for the
// errors a run can raise.
func exceptionLine(err error) string {
	var oe *pyvalue.OSError
	if errors.As(err, &oe) {
		name := "OSError"
		switch oe.Errno {
		case syscall.ENOENT:
			name = "FileNotFoundError"
		case syscall.EACCES, syscall.EPERM:
			name = "PermissionError"
		case syscall.ENOTDIR:
			name = "NotADirectoryError"
		case syscall.EISDIR:
			name = "IsADirectoryError"
		}
		return name + ": " + err.Error()
	}
	return "OSError: " + err.Error()
}

// handleRunBash is POST /run_bash_script: the script (with a #!/bin/bash
// line added unless it mentions one) runs under /bin/bash with stderr
// merged into stdout. Answered as the CCH fork does: 200 once it ran.
func (s *Server) handleRunBash(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	script, err := requiredString(data, "script", "Script not supplied!")
	if err != nil {
		return err
	}
	rawTimeout, ok := data["timeout"]
	if !ok {
		rawTimeout = jsonInt(100)
	}
	dir := s.cfg.Home
	if wd := data["working_dir"]; pyvalue.Truthy(wd) {
		str, ok := wd.(string)
		if !ok {
			return badInput("'working_dir' must be a string, not %s", pyvalue.TypeName(wd))
		}
		// Upstream checks the expanded name against its own cwd.
		dir = expandUser(str, s.cfg.Home)
		if !exists(s.abs(dir)) {
			return reply(ErrBadRequest, "Working directory does not exist: %s", dir)
		}
		dir = s.abs(dir)
	}

	if !strings.Contains(script, "#!/bin/bash") {
		script = "#!/bin/bash\n\n" + script
	}
	f, err := createPyTemp(s.cfg.TempDir, ".sh")
	if err != nil {
		return reply(nil, "Failed to execute script: %s", pyvalue.AsOSError(err, s.cfg.TempDir))
	}
	file := f.Name()
	defer os.Remove(file)
	_, werr := f.WriteString(script)
	if err := errors.Join(werr, f.Close(), os.Chmod(file, 0o755)); err != nil {
		return reply(nil, "Failed to execute script: %s", pyvalue.AsOSError(err, file))
	}

	// The timeout is whatever JSON value came; Python's subprocess adds
	// it to a float, so None means "no timeout" and a non-number fails
	// (after the child started, which guestd does not bother to do).
	opt := runOptions{merge: true}
	if rawTimeout == nil {
		opt.noTimeout = true
	} else if sec, ok := pyvalue.Number(rawTimeout); ok {
		opt.timeout = secondsDuration(sec)
	} else {
		return reply(nil, "Failed to execute script: unsupported operand type(s) for +: 'float' and '%s'", pyvalue.TypeName(rawTimeout))
	}

	// The script runs to its end even when the client has gone, as upstream's.
	ctx := context.WithoutCancel(c.Request().Context())
	p := proc{argv: []string{"/bin/bash", file}, dir: dir, env: s.childEnv()}
	res, err := runCaptured(ctx, p, opt)
	var oe *pyvalue.OSError
	if errors.As(err, &oe) && oe.Errno == syscall.ENOENT {
		// No bash (or the directory vanished): upstream retries with sh.
		p.argv = []string{"sh", file}
		res, err = runCaptured(ctx, p, opt)
	}
	if errors.Is(err, errTimedOut) {
		return reply(ErrTimeout, "Script execution timed out after %s seconds", pyvalue.Str(rawTimeout))
	}
	if err != nil {
		return reply(nil, "Failed to execute script: %s", err)
	}
	out, err := pyvalue.Text(res.stdout)
	if err != nil {
		return reply(nil, "Failed to execute script: %s", err)
	}
	status := "success"
	if res.code != 0 {
		status = "error"
	}
	return jsonReply(c, 200, map[string]any{"status": status, "output": out, "error": "", "returncode": res.code})
}

// secondsDuration converts Python seconds to a Duration, saturating.
func secondsDuration(sec float64) time.Duration {
	const maxSec = float64(1<<63-1) / float64(time.Second)
	if sec > maxSec {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(sec * float64(time.Second))
}

// createPyTemp creates a file the way tempfile.NamedTemporaryFile names
// it: "tmp", eight characters of [a-z0-9_], the suffix; mode 0600.
func createPyTemp(dir, suffix string) (*os.File, error) {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789_"
	var err error
	for range 100 { // tempfile.TMP_MAX tries
		var b [8]byte
		_, _ = rand.Read(b[:])
		for i := range b {
			b[i] = chars[int(b[i])%len(chars)]
		}
		var f *os.File
		f, err = os.OpenFile(filepath.Join(dir, "tmp"+string(b[:])+suffix), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, os.ErrExist) {
			return f, err
		}
	}
	return nil, err
}
