package sessions

import (
	"fmt"
	"net/netip"
)

// Publish is how sessions' guest ports are published on a host address
// (Config.Publish): slot s gets the four ports FirstPort+4s ..
// FirstPort+4s+3, so a port is the slot's for the slot's life, claimed
// with it (AddrClaimDir) and free again when the session is removed, with
// no table of its own to keep or to lose in a crash. Engines publishing on
// one address need ranges of their own.
type Publish struct {
	Address   netip.Addr
	FirstPort uint16
	// Ports is the size of the range; it bounds MaxSessions to Ports/portsPerSlot.
	Ports int
}

// PublishedGuestPorts are a session's ports that Publish makes reachable,
// in the order of OSWorld's address string ADDRESS:5000:9222:8006:8080:
// guestd (Request.GuestPort in place of 5000), Chromium's debugging port,
// the live view, VLC's HTTP interface.
var PublishedGuestPorts = [portsPerSlot]uint16{DefaultGuestPort, 9222, 8006, 8080}

// portsPerSlot is how many host ports each slot takes.
const portsPerSlot = 4

// Published is where one session's guest ports are reachable.
type Published struct {
	Address netip.Addr `json:"address"`
	// Ports maps each of PublishedGuestPorts (in that order, guestd's
	// first) to its port on Address.
	Ports [portsPerSlot]PortMap `json:"ports"`
}

// PortMap is one published port: Host on the published address leads to
// Guest in the session.
type PortMap struct {
	Host  uint16 `json:"host"`
	Guest uint16 `json:"guest"`
}

func (p Publish) check() error {
	if !p.Address.IsValid() {
		return nil
	}
	switch {
	case !p.Address.Is4():
		return fmt.Errorf("publish address %s: want IPv4: %w", p.Address, ErrBadRequest)
	case p.FirstPort == 0 || p.Ports < portsPerSlot || int(p.FirstPort)+p.Ports-1 > 65535:
		return fmt.Errorf("publish ports %d+%d: want at least 4 ports within 1..65535: %w", p.FirstPort, p.Ports, ErrBadRequest)
	}
	return nil
}

// ports is slot's share of the range, nil when nothing is published.
func (p Publish) ports(slot, guestPort int) *Published {
	if !p.Address.IsValid() {
		return nil
	}
	out := &Published{Address: p.Address}
	for i, g := range PublishedGuestPorts {
		if i == 0 {
			g = uint16(guestPort)
		}
		out.Ports[i] = PortMap{Host: p.FirstPort + uint16(portsPerSlot*slot+i), Guest: g}
	}
	return out
}
