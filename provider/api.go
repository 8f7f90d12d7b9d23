package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/drums-dev/drums/provider/client"
)

// maxBody bounds a request body; every v1 body is a few fields.
const maxBody = 64 << 10

// newAPI builds the v1 routes and the page over m. token, if set, is
// required as a bearer token on every request, or for reads the cookie
// its login hands out (the TCP listener, whose port names the cookie); the
// unix socket relies on its file mode instead.
func newAPI(m *Manager, token, port string) *echo.Echo {
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = func(err error, c echo.Context) { writeError(m.log, err, c) }
	// A bug in a handler answers 500 with the error body; it never takes
	// the daemon (and the desktops' leases) down.
	e.Use(recoverPanics)
	var ca *cookieAuth
	if token != "" {
		ca = newCookieAuth(port)
		e.Use(authorize(token, ca))
	}
	a := &api{m: m, advertise: m.advertiseURL()}
	e.POST("/v1/desktops", a.lease)
	e.GET("/v1/desktops", a.list)
	e.GET("/v1/desktops/:id", a.get)
	e.POST("/v1/desktops/:id/renew", a.renew)
	e.POST("/v1/desktops/:id/revert", a.revert)
	e.POST("/v1/desktops/:id/snapshots", a.saveSnapshot)
	e.DELETE("/v1/desktops/:id", a.release)
	e.GET("/v1/snapshots", a.snapshots)
	e.DELETE("/v1/snapshots/:name", a.deleteSnapshot)
	e.GET("/v1/health", a.health)
	e.GET("/metrics", a.metrics)
	e.POST("/v1/desktops/:id/takeover", a.takeover)
	// The page, its files and its own data: not part of the v1 API
	// (openapi.json leaves it out; provider/README.md describes it).
	e.GET("/ui/api/metrics", a.metricsSummary)
	e.GET("/ui/api/desktops/:id/thumbnail", a.thumbnail)
	e.GET("/ui/*", uiPage())
	e.GET(uiLoginPath, loginForm(ca))
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/ui/") })
	e.POST(uiLoginPath, tokenLogin(token, ca))
	return e
}

type api struct {
	m         *Manager
	advertise string // Config.AdvertiseURL
}

// out is a desktop as the API answers it: with the daemon's own URL when
// it is advertised.
func (a *api) out(d client.Desktop) client.Desktop {
	d.Daemon = a.advertise
	return d
}

func (a *api) lease(c echo.Context) error {
	var req client.LeaseRequest
	if err := decode(c, &req, true); err != nil {
		return err
	}
	if req.Holder == "" {
		if conn, ok := c.Request().Context().Value(peerKey{}).(net.Conn); ok {
			req.Holder = describePeer(conn)
		}
	}
	d, err := a.m.Lease(c.Request().Context(), req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, a.out(d))
}

func (a *api) list(c echo.Context) error {
	ds := a.m.List()
	for i := range ds {
		ds[i] = a.out(ds[i])
	}
	return c.JSON(http.StatusOK, ds)
}

func (a *api) get(c echo.Context) error {
	d, err := a.m.Get(c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a.out(d))
}

func (a *api) renew(c echo.Context) error {
	var req client.RenewRequest
	if err := decode(c, &req, false); err != nil {
		return err
	}
	d, err := a.m.Renew(c.Param("id"), req.LeaseSeconds)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a.out(d))
}

func (a *api) revert(c echo.Context) error {
	var req client.RevertRequest
	if err := decode(c, &req, false); err != nil {
		return err
	}
	d, err := a.m.Revert(c.Request().Context(), c.Param("id"), req.Snapshot)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a.out(d))
}

func (a *api) saveSnapshot(c echo.Context) error {
	var req client.SnapshotRequest
	if err := decode(c, &req, true); err != nil {
		return err
	}
	s, err := a.m.SaveSnapshot(c.Request().Context(), c.Param("id"), req.Name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, s)
}

func (a *api) release(c echo.Context) error {
	if err := a.m.Release(c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *api) snapshots(c echo.Context) error { return c.JSON(http.StatusOK, a.m.Snapshots()) }

func (a *api) deleteSnapshot(c echo.Context) error {
	if err := a.m.DeleteSnapshot(c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (a *api) health(c echo.Context) error { return c.JSON(http.StatusOK, a.m.health()) }

func (a *api) metricsSummary(c echo.Context) error {
	s, err := a.m.met.summary()
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (a *api) thumbnail(c echo.Context) error {
	b, err := a.m.Thumbnail(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return c.Blob(http.StatusOK, "image/png", b)
}

func (a *api) takeover(c echo.Context) error {
	// client.TakeoverRequest, with "enabled" required: {} is a 400.
	var req struct {
		Enabled *bool `json:"enabled"`
	}
	if err := decode(c, &req, true); err != nil {
		return err
	}
	if req.Enabled == nil {
		return fmt.Errorf("request body lacks \"enabled\" (true or false): %w", ErrBadRequest)
	}
	d, err := a.m.Takeover(c.Request().Context(), c.Param("id"), *req.Enabled)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, a.out(d))
}

func (a *api) metrics(c echo.Context) error {
	a.m.met.handler.ServeHTTP(c.Response(), c.Request())
	return nil
}

// decode reads a JSON body strictly: unknown fields and trailing data are
// errors, so a misspelt field is reported instead of silently ignored. An
// empty body is allowed when the body is optional.
func decode(c echo.Context, v any, required bool) error {
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("read request body: %w", errors.Join(ErrBadRequest, err))
	}
	if len(body) > maxBody {
		return fmt.Errorf("request body over %d bytes: %w", maxBody, ErrBadRequest)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		if required {
			return fmt.Errorf("request body is empty; send a JSON object: %w", ErrBadRequest)
		}
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("parse request body: %v: %w", err, ErrBadRequest)
	}
	if dec.More() {
		return fmt.Errorf("parse request body: data after the JSON object: %w", ErrBadRequest)
	}
	return nil
}

// writeError is the one helper that writes error bodies, for the handlers'
// errors and for echo's own (unknown route, wrong method).
func writeError(log *slog.Logger, err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	status, code := errorStatus(err)
	msg := err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status = he.Code
		msg = fmt.Sprint(he.Message)
		switch {
		case status == http.StatusNotFound:
			code = client.CodeNotFound
			msg = fmt.Sprintf("no route %s %s (the API is under /v1)", c.Request().Method, c.Request().URL.Path)
		case status == http.StatusMethodNotAllowed:
			code = client.CodeBadRequest
			msg = fmt.Sprintf("method %s not allowed on %s", c.Request().Method, c.Request().URL.Path)
		case status == http.StatusUnauthorized:
			code = client.CodeAuth
		case status < 500:
			code = client.CodeBadRequest
		default:
			code = client.CodeInternal
		}
	}
	if code == client.CodeInternal {
		log.Error("request failed", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	_ = c.JSON(status, client.ErrorBody{Error: client.ErrorDetail{Code: code, Message: msg}})
}

// recoverPanics turns a handler's panic into an internal error. (echo's own
// middleware package would pull in a module drums does not carry.)
func recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic serving %s %s: %v", c.Request().Method, c.Request().URL.Path, r)
			}
		}()
		return next(c)
	}
}
