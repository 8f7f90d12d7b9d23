package atspi

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// busTree is the tree of one request, read over D-Bus. A node costs at
// most three round trips to its application, whatever its number of calls:
//
//	first  Name, GetState, GetInterfaces, GetRole, ChildCount, GetAttributes
//	       (skipped when the Cache has the object)
//	second GetAttributes and ChildCount (if the first wave was skipped),
//	       GetRoleName (role 70 or unknown), GetExtents (visible+showing
//	       components), CharacterCount, the four Value properties, NActions,
//	       GetChildAtIndex 0…n-1 (if the role is known; n from the first
//	       wave, or the Cache's child count as a guess)
//	third  GetText, GetName/GetDescription/GetKeyBinding per action, the
//	       children not read yet
//
// Saving the third round trip for the children matters most: the levels of
// a tree follow each other, so a deep, narrow top (gtk4-widget-factory's
// first eight levels hold 58 of its 937 nodes) costs round trips in
// sequence while the application idles.
type busTree struct {
	bus     *link
	peers   *peers
	timeout time.Duration
	noCache bool
	noP2P   bool

	mu   sync.Mutex
	apps map[string]*appEntry
}

var _ tree = (*busTree)(nil)

type appEntry struct {
	ready chan struct{}
	app   *app
}

func newBusTree(bus *link, ps *peers, o *SourceOptions) *busTree {
	return &busTree{bus: bus, peers: ps, timeout: o.CallTimeout, noCache: o.NoCache, noP2P: o.NoP2P, apps: map[string]*appEntry{}}
}

// app returns the request's view of application name: its connection and
// its cache, set up by the first node that needs them.
func (t *busTree) app(ctx context.Context, name string) *app {
	t.mu.Lock()
	e, ok := t.apps[name]
	if !ok {
		e = &appEntry{ready: make(chan struct{})}
		t.apps[name] = e
		t.mu.Unlock()
		l, silent := t.peers.connFor(ctx, t.bus, name, t.timeout, t.noP2P)
		a := &app{name: name, link: l}
		switch {
		case silent:
			a.gone.Store(true) // one timeout is all it costs
		case !t.noCache:
			// Without a cache every node is read live: slower, same result.
			a.cache, _ = getItems(ctx, a, t.timeout)
		}
		e.app = a
		close(e.ready)
		return a
	}
	t.mu.Unlock()
	<-e.ready
	return e.app
}

func (t *busTree) node(ctx context.Context, ref objRef, plan func(*nodeInfo) int) *nodeInfo {
	a := t.app(ctx, ref.bus)
	p := ref.path
	info := &nodeInfo{}

	// First wave, unless the cache answers it. The cache's child count is
	// only a guess for reading children early (second wave): atk-bridge
	// reports 0 for some containers that have children (combo-box menus),
	// so ChildCount is always read live and decides.
	var attrs, count *fastCall
	cached := a.cache[p]
	if cached != nil {
		info.name, info.states, info.ifaces, info.role = cached.name, cached.states, cached.ifaces, cached.role
	} else {
		w := newWave(ctx, a, t.timeout)
		name, state, ifaces, role := w.name(p), w.state(p), w.interfaces(p), w.role(p)
		count, attrs = w.childCount(p), w.attributes(p)
		w.wait()
		info.name, info.nameErr = readName(name)
		info.states = readStates(state)
		info.ifaces = readInterfaces(ifaces)
		info.role, info.roleErr = role.uint32()
		info.childCount, info.childCountErr = readChildCount(count)
	}

	// Second wave. Children are read here when everything plan needs is
	// known already, else in the third wave. For a cached object the live
	// ChildCount is not known yet: the cache's count is a guess of it, and
	// its children are read at once. The live count still decides: what
	// the guess read beyond it is dropped, what it missed is read in the
	// third wave, so a wrong guess costs calls or a round trip, never a
	// difference in the output.
	_, local := localRoleName(info.role)
	local = local || info.roleErr != nil
	early := local && cached == nil
	nKids := 0
	switch {
	case early:
		nKids = plan(info)
	case local:
		guess := *info
		guess.childCount = cached.childCount
		nKids = plan(&guess)
	}
	w := newWave(ctx, a, t.timeout)
	if cached != nil {
		attrs, count = w.attributes(p), w.childCount(p)
	}
	var roleName, ext, chars, nActs *fastCall
	var vals [4]*fastCall
	if !local {
		roleName = w.roleName(p)
	}
	if needsExtents(info.states, info.ifaces) {
		ext = w.extents(p)
	}
	if info.ifaces&ifText != 0 {
		chars = w.characterCount(p)
	}
	if info.ifaces&ifValue != 0 {
		for i := range vals {
			vals[i] = w.value(p, i)
		}
	}
	if info.ifaces&ifAction != 0 {
		nActs = w.nActions(p)
	}
	kids := make([]*fastCall, nKids)
	for i := range kids {
		kids[i] = w.childAt(p, i)
	}
	w.wait()
	info.attrs, info.attrsErr = readAttributes(attrs)
	if cached != nil {
		info.childCount, info.childCountErr = readChildCount(count)
	}
	if roleName != nil {
		info.roleName, info.roleNameErr = roleName.string()
	}
	if !early {
		nKids = plan(info)
	}
	if len(kids) > nKids {
		kids = kids[:nKids]
	}
	if ext != nil {
		info.extents, info.extentsErr = readExtents(ext)
	}
	for i, c := range vals {
		if c != nil {
			info.values[i] = readValue(c)
		}
	}

	// Third wave.
	var n int
	if nActs != nil {
		var v any
		v, info.actionsErr = nActs.variant("i")
		if info.actionsErr == nil {
			n = max(int(v.(int32)), 0)
		}
	}
	var text *fastCall
	if chars != nil {
		var v any
		if v, info.textErr = chars.variant("i"); info.textErr == nil {
			text = w.text(p, v.(int32))
		}
	}
	acts := make([][3]*fastCall, n)
	for i := range acts {
		acts[i] = w.action(p, i)
	}
	for i := len(kids); i < nKids; i++ {
		kids = append(kids, w.childAt(p, i))
	}
	w.wait()
	if text != nil {
		info.text, info.textErr = text.string()
	}
	if info.actionsErr == nil {
		info.actions = make([]action, n)
		for i, c := range acts {
			if info.actions[i], info.actionsErr = readAction(c); info.actionsErr != nil {
				break
			}
		}
	}
	info.children = make([]childRef, len(kids))
	for i, c := range kids {
		info.children[i].ref, info.children[i].err = readRef(c)
	}
	return info
}

func (t *busTree) childCount(ctx context.Context, ref objRef) (int, error) {
	w := newWave(ctx, t.app(ctx, ref.bus), t.timeout)
	c := w.childCount(ref.path)
	w.wait()
	return readChildCount(c)
}

func (t *busTree) childAt(ctx context.Context, ref objRef, i int) (objRef, error) {
	w := newWave(ctx, t.app(ctx, ref.bus), t.timeout)
	c := w.childAt(ref.path, i)
	w.wait()
	return readRef(c)
}

func (t *busTree) states(ctx context.Context, ref objRef) stateSet {
	w := newWave(ctx, t.app(ctx, ref.bus), t.timeout)
	c := w.state(ref.path)
	w.wait()
	return readStates(c)
}

// desktop lists the applications the registry knows, in its order.
func (t *busTree) desktop(ctx context.Context) ([]objRef, error) {
	reg := &app{name: registryName, link: t.bus}
	w := newWave(ctx, reg, t.timeout)
	c := w.children(rootPath)
	w.wait()
	refs, err := readRefs(c)
	if err != nil {
		return nil, fmt.Errorf("list applications: %w", err)
	}
	return refs, nil
}
