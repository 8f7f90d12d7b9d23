package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

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
	got, err := m.setGuestTakeover(ctx, guest, on)
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

// setGuestTakeover asks guestd at guest to set its takeover switch and
// returns the state it reports.
func (m *Manager) setGuestTakeover(ctx context.Context, guest string, on bool) (bool, error) {
	body, _ := json.Marshal(map[string]bool{"takeover": on})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, guest+"/live_view", bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := m.thumbs.http.Do(req)
	if err != nil {
		return false, fmt.Errorf("ask guestd: %w", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("guestd answered %s: %s", resp.Status, strings.TrimSpace(string(raw)))
	}
	var st struct {
		Takeover *bool `json:"takeover"`
	}
	if err := json.Unmarshal(raw, &st); err != nil || st.Takeover == nil {
		return false, fmt.Errorf("guestd's answer %q has no takeover state", raw)
	}
	return *st.Takeover, nil
}
