package provider

import (
	"context"

	"github.com/drums-dev/drums/sessions"
)

// Engine is what the daemon needs from the session engine. The real one is
// *sessions.Engine; tier-0 tests use a fake.
type Engine interface {
	// Create starts a desktop and returns once its guestd answers.
	Create(ctx context.Context, req sessions.Request) (*sessions.Session, error)
	Get(id string) (*sessions.Session, error)
	List() []*sessions.Session
	// Reset returns the same desktop with clean files and processes.
	Reset(ctx context.Context, id string) (*sessions.Session, error)
	// Remove is idempotent: a desktop already gone is success.
	Remove(ctx context.Context, id string) error
	// SaveUpper copies the desktop's upper layer (its written files) to dir.
	SaveUpper(ctx context.Context, id, dir string) error
	// Adopt finds the healthy desktops a previous daemon left running.
	Adopt(ctx context.Context) ([]*sessions.Session, error)
	// StartSpares starts the engine's spares (sessions.Config.Spares),
	// once the daemon adopted what its predecessor left.
	StartSpares()
	// Sweep removes every leftover that is not a live, known desktop.
	Sweep(ctx context.Context) (sessions.SweepReport, error)
	// Ended is closed once the desktop's session has died.
	Ended(id string) (<-chan struct{}, error)
}
