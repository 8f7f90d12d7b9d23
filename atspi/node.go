package atspi

import (
	"fmt"
	"strings"

	"github.com/drums-dev/drums/internal/pyvalue"
)

// nodeInfo is everything OSWorld's per-node code reads about one accessible,
// each field with the error its read gave. Which errors matter depends on
// the other fields (extents only for visible and showing components, …);
// makeElement applies those rules, the readers only fetch.
type nodeInfo struct {
	name    string
	nameErr error
	// states already holds libatspi's substitution ({defunct}) when
	// GetState failed: that read never fails a node.
	states stateSet
	// attrs in message order, as GetAttributes sent them.
	attrs    [][2]string
	attrsErr error
	// ifaces is empty when GetInterfaces failed: pyatspi then treats every
	// interface as not implemented.
	ifaces ifaceSet

	role        uint32
	roleErr     error
	roleName    string // from GetRoleName, only when localRoleName has none
	roleNameErr error

	childCount    int
	childCountErr error

	extents    [4]int32 // x, y, width, height in screen coordinates
	extentsErr error

	text    string
	textErr error

	// values are CurrentValue, MinimumValue, MaximumValue, MinimumIncrement;
	// a nil entry is a read that failed and is left out.
	values [4]*float64

	actions    []action
	actionsErr error

	// children are GetChildAtIndex(0…n-1) for the n the walk asked for.
	children []childRef
}

type action struct{ name, desc, keyBinding string }

// childRef is one GetChildAtIndex answer: a reference, or why there is none.
type childRef struct {
	ref objRef
	err error
}

// ifaceSet holds the interfaces upstream tests for.
type ifaceSet uint8

const (
	ifComponent ifaceSet = 1 << iota
	ifText
	ifImage
	ifSelection
	ifValue
	ifAction
)

// ifaceBits maps the D-Bus interface names GetInterfaces lists to ifaceSet.
var ifaceBits = map[string]ifaceSet{
	ifaceComponent: ifComponent,
	ifaceText:      ifText,
	ifaceImage:     ifImage,
	ifaceSelection: ifSelection,
	ifaceValue:     ifValue,
	ifaceAction:    ifAction,
}

func ifacesFromNames(names []string) ifaceSet {
	var s ifaceSet
	for _, n := range names {
		s |= ifaceBits[n]
	}
	return s
}

// flag is what upstream passes down the tree: below a spreadsheet document,
// tables get the Calc walk; below Thunderbird, nothing visible changes, but
// the flag still keeps a later spreadsheet from setting calc.
type treeFlag uint8

const (
	flagNone treeFlag = iota
	flagCalc
	flagThunderbird
)

// Limits of the walk (guest-api.md §4.8). They are upstream's and must not
// change: they decide which elements exist.
const (
	maxDepth = 50   // an element at this depth is written without children
	maxWidth = 1024 // children per element, generic walk only
)

// needsExtents is upstream's condition for reading GetExtents.
func needsExtents(states stateSet, ifaces ifaceSet) bool {
	return states.has(stateVisible) && states.has(stateShowing) && ifaces&ifComponent != 0
}

// roleNameOf is getRoleName(): the local table, else what the application
// said (roleName), with the read errors that make the node fail.
func roleNameOf(info *nodeInfo) (string, error) {
	if info.roleErr != nil {
		return "", fmt.Errorf("read role: %w", info.roleErr)
	}
	if n, ok := localRoleName(info.role); ok {
		return n, nil
	}
	if info.roleNameErr != nil {
		return "", fmt.Errorf("read role name: %w", info.roleNameErr)
	}
	return info.roleName, nil
}

// tagFor is upstream's tag: the stripped role name, "unknown" when empty,
// spaces as hyphens. stripped is the name the calc/thunderbird flag tests.
func tagFor(roleName string) (tag, stripped string) {
	stripped = pyvalue.Strip(roleName)
	tag = stripped
	if tag == "" {
		tag = "unknown"
	}
	return strings.ReplaceAll(tag, " ", "-"), stripped
}

// nextFlag is the flag a node gets and passes to its descendants.
func nextFlag(f treeFlag, strippedRole, name string) treeFlag {
	if f != flagNone {
		return f
	}
	switch {
	case strippedRole == "document spreadsheet":
		return flagCalc
	case strippedRole == "application" && name == "Thunderbird":
		return flagThunderbird
	}
	return f
}

// childPlan is how many children the generic walk reads for a node whose
// first reads are in info, at depth with inherited flag f: none at the depth
// limit, for a Calc table (its own walk reads cells by index), or when
// ChildCount failed (the sibling loop then ends at once); else up to
// maxWidth. It needs only the name, role and child count.
func childPlan(info *nodeInfo, depth int, f treeFlag) int {
	if depth >= maxDepth || info.childCountErr != nil || info.childCount <= 0 {
		return 0
	}
	rn, err := roleNameOf(info)
	if err != nil || info.nameErr != nil {
		return 0 // the node fails; its children are never read
	}
	tag, stripped := tagFor(rn)
	if tag == "table" && nextFlag(f, stripped, info.name) == flagCalc {
		return 0
	}
	return min(info.childCount, maxWidth)
}

// makeElement is OSWorld's _create_atspi_node without the children: it
// builds the element from info in upstream's attribute order, or fails the
// way upstream's node fails (a read that raises, an unknown state bit, a
// string or name lxml rejects). It returns the flag for the node's subtree.
func makeElement(info *nodeInfo, f treeFlag) (*element, treeFlag, error) {
	if info.nameErr != nil {
		return nil, f, fmt.Errorf("read name: %w", info.nameErr)
	}
	e := &element{attrs: make([]xmlAttr, 0, 16)}
	e.attrs = append(e.attrs, xmlAttr{local: "name", value: info.name})
	for bit := 0; bit < 64; bit++ {
		if !info.states.has(bit) {
			continue
		}
		if bit >= len(stateNames) {
			return nil, f, fmt.Errorf("state %d: %w", bit, errUnknownBit)
		}
		e.attrs = append(e.attrs, xmlAttr{prefix: "st", local: stateNames[bit], value: "true"})
	}
	if info.attrsErr != nil {
		return nil, f, fmt.Errorf("read attributes: %w", info.attrsErr)
	}
	if len(info.attrs) > 0 {
		keys := make([]string, len(info.attrs))
		last := make(map[string]string, len(info.attrs))
		for i, kv := range info.attrs {
			keys[i] = kv[0]
			last[kv[0]] = kv[1]
		}
		for _, i := range glibOrder(keys) {
			if k := keys[i]; k != "" {
				e.attrs = append(e.attrs, xmlAttr{prefix: "attr", local: k, value: last[k]})
			}
		}
	}
	if needsExtents(info.states, info.ifaces) {
		if info.extentsErr != nil {
			return nil, f, fmt.Errorf("read extents: %w", info.extentsErr)
		}
		x := info.extents
		e.attrs = append(e.attrs,
			xmlAttr{prefix: "cp", local: "screencoord", value: fmt.Sprintf("(%d, %d)", x[0], x[1])},
			xmlAttr{prefix: "cp", local: "size", value: fmt.Sprintf("(%d, %d)", x[2], x[3])})
	}
	if info.ifaces&ifText != 0 {
		if info.textErr != nil {
			return nil, f, fmt.Errorf("read text: %w", info.textErr)
		}
		e.text = strings.NewReplacer("\ufffc", "", "\ufffd", "").Replace(info.text)
	}
	if info.ifaces&ifImage != 0 {
		e.attrs = append(e.attrs, xmlAttr{local: "image", value: "true"})
	}
	if info.ifaces&ifSelection != 0 {
		e.attrs = append(e.attrs, xmlAttr{local: "selection", value: "true"})
	}
	if info.ifaces&ifValue != 0 {
		for i, local := range [...]string{"value", "min", "max", "step"} {
			if v := info.values[i]; v != nil {
				e.attrs = append(e.attrs, xmlAttr{prefix: "val", local: local, value: pyvalue.ReprFloat(*v)})
			}
		}
	}
	if info.ifaces&ifAction != 0 {
		if info.actionsErr != nil {
			return nil, f, fmt.Errorf("read actions: %w", info.actionsErr)
		}
		// A repeated action name overwrites the earlier values in place
		// (upstream builds a dict).
		pos := map[string]int{}
		for _, a := range info.actions {
			n := strings.ReplaceAll(a.name, " ", "-")
			if i, ok := pos[n]; ok {
				e.attrs[i].value, e.attrs[i+1].value = a.desc, a.keyBinding
				continue
			}
			pos[n] = len(e.attrs)
			e.attrs = append(e.attrs,
				xmlAttr{prefix: "act", local: n + "_desc", value: a.desc},
				xmlAttr{prefix: "act", local: n + "_kb", value: a.keyBinding})
		}
	}
	rn, err := roleNameOf(info)
	if err != nil {
		return nil, f, err
	}
	tag, stripped := tagFor(rn)
	f = nextFlag(f, stripped, info.name)
	e.tag = tag
	if !xmlName(tag) {
		return nil, f, fmt.Errorf("tag %q: %w", tag, errInvalidName)
	}
	for _, a := range e.attrs {
		if !xmlName(a.local) {
			return nil, f, fmt.Errorf("attribute %q: %w", a.local, errInvalidName)
		}
		if !xmlString(a.value) {
			return nil, f, fmt.Errorf("attribute %s: %w", a.local, errInvalidText)
		}
	}
	if !xmlString(e.text) {
		return nil, f, fmt.Errorf("text: %w", errInvalidText)
	}
	return e, f, nil
}
