package provider

import (
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
)

// watchLocked watches d's current session until it dies or the daemon
// closes. A leased desktop whose session dies turns failed: the lease,
// its address and its id stay the client's until it reverts or releases
// (or the lease expires), and every request on it says it died. A warm
// desktop that dies leaves its pool. Call with mu held, whenever d.sess
// changes.
func (m *Manager) watchLocked(d *desktop) {
	sess := d.sess
	ended, err := m.eng.Ended(sess.ID)
	if err != nil {
		m.met.failure("watch")
		m.log.Warn("watch desktop", "id", d.id, "err", err)
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		select {
		case <-ended:
		case <-m.bgCtx.Done():
			return
		}
		m.died(d, sess)
	}()
}

// died handles the end of session sess of d. An operation in progress on d
// (a revert's reset ends the old session on purpose) finishes first; if it
// replaced the session, there is nothing to do.
func (m *Manager) died(d *desktop, sess *sessions.Session) {
	d.op.Lock()
	defer d.op.Unlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closing || m.desktops[d.id] != d || d.sess != sess {
		return
	}
	reason := "its session ended"
	if s, err := m.eng.Get(sess.ID); err == nil && s.Reason != "" {
		reason = s.Reason
	}
	switch d.state {
	case client.StateLeased:
		m.met.failure("leased-desktop-died")
		m.log.Warn("leased desktop died", "id", d.id, "reason", reason)
		d.state, d.failure = client.StateFailed, reason
		m.persistLocked(d)
	case client.StateReady:
		m.met.failure("warm-desktop-died")
		m.log.Warn("warm desktop died", "id", d.id, "reason", reason)
		if p := m.pools[d.shape]; p != nil {
			p.remove(d)
		}
		m.retireLocked(d)
		m.kickFiller()
	}
}
