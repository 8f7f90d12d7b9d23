package client

import "time"

// Desktop is one desktop as the daemon reports it. After a revert the ID may
// differ (a warm desktop was swapped in): callers use the returned one.
type Desktop struct {
	ID        string `json:"id"`
	Address   string `json:"address"`    // IP of the desktop's network namespace
	GuestPort int    `json:"guest_port"` // guestd listens at Address:GuestPort
	GuestURL  string `json:"guest_url"`  // "http://Address:GuestPort"
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	// State is one of the State* constants.
	State string `json:"state"`
	// Snapshot is the name of the snapshot the desktop started from, "" for
	// a clean one.
	Snapshot string `json:"snapshot"`
	// Image names the image the desktop runs from (`drums image ls`).
	Image        string    `json:"image"`
	Created      time.Time `json:"created"`
	LeaseExpires time.Time `json:"lease_expires,omitzero"`
	// Holder says who holds the lease (LeaseRequest.Holder, else where the
	// request came from); set while leased.
	Holder string `json:"holder,omitempty"`
	// Takeover says the live view on port 8006 passes its viewers'
	// keyboard and mouse to the desktop (TakeoverRequest); a lease starts
	// view-only.
	Takeover bool `json:"takeover,omitempty"`
	// Ports are set when the daemon publishes desktops' ports on a node
	// address (drums serve --publish-address): Address is then that
	// address and each guest port has a port of its own there. Zero: the
	// desktop has an address of its own, with OSWorld's ports.
	Ports Ports `json:"ports,omitzero"`
	// Daemon is the URL of the daemon that holds the desktop, when it
	// advertises one (drums serve --advertise-url): a client that leased
	// through a load balancer in front of many daemons (a Kubernetes
	// Service) sends the calls on this desktop there.
	Daemon string `json:"daemon,omitempty"`
}

// Ports are a desktop's published ports on its Address, one per guest
// port, in the order of OSWorld's address string
// ADDRESS:GUEST:CHROMIUM:VNC:VLC.
type Ports struct {
	Guest    int `json:"guest"`    // guestd (5000 in the desktop)
	Chromium int `json:"chromium"` // Chromium's debugging port (9222)
	VNC      int `json:"vnc"`      // the live view (8006)
	VLC      int `json:"vlc"`      // VLC's HTTP interface (8080)
}

// Desktop states. Only a leased desktop accepts renew, revert and snapshot
// (a failed one, revert).
const (
	StateCreating  = "creating"  // being started for the warm pool
	StateReady     = "ready"     // warm, in the pool, not leased
	StateLeased    = "leased"    // handed to a client until LeaseExpires
	StateRecycling = "recycling" // released; being reset for the pool or removed
	// StateFailed is a leased desktop that died (its X server, guestd or
	// init ended): renew and snapshot refuse it, revert replaces it, release
	// ends the lease. Its address stays claimed and unreachable until then.
	StateFailed = "failed"
)

// LeaseRequest asks for a ready desktop. Zero values take the daemon's
// defaults (1920x1080, no snapshot, the daemon's lease time).
type LeaseRequest struct {
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
	// Image names the image to run from; "" is the daemon's (--image).
	Image        string `json:"image,omitempty"`
	LeaseSeconds int    `json:"lease_seconds,omitempty"`
	Limits       Limits `json:"limits,omitzero"`
	// NoEgress drops the desktop's traffic to the public internet.
	NoEgress bool `json:"no_egress,omitempty"`
	// Holder names the lease's holder for people (the daemon's page, drums
	// session ls): a run, a user, a host. "" records where the request
	// came from.
	Holder string `json:"holder,omitempty"`
}

// TakeoverRequest turns the live view's takeover on or off for one leased
// desktop: on, the viewers of port 8006 drive its keyboard and mouse.
type TakeoverRequest struct {
	Enabled bool `json:"enabled"`
}

// Limits caps a desktop's resources; zero fields take the engine's defaults.
type Limits struct {
	MemoryBytes int64   `json:"memory_bytes,omitempty"`
	Pids        int     `json:"pids,omitempty"`
	CPUs        float64 `json:"cpus,omitempty"`
}

// RenewRequest extends a lease by LeaseSeconds from now (0: the daemon's
// default lease time).
type RenewRequest struct {
	LeaseSeconds int `json:"lease_seconds,omitempty"`
}

// RevertRequest returns a desktop to a clean state, or to a named snapshot.
type RevertRequest struct {
	Snapshot string `json:"snapshot,omitempty"`
}

// SnapshotRequest names the snapshot to save a desktop's files as. Saving
// under an existing name replaces that snapshot; desktops already started
// from the old one keep it until they are released.
type SnapshotRequest struct {
	Name string `json:"name"`
}

// Snapshot is a saved upper layer: the files a desktop had written. Running
// processes are not part of a snapshot; a desktop started from it boots a
// fresh desktop stack over those files.
type Snapshot struct {
	Name    string    `json:"name"`
	Source  string    `json:"source"` // id of the desktop it was saved from
	Width   int       `json:"width"`
	Height  int       `json:"height"`
	Created time.Time `json:"created"`
}

// Health is the daemon's answer to GET /v1/health.
type Health struct {
	Status   string         `json:"status"` // "ok"
	Started  time.Time      `json:"started"`
	Capacity int            `json:"capacity"` // most desktops at once, pool included
	Desktops map[string]int `json:"desktops"` // count by state
}

// ErrorBody is the JSON of every 4xx/5xx answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail carries one of the Code* constants and a message for people.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}
