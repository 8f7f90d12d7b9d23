package sessions

import "testing"

func TestSameDesktop(t *testing.T) {
	cfg, err := Config{Prefix: "t", Image: "core", Binary: "/usr/bin/drums-init", Guestd: "/usr/bin/guestd",
		Limits: Limits{MemoryBytes: 2 << 30}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	def := cfg.Limits
	for _, c := range []struct {
		name string
		req  Request
		same bool
	}{
		{"the zero request", Request{}, true},
		{"the defaults spelled out", Request{Width: DefaultWidth, Height: DefaultHeight, Depth: DefaultDepth, GuestPort: DefaultGuestPort, Limits: def}, true},
		{"the default image by name", Request{Image: "core"}, true},
		// A name, an id or an id prefix: only the store says which image
		// they are, and the engine asks it (takeSpare).
		{"another image name", Request{Image: "osworld"}, true},
		{"some limits spelled out", Request{Limits: Limits{MemoryBytes: def.MemoryBytes}}, true},
		{"no binds, as an empty list", Request{Binds: []Bind{}}, true},
		{"another screen", Request{Width: 1280, Height: 720}, false},
		{"a width alone", Request{Width: DefaultWidth}, false},
		{"another depth", Request{Depth: 16}, false},
		{"another guest port", Request{GuestPort: 5001}, false},
		{"a snapshot", Request{Snapshot: "/var/lib/drums/snap"}, false},
		{"a bind", Request{Binds: []Bind{{Source: "/opt/x", Target: "/opt/x"}}}, false},
		{"other limits", Request{Limits: Limits{Pids: 100}}, false},
		{"no egress", Request{NoEgress: true}, false},
		{"GLX", Request{GLX: true}, false},
	} {
		if got := sameDesktop(cfg, c.req, Request{}); got != c.same {
			t.Errorf("%s: %+v is the default desktop: %v, want %v", c.name, c.req, got, c.same)
		}
		if a, b := sameDesktop(cfg, c.req, Request{}), sameDesktop(cfg, Request{}, c.req); a != b {
			t.Errorf("%s: not symmetric", c.name)
		}
	}
}

// The plan of a request is that of the request with its defaults: the
// defaults sameDesktop compares by are the ones the plan takes.
func TestPlanOfDefaults(t *testing.T) {
	in := testInput(t, Request{}, 3)
	p, err := newPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	in.req = in.req.withDefaults(in.cfg)
	q, err := newPlan(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != q.String() {
		t.Errorf("the plan of Request{} and of its defaults differ:\n%s\n%s", p, q)
	}
}
