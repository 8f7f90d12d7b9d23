package sessions

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// setupNet gives the session its network from inside its namespace: the
// veth pair is created here with its peer placed in the host's namespace
// (fd 5), the inside end comes up first and init waits until the host end's
// operstate is up. Bringing the host end up first stalled the first reply
// for about a second in 9% of runs (an ARP retry); this order never did
// (field notes §6); it returns once both ends are up. Netlink handles are opened in their target namespaces;
// no thread switches namespace.
func setupNet(ctx context.Context, n NetPlan, hostNS *os.File) error {
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink in session: %w", err)
	}
	defer h.Close()
	hostNs := netns.NsHandle(hostNS.Fd())
	hh, err := netlink.NewHandleAt(hostNs)
	if err != nil {
		return fmt.Errorf("netlink in host namespace: %w", err)
	}
	defer hh.Close()

	if err := loopbackUp(h); err != nil {
		return err
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.GuestVeth}, PeerName: n.HostVeth, PeerNamespace: netlink.NsFd(hostNS.Fd())}
	if err := h.LinkAdd(veth); err != nil {
		return fmt.Errorf("create veth %s/%s: %w", n.GuestVeth, n.HostVeth, err)
	}
	inside, err := h.LinkByName(n.GuestVeth)
	if err != nil {
		return fmt.Errorf("find %s: %w", n.GuestVeth, err)
	}
	if err := h.AddrAdd(inside, &netlink.Addr{IPNet: ipNet(n.Address)}); err != nil {
		return fmt.Errorf("address %s: %w", n.Address, err)
	}
	if err := h.LinkSetUp(inside); err != nil {
		return fmt.Errorf("set %s up: %w", n.GuestVeth, err)
	}
	if err := h.RouteAdd(&netlink.Route{LinkIndex: inside.Attrs().Index, Gw: n.Gateway.Addr().AsSlice()}); err != nil {
		return fmt.Errorf("default route via %s: %w", n.Gateway.Addr(), err)
	}

	host, err := hh.LinkByName(n.HostVeth)
	if err != nil {
		return fmt.Errorf("find %s: %w", n.HostVeth, err)
	}
	// Both ends must be up, not the host's alone: until the kernel's link
	// watch has activated a veth end (operstate up), what it sends is
	// dropped, and a dropped ARP request of the desktop's reply to the
	// first connection costs a second (the neighbour retry). A standby's
	// guestd listens before its network comes (standby_linux.go), so its
	// first reply follows the network at once: 2 of 8 such resets stalled
	// a second while only the host end was waited for.
	hostUpdates, insideUpdates := make(chan netlink.LinkUpdate, 16), make(chan netlink.LinkUpdate, 16)
	done := make(chan struct{})
	defer close(done)
	if err := netlink.LinkSubscribeWithOptions(hostUpdates, done, netlink.LinkSubscribeOptions{Namespace: &hostNs}); err != nil {
		return fmt.Errorf("watch %s: %w", n.HostVeth, err)
	}
	if err := netlink.LinkSubscribe(insideUpdates, done); err != nil {
		return fmt.Errorf("watch %s: %w", n.GuestVeth, err)
	}
	if err := hh.AddrAdd(host, &netlink.Addr{IPNet: ipNet(n.Gateway)}); err != nil {
		return fmt.Errorf("address %s: %w", n.Gateway, err)
	}
	if err := hh.LinkSetUp(host); err != nil {
		return fmt.Errorf("set %s up: %w", n.HostVeth, err)
	}
	hostUp, insideUp := false, false
	if cur, err := hh.LinkByIndex(host.Attrs().Index); err == nil && cur.Attrs().OperState == netlink.OperUp {
		hostUp = true
	}
	if cur, err := h.LinkByIndex(inside.Attrs().Index); err == nil && cur.Attrs().OperState == netlink.OperUp {
		insideUp = true
	}
	for !hostUp || !insideUp {
		select {
		case u := <-hostUpdates:
			if u.Attrs().Index == host.Attrs().Index && u.Attrs().OperState == netlink.OperUp {
				hostUp = true
			}
		case u := <-insideUpdates:
			if u.Attrs().Index == inside.Attrs().Index && u.Attrs().OperState == netlink.OperUp {
				insideUp = true
			}
		case <-ctx.Done():
			return fmt.Errorf("wait for %s and %s to come up: %w", n.HostVeth, n.GuestVeth, ctx.Err())
		}
	}
	return nil
}

// warmGuest takes a standby's first screenshot from guestd over the
// session's loopback, which it brings up (the rest of its network waits for
// "net"): the reset's probe then gets a frame encoded before.
func warmGuest(ctx context.Context, port int) error {
	h, err := netlink.NewHandle()
	if err != nil {
		return fmt.Errorf("netlink in session: %w", err)
	}
	err = loopbackUp(h)
	h.Close()
	if err != nil {
		return err
	}
	if err := probeGuest(ctx, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port))); err != nil {
		return fmt.Errorf("%w: %w", err, ErrStack)
	}
	return nil
}

// loopbackUp brings the session's loopback up.
func loopbackUp(h *netlink.Handle) error {
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("find lo: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("set lo up: %w", err)
	}
	return nil
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), 32)}
}

// netSysctls set two of the session's network namespace's own settings,
// which give the desktop what root in a VM has, since root in a desktop has
// no capability in this namespace (it belongs to the host's user
// namespace): any port may be bound (guestd's, VLC's, an agent's own server
// below 1024), and ping works through ICMP sockets for every id of the
// desktop. They are written through init's /proc (the files name the
// writer's network namespace) before the desktop's read-only /proc/sys
// replaces it.
func netSysctls(ids IDMap) error {
	for _, sc := range []struct{ path, value string }{
		{"/proc/sys/net/ipv4/ip_unprivileged_port_start", "0"},
		{"/proc/sys/net/ipv4/ping_group_range", fmt.Sprintf("%d %d", ids.ToHost(0), ids.ToHost(ids.Size-1))},
	} {
		if err := os.WriteFile(sc.path, []byte(sc.value), 0); err != nil {
			return fmt.Errorf("set %s: %w", sc.path, err)
		}
	}
	return nil
}
