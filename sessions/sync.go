package sessions

// The engine and a session's init talk over three inherited descriptors and
// a stream socket pair carrying newline-delimited JSON syncMsg values:
//
//	fd 3  the plan, JSON, read to EOF
//	fd 4  the sync socket (both ways)
//	fd 5  the host's network namespace (for the host end of the veth)
//	fd 6  the session's address claim (AddrClaimDir), locked: init keeps
//	      it open, never used, for its whole life
//	fd 7  the session's id claim (IDClaimDir), the same way
//	fd 8  the image's use lock (images.Hold), shared, the same way
//
//	engine                                   init (PID 1 of new mnt, pid, ipc, uts, net, cgroup ns)
//	  | clone+exec `drums init ID` -------------->|
//	  | plan ------------------------------------>| rprivate /, tmpfs, template and snapshot
//	  | (v1) pid -> cgroup.procs of each           |   copies, overlay, /proc /dev /sys /tmp /run,
//	  |      hierarchy                             |   masks, control socket, pivot_root
//	  |---- go ---------------------------------->|   (nothing forked before "go": v1 has no
//	  |                                            |    clone-into-cgroup, children must start
//	  |                                            |    inside the session's cgroups)
//	  |---- net --------------------------------->|   veth pair from inside, host end up (the
//	  |                                            |    session's nftables table is in, the
//	  |                                            |    slot's old veth gone, a reset's old
//	  |                                            |    desktop cut off: no network before)
//	  |<--- step {root|net|xvfb|dbus|...} --------|   Xvfb ‖ dbus, then openbox ‖ at-spi ‖ guestd
//	  |<--- up -----------------------------------|   the stack is up (a standby, "go" with
//	  |                                            |    standby, first takes a screenshot over
//	  |                                            |    its loopback; it gets "net" only when
//	  |                                            |    a reset takes it: standby_linux.go)
//	  |<--- ready {upper_fd, steps} --------------|
//	  | GET /screenshot until a PNG                |
//	  | close                                      |   EOF after ready: ignored, init runs on
//
//	failure:  |<--- error {kind, step, message} ---| init exits; the kernel takes its mounts,
//	                                                 processes and veth with its namespaces;
//	                                                 the engine removes cgroups, table, record
//	engine dies before ready:  EOF before ready ---> init exits the same way
type syncMsg struct {
	Type string `json:"type"` // go, net, step, up, ready, error
	Step string `json:"step,omitempty"`
	// Kind classifies an error: "init" (root, namespaces, network) or
	// "stack" (a desktop process).
	Kind    string  `json:"kind,omitempty"`
	Message string  `json:"message,omitempty"`
	Millis  float64 `json:"ms,omitempty"` // step: milliseconds since init started
	// UpperFD is the descriptor in init that holds the session's private
	// tmpfs (template copy, upper and work directories) open; the engine
	// reaches the upper layer at /proc/<init>/fd/<UpperFD>/upper.
	UpperFD int `json:"upper_fd,omitempty"`
	// Standby, in "go", says init is a standby (standby_linux.go): once
	// its stack is up, before it says "up", it takes guestd's first
	// screenshot over its own loopback (the first costs ~17 ms of CPU:
	// the frame's pages are touched and encoded for the first time), so
	// that the reset's probe is answered at once.
	Standby bool `json:"standby,omitempty"`
}

// Inherited descriptors of init.
const (
	fdPlan    = 3
	fdSync    = 4
	fdHostNS  = 5
	fdClaim   = 6
	fdIDClaim = 7
	fdImage   = 8
)

// The control socket (Plan.Root.Control) serves the engine while the
// session runs: each connection is one exchange of ctlMsg packets
// (SOCK_SEQPACKET, descriptors as SCM_RIGHTS).
//
//	exec:    -> {op:exec, argv, env, dir, user, tty} + stdin, stdout, stderr (none with tty)
//	         <- {pid} (+ the pseudo-terminal's master with tty: the
//	            client sizes it with TIOCSWINSZ)                  or {error}
//	         -> {op:signal, signal}                               any number
//	         <- {exited, exit_code, sig_name}
//	         closing the connection early kills the process group
//	status:  -> {op:status}   <- {procs: {name: "running"|"exited ..."}}
type ctlMsg struct {
	Op     string   `json:"op,omitempty"`
	Argv   []string `json:"argv,omitempty"`
	Env    []string `json:"env,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	User   string   `json:"user,omitempty"`
	TTY    bool     `json:"tty,omitempty"`
	Rows   uint16   `json:"rows,omitempty"`
	Cols   uint16   `json:"cols,omitempty"`
	Signal int      `json:"signal,omitempty"`

	Pid      int               `json:"pid,omitempty"`
	Exited   bool              `json:"exited,omitempty"`
	ExitCode int               `json:"exit_code,omitempty"`
	SigName  string            `json:"sig_name,omitempty"`
	Error    string            `json:"error,omitempty"`
	Procs    map[string]string `json:"procs,omitempty"`
}
