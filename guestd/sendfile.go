package guestd

import (
	"fmt"
	"hash/adler32"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"golang.org/x/text/unicode/norm"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// download is one answer of Flask's send_file.
type download struct {
	name     string // download name: the file's base name
	mimetype string // "" guesses it from name
	attach   bool   // as_attachment
	size     int64
	mtime    time.Time
	// etagPath is the path whose adler32 ends the ETag.
	etagPath string
	body     io.ReadSeeker
}

// sendFile answers d with send_file's headers: Content-Type (explicit or
// guessed like Python's mimetypes, charset added as Werkzeug does),
// Content-Disposition (with filename* for non-ASCII names),
// Content-Length, Last-Modified, ETag and Cache-Control: no-cache. GET and
// HEAD requests are conditional (304, 412) and honour a single byte Range
// (206, 416), as Werkzeug's make_conditional; POST routes ignore both, as
// Werkzeug does.
func (s *Server) sendFile(c echo.Context, d download) error {
	mimetype := d.mimetype
	if mimetype == "" {
		// Werkzeug would add Content-Encoding for a guessed encoding
		// only when not an attachment; every route that guesses sends an
		// attachment.
		if mimetype = s.mime.guessType(d.name); mimetype == "" {
			mimetype = "application/octet-stream"
		}
	}
	sec := float64(d.mtime.Unix()) + float64(d.mtime.Nanosecond())*1e-9
	etag := fmt.Sprintf("%s-%d-%d", pyvalue.ReprFloat(sec), d.size, adler32.Checksum([]byte(d.etagPath)))
	lastModified := d.mtime.UTC().Truncate(time.Second)

	req := c.Request()
	status := http.StatusOK
	start, length := int64(0), d.size
	var contentRange string
	if req.Method == http.MethodGet || req.Method == http.MethodHead {
		rangeHeader, hasRange := req.Header["Range"]
		processable := hasRange && (len(req.Header["If-Range"]) == 0 ||
			!resourceModified(req, etag, lastModified, false))
		if d.size > 0 && processable {
			a, b, ok := byteRange(strings.Join(rangeHeader, ","), d.size)
			if !ok {
				c.Response().Header().Set("Content-Range", fmt.Sprintf("bytes */%d", d.size))
				e := reply(ErrRangeNotSatisfiable, descRange)
				e.page = true
				return e
			}
			status, start, length = http.StatusPartialContent, a, b-a
			contentRange = fmt.Sprintf("bytes %d-%d/%d", a, b-1, d.size)
		} else if !resourceModified(req, etag, lastModified, true) {
			status = http.StatusNotModified
			if parseETags(req.Header.Get("If-Match")).any() {
				status = http.StatusPreconditionFailed
			}
		}
	}

	h := c.Response().Header()
	disposition := "inline"
	if d.attach {
		disposition = "attachment"
	}
	h.Set("Content-Disposition", disposition+"; "+dispositionNames(d.name))
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", `"`+etag+`"`)
	if status == http.StatusNotModified {
		// Werkzeug strips entity headers from a 304.
		c.Response().WriteHeader(status)
		return nil
	}
	h.Set("Content-Type", contentType(mimetype))
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	h.Set("Last-Modified", lastModified.Format(http.TimeFormat))
	if contentRange != "" {
		h.Set("Accept-Ranges", "bytes")
		h.Set("Content-Range", contentRange)
	}
	c.Response().WriteHeader(status)
	if req.Method == http.MethodHead {
		return nil
	}
	if _, err := d.body.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", d.name, err)
	}
	_, err := io.CopyN(c.Response(), d.body, length)
	if err != nil {
		// The status is sent; all that is left is to cut the body short.
		s.log.Warn("send file cut short", "name", d.name, "error", err)
	}
	return nil
}

// tokenChars are the characters Werkzeug leaves unquoted in a header
// parameter.
const tokenChars = "!#$%&'*+-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|~"

// dispositionNames is the parameter part of send_file's
// Content-Disposition: filename=NAME for ASCII names (quoted when it has
// non-token characters), else an NFKD ASCII fold plus filename*.
func dispositionNames(name string) string {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return "filename=" + quoteHeaderValue(name)
	}
	var simple strings.Builder
	for _, r := range norm.NFKD.String(strings.ToValidUTF8(name, string(utf8.RuneError))) {
		if r < 0x80 {
			simple.WriteRune(r)
		}
	}
	return "filename=" + quoteHeaderValue(simple.String()) + "; filename*=UTF-8''" + rfc5987Quote(name)
}

// quoteHeaderValue is Werkzeug's quote_header_value.
func quoteHeaderValue(v string) string {
	if v == "" {
		return `""`
	}
	plain := true
	for i := 0; i < len(v); i++ {
		if !strings.ContainsRune(tokenChars, rune(v[i])) {
			plain = false
			break
		}
	}
	if plain {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// rfc5987Quote is urllib.parse.quote(name, safe="!#$&+-.^_`|~"): UTF-8
// bytes percent-encoded except letters, digits and the attr-chars.
func rfc5987Quote(name string) string {
	const safe = "!#$&+-.^_`|~"
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x80 && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(safe, c) >= 0) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// byteRange is parse_range_header + range_for_length for the one range
// Werkzeug serves: it returns [start, end) or ok=false (a 416).
func byteRange(header string, size int64) (start, end int64, ok bool) {
	units, spec, found := strings.Cut(header, "=")
	if !found || strings.ToLower(strings.TrimSpace(units)) != "bytes" {
		return 0, 0, false
	}
	items := strings.Split(spec, ",")
	if len(items) != 1 {
		return 0, 0, false
	}
	item := strings.TrimSpace(items[0])
	first, last, found := strings.Cut(item, "-")
	if !found {
		return 0, 0, false
	}
	if first == "" { // suffix range "-N"
		n, err := strconv.ParseInt(item, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		start, end = n, size
		if n < 0 {
			start += size
		}
	} else {
		var err error
		if start, err = strconv.ParseInt(strings.TrimSpace(first), 10, 64); err != nil {
			return 0, 0, false
		}
		end = size
		if last = strings.TrimSpace(last); last != "" {
			e, err := strconv.ParseInt(last, 10, 64)
			if err != nil || start >= e+1 {
				return 0, 0, false
			}
			end = e + 1
		}
	}
	if start < 0 || start >= end || start >= size {
		return 0, 0, false
	}
	return start, min(end, size), true
}

// resourceModified is Werkzeug's is_resource_modified for a response with
// an ETag and a Last-Modified.
func resourceModified(req *http.Request, etag string, lastModified time.Time, ignoreIfRange bool) bool {
	unmodified := false
	var ifRangeDate time.Time
	var ifRangeETag string
	hasIfRange := false
	if !ignoreIfRange && len(req.Header["Range"]) > 0 {
		if v := req.Header.Get("If-Range"); v != "" {
			hasIfRange = true
			if t, err := http.ParseTime(v); err == nil {
				ifRangeDate = t
			} else {
				ifRangeETag = unquoteETag(v)
			}
		}
	}
	since := ifRangeDate
	if since.IsZero() {
		if t, err := http.ParseTime(req.Header.Get("If-Modified-Since")); err == nil {
			since = t
		}
	}
	if !since.IsZero() && !lastModified.After(since) {
		unmodified = true
	}
	if hasIfRange && ifRangeETag != "" {
		unmodified = parseETags(ifRangeETag).contains(etag)
	} else {
		if inm := req.Header.Get("If-None-Match"); inm != "" {
			if tags := parseETags(inm); tags.any() {
				unmodified = tags.containsWeak(etag)
			}
		}
		if im := req.Header.Get("If-Match"); im != "" {
			if tags := parseETags(im); tags.any() {
				unmodified = !tags.isStrong(etag)
			}
		}
	}
	return !unmodified
}

// etags is Werkzeug's ETags.
type etags struct {
	strong, weak []string
	star         bool
}

func (t etags) any() bool { return t.star || len(t.strong) > 0 || len(t.weak) > 0 }

func (t etags) isStrong(tag string) bool { return contains(t.strong, tag) }

func (t etags) contains(tag string) bool { return t.star || t.isStrong(tag) }

func (t etags) containsWeak(tag string) bool { return contains(t.weak, tag) || t.contains(tag) }

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

var etagItem = regexp.MustCompile(`^([Ww]/)?(?:"(.*?)"|(.*?))(?:\s*,\s*|$)`)

// parseETags is Werkzeug's parse_etags.
func parseETags(v string) etags {
	var t etags
	for pos := 0; pos < len(v); {
		m := etagItem.FindStringSubmatchIndex(v[pos:])
		if m == nil || m[1] == 0 {
			break
		}
		weak := m[2] >= 0
		var tag string
		switch {
		case m[4] >= 0:
			tag = v[pos+m[4] : pos+m[5]]
		case m[6] >= 0:
			tag = v[pos+m[6] : pos+m[7]]
			if tag == "*" {
				return etags{star: true}
			}
		}
		if weak {
			t.weak = append(t.weak, tag)
		} else {
			t.strong = append(t.strong, tag)
		}
		pos += m[1]
	}
	return t
}

// unquoteETag is Werkzeug's unquote_etag (the tag without W/ and quotes).
func unquoteETag(v string) string {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "W/") || strings.HasPrefix(v, "w/") {
		v = v[2:]
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v
}
