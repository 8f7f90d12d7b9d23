package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	neturl "net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
)

// connects reports whether a TCP connection from s to addr succeeds. A
// dropped SYN is retried after 1 s, so a connection that is not up after 3 s
// never will be; one that should succeed gets 30 s (a loaded machine).
func connects(t testing.TB, s *Session, addr string, port int, want bool) bool {
	t.Helper()
	wait := 3
	if want {
		wait = 30
	}
	_, code := run(t, s, "", fmt.Sprintf("timeout %d bash -c 'echo > /dev/tcp/%s/%d'", wait, addr, port))
	return code == 0
}

// hostAddr is an address of the host outside the sessions' range.
func hostAddr(t testing.TB, w *testWorld) string {
	t.Helper()
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		ip, _ := netip.AddrFromSlice(a.IP)
		if !ip.IsLoopback() && !w.network.Contains(ip) {
			return ip.String()
		}
	}
	t.Skip("the host has no address outside loopback and the sessions' range")
	return ""
}

func TestNetworkPolicy(t *testing.T) {
	w := needWorld(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	other := hostAddr(t, w)

	// An engine of the same prefix whose sessions may reach one host port.
	cfg := w.config()
	cfg.HostPorts = []uint16{uint16(port)}
	open, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := newSession(t, Request{})
	b := newSession(t, Request{})
	c := newSessionOf(t, open, Request{})
	gw := func(s *Session) string { return s.Plan.Net.Gateway.Addr().String() }

	for _, c := range []struct {
		from *Session
		to   string
		port int
		want bool
	}{
		{a, b.Address, b.GuestPort, false},
		{b, a.Address, a.GuestPort, false},
		{c, a.Address, a.GuestPort, false},
		{a, gw(a), port, false},             // the host, no port open to sessions
		{a, other, port, false},             // the host at another of its addresses
		{a, gw(b), port, false},             // another session's gateway
		{c, gw(c), port, true},              // the port Config.HostPorts opens
		{c, other, port, false},             // ...only at the session's own gateway
		{a, "127.0.0.1", a.GuestPort, true}, // its own loopback
	} {
		if got := connects(t, c.from, c.to, c.port, c.want); got != c.want {
			t.Errorf("%s -> %s:%d connected=%v, want %v", c.from.ID, c.to, c.port, got, c.want)
		}
	}

	// Control: without the tables, the same traffic gets through, so the
	// drops above are the policy's, not a routing accident.
	nft, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Session{a, b} {
		if err := deleteTable(nft, s.Plan.Net.Table); err != nil {
			t.Fatal(err)
		}
	}
	if !connects(t, a, b.Address, b.GuestPort, true) || !connects(t, b, a.Address, a.GuestPort, true) {
		t.Error("with the policy off, sessions still cannot reach each other")
	}
	if !connects(t, a, gw(a), port, true) {
		t.Error("with the policy off, a session still cannot reach the host")
	}
}

func TestRulesetKernel(t *testing.T) {
	w := needWorld(t)
	nft, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		golden string
		req    Request
		ports  []uint16
	}{
		{"ruleset.golden", Request{}, []uint16{8000}},
		{"ruleset-noegress.golden", Request{NoEgress: true}, nil},
		{"ruleset-published.golden", Request{}, nil},
	} {
		in := testInput(t, c.req, 3)
		in.cfg.HostPorts = c.ports
		if c.golden == "ruleset-published.golden" {
			in.cfg.Publish = testPublish
		}
		p, err := newPlan(in)
		if err != nil {
			t.Fatal(err)
		}
		p.Net.Table = tableName(w.prefix, 99999)
		if err := applyTable(nft, sessionRuleset(p.Prefix, p.Net)); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("nft", "list", "table", "inet", p.Net.Table).Output()
		if err != nil {
			t.Fatal(err)
		}
		// What google/nftables installed, as nft(8) reads it back, is the
		// golden file: the renderer and the compiler agree.
		got := strings.Replace(string(out), "table inet "+p.Net.Table, "table inet t_3", 1)
		golden(t, c.golden, got)
		// Applying again replaces the table atomically; deleting twice is fine.
		if err := applyTable(nft, sessionRuleset(p.Prefix, p.Net)); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := deleteTable(nft, p.Net.Table); err != nil {
				t.Fatal(err)
			}
		}
		if out, _ := exec.Command("nft", "list", "tables").Output(); strings.Contains(string(out), p.Net.Table) {
			t.Error("table left after delete")
		}
	}
}

func TestEgressOff(t *testing.T) {
	needWorld(t)
	s := newSession(t, Request{NoEgress: true})
	if s.Plan.Net.Egress {
		t.Fatal("plan has egress")
	}
	out, err := exec.Command("nft", "list", "table", "inet", s.Plan.Net.Table).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "masquerade") || !strings.Contains(string(out), `iifname "`+s.Plan.Net.HostVeth+`" counter packets`) {
		t.Errorf("no-egress table:\n%s", out)
	}
	// The host still reaches guestd.
	if err := answers(s); err != nil {
		t.Error(err)
	}
}

// whoami asks the guestd at s's address for a file only s has: the address
// reaches s and no other desktop. Each call makes a new connection, as
// OSWorld's controllers do (an earlier run's session had the address).
func whoami(t testing.TB, s *Session) string {
	t.Helper()
	url := fmt.Sprintf("http://%s/file", netip.AddrPortFrom(netip.MustParseAddr(s.Address), uint16(s.GuestPort)))
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.PostForm(url, neturl.Values{"file_path": {"/tmp/whoami"}})
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.TrimSpace(string(b))
}

// Two engines of different prefixes on one range create at the same
// moment: every session gets its own address, claimed host-wide, and each
// address reaches its own session.
func TestAddressesAcrossPrefixes(t *testing.T) {
	w := needWorld(t)
	// The top /27 of the world's range (8 blocks), which the world engine's
	// other sessions (lowest slots first) never reach.
	top := w.network.Addr().As4()
	top[2], top[3] = 255, 224
	shared := netip.PrefixFrom(netip.AddrFrom4(top), 27)
	cfg := w.config()
	cfg.Network = shared
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := otherEngine(t, shared)

	const each = 3
	var mu sync.Mutex
	var made []*Session
	owner := map[string]*Engine{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 2 * each {
		eng := a
		if i%2 == 1 {
			eng = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			s, err := eng.Create(ctx, Request{})
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			mu.Lock()
			made = append(made, s)
			owner[s.ID] = eng
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	for _, s := range made {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
			defer cancel()
			if err := owner[s.ID].Remove(ctx, s.ID); err != nil {
				t.Errorf("remove %s: %v", s.ID, err)
			}
			if _, err := os.Stat(claimPath(AddrClaimDir, addrKey(s.Plan.Net.Address))); !os.IsNotExist(err) {
				t.Errorf("claim of %s left after its removal: %v", s.ID, err)
			}
		})
	}
	if t.Failed() {
		return
	}
	addrs := map[string]string{}
	for _, s := range made {
		if other, dup := addrs[s.Address]; dup {
			t.Errorf("sessions %s and %s share %s", s.ID, other, s.Address)
		}
		addrs[s.Address] = s.ID
		if !shared.Contains(netip.MustParseAddr(s.Address)) {
			t.Errorf("%s got %s outside %s", s.ID, s.Address, shared)
		}
		if got := claimOwner(claimPath(AddrClaimDir, addrKey(s.Plan.Net.Address))); got != s.ID {
			t.Errorf("claim of %s names %q, want %s", s.Address, got, s.ID)
		}
		if _, code := runOn(t, owner[s.ID], s, "", "echo "+s.ID+" > /tmp/whoami"); code != 0 {
			t.Fatalf("write whoami in %s", s.ID)
		}
	}
	for _, s := range made {
		if got := whoami(t, s); got != s.ID {
			t.Errorf("%s:%d answers as %q, want %s", s.Address, s.GuestPort, got, s.ID)
		}
	}

	// A reset keeps the address claimed: no other engine can take it.
	s := made[0]
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := owner[s.ID].Reset(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if f, ok, err := tryClaim(AddrClaimDir, addrKey(s.Plan.Net.Address), "x-0-000000"); ok || err != nil {
		f.Close()
		t.Errorf("after a reset, the claim of %s is free (%v)", s.Address, err)
	}
	if got := claimOwner(claimPath(AddrClaimDir, addrKey(s.Plan.Net.Address))); got != s.ID {
		t.Errorf("after a reset, the claim of %s names %q", s.Address, got)
	}
}

// Removing a session ends the host's connections to it at once, before
// its address can go to another session: a kept-alive client connection
// fails instead of reaching the next desktop at that address.
func TestRemoveCutsConnections(t *testing.T) {
	w := needWorld(t)
	s := newSession(t, Request{})
	conn, err := net.Dial("tcp", net.JoinHostPort(s.Address, strconv.Itoa(s.GuestPort)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := w.eng.Remove(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a connection to a removed session: read %v, want it aborted", err)
	}
}
