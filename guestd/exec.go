package guestd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/internal/ctxtime"
	"github.com/drums-dev/drums/internal/pyvalue"
)

// command is a request's command after upstream's normalisation (§1.5 of
// the spec): a string without shell is shlex-split, list elements starting
// with "~/" are expanded, and the result runs either directly (list) or
// through /bin/sh -c (shell: the string, or the list as script and $0…).
type command struct {
	shell bool
	list  []string
	str   string
	isStr bool // shell mode with a string command
}

// commandRequest reads a request's JSON object and the command in it.
func (s *Server) commandRequest(c echo.Context) (map[string]any, command, error) {
	data, err := s.jsonObject(c)
	if err != nil {
		return nil, command{}, err
	}
	cmd, err := s.parseCommand(data)
	return data, cmd, err
}

// parseCommand reads "command" and "shell" from a request. Upstream runs
// this outside its try block, so what fails here is a debugger page there
// and a 400 here.
func (s *Server) parseCommand(data map[string]any) (command, error) {
	cmd := command{shell: pyvalue.Truthy(data["shell"])}
	raw, ok := data["command"]
	if !ok {
		if cmd.shell {
			raw = ""
		} else {
			raw = []any{}
		}
	}
	switch v := raw.(type) {
	case string:
		if cmd.shell {
			cmd.str, cmd.isStr = v, true
			return cmd, nil
		}
		words, err := pyvalue.ShlexSplit(v)
		if err != nil {
			return cmd, badInput("split command: %v", err)
		}
		cmd.list = words
	case []any:
		cmd.list = make([]string, len(v))
		for i, e := range v {
			str, ok := e.(string)
			if !ok {
				return cmd, badInput("command element %d is %s, not a string", i, pyvalue.TypeName(e))
			}
			cmd.list[i] = str
		}
	default:
		return cmd, badInput("'command' must be a string or a list of strings, not %s", pyvalue.TypeName(raw))
	}
	for i, arg := range cmd.list {
		if strings.HasPrefix(arg, "~/") {
			cmd.list[i] = expandUser(arg, s.cfg.Home)
		}
	}
	return cmd, nil
}

// argv is what gets executed.
func (c command) argv() []string {
	switch {
	case c.isStr:
		return []string{"/bin/sh", "-c", c.str}
	case c.shell:
		return append([]string{"/bin/sh", "-c"}, c.list...)
	}
	return c.list
}

// String is str() of the command as the request gave it (after splitting
// and expansion), as Python's TimeoutExpired and /setup/launch print it.
func (c command) String() string {
	if c.isStr {
		return c.str
	}
	return pyvalue.ReprStrList(c.list)
}

// pySeconds prints a timeout the way upstream's literal prints: an int when
// whole.
func pySeconds(d time.Duration) string {
	sec := d.Seconds()
	if sec == math.Trunc(sec) {
		return fmt.Sprintf("%d", int64(sec))
	}
	return pyvalue.ReprFloat(sec)
}

// execResult is a finished command as the /execute family reports it.
type execResult struct {
	stdout, stderr string
	code           int
}

func (r execResult) body() map[string]any {
	return map[string]any{"status": "success", "output": r.stdout, "error": r.stderr, "returncode": r.code}
}

// runCommand runs a normalised command as upstream's subprocess.run(…,
// timeout=120) does, first offering a plain argv to the native pyautogui
// path. Failures are worded as str(exception).
func (s *Server) runCommand(ctx context.Context, cmd command) (execResult, error) {
	// The command runs to its end even when the client has gone, as
	// upstream's does: its effects are what the client asked for.
	ctx = context.WithoutCancel(ctx)
	if !cmd.shell && !s.cfg.NoFastPath && s.deps.Actions != nil {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.ExecTimeout)
		defer cancel()
		stdout, stderr, code, handled := s.deps.Actions.Run(ctx, cmd.list)
		if handled {
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return execResult{}, s.execTimeout(cmd)
			}
			return execResult{stdout: stdout, stderr: stderr, code: code}, nil
		}
	}
	res, err := runCaptured(ctx, s.proc(cmd.argv()), runOptions{timeout: s.cfg.ExecTimeout})
	if errors.Is(err, errTimedOut) {
		return execResult{}, s.execTimeout(cmd)
	}
	if err != nil {
		return execResult{}, reply(nil, "%s", err)
	}
	return decodeResult(res)
}

func (s *Server) execTimeout(cmd command) error {
	return reply(ErrTimeout, "Command '%s' timed out after %s seconds", cmd, pySeconds(s.cfg.ExecTimeout))
}

// decodeResult decodes captured output as text mode does: stdout first.
func decodeResult(res captured) (execResult, error) {
	out, err := pyvalue.Text(res.stdout)
	if err != nil {
		return execResult{}, reply(nil, "%s", err)
	}
	errOut, err := pyvalue.Text(res.stderr)
	if err != nil {
		return execResult{}, reply(nil, "%s", err)
	}
	return execResult{stdout: out, stderr: errOut, code: res.code}, nil
}

// proc is a child with the server's environment and working directory.
func (s *Server) proc(argv []string) proc {
	return proc{argv: argv, dir: s.cfg.Home, env: s.childEnv()}
}

// handleExecute is POST /execute and /setup/execute: 200 with the output
// whatever the exit code, 500 {message} when the command could not run.
func (s *Server) handleExecute(c echo.Context) error {
	_, cmd, err := s.commandRequest(c)
	if err != nil {
		return err
	}
	res, err := s.runCommand(c.Request().Context(), cmd)
	if err != nil {
		return err
	}
	return jsonReply(c, 200, res.body())
}

// handleExecuteVerified is POST /execute_with_verification: the command,
// then polling of the verification until it passes or max_wait_time.
func (s *Server) handleExecuteVerified(c echo.Context) error {
	data, cmd, err := s.commandRequest(c)
	if err != nil {
		return err
	}
	verification, ok := data["verification"]
	if !ok {
		verification = map[string]any{}
	}
	maxWait, ok := data["max_wait_time"]
	if !ok {
		maxWait = jsonInt(10)
	}
	interval, ok := data["check_interval"]
	if !ok {
		interval = jsonInt(1)
	}

	ctx := c.Request().Context()
	res, err := s.runCommand(ctx, cmd)
	if err != nil {
		return err
	}
	body := res.body()
	if !pyvalue.Truthy(verification) {
		return jsonReply(c, 200, body)
	}
	checks, err := readVerification(verification)
	if err != nil {
		return err
	}
	maxWaitSec, ok := pyvalue.Number(maxWait)
	if !ok {
		return reply(nil, "'<' not supported between instances of 'float' and '%s'", pyvalue.TypeName(maxWait))
	}
	// The checks and the pauses between them end when the client has gone:
	// nobody is left to answer.
	start := time.Now()
	for time.Since(start).Seconds() < maxWaitSec {
		if s.verify(ctx, checks) {
			body["verification"] = "passed"
			body["wait_time"] = time.Since(start).Seconds()
			return jsonReply(c, 200, body)
		}
		if err := pySleep(ctx, interval); err != nil {
			return err
		}
	}
	// Not an error reply: upstream's result of a failed verification,
	// which it sends with status 500.
	body["status"] = "verification_failed"
	body["verification"] = "failed"
	body["wait_time"] = maxWait
	return jsonReply(c, 500, body)
}

// verificationChecks are the keys of a verification object upstream acts
// on.
type verificationChecks struct {
	windowExists, commandSuccess any
	hasWindow, hasCommand        bool
}

// readVerification reads the two keys upstream knows. Python's `in` and
// indexing also accept strings and lists (a substring or element test,
// then a TypeError on indexing); those TypeErrors are what a client sees.
func readVerification(v any) (verificationChecks, error) {
	var vc verificationChecks
	switch x := v.(type) {
	case map[string]any:
		vc.windowExists, vc.hasWindow = x["window_exists"]
		vc.commandSuccess, vc.hasCommand = x["command_success"]
		return vc, nil
	case string:
		if strings.Contains(x, "window_exists") || strings.Contains(x, "command_success") {
			return vc, reply(nil, "string indices must be integers, not 'str'")
		}
		return vc, nil
	case []any:
		for _, e := range x {
			if e == "window_exists" || e == "command_success" {
				return vc, reply(nil, "list indices must be integers or slices, not str")
			}
		}
		return vc, nil
	}
	return vc, reply(nil, "argument of type '%s' is not iterable", pyvalue.TypeName(v))
}

// verify runs one round of checks, each bounded by VerifyTimeout; any
// error counts as "not yet".
func (s *Server) verify(ctx context.Context, vc verificationChecks) bool {
	passed := true
	if vc.hasWindow {
		name, ok := vc.windowExists.(string)
		listing, err := s.wmctrlList(ctx)
		if !ok || err != nil || !strings.Contains(strings.ToLower(listing), strings.ToLower(name)) {
			passed = false
		}
	}
	if vc.hasCommand {
		var argv []string
		switch x := vc.commandSuccess.(type) {
		case string:
			argv = []string{"/bin/sh", "-c", x}
		case []any:
			argv = []string{"/bin/sh", "-c"}
			for _, e := range x {
				str, ok := e.(string)
				if !ok {
					return false
				}
				argv = append(argv, str)
			}
		default:
			return false
		}
		res, err := runCaptured(ctx, s.proc(argv), runOptions{timeout: s.cfg.VerifyTimeout})
		if err != nil || res.code != 0 {
			passed = false
		} else if _, err := decodeResult(res); err != nil {
			passed = false
		}
	}
	return passed
}

// wmctrlList is `wmctrl -l` with check=True and text decoding. Upstream
// waits for it without a limit; a hung one fails here after VerifyTimeout.
func (s *Server) wmctrlList(ctx context.Context) (string, error) {
	res, err := runCaptured(ctx, s.proc([]string{"wmctrl", "-l"}), runOptions{timeout: s.cfg.VerifyTimeout})
	if err != nil {
		return "", err
	}
	if res.code != 0 {
		return "", fmt.Errorf("wmctrl -l exited with status %d", res.code)
	}
	return pyvalue.Text(res.stdout)
}

// pySleep is time.sleep(v) with its errors, cut short when ctx ends.
func pySleep(ctx context.Context, v any) error {
	sec, ok := pyvalue.Number(v)
	switch {
	case !ok:
		return reply(nil, "'%s' object cannot be interpreted as an integer", pyvalue.TypeName(v))
	case sec < 0:
		return reply(nil, "sleep length must be non-negative")
	case sec > math.MaxInt64/1e9:
		return reply(nil, "timestamp too large to convert to C _PyTime_t")
	}
	return ctxtime.Sleep(ctx, time.Duration(sec*float64(time.Second)))
}

// handleLaunch is POST /setup/launch: start without waiting, answer
// "<command> launched successfully".
func (s *Server) handleLaunch(c echo.Context) error {
	_, cmd, err := s.commandRequest(c)
	if err != nil {
		return err
	}
	if s.arm {
		// Upstream swaps google-chrome for chromium on ARM; with a
		// string command its `in` is a substring test and the swap then
		// fails on the immutable string.
		if cmd.isStr && strings.Contains(cmd.str, "google-chrome") {
			return reply(nil, "'str' object does not support item assignment")
		}
		for i, a := range cmd.list {
			if a == "google-chrome" {
				cmd.list[i] = "chromium"
				break
			}
		}
	}
	p := s.proc(cmd.argv())
	p.stdout, p.stderr = s.cfg.Stdout, s.cfg.Stderr
	if err := startDetached(p); err != nil {
		return reply(nil, "%s", err)
	}
	shown := strings.Join(cmd.list, " ")
	if cmd.shell {
		shown = cmd.String()
	}
	return text(c, 200, shown+" launched successfully")
}

// jsonInt is an int literal as json.Number, for defaults that print back.
func jsonInt(n int) any { return json.Number(fmt.Sprint(n)) }
