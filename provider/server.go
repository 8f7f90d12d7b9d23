package provider

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// shutdownTimeout bounds a clean stop: in-flight requests (a cold lease is
// the longest, under CreateTimeout) get this long to finish.
const shutdownTimeout = 30 * time.Second

// Server is the daemon: a Manager behind the v1 API on a unix socket and,
// optionally, on TCP with a bearer token.
type Server struct {
	cfg Config
	log *slog.Logger
	m   *Manager

	servers []*http.Server
	serveWG sync.WaitGroup
	errs    chan error
	tcpAddr string
}

// NewServer checks cfg and prepares a daemon over eng.
func NewServer(cfg Config, eng Engine, log *slog.Logger) (*Server, error) {
	m, err := NewManager(cfg, eng, log)
	if err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: log.With("component", "provider"), m: m, errs: make(chan error, 2)}, nil
}

// Manager is the server's desktop manager.
func (s *Server) Manager() *Manager { return s.m }

// Start recovers the state on disk, then listens; when it returns nil the
// socket answers.
func (s *Server) Start(ctx context.Context) error {
	if err := s.m.Start(ctx); err != nil {
		return err
	}
	ln, err := listenUnix(s.cfg.Socket)
	if err != nil {
		return errors.Join(err, s.m.Close(ctx, false))
	}
	s.serve(ln, newAPI(s.m, "", ""))
	if s.cfg.Listen != "" {
		tl, err := net.Listen("tcp", s.cfg.Listen)
		if err != nil {
			return errors.Join(fmt.Errorf("listen on %s: %w", s.cfg.Listen, err), s.Shutdown(ctx))
		}
		s.tcpAddr = tl.Addr().String()
		_, port, _ := net.SplitHostPort(s.tcpAddr)
		s.serve(tl, newAPI(s.m, s.cfg.Token, port))
		s.log.Info("serving", "tcp", tl.Addr().String())
	}
	s.log.Info("serving", "socket", s.cfg.Socket, "capacity", s.cfg.Capacity, "pool_size", s.cfg.PoolSize)
	return nil
}

func (s *Server) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, c)
		}}
	s.servers = append(s.servers, srv)
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.errs <- fmt.Errorf("serve on %s: %w", ln.Addr(), err)
		}
	}()
}

// Errors reports a listener that failed while serving.
func (s *Server) Errors() <-chan error { return s.errs }

// Shutdown stops listening, lets requests in flight finish, and closes the
// manager (draining the desktops if configured).
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	for _, srv := range s.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stop http server: %w", err))
		}
	}
	s.serveWG.Wait()
	if err := os.Remove(s.cfg.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("remove socket: %w", err))
	}
	errs = append(errs, s.m.Close(ctx, s.cfg.DrainOnExit))
	return errors.Join(errs...)
}

// Run serves until ctx is canceled or a listener fails; ready, if not nil,
// is called once the socket answers.
func Run(ctx context.Context, cfg Config, eng Engine, log *slog.Logger, ready func()) error {
	s, err := NewServer(cfg, eng, log)
	if err != nil {
		return err
	}
	if err := s.Start(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-s.Errors():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	return errors.Join(serveErr, s.Shutdown(sctx))
}

// listenUnix listens on path with mode 0600. A socket file left by a dead
// daemon is replaced; one that still answers belongs to a live daemon and
// is an error.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("create socket directory: %w", err)
	}
	if _, err := os.Lstat(path); err == nil {
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("socket %s: another daemon answers on it: %w", path, ErrStateLocked)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restrict socket %s to its owner: %w", path, err)
	}
	return ln, nil
}

// TCPAddr is the TCP listener's address, "" without --listen.
func (s *Server) TCPAddr() string {
	return s.tcpAddr
}
