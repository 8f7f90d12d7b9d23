//go:build linux

package drumscli

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"

	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
)

// engineFlags are the flags every command that uses the session engine
// shares; defaults come from sessions.Config.
type engineFlags struct {
	prefix, stateDir, imageDir, image, guestd, network string
	upperOnDisk, memoryMerge, verbose                  bool
	idBase                                             int
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.prefix, "prefix", sessions.DefaultPrefix, "host prefix: every host-global name of these sessions carries it")
	fs.StringVar(&f.stateDir, "state-dir", sessions.DefaultStateDir, "directory of the sessions' records (shared with the daemon)")
	fs.StringVar(&f.imageDir, "image-dir", images.DefaultDir, "the image store desktops run from (drums image ls)")
	fs.StringVar(&f.image, "image", sessions.DefaultImage, "the image a desktop runs from when a request names none")
	fs.StringVar(&f.guestd, "guestd", "", "guestd binary to run in sessions (default $DRUMS_BIN/guestd or next to drums)")
	fs.StringVar(&f.network, "network", "", "private IPv4 range for session addresses, a /30 each (default: a /21 of 10.0.0.0/8 chosen by a hash of --prefix; addresses are claimed host-wide, so ranges may overlap)")
	fs.IntVar(&f.idBase, "id-base", sessions.DefaultIDBase, "first host uid desktops map their ids to, 65536 per desktop, claimed host-wide (under /run/drums/ids); engines that cannot see each other's claims (a test's nodes on one host) need bases of their own")
	fs.BoolVar(&f.upperOnDisk, "upper-on-disk", false, "keep sessions' upper layers on disk under STATE-DIR instead of tmpfs")
	fs.BoolVar(&f.memoryMerge, "memory-merge", false, "mark desktops' processes for kernel same-page merging (PR_SET_MEMORY_MERGE, Linux 6.7+): merged only while the host runs ksmd (/sys/kernel/mm/ksm/run); shares pages across desktops, see SECURITY.md")
	fs.BoolVar(&f.verbose, "v", false, "log the engine's steps to stderr")
}

// config is the engine's configuration; with -v its steps are logged to
// stderr.
func (f *engineFlags) config(stderr io.Writer) (sessions.Config, error) {
	var network netip.Prefix
	if f.network != "" {
		var err error
		if network, err = netip.ParsePrefix(f.network); err != nil {
			return sessions.Config{}, fmt.Errorf("--network %q: %w", f.network, err)
		}
	}
	cfg := sessions.Config{Prefix: f.prefix, StateDir: f.stateDir, ImageDir: f.imageDir, Image: f.image, Guestd: f.guestd,
		Network: network, UpperOnDisk: f.upperOnDisk, MemoryMerge: f.memoryMerge}
	if f.idBase != sessions.DefaultIDBase {
		cfg.IDBase = f.idBase
	}
	if f.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return cfg, nil
}

// requestFlags describe one desktop.
type requestFlags struct {
	width, height, depth, guestPort, pids int
	snapshot                              string
	memory                                int64
	cpus                                  float64
	noEgress, glx                         bool
}

func (r *requestFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&r.width, "width", sessions.DefaultWidth, "screen width")
	fs.IntVar(&r.height, "height", sessions.DefaultHeight, "screen height")
	fs.IntVar(&r.depth, "depth", sessions.DefaultDepth, "screen depth (16 or 24)")
	fs.StringVar(&r.snapshot, "snapshot", "", "directory of files (a saved upper layer) to start from")
	fs.IntVar(&r.guestPort, "guest-port", sessions.DefaultGuestPort, "port guestd listens on inside the session")
	fs.Int64Var(&r.memory, "memory", 0, "memory limit in bytes (0: engine default, 4 GiB)")
	fs.IntVar(&r.pids, "pids", 0, "process and thread limit (0: engine default, 4096)")
	fs.Float64Var(&r.cpus, "cpus", 0, "CPU limit in cores (0: engine default, 2)")
	fs.BoolVar(&r.noEgress, "no-egress", false, "no traffic to the public internet")
	fs.BoolVar(&r.glx, "glx", false, "load Xvfb's GLX extension (about 12 MiB more per desktop)")
}

func (r *requestFlags) request() sessions.Request {
	return sessions.Request{Width: r.width, Height: r.height, Depth: r.depth, Snapshot: r.snapshot,
		GuestPort: r.guestPort, NoEgress: r.noEgress, GLX: r.glx,
		Limits: sessions.Limits{MemoryBytes: r.memory, Pids: r.pids, CPUs: r.cpus}}
}
