package sessions

import (
	"io"
	"time"
)

// Request asks for one desktop. Zero values take the engine's defaults.
type Request struct {
	Width, Height, Depth int // default 1920x1080x24
	// Image names the image the desktop runs from (`drums image ls`); ""
	// is Config.Image.
	Image string
	// Binds are host paths the desktop sees read-only at their targets:
	// for what drums runs beside a desktop on purpose (compat binds
	// upstream's server there). The daemon's API has no way to set them.
	Binds []Bind
	// Snapshot is "" or a directory of files (an upper layer, as SaveUpper
	// writes it) that the session starts from; a reset returns to it.
	Snapshot string
	Limits   Limits
	// GuestPort is where guestd listens inside the session (default 5000;
	// compat runs upstream main.py on 5000 and guestd on another port).
	GuestPort int
	// NoEgress drops traffic to the public internet (and DNS).
	NoEgress bool
	// GLX loads Xvfb's GLX extension (Mesa); it costs about 12 MiB and 25 ms
	// per desktop, and Chromium, GTK and LibreOffice render without it.
	GLX bool
}

// Bind is a host path a desktop sees, read-only, at Target.
type Bind struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Limits are per-session cgroup limits. 0 takes Config.Limits.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes"`
	Pids        int     `json:"pids"` // counts threads: size it in the thousands
	CPUs        float64 `json:"cpus"`
}

// State is where a session is in its life.
type State string

const (
	StateCreating  State = "creating"
	StateReady     State = "ready"
	StateResetting State = "resetting"
	// StateFailed: init died or a stack process that the desktop cannot do
	// without exited; Reason says which. Remove it or reset it.
	StateFailed State = "failed"
)

// Session is one desktop as the engine reports it. Values are copies: the
// engine never changes a *Session it handed out.
type Session struct {
	ID        string    `json:"id"`      // unique per host; carries the host prefix
	Address   string    `json:"address"` // guestd at Address:GuestPort, Chromium 9222, VLC 8080
	GuestPort int       `json:"guest_port"`
	Width     int       `json:"width"`
	Height    int       `json:"height"`
	Slot      int       `json:"slot"`
	InitPID   int       `json:"init_pid"` // host PID of the session's init
	Created   time.Time `json:"created"`
	State     State     `json:"state"`
	Reason    string    `json:"reason,omitempty"`
	Resets    int       `json:"resets"` // how many times Reset restarted it
	// Standby says the desktop running now was started ahead, as the
	// session's standby, and took over at the last reset (Config.Standby);
	// false after a create or a reset that started it then (a cold one).
	Standby bool `json:"standby,omitempty"`
	// Spare says the session was a spare, started ahead, that its create
	// took (Config.Spares) instead of starting a desktop.
	Spare    bool   `json:"spare,omitempty"`
	Image    string `json:"image"`    // the image's name, as requested
	ImageID  string `json:"image_id"` // the image it runs from
	Snapshot string `json:"snapshot,omitempty"`
	// Published is where the guest ports are reachable from other machines
	// (Config.Publish), nil when they are not published.
	Published *Published `json:"published,omitempty"`
	Plan      *Plan      `json:"-"`
}

// ExecOptions say how Exec runs a process inside a session.
type ExecOptions struct {
	// User is "user" (uid 1000, the default) or "root". Root in a session
	// is root of the desktop's user namespace only, with a reduced
	// capability set: no mounts, no network configuration.
	User string
	// Env is added to the session's environment (DISPLAY, the session bus,
	// XDG_RUNTIME_DIR, HOME, PATH, the accessibility switches).
	Env []string
	// Dir is the working directory (default the user's home).
	Dir    string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// TTY runs the process on a new pseudo-terminal inside the session:
	// Stdin feeds it, Stdout gets its output, Stderr is unused.
	TTY bool
	// Resize sets the terminal's size (TTY only): send the initial size
	// first, and close it when the process is done.
	Resize <-chan TermSize
}

// TermSize is a terminal size in character cells.
type TermSize struct{ Rows, Cols uint16 }

// ExecResult is how a process run by Exec ended.
type ExecResult struct {
	// ExitCode is the exit status, or 128+n when signal n killed it.
	ExitCode int
	// Signal names the signal that killed it, or is "".
	Signal string
}

// SweepReport lists what Sweep removed, by kind.
type SweepReport struct {
	Sessions  []string `json:"sessions"`  // records of dead or half-made sessions
	Processes []int    `json:"processes"` // session inits killed (host PIDs)
	Veths     []string `json:"veths"`
	Tables    []string `json:"tables"`  // nftables tables
	Cgroups   []string `json:"cgroups"` // cgroup directories
	Dirs      []string `json:"dirs"`    // session directories (disk upper layers included)
	Claims    []string `json:"claims"`  // address claim files no session holds
}

// Empty reports whether the sweep found nothing.
func (r SweepReport) Empty() bool {
	return len(r.Sessions)+len(r.Processes)+len(r.Veths)+len(r.Tables)+len(r.Cgroups)+len(r.Dirs)+len(r.Claims) == 0
}
