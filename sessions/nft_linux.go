package sessions

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// applyTable installs t, replacing any table of that name, in one atomic
// batch: the table is created (so the delete cannot fail), deleted, and made
// anew with its chains and rules.
func applyTable(c *nftables.Conn, t nftTable) error {
	tab := &nftables.Table{Family: nftables.TableFamilyINet, Name: t.Name}
	c.AddTable(tab)
	c.DelTable(tab)
	c.AddTable(tab)
	accept := nftables.ChainPolicyAccept
	for _, ch := range t.Chains {
		chain := c.AddChain(&nftables.Chain{
			Name:     ch.Name,
			Table:    tab,
			Type:     map[string]nftables.ChainType{"filter": nftables.ChainTypeFilter, "nat": nftables.ChainTypeNAT}[ch.Type],
			Hooknum:  map[string]*nftables.ChainHook{"forward": nftables.ChainHookForward, "input": nftables.ChainHookInput, "output": nftables.ChainHookOutput, "prerouting": nftables.ChainHookPrerouting, "postrouting": nftables.ChainHookPostrouting}[ch.Hook],
			Priority: map[string]*nftables.ChainPriority{"filter": nftables.ChainPriorityFilter, "srcnat": nftables.ChainPriorityNATSource, "dstnat": nftables.ChainPriorityNATDest, "-100": nftables.ChainPriorityNATDest}[ch.Priority],
			Policy:   &accept,
		})
		for _, r := range ch.Rules {
			c.AddRule(&nftables.Rule{Table: tab, Chain: chain, Exprs: r.exprs()})
		}
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("install nftables table %s: %w", t.Name, err)
	}
	return nil
}

// deleteTable removes the inet table name; an absent table is success.
func deleteTable(c *nftables.Conn, name string) error {
	tab := &nftables.Table{Family: nftables.TableFamilyINet, Name: name}
	c.AddTable(tab)
	c.DelTable(tab)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("delete nftables table %s: %w", name, err)
	}
	return nil
}

// listTables names the host's inet tables.
func listTables(c *nftables.Conn) ([]string, error) {
	ts, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return nil, fmt.Errorf("list nftables tables: %w", err)
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out, nil
}

// exprs compiles a rule the way nft(8) does, so that `nft list` prints the
// rule back exactly as render does.
func (r nftRule) exprs() []expr.Any {
	var out []expr.Any
	ipv4 := false // nft loads the IPv4 dependency once per rule
	for _, m := range r.Match {
		switch {
		case m.Iface != "":
			key := expr.MetaKeyIIFNAME
			if m.Iface == "out" {
				key = expr.MetaKeyOIFNAME
			}
			data := []byte(m.Name)
			if !m.Prefix {
				data = make([]byte, unix.IFNAMSIZ)
				copy(data, m.Name)
			}
			op := expr.CmpOpEq
			if m.Neq {
				op = expr.CmpOpNeq
			}
			out = append(out, &expr.Meta{Key: key, Register: 1}, &expr.Cmp{Op: op, Register: 1, Data: data})
		case m.Addr != "":
			if !ipv4 {
				out = append(out, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
					&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}})
				ipv4 = true
			}
			off := uint32(12)
			if m.Addr == "daddr" {
				off = 16
			}
			out = append(out, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4})
			addr := m.Net.Masked().Addr().As4()
			if m.Net.Bits() < 32 {
				mask := binary.BigEndian.AppendUint32(nil, ^uint32(0)<<(32-m.Net.Bits()))
				out = append(out, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)})
			}
			op := expr.CmpOpEq
			if m.Neq {
				op = expr.CmpOpNeq
			}
			out = append(out, &expr.Cmp{Op: op, Register: 1, Data: addr[:]})
		case m.EstablishedRelated:
			mask := binary.NativeEndian.AppendUint32(nil, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED)
			out = append(out, &expr.Ct{Register: 1, Key: expr.CtKeySTATE},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)})
		case m.IPv6:
			out = append(out, &expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV6}})
		case m.Proto != "":
			proto := byte(unix.IPPROTO_TCP)
			if m.Proto == "udp" {
				proto = unix.IPPROTO_UDP
			}
			out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, m.Port)})
		case m.ICMPEcho:
			out = append(out, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_ICMP}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{8}}) // ICMP_ECHO
		}
	}
	if r.Counter {
		out = append(out, &expr.Counter{})
	}
	switch r.Verdict {
	case "accept":
		out = append(out, &expr.Verdict{Kind: expr.VerdictAccept})
	case "drop":
		out = append(out, &expr.Verdict{Kind: expr.VerdictDrop})
	case "masquerade":
		out = append(out, &expr.Masq{})
	case "dnat":
		addr := r.To.Addr().As4()
		out = append(out,
			&expr.Immediate{Register: 1, Data: addr[:]},
			&expr.Immediate{Register: 2, Data: binary.BigEndian.AppendUint16(nil, r.To.Port())},
			&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true})
	}
	return out
}
