// Package client is the Go client of the provider daemon's v1 HTTP API
// (defined in provider/openapi.json): lease, get, list, renew, revert,
// snapshot and release desktops over the daemon's unix socket or over TCP
// with a bearer token. It also defines the wire types the daemon encodes. It
// must not import the sessions engine: tasks and the CLI use it without root
// or namespaces.
package client
