package provider

import "net"

// peerKey is the context key of a request's connection: a lease whose
// request names no holder records describePeer of it (only then, not for
// every connection).
type peerKey struct{}

// describePeer names the other end of c for people: the process behind a
// unix socket (peerProcess), the address of a TCP client.
func describePeer(c net.Conn) string {
	if uc, ok := c.(*net.UnixConn); ok {
		return peerProcess(uc)
	}
	return c.RemoteAddr().String()
}
