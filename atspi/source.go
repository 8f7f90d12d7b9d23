package atspi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// SourceOptions configures a Source; zero values take the defaults.
type SourceOptions struct {
	// Display is the X display whose root window may carry the bus address
	// (property AT_SPI_BUS). Default $DISPLAY.
	Display string
	// BusAddress is the accessibility bus. Default $AT_SPI_BUS_ADDRESS, and
	// when that is empty too: org.a11y.Bus.GetAddress on the session bus,
	// then the root window property.
	BusAddress string
	// SessionBusAddress is the session bus, used to find the accessibility
	// bus and to switch org.a11y.Status.IsEnabled on. Default
	// $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus if it exists.
	SessionBusAddress string
	// CallTimeout bounds each wave of calls to one application (and the
	// connection set-up). An application that stops answering costs about
	// this much once per request and is then left out. It must stay above
	// the longest time a busy but live application takes to answer a wave
	// queued behind the walk's other calls (well under a second for
	// gtk4-widget-factory here) and well below the clients' patience
	// (OSWorld retries /accessibility after failures, waiting 5 s).
	// Default 5 s.
	CallTimeout time.Duration
	// Workers bounds the goroutines that build nodes concurrently within
	// one request (besides one per application). More calls in flight let
	// a busy application's main loop answer more of them per iteration:
	// gtk4-widget-factory took 500 ms a walk with 16, 470 ms with 32 and
	// about 440 ms with 64 to 1024. Default 64.
	Workers int
	// LibreOffice is the command whose --version output decides the number
	// of Calc columns (1024 before 7.4, else 16384); it runs once, the
	// first time a spreadsheet table is walked. Default "libreoffice".
	LibreOffice string
	// NoCache reads every node live instead of through the Cache interface.
	NoCache bool
	// NoP2P talks to every application through the bus instead of its
	// peer-to-peer socket.
	NoP2P bool
}

const (
	defaultCallTimeout = 5 * time.Second
	// defaultWorkers stays at 64 or more (GTK 4 answers in larger batches,
	// above); 64 nodes' waves queued at once are about 700 calls, some
	// 30 ms of GTK 4's time, far below defaultCallTimeout.
	defaultWorkers = 64
)

// Source reads the desktop's accessibility tree over AT-SPI. It connects
// lazily, keeps one accessibility bus connection (and one peer-to-peer
// connection per application) for its life, and reconnects after the bus
// goes away. It is safe for concurrent use.
type Source struct {
	opts SourceOptions
	lo   *loVersion

	mu    sync.Mutex
	bus   *link
	peers *peers
}

// NewSource returns a Source; nothing is connected until the first call.
func NewSource(opts SourceOptions) *Source {
	if opts.Display == "" {
		opts.Display = os.Getenv("DISPLAY")
	}
	if opts.BusAddress == "" {
		opts.BusAddress = os.Getenv("AT_SPI_BUS_ADDRESS")
	}
	if opts.SessionBusAddress == "" {
		opts.SessionBusAddress = sessionBusAddress()
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.Workers <= 0 {
		opts.Workers = defaultWorkers
	}
	if opts.LibreOffice == "" {
		opts.LibreOffice = "libreoffice"
	}
	return &Source{opts: opts, lo: &loVersion{command: opts.LibreOffice}}
}

// Close drops the connections. The Source stays usable: the next call
// connects again.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropLocked()
}

func (s *Source) dropLocked() error {
	if s.bus == nil {
		return nil
	}
	s.peers.closeAll()
	err := s.bus.Close()
	s.bus, s.peers = nil, nil
	return err
}

// connect returns the live bus connection, finding and dialling the bus
// when there is none or the last one closed.
func (s *Source) connect(ctx context.Context) (*link, *peers, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bus != nil && s.bus.Connected() {
		return s.bus, s.peers, nil
	}
	_ = s.dropLocked()
	ctx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	addr, err := discover(ctx, &s.opts)
	if err != nil {
		return nil, nil, err
	}
	bus, err := dial(ctx, addr, true)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to the accessibility bus: %w", errors.Join(err, ErrNoBus))
	}
	s.bus, s.peers = bus, &peers{m: map[string]*peer{}}
	return s.bus, s.peers, nil
}

// open starts a request: a tree over the live bus and the registry's
// applications. A bus that closed under an earlier request is replaced
// once.
func (s *Source) open(ctx context.Context) (*busTree, []objRef, error) {
	for attempt := 0; ; attempt++ {
		bus, ps, err := s.connect(ctx)
		if err != nil {
			return nil, nil, err
		}
		t := newBusTree(bus, ps, &s.opts)
		apps, err := t.desktop(ctx)
		if err == nil {
			live := make(map[string]bool, len(apps))
			for _, a := range apps {
				live[a.bus] = true
			}
			ps.prune(live)
			return t, apps, nil
		}
		if attempt > 0 || bus.Connected() || ctx.Err() != nil {
			return nil, nil, err
		}
	}
}

func (s *Source) walker(t tree) *walker {
	return &walker{t: t, slots: make(chan struct{}, s.opts.Workers), calcColumns: s.lo.get}
}

// Tree is the XML of every application, rooted at desktop-frame, as
// OSWorld's /accessibility writes it (guest-api.md §4). Applications appear
// in registry order; one whose own node fails is left out (upstream fails
// the whole request).
func (s *Source) Tree(ctx context.Context) (string, error) {
	t, apps, err := s.open(ctx)
	if err != nil {
		return "", err
	}
	x := s.walker(t).desktop(ctx, apps)
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("walk the accessibility tree: %w", err)
	}
	return x, nil
}

// desktop builds every application concurrently and renders them below
// desktop-frame in the given (registry) order, leaving out those whose own
// node fails.
func (w *walker) desktop(ctx context.Context, apps []objRef) string {
	out := make([]*element, len(apps))
	var wg sync.WaitGroup
	for i, ref := range apps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], _ = w.build(ctx, ref, 1, flagNone)
		}()
	}
	wg.Wait()
	root := &element{tag: "desktop-frame"}
	for _, e := range out {
		if e != nil {
			root.children = append(root.children, e)
		}
	}
	return render(root)
}
