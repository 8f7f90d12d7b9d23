package atspi

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func f64(v float64) *float64 { return &v }

// attrString renders only the attributes and text of e, for compact checks.
func attrString(e *element) string {
	var b strings.Builder
	b.WriteString(e.tag)
	for _, a := range e.attrs {
		b.WriteByte(' ')
		if a.prefix != "" {
			b.WriteString(a.prefix + ":")
		}
		b.WriteString(a.local + "=" + a.value)
	}
	if e.text != "" {
		b.WriteString(" |" + e.text)
	}
	return b.String()
}

func TestMakeElementOrderAndFormats(t *testing.T) {
	info := &nodeInfo{
		name:   "Reload",
		states: 1<<stateVisible | 1<<stateShowing | 1<<8 | 1<<38,
		attrs: [][2]string{
			{"display", "inline-block"}, {"tag", "button"}, {"xml-roles", "button"},
			{"class", "toolbar-button"}, {"", "dropped"}, {"id", "reload"},
		},
		ifaces:  ifComponent | ifText | ifImage | ifSelection | ifValue | ifAction,
		role:    43,
		extents: [4]int32{88, -85, 34, 0},
		text:    "a\ufffcb\ufffdc",
		values:  [4]*float64{f64(50), nil, f64(1e16), f64(0.0001)},
		actions: []action{
			{"press", "", ""}, {"jump to", "d1", "k1"}, {"press", "d2", "<Ctrl>p"}, {"", "x", "y"},
		},
	}
	e, f, err := makeElement(info, flagNone)
	if err != nil {
		t.Fatal(err)
	}
	want := "push-button name=Reload st:enabled=true st:showing=true st:visible=true st:selectable_text=true" +
		" attr:class=toolbar-button attr:tag=button attr:display=inline-block attr:id=reload attr:xml-roles=button" +
		" cp:screencoord=(88, -85) cp:size=(34, 0) image=true selection=true" +
		" val:value=50.0 val:max=1e+16 val:step=0.0001" +
		" act:press_desc=d2 act:press_kb=<Ctrl>p act:jump-to_desc=d1 act:jump-to_kb=k1 act:_desc=x act:_kb=y |abc"
	if got := attrString(e); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	if f != flagNone {
		t.Fatalf("flag %v", f)
	}
}

func TestMakeElementExtentsOnlyWhenVisibleAndShowing(t *testing.T) {
	for _, states := range []stateSet{0, 1 << stateVisible, 1 << stateShowing} {
		info := &nodeInfo{role: 29, states: states, ifaces: ifComponent, extentsErr: errors.New("unread")}
		e, _, err := makeElement(info, flagNone)
		if err != nil {
			t.Fatalf("states %b: %v", states, err)
		}
		if _, ok := e.attr("cp", "screencoord"); ok {
			t.Fatalf("states %b: extents written", states)
		}
	}
	info := &nodeInfo{role: 29, states: 1<<stateVisible | 1<<stateShowing, ifaces: ifComponent, extentsErr: errors.New("gone")}
	if _, _, err := makeElement(info, flagNone); err == nil {
		t.Fatal("a failing GetExtents on a showing component did not fail the node")
	}
}

func TestMakeElementTags(t *testing.T) {
	for _, c := range []struct {
		info nodeInfo
		tag  string
		flag treeFlag
	}{
		{nodeInfo{role: 92}, "document-spreadsheet", flagCalc},
		{nodeInfo{role: 75, name: "Thunderbird"}, "application", flagThunderbird},
		{nodeInfo{role: 75, name: "thunderbird"}, "application", flagNone},
		{nodeInfo{role: 70, roleName: "  my role\t"}, "my-role", flagNone},
		{nodeInfo{role: 500, roleName: ""}, "unknown", flagNone},
		{nodeInfo{role: 500, roleName: "document spreadsheet"}, "document-spreadsheet", flagCalc},
	} {
		e, f, err := makeElement(&c.info, flagNone)
		if err != nil {
			t.Fatalf("role %d: %v", c.info.role, err)
		}
		if e.tag != c.tag || f != c.flag {
			t.Errorf("role %d %q: tag %q flag %v, want %q %v", c.info.role, c.info.roleName, e.tag, f, c.tag, c.flag)
		}
	}
	// An inherited flag is kept: a spreadsheet below Thunderbird does not
	// switch to calc.
	if _, f, _ := makeElement(&nodeInfo{role: 92}, flagThunderbird); f != flagThunderbird {
		t.Errorf("flag %v below thunderbird", f)
	}
}

func TestMakeElementFailures(t *testing.T) {
	bad := errors.New("read failed")
	for name, info := range map[string]nodeInfo{
		"name":          {role: 29, nameErr: bad},
		"attributes":    {role: 29, attrsErr: bad},
		"role":          {role: 29, roleErr: bad},
		"role name":     {role: 70, roleNameErr: bad},
		"text":          {role: 61, ifaces: ifText, textErr: bad},
		"actions":       {role: 43, ifaces: ifAction, actionsErr: bad},
		"unknown state": {role: 29, states: 1 << 45},
		"colon key":     {role: 29, attrs: [][2]string{{"a:b", "c"}}},
		"action name":   {role: 43, ifaces: ifAction, actions: []action{{"click()", "", ""}}},
		"tag":           {role: 70, roleName: "1st"},
		"form feed":     {role: 61, ifaces: ifText, text: "page\fbreak"},
		"escape name":   {role: 29, name: "\x1b[0m"},
	} {
		if _, _, err := makeElement(&info, flagNone); err == nil {
			t.Errorf("%s: node did not fail", name)
		}
	}
}

func TestMakeElementTolerated(t *testing.T) {
	// GetState failing gives {defunct}; a failing value field is left out;
	// a failing text read does not matter without the Text interface.
	info := &nodeInfo{role: 51, states: defunctSet, ifaces: ifValue, values: [4]*float64{nil, f64(math.Inf(-1)), nil, f64(math.NaN())},
		textErr: errors.New("no text")}
	e, _, err := makeElement(info, flagNone)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attrString(e), "slider name= st:defunct=true val:min=-inf val:step=nan"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
