package guestd

import (
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// form is Werkzeug's request.form: the fields of an urlencoded or
// multipart body (never the query string). Lookups return the first value,
// as MultiDict does.
type form map[string][]string

func (f form) get(name string) (string, bool) {
	v, ok := f[name]
	if !ok || len(v) == 0 {
		return "", false
	}
	return v[0], true
}

// maxFieldSize bounds one multipart text field held in memory; it must
// stay above the longest path a client sends (4 KiB on Linux).
const maxFieldSize = 1 << 20

// filePart receives a multipart part that has a filename parameter (what
// Werkzeug puts in request.files); it must consume the part or return an
// error. The form holds the fields seen before it.
type filePart func(name string, part *multipart.Part, fields form) error

// readForm parses the body as Werkzeug parses request.form. Bodies of other
// content types give an empty form, as in Flask. onFile may be nil: file
// parts are then skipped.
func (s *Server) readForm(c echo.Context, onFile filePart) (form, error) {
	r := c.Request()
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "application/x-www-form-urlencoded":
		body, err := s.readBody(c, maxInMemoryBody)
		if err != nil {
			return nil, err
		}
		return parseURLEncoded(string(body)), nil
	case "multipart/form-data":
		if r.ContentLength > s.cfg.MaxBody {
			return nil, tooLarge(s.cfg.MaxBody)
		}
		body := http.MaxBytesReader(c.Response(), r.Body, s.cfg.MaxBody)
		f, err := readMultipart(multipart.NewReader(body, params["boundary"]), onFile)
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(s.cfg.MaxBody)
		}
		return f, err
	}
	return form{}, nil
}

func readMultipart(mr *multipart.Reader, onFile filePart) (form, error) {
	f := form{}
	for {
		part, err := mr.NextRawPart()
		if err == io.EOF {
			return f, nil
		}
		if err != nil {
			return nil, badInput("read multipart body: %v", err)
		}
		_, params, err := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if err != nil {
			part.Close()
			continue // Werkzeug skips parts it cannot name
		}
		name := params["name"]
		if _, isFile := params["filename"]; isFile {
			if onFile == nil {
				_, err = io.Copy(io.Discard, part)
			} else {
				err = onFile(name, part, f)
			}
			part.Close()
			var re *replyError
			var mbe *http.MaxBytesError
			if err != nil && !errors.As(err, &re) && !errors.As(err, &mbe) {
				// The body broke off inside the part: the client's fault,
				// as Werkzeug answers it (400), not the server's.
				err = badInput("read multipart body: %v", err)
			}
			if err != nil {
				return nil, err
			}
			continue
		}
		value, err := io.ReadAll(io.LimitReader(part, maxFieldSize+1))
		part.Close()
		if err != nil {
			return nil, badInput("read multipart field %q: %v", name, err)
		}
		if len(value) > maxFieldSize {
			return nil, &replyError{class: ErrTooLarge, input: true, msg: "multipart field " + name + " is too large"}
		}
		f[name] = append(f[name], pyvalue.DecodeReplace(string(value)))
	}
}

// parseURLEncoded is urllib.parse.parse_qsl(keep_blank_values=True) with
// errors="replace": "&"-separated pairs, "+" as space, percent escapes
// decoded (malformed ones kept as written).
func parseURLEncoded(body string) form {
	f := form{}
	for _, pair := range strings.Split(body, "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, v = unquotePlus(k), unquotePlus(v)
		f[k] = append(f[k], v)
	}
	return f
}

func unquotePlus(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	if !strings.Contains(s, "%") {
		return pyvalue.DecodeReplace(s)
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return pyvalue.DecodeReplace(string(b))
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}
