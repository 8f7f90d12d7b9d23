package guestd

import (
	"bytes"
	"fmt"
	"time"

	"github.com/labstack/echo/v4"
)

// handleScreenshot is GET /screenshot: the screen with the cursor, as an
// 8-bit RGB PNG, sent with send_file's headers. The Display keeps the last
// PNG and gives it again while the screen does not change; the
// modification time is still the request's, as upstream saves its file
// anew for every request, so ETag and Last-Modified move as upstream's do.
func (s *Server) handleScreenshot(c echo.Context) error {
	png, err := s.deps.Display.ScreenshotPNG(c.Request().Context())
	if err != nil {
		return fmt.Errorf("take screenshot: %w", err)
	}
	return s.sendFile(c, download{
		name:     "screenshot.png",
		mimetype: "image/png",
		size:     int64(len(png)),
		mtime:    time.Now(),
		etagPath: "screenshots/screenshot.png",
		body:     bytes.NewReader(png),
	})
}

// handleScreenSize is POST /screen_size: {"height", "width"}.
func (s *Server) handleScreenSize(c echo.Context) error {
	w, h, err := s.deps.Display.ScreenSize(c.Request().Context())
	if err != nil {
		return fmt.Errorf("read screen size: %w", err)
	}
	return jsonReply(c, 200, map[string]any{"width": w, "height": h})
}

// handleCursorPosition is GET /cursor_position: pyvalue.Jsonify(x, y), an array.
func (s *Server) handleCursorPosition(c echo.Context) error {
	x, y, err := s.deps.Display.CursorPosition(c.Request().Context())
	if err != nil {
		return fmt.Errorf("read cursor position: %w", err)
	}
	return jsonReply(c, 200, []any{x, y})
}

// handleWindowSize is POST /window_size: the size of the first client
// window whose WM_CLASS instance or class equals app_class_name
// (case-insensitively). No match is a JSON 404 where upstream crashes.
func (s *Server) handleWindowSize(c echo.Context) error {
	f, err := s.readForm(c, nil)
	if err != nil {
		return err
	}
	name, ok := f.get("app_class_name")
	if !ok {
		return reply(ErrBadRequest, "app_class_name is required")
	}
	w, h, found, err := s.deps.Display.WindowSize(c.Request().Context(), name)
	if err != nil {
		return fmt.Errorf("find window %q: %w", name, err)
	}
	if !found {
		return reply(ErrNotFound, "No window with WM_CLASS %s", name)
	}
	return jsonReply(c, 200, map[string]any{"width": w, "height": h})
}

// handlePlatform is GET /platform: platform.system().
func (s *Server) handlePlatform(c echo.Context) error {
	return text(c, 200, "Linux")
}
