package provider

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// A browser cannot send a bearer header, so the page's readers carry a
// cookie instead: a login (the token in a form on the daemon's TCP
// listener, a one-time code in the URL drums ui prints) hands out an
// HttpOnly, SameSite=Strict cookie holding a random secret of the
// process, never the token. The cookie authorizes GET and HEAD only: the
// page reads, and a request another site makes a browser send cannot
// change anything even if the browser attached it.
type cookieAuth struct {
	// name carries the listener's port: cookies are per host, not per
	// port, and two listeners on one host must not overwrite each
	// other's.
	name   string
	secret string
}

func newCookieAuth(port string) *cookieAuth {
	return &cookieAuth{name: "drums-ui-" + port, secret: rand.Text()}
}

// issue gives the browser the cookie.
func (a *cookieAuth) issue(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: a.name, Value: a.secret, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
}

// valid reports whether r is a read carrying the cookie.
func (a *cookieAuth) valid(r *http.Request) bool {
	if a == nil || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		return false
	}
	c, err := r.Cookie(a.name)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(a.secret)) == 1
}

// isPage reports whether path is the page's (as opposed to the API's).
func isPage(path string) bool { return path == "/ui" || strings.HasPrefix(path, "/ui/") }

// authorize requires "Authorization: Bearer TOKEN" (compared in constant
// time) or, for reads, the page's cookie. The login form answers anyone;
// a browser without the cookie that asks for the page is sent to it.
func authorize(token string, ca *cookieAuth) echo.MiddlewareFunc {
	want := []byte("Bearer " + token)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			got := []byte(r.Header.Get("Authorization"))
			if subtle.ConstantTimeCompare(got, want) == 1 || ca.valid(r) || r.URL.Path == uiLoginPath {
				return next(c)
			}
			if isPage(r.URL.Path) && r.Method == http.MethodGet {
				return c.Redirect(http.StatusSeeOther, uiLoginPath)
			}
			return fmt.Errorf("missing or wrong bearer token: %w", ErrUnauthorized)
		}
	}
}

// uiLoginPath is the page's login: on the daemon's TCP listener a form
// for the token (GET shows it, POST checks it), under drums ui the one-time
// code's exchange.
const uiLoginPath = "/ui/login"

// loginForm is the daemon's GET /ui/login: the form for the token, or
// on the unix socket (nothing to log in to) the page.
func loginForm(ca *cookieAuth) echo.HandlerFunc {
	page := uiPage()
	return func(c echo.Context) error {
		if ca == nil {
			return c.Redirect(http.StatusSeeOther, "/ui/")
		}
		c.Request().URL.Path = "/ui/login.html"
		return page(c)
	}
}

// tokenLogin is the daemon's POST /ui/login: the token from the form, in
// exchange for the cookie. On the unix socket (no token) there is nothing
// to log in to: it sends the browser to the page.
func tokenLogin(token string, ca *cookieAuth) echo.HandlerFunc {
	return func(c echo.Context) error {
		if ca != nil {
			got := c.Request().PostFormValue("token")
			if subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
				return fmt.Errorf("wrong token: %w", ErrUnauthorized)
			}
			ca.issue(c.Response(), c.Request())
		}
		return c.Redirect(http.StatusSeeOther, "/ui/")
	}
}
