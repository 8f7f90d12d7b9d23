package sessions

import (
	"fmt"
	"net/netip"
	"strings"
)

// A session's firewall is one nftables table of family inet, named after its
// slot, holding three base chains:
//
//	forward      the session's address reached only through its veth,
//	             session<->session dropped both ways, spoofed sources
//	             dropped, private/link-local/CGNAT destinations dropped
//	             (DNS to the host's resolvers excepted), IPv6 dropped, and
//	             everything when egress is off
//	input        the host is reachable only at the session's own gateway:
//	             ping, and Config.HostPorts (none by default)
//	output       the host's own packets to the session's address leave
//	             only through its veth
//	postrouting  NAT to the public internet (only when egress is on)
//	dnat         (only when published, Config.Publish) the published
//	             address's ports to the session's guest ports, for packets
//	             from elsewhere (prerouting) and from the host itself
//	dnat-local   (output); what is published passes the forward chain
//	             like any other traffic to the session, so from another
//	             session it is still dropped
//
// The ruleset is data (nftTable): render prints it exactly as `nft list
// table` does, so a golden file shows a reviewer what a session gets and a
// tier-1 test checks the kernel holds that very text; compile (Linux) turns
// the same data into google/nftables expressions.
type nftTable struct {
	Name   string
	Chains []nftChain
}

type nftChain struct {
	Name     string
	Type     string // filter, nat
	Hook     string // forward, input, output, prerouting, postrouting
	Priority string // filter (0), srcnat (100), dstnat or -100
	Rules    []nftRule
}

type nftRule struct {
	Match   []nftMatch
	Counter bool
	Verdict string // accept, drop, masquerade, dnat
	// To is where dnat sends the packet.
	To netip.AddrPort
}

// nftMatch is one condition; exactly one group of fields is set.
type nftMatch struct {
	// Interface name: In (iifname) or out (oifname); Prefix matches names
	// starting with Name; Neq (shared with Address) negates.
	Iface  string // "in" or "out"
	Name   string
	Prefix bool
	// Address: Addr is "saddr" or "daddr".
	Addr string
	Net  netip.Prefix
	Neq  bool
	// EstablishedRelated matches ct state established,related.
	EstablishedRelated bool
	// IPv6 matches meta nfproto ipv6.
	IPv6 bool
	// Port matches "tcp" or "udp" with destination port Port.
	Proto string
	Port  uint16
	// ICMPEcho matches icmp type echo-request.
	ICMPEcho bool
}

func sessionRuleset(prefix string, n NetPlan) nftTable {
	veth := n.HostVeth
	in := nftMatch{Iface: "in", Name: veth}
	family := nftMatch{Iface: "out", Name: prefix + "h", Prefix: true}
	drop := func(m ...nftMatch) nftRule { return nftRule{Match: m, Counter: true, Verdict: "drop"} }
	accept := func(m ...nftMatch) nftRule { return nftRule{Match: m, Verdict: "accept"} }

	// A session whose init died has no veth: its address would route out
	// of the host (the default route) and reach whoever has it there,
	// while a client may still hold the session's lease. The table lives
	// until the session is removed, and these rules keep the address dark.
	self := nftMatch{Addr: "daddr", Net: netip.PrefixFrom(n.Address.Addr(), 32)}
	notVeth := nftMatch{Iface: "out", Name: veth, Neq: true}
	fwd := []nftRule{
		drop(self, notVeth),
		drop(in, nftMatch{Addr: "saddr", Net: netip.PrefixFrom(n.Address.Addr(), 32), Neq: true}),
		drop(in, family),
		drop(nftMatch{Iface: "out", Name: veth}, nftMatch{Iface: "in", Name: prefix + "h", Prefix: true}),
		accept(in, nftMatch{EstablishedRelated: true}),
	}
	if n.Egress {
		for _, d := range n.DNS {
			for _, proto := range []string{"udp", "tcp"} {
				fwd = append(fwd, accept(in, nftMatch{Addr: "daddr", Net: netip.PrefixFrom(d, 32)}, nftMatch{Proto: proto, Port: 53}))
			}
		}
	}
	for _, p := range privateRanges {
		fwd = append(fwd, drop(in, nftMatch{Addr: "daddr", Net: p}))
	}
	fwd = append(fwd, drop(in, nftMatch{IPv6: true}))
	if !n.Egress {
		fwd = append(fwd, drop(in))
	}

	gw := nftMatch{Addr: "daddr", Net: netip.PrefixFrom(n.Gateway.Addr(), 32)}
	input := []nftRule{
		accept(in, nftMatch{EstablishedRelated: true}),
		accept(in, gw, nftMatch{ICMPEcho: true}),
	}
	for _, port := range n.HostPorts {
		input = append(input, accept(in, gw, nftMatch{Proto: "tcp", Port: port}))
	}
	input = append(input, drop(in))

	t := nftTable{Name: n.Table, Chains: []nftChain{
		{Name: "forward", Type: "filter", Hook: "forward", Priority: "filter", Rules: fwd},
		{Name: "input", Type: "filter", Hook: "input", Priority: "filter", Rules: input},
		{Name: "output", Type: "filter", Hook: "output", Priority: "filter", Rules: []nftRule{drop(self, notVeth)}},
	}}
	if n.Egress {
		t.Chains = append(t.Chains, nftChain{Name: "postrouting", Type: "nat", Hook: "postrouting", Priority: "srcnat",
			Rules: []nftRule{{Match: []nftMatch{{Addr: "saddr", Net: netip.PrefixFrom(n.Address.Addr(), 32)}}, Verdict: "masquerade"}}})
	}
	if p := n.Published; p != nil {
		var dnat []nftRule
		for _, pm := range p.Ports {
			dnat = append(dnat, nftRule{
				Match:   []nftMatch{{Addr: "daddr", Net: netip.PrefixFrom(p.Address, 32)}, {Proto: "tcp", Port: pm.Host}},
				Verdict: "dnat", To: netip.AddrPortFrom(n.Address.Addr(), pm.Guest),
			})
		}
		t.Chains = append(t.Chains,
			nftChain{Name: "dnat", Type: "nat", Hook: "prerouting", Priority: "dstnat", Rules: dnat},
			// nft(8) names -100 dstnat on prerouting only.
			nftChain{Name: "dnat-local", Type: "nat", Hook: "output", Priority: "-100", Rules: dnat})
	}
	return t
}

// render prints the table as `nft list table inet NAME` does.
func (t nftTable) render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", t.Name)
	for i, c := range t.Chains {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "\tchain %s {\n", c.Name)
		fmt.Fprintf(&b, "\t\ttype %s hook %s priority %s; policy accept;\n", c.Type, c.Hook, c.Priority)
		for _, r := range c.Rules {
			b.WriteString("\t\t" + r.render() + "\n")
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

func (r nftRule) render() string {
	var parts []string
	for _, m := range r.Match {
		parts = append(parts, m.render())
	}
	if r.Counter {
		parts = append(parts, "counter packets 0 bytes 0")
	}
	parts = append(parts, r.Verdict)
	if r.Verdict == "dnat" {
		parts = append(parts, "ip to "+r.To.String())
	}
	return strings.Join(parts, " ")
}

func (m nftMatch) render() string {
	switch {
	case m.Iface != "":
		name := m.Name
		if m.Prefix {
			name += "*"
		}
		op := ""
		if m.Neq {
			op = "!= "
		}
		return fmt.Sprintf("%sifname %s%q", map[string]string{"in": "i", "out": "o"}[m.Iface], op, name)
	case m.Addr != "":
		op := ""
		if m.Neq {
			op = "!= "
		}
		addr := m.Net.String()
		if m.Net.Bits() == 32 {
			addr = m.Net.Addr().String()
		}
		return fmt.Sprintf("ip %s %s%s", m.Addr, op, addr)
	case m.EstablishedRelated:
		return "ct state established,related"
	case m.IPv6:
		return "meta nfproto ipv6"
	case m.Proto != "":
		return fmt.Sprintf("%s dport %d", m.Proto, m.Port)
	case m.ICMPEcho:
		return "icmp type echo-request"
	}
	return "?"
}
