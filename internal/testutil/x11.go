package testutil

import (
	"context"
	"fmt"
	"io"
	"log"
	"strings"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/res"
	"github.com/jezek/xgb/xproto"
)

func init() {
	// xgb complains on stderr when there is no ~/.Xauthority; test servers
	// need none.
	xgb.Logger = log.New(io.Discard, "", 0)
}

// rootWatch is an X connection that receives PropertyNotify for the root
// window, so a caller can check a root property and then wait for it to
// change without polling.
type rootWatch struct {
	conn *xgb.Conn
	root xproto.Window
	ev   chan xgb.Event
}

func watchRoot(display string) (*rootWatch, error) {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", display, err)
	}
	root := xproto.Setup(conn).DefaultScreen(conn).Root
	if err := xproto.ChangeWindowAttributesChecked(conn, root, xproto.CwEventMask,
		[]uint32{xproto.EventMaskPropertyChange}).Check(); err != nil {
		conn.Close()
		return nil, fmt.Errorf("select root events: %w", err)
	}
	w := &rootWatch{conn: conn, root: root, ev: make(chan xgb.Event, 64)}
	go func() {
		defer close(w.ev)
		for {
			e, err := conn.WaitForEvent()
			if e == nil && err == nil {
				return // connection closed
			}
			if e != nil {
				w.ev <- e
			}
		}
	}()
	return w, nil
}

func (w *rootWatch) close() { w.conn.Close() }

// until calls check now and after every root property change, until it
// reports true, fails, or ctx ends.
func (w *rootWatch) until(ctx context.Context, check func() (bool, error)) error {
	for {
		ok, err := check()
		if err != nil || ok {
			return err
		}
		select {
		case _, open := <-w.ev:
			if !open {
				return fmt.Errorf("X connection closed")
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *rootWatch) atom(name string) (xproto.Atom, error) {
	r, err := xproto.InternAtom(w.conn, false, uint16(len(name)), name).Reply()
	if err != nil {
		return 0, fmt.Errorf("intern %s: %w", name, err)
	}
	return r.Atom, nil
}

func (w *rootWatch) prop(win xproto.Window, name string) ([]byte, error) {
	a, err := w.atom(name)
	if err != nil {
		return nil, err
	}
	r, err := xproto.GetProperty(w.conn, false, win, a, xproto.GetPropertyTypeAny, 0, 1<<20).Reply()
	if err != nil {
		return nil, err
	}
	return r.Value, nil
}

// WaitWM blocks until an EWMH window manager has set
// _NET_SUPPORTING_WM_CHECK on the root window of display.
func WaitWM(ctx context.Context, display string) error {
	w, err := watchRoot(display)
	if err != nil {
		return err
	}
	defer w.close()
	return w.until(ctx, func() (bool, error) {
		v, err := w.prop(w.root, "_NET_SUPPORTING_WM_CHECK")
		return len(v) >= 4, err
	})
}

// WaitRootProperty blocks until the root window's property name satisfies
// ok (checked now and at every root property change).
func WaitRootProperty(ctx context.Context, display, name string, ok func(value string) bool) error {
	w, err := watchRoot(display)
	if err != nil {
		return err
	}
	defer w.close()
	return w.until(ctx, func() (bool, error) {
		v, err := w.prop(w.root, name)
		return err == nil && ok(string(v)), err
	})
}

// WaitWindow blocks until a window whose WM_CLASS instance or class equals
// class (case-insensitively) is in _NET_CLIENT_LIST, and returns its id.
func WaitWindow(ctx context.Context, display, class string) (uint32, error) {
	w, err := watchRoot(display)
	if err != nil {
		return 0, err
	}
	defer w.close()
	var found uint32
	err = w.until(ctx, func() (bool, error) {
		list, err := w.prop(w.root, "_NET_CLIENT_LIST")
		if err != nil {
			return false, err
		}
		for i := 0; i+4 <= len(list); i += 4 {
			win := xproto.Window(xgb.Get32(list[i:]))
			v, err := w.prop(win, "WM_CLASS")
			if err != nil {
				continue // the window went away
			}
			for _, part := range strings.Split(strings.TrimRight(string(v), "\x00"), "\x00") {
				if strings.EqualFold(part, class) {
					found = uint32(win)
					return true, nil
				}
			}
		}
		return false, nil
	})
	return found, err
}

// XClients is how many clients are connected to the X server on display,
// not counting the connection that asks (X-Resource's QueryClients): what
// a test checks to see that something holds no X connection.
func XClients(display string) (int, error) {
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return 0, fmt.Errorf("connect to %s: %w", display, err)
	}
	defer conn.Close()
	if err := res.Init(conn); err != nil {
		return 0, fmt.Errorf("init X-Resource: %w", err)
	}
	if _, err := res.QueryVersion(conn, 1, 2).Reply(); err != nil {
		return 0, fmt.Errorf("query X-Resource version: %w", err)
	}
	r, err := res.QueryClients(conn).Reply()
	if err != nil {
		return 0, fmt.Errorf("query X clients: %w", err)
	}
	return int(r.NumClients) - 1, nil
}
