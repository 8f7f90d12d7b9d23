package sessions

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
)

// clientNetns is a network namespace standing for another machine: held
// by a process that dies with the test binary (so its veth goes with it
// even after a crash), linked to the host by a veth whose host end has
// host and whose other end has peer.
type clientNetns struct {
	pid        int
	host, peer netip.Addr
}

func newClientNetns(t *testing.T, w *testWorld) *clientNetns {
	t.Helper()
	// The last /30 of the world's network: the engine takes slots from
	// the lowest, and skips one overlapping a host address anyway.
	last := w.network.Addr().As4()
	last[2], last[3] = 255, 252
	base := netip.AddrFrom4(last)
	c := &clientNetns{host: base.Next(), peer: base.Next().Next()}
	// The shell says "ready" once it runs in the new namespace.
	hold := exec.Command("unshare", "--net", "sh", "-c", "echo ready; exec sleep infinity")
	hold.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := hold.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Process.Kill(); _ = hold.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("namespace holder: %q %v", line, err)
	}
	c.pid = hold.Process.Pid
	veth := w.prefix + "p"
	for _, args := range [][]string{
		{"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", strconv.Itoa(c.pid)},
		{"ip", "addr", "add", c.host.String() + "/30", "dev", veth},
		{"ip", "link", "set", veth, "up"},
		{"nsenter", "-t", strconv.Itoa(c.pid), "-n", "ip", "addr", "add", c.peer.String() + "/30", "dev", "eth0"},
		{"nsenter", "-t", strconv.Itoa(c.pid), "-n", "ip", "link", "set", "eth0", "up"},
		{"nsenter", "-t", strconv.Itoa(c.pid), "-n", "ip", "route", "add", "default", "via", c.host.String()},
	} {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
	}
	return c
}

// get fetches url from inside the namespace and returns the body, or the
// error of curl (a connection refused, reset or timed out).
func (c *clientNetns) get(url string) ([]byte, error) {
	return exec.Command("nsenter", "-t", strconv.Itoa(c.pid), "-n", "curl", "-sSf", "--max-time", "20", url).Output()
}

// TestPublishedPorts: with Config.Publish, a session's guestd is reachable
// from another machine (a namespace the test made) at the published
// address and port, not from another session, and the port is dark again
// once the session is removed.
func TestPublishedPorts(t *testing.T) {
	w := needWorld(t)
	c := newClientNetns(t, w)
	cfg := w.config()
	cfg.Publish = Publish{Address: c.host, FirstPort: 31000, Ports: 64}
	eng, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := newSessionOf(t, eng, Request{})
	b := newSession(t, Request{})
	p := a.Published
	if p == nil || p.Address != c.host || p.Ports[0] != (PortMap{Host: 31000 + uint16(4*a.Slot), Guest: uint16(a.GuestPort)}) {
		t.Fatalf("published %+v, want guestd on %s:%d", p, c.host, 31000+4*a.Slot)
	}
	if b.Published != nil {
		t.Errorf("an engine without Publish published %+v", b.Published)
	}
	url := fmt.Sprintf("http://%s/screenshot", netip.AddrPortFrom(p.Address, p.Ports[0].Host))
	body, err := c.get(url)
	if err != nil || !bytes.HasPrefix(body, []byte("\x89PNG")) {
		t.Fatalf("GET %s from the client namespace: %v, %d bytes", url, err, len(body))
	}
	// Another desktop reaches neither the published port nor the address.
	if connects(t, b, p.Address.String(), int(p.Ports[0].Host), false) {
		t.Errorf("session %s reached %s's published port", b.ID, a.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := eng.Remove(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := c.get(url); err == nil {
		t.Errorf("GET %s answered after the session was removed", url)
	}
}
