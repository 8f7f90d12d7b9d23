package provider

import (
	"context"
	"fmt"

	guestclient "github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/provider/client"
)

// Takeover turns the live view's takeover on or off for a leased desktop,
// through its guestd (POST /live_view): on, the viewers of port 8006 drive
// its keyboard and mouse; off, they only watch. The desktop reports the
// state until its lease ends or it is reset, which start view-only again.
func (m *Manager) Takeover(ctx context.Context, id string, on bool) (client.Desktop, error) {
	d, err := m.lockLeased(id)
	if err != nil {
		return client.Desktop{}, err
	}
	defer d.op.Unlock()
	guest := d.view().GuestURL
	m.mu.Unlock()
	got, err := guestclient.New(guest, m.thumbs.http).SetTakeover(ctx, on)
	if err != nil {
		m.met.failure("takeover")
		return client.Desktop{}, fmt.Errorf("takeover of desktop %s: %w", id, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.leasedLocked(d); err != nil {
		return client.Desktop{}, err
	}
	d.takeover = got
	m.persistLocked(d)
	m.log.Info("live view takeover", "id", d.id, "on", got)
	return d.view(), nil
}
