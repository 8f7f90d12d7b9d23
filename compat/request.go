package compat

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/drums-dev/drums/guestd/client"
)

// defaultTimeout bounds a request without its own timeout. It stays above
// every fast upstream answer on a loaded machine (an /accessibility walk of
// Chromium takes seconds) and below the slow cases' fixed timeouts, which
// set their own.
const defaultTimeout = 60 * time.Second

// Response is one server's answer, or the transport error instead.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
}

func formEncode(m map[string]string) string {
	v := url.Values{}
	for k, s := range m {
		v.Set(k, s)
	}
	return v.Encode() // sorted by key
}

// multipartBoundary is fixed so that both servers receive the same bytes.
const multipartBoundary = "drums-compat-boundary-7d1f0b"

func (m *Multipart) encode() ([]byte, string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(multipartBoundary); err != nil {
		return nil, "", fmt.Errorf("set multipart boundary: %w", err)
	}
	for _, k := range sortedKeys(m.Fields) {
		if err := w.WriteField(k, m.Fields[k]); err != nil {
			return nil, "", fmt.Errorf("write multipart field %s: %w", k, err)
		}
	}
	for _, k := range sortedKeys(m.Files) {
		p := m.Files[k]
		data := []byte(p.Content)
		if p.Base64 != "" {
			data, _ = base64.StdEncoding.DecodeString(p.Base64) // validated when parsed
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, k, p.Filename))
		h.Set("Content-Type", "application/octet-stream")
		pw, err := w.CreatePart(h)
		if err != nil {
			return nil, "", fmt.Errorf("create multipart part %s: %w", k, err)
		}
		if _, err := pw.Write(data); err != nil {
			return nil, "", fmt.Errorf("write multipart part %s: %w", k, err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("close multipart body: %w", err)
	}
	return buf.Bytes(), w.FormDataContentType(), nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// send performs r against base (e.g. "http://10.0.0.2:5000"). Transport
// failures are returned inside the Response: they are an answer to compare
// (a server that drops the connection), not an error of the harness.
func send(ctx context.Context, hc *http.Client, base string, r *Request) Response {
	body, ctype, err := r.body()
	if err != nil {
		return Response{Err: err}
	}
	timeout := defaultTimeout
	if r.Timeout > 0 {
		timeout = time.Duration(r.Timeout * float64(time.Second))
	}
	h := http.Header{}
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	for k, v := range r.Headers {
		h.Set(k, v)
	}
	a, err := client.New(base, hc).Do(ctx, r.Method, r.Path, h, body, timeout)
	if err != nil {
		return Response{Err: err}
	}
	return Response{Status: a.Status, Header: a.Header, Body: a.Body}
}

// transportClass names a transport failure without the addresses and ports
// that differ between the two servers.
func transportClass(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout(), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case strings.Contains(err.Error(), "connection refused"):
		return "connection refused"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "connection reset"):
		return "connection closed"
	}
	return "transport error"
}
