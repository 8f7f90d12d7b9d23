package guestd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// downloadAttempts is upstream's retry count for /setup/download_file.
const downloadAttempts = 3

// handleDownloadFile is POST /setup/download_file: GET url into path (~ and
// $VAR expanded), up to three attempts. Each attempt writes a temporary
// file beside the target and renames it, and the length check uses the
// bytes on the wire, so a gzip-encoded response no longer fails it.
func (s *Server) handleDownloadFile(c echo.Context) error {
	data, err := s.jsonObject(c)
	if err != nil {
		return err
	}
	if !pyvalue.Truthy(data["url"]) || !pyvalue.Truthy(data["path"]) {
		return reply(ErrBadRequest, "Path or URL not supplied!")
	}
	url, ok := data["url"].(string)
	if !ok {
		return badInput("'url' must be a string, not %s", pyvalue.TypeName(data["url"]))
	}
	raw, ok := data["path"].(string)
	if !ok {
		return badInput("'path' must be a string, not %s", pyvalue.TypeName(data["path"]))
	}
	target := s.abs(pathlibStr(s.expandPath(raw)))
	if err := makeDirs(dirName(target)); err != nil {
		return reply(nil, "%s", err)
	}
	ctx := context.WithoutCancel(c.Request().Context())
	var last error
	for i := range downloadAttempts {
		size, err := s.fetch(ctx, url, target)
		if err == nil {
			return text(c, 200, fmt.Sprintf("File downloaded successfully: %d bytes", size))
		}
		s.log.Warn("download failed", "url", url, "attempt", i+1, "error", err)
		last = err
	}
	return reply(nil, "Failed to download %s. No retries left. Error: %s", url, last)
}

// fetch is one attempt.
func (s *Server) fetch(ctx context.Context, url, target string) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	idle := s.cfg.DownloadIdle
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: idle}).DialContext,
			TLSHandshakeTimeout:   idle,
			ResponseHeaderTimeout: idle,
		},
		// requests follows up to 30 redirects.
		CheckRedirect: func(_ *http.Request, via []*http.Request) error {
			if len(via) > 30 {
				return fmt.Errorf("Exceeded 30 redirects.")
			}
			return nil
		},
	}
	defer client.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		kind := "Client"
		if resp.StatusCode >= 500 {
			kind = "Server"
		}
		reason := strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode)+" ")
		return 0, fmt.Errorf("%d %s Error: %s for url: %s", resp.StatusCode, kind, reason, resp.Request.URL)
	}

	tmp, err := os.CreateTemp(dirName(target), ".guestd-download-*")
	if err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	defer os.Remove(tmp.Name())
	// requests' read timeout is per read, not for the whole body.
	timer := time.AfterFunc(idle, cancel)
	n, err := io.Copy(tmp, &idleReader{r: resp.Body, timer: timer, idle: idle})
	timer.Stop()
	err = errors.Join(err, tmp.Chmod(0o666&^s.umask), tmp.Close())
	if err != nil {
		return 0, err
	}
	// Go decompresses a gzip body it asked for and then reports the
	// length as unknown; ContentLength is otherwise the wire length.
	if resp.ContentLength > 0 && n != resp.ContentLength {
		return 0, fmt.Errorf("Download incomplete. Expected %d bytes, got %d bytes", resp.ContentLength, n)
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return 0, pyvalue.AsOSError(err, target)
	}
	return n, nil
}

// idleReader restarts timer after every read that made progress.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	return n, err
}
