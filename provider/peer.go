package provider

import "net"

// peerKey is the context key of a connection's describePeer, the holder a
// lease records when its request names none.
type peerKey struct{}

// describePeer names the other end of c for people: the process behind a
// unix socket (peerProcess), the address of a TCP client.
func describePeer(c net.Conn) string {
	if uc, ok := c.(*net.UnixConn); ok {
		return peerProcess(uc)
	}
	return c.RemoteAddr().String()
}
