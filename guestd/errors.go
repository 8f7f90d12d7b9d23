package guestd

import (
	"errors"
	"fmt"
	"html"
	"net/http"

	"github.com/drums-dev/drums/internal/pyvalue"
	"github.com/labstack/echo/v4"
)

// Error classes. A route's failure wraps one of these; statusOf turns the
// class into the HTTP status, and nothing else in the package picks an
// error status.
var (
	ErrBadRequest          = errors.New("bad request")
	ErrForbidden           = errors.New("forbidden")
	ErrNotFound            = errors.New("not found")
	ErrMethodNotAllowed    = errors.New("method not allowed")
	ErrTooLarge            = errors.New("request body too large")
	ErrUnsupportedMedia    = errors.New("unsupported media type")
	ErrRangeNotSatisfiable = errors.New("range not satisfiable")
	ErrTimeout             = errors.New("timed out")
)

// statusOf maps an error class to the status upstream answers with
// (ErrForbidden: guestd's own refusal of what a web page sends, which
// upstream serves). Timeouts and every unclassified failure are 500, as
// upstream's.
func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed
	case errors.Is(err, ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, ErrUnsupportedMedia):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, ErrRangeNotSatisfiable):
		return http.StatusRequestedRangeNotSatisfiable
	}
	return http.StatusInternalServerError
}

// replyError is a failure as a route answers it: msg is the text the
// client sees (upstream's wording wherever upstream has one).
type replyError struct {
	class error // one of the classes above; nil is a server failure (500)
	msg   string
	// input marks guestd's own validation of a request that upstream
	// would not survive (a debugger page) or answers in HTML: it is
	// always answered as JSON, whatever the route's style.
	input bool
	// page marks upstream's abort(): Werkzeug's HTML page whatever the
	// route's style.
	page bool
	// extra holds further fields of a JSON error body.
	extra map[string]any
}

func (e *replyError) Error() string { return e.msg }
func (e *replyError) Unwrap() error { return e.class }

// reply is an upstream-worded failure of class.
func reply(class error, format string, args ...any) *replyError {
	return &replyError{class: class, msg: fmt.Sprintf(format, args...)}
}

// badInput is guestd's answer to a request upstream would crash on.
func badInput(format string, args ...any) *replyError {
	return &replyError{class: ErrBadRequest, msg: fmt.Sprintf(format, args...), input: true}
}

// errorStyle is the shape of a route's error bodies, as upstream writes
// them.
type errorStyle int

const (
	// styleMessage: JSON {"message": m, "status": "error"} (commands,
	// recording, accessibility).
	styleMessage errorStyle = iota
	// styleError: JSON {"error": m} (files, windows sizes).
	styleError
	// styleText: m as text/html (the /setup routes that return strings).
	styleText
	// stylePage: Werkzeug's HTML error page with m as its description
	// (abort(), unknown routes and methods).
	stylePage
	// styleScript: JSON {"error": "", "output": m, "returncode": -1,
	// "status": "error"} (/run_bash_script).
	styleScript
)

// statusText are Werkzeug's reason phrases for the pages guestd writes.
var statusText = map[int]string{
	400: "Bad Request",
	404: "Not Found",
	405: "Method Not Allowed",
	413: "Request Entity Too Large",
	415: "Unsupported Media Type",
	416: "Requested Range Not Satisfiable",
	500: "Internal Server Error",
}

// writeError is the one place error bodies are written. Headers the error
// needs (Allow, Content-Range) are set by the caller before.
func (s *Server) writeError(c echo.Context, style errorStyle, err error) error {
	status := statusOf(err)
	var re *replyError
	if !errors.As(err, &re) {
		re = &replyError{msg: err.Error()}
	}
	if status >= 500 {
		s.log.Warn("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "status", status, "error", re.msg)
	}
	if re.page {
		style = stylePage
	}
	if re.input || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnsupportedMedia) {
		if style == styleText || style == stylePage {
			style = styleMessage
		}
	}
	switch style {
	case styleText:
		return blob(c, status, mimeHTML, []byte(re.msg))
	case stylePage:
		// html.EscapeString escapes the five characters markupsafe does,
		// the way Flask escapes abort() descriptions.
		return blob(c, status, mimeHTML, []byte(werkzeugPage(status, html.EscapeString(re.msg))))
	}
	body := map[string]any{}
	for k, v := range re.extra {
		body[k] = v
	}
	switch style {
	case styleError:
		body["error"] = re.msg
	case styleScript:
		body["error"], body["output"], body["returncode"], body["status"] = "", re.msg, -1, "error"
	default:
		body["message"], body["status"] = re.msg, "error"
	}
	return blob(c, status, mimeJSON, pyvalue.Jsonify(body))
}

// werkzeugPage is the HTML Werkzeug writes for an HTTP error; description
// is already HTML.
func werkzeugPage(status int, description string) string {
	name := statusText[status]
	return fmt.Sprintf("<!doctype html>\n<html lang=en>\n<title>%d %s</title>\n<h1>%s</h1>\n<p>%s</p>\n",
		status, name, name, description)
}

// Werkzeug's default descriptions, which carry no markup.
const (
	descNotFound         = "The requested URL was not found on the server. If you entered the URL manually please check your spelling and try again."
	descMethodNotAllowed = "The method is not allowed for the requested URL."
	descRange            = "The server cannot provide the requested range."
)
