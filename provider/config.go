package provider

import (
	"fmt"
	"strings"
	"time"
)

// Size bounds of a desktop's screen. Below the minimum, OSWorld's apps do not
// lay out; above the maximum, one framebuffer alone would be over 100 MiB.
const (
	minSide   = 200
	maxWidth  = 7680
	maxHeight = 4320
)

// Config is the daemon's configuration; DefaultConfig has the defaults and
// `drums serve` flags override them.
type Config struct {
	// Socket is the unix socket the API listens on (mode 0600).
	Socket string
	// Listen, if set, is a TCP address also serving the API; it requires Token.
	Listen string
	// Token is the bearer token TCP clients must send.
	Token string
	// AdvertiseURL, if set, is this daemon's own API URL for clients that
	// reach it through a load balancer in front of many daemons (a
	// Kubernetes Service): each desktop names it (Desktop.Daemon), so
	// the calls on a desktop go to the daemon that holds it.
	AdvertiseURL string
	// StateDir holds the daemon's records (desktops, snapshots, a lock).
	StateDir string
	// Capacity is the most desktops at once: leased, warm, being created or
	// recycled. It must stay at or below what the engine's slots allow.
	Capacity int
	// PoolSize is how many ready desktops to keep per shape (size, snapshot,
	// image, limits) that was leased recently or is listed in Warm.
	PoolSize int
	// Warm lists the shapes to keep warm from the start, even before a lease.
	Warm []Shape
	// PoolIdle drops a shape's pool when it has not been leased for this long
	// (shapes in Warm are kept).
	PoolIdle time.Duration
	// LeaseTime is the default lease; MaxLease the longest one allowed.
	LeaseTime time.Duration
	MaxLease  time.Duration
	// CreateTimeout bounds one desktop's start and reset.
	CreateTimeout time.Duration
	// MaxParallelCreates bounds the pool's concurrent starts; on a 2-core
	// machine more than 2 makes each start slower without making more per
	// second.
	MaxParallelCreates int
	// DrainOnExit removes every desktop when the daemon stops cleanly;
	// without it they keep running for the next daemon to adopt.
	DrainOnExit bool
	// Width and Height are the default screen size.
	Width, Height int
	// Image is the image a lease without one gets (the engine's default
	// when empty).
	Image string
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{
		Socket:             "/run/drums/drums.sock",
		StateDir:           "/var/lib/drums/provider",
		Capacity:           16,
		PoolSize:           1,
		PoolIdle:           30 * time.Minute,
		LeaseTime:          10 * time.Minute,
		MaxLease:           24 * time.Hour,
		CreateTimeout:      2 * time.Minute,
		MaxParallelCreates: 2,
		Width:              1920,
		Height:             1080,
	}
}

// Validate checks the configuration before anything starts.
func (c Config) Validate() error {
	switch {
	case c.Socket == "":
		return fmt.Errorf("socket path is empty: %w", ErrBadRequest)
	case c.AdvertiseURL != "" && !strings.HasPrefix(c.AdvertiseURL, "http://") && !strings.HasPrefix(c.AdvertiseURL, "https://"):
		return fmt.Errorf("advertise url %q: want http://HOST:PORT: %w", c.AdvertiseURL, ErrBadRequest)
	case c.Listen != "" && c.Token == "":
		return fmt.Errorf("--listen %s needs --token: TCP clients must authenticate: %w", c.Listen, ErrBadRequest)
	case c.StateDir == "":
		return fmt.Errorf("state directory is empty: %w", ErrBadRequest)
	case c.Capacity < 1:
		return fmt.Errorf("capacity %d: must be at least 1: %w", c.Capacity, ErrBadRequest)
	case c.PoolSize < 0:
		return fmt.Errorf("pool size %d: must not be negative: %w", c.PoolSize, ErrBadRequest)
	case c.LeaseTime <= 0 || c.MaxLease < c.LeaseTime:
		return fmt.Errorf("lease time %s, max lease %s: need 0 < lease <= max: %w", c.LeaseTime, c.MaxLease, ErrBadRequest)
	case c.CreateTimeout <= 0:
		return fmt.Errorf("create timeout %s: must be positive: %w", c.CreateTimeout, ErrBadRequest)
	case c.MaxParallelCreates < 1:
		return fmt.Errorf("parallel creates %d: must be at least 1: %w", c.MaxParallelCreates, ErrBadRequest)
	}
	if err := checkSize(c.Width, c.Height); err != nil {
		return fmt.Errorf("default size: %w", err)
	}
	for _, s := range c.Warm {
		if err := checkSize(s.Width, s.Height); err != nil {
			return fmt.Errorf("warm shape: %w", err)
		}
	}
	return nil
}

func checkSize(w, h int) error {
	if w < minSide || h < minSide || w > maxWidth || h > maxHeight {
		return fmt.Errorf("screen size %dx%d: width must be in [%d, %d] and height in [%d, %d]: %w",
			w, h, minSide, maxWidth, minSide, maxHeight, ErrBadRequest)
	}
	return nil
}
