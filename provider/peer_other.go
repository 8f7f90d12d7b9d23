//go:build !linux

package provider

import "net"

// peerProcess names a unix socket's peer where SO_PEERCRED is not there.
func peerProcess(*net.UnixConn) string { return "unix socket" }
