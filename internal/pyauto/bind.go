package pyauto

import (
	"fmt"
	"strings"
)

// kwarg is one keyword argument, in call order.
type kwarg struct {
	name string
	val  pyValue
}

// args are a call's arguments bound to the function's parameters.
type args struct {
	vals []pyValue // by parameter index
	star []pyValue // *args
	kw   []kwarg   // as passed (the decorator reads _pause from here)
	fn   *function
}

func (a *args) get(name string) pyValue {
	for i, p := range a.fn.params {
		if p.name == name {
			return a.vals[i]
		}
	}
	panic("pyauto: no parameter " + name + " in " + a.fn.name)
}

// kwget is kwargs.get(name, def).
func (a *args) kwget(name string, def pyValue) pyValue {
	for _, k := range a.kw {
		if k.name == name {
			return k.val
		}
	}
	return def
}

func quote(s string) string { return "'" + s + "'" }

// bind assigns arguments to parameters as CPython does, with its
// messages: keywords are matched first (unknown or repeated names fail),
// then too many positionals, then missing required ones.
func bind(fn *function, pos []pyValue, kw []kwarg) (*args, error) {
	a := &args{fn: fn, vals: make([]pyValue, len(fn.params)), kw: kw}
	set := make([]bool, len(fn.params))
	n := min(len(pos), len(fn.params))
	for i := 0; i < n; i++ {
		a.vals[i], set[i] = pos[i], true
	}
	if fn.varargs {
		a.star = pos[n:]
	}
	for _, k := range kw {
		i := paramIndex(fn, k.name)
		switch {
		case i < 0 && fn.varkw:
			continue
		case i < 0:
			return nil, typeError("%s() got an unexpected keyword argument '%s'", fn.name, k.name)
		case set[i]:
			return nil, typeError("%s() got multiple values for argument '%s'", fn.name, k.name)
		}
		a.vals[i], set[i] = k.val, true
	}
	if len(pos) > len(fn.params) && !fn.varargs {
		required := 0
		for _, pr := range fn.params {
			if pr.req {
				required++
			}
		}
		takes := fmt.Sprint(len(fn.params))
		if required < len(fn.params) {
			takes = fmt.Sprintf("from %d to %d", required, len(fn.params))
		}
		plural, were := "s", "were"
		if len(fn.params) == 1 && required == 1 {
			plural = ""
		}
		if len(pos) == 1 {
			were = "was"
		}
		return nil, typeError("%s() takes %s positional argument%s but %d %s given", fn.name, takes, plural, len(pos), were)
	}
	var missing []string
	for i, pr := range fn.params {
		switch {
		case set[i]:
		case pr.req:
			missing = append(missing, quote(pr.name))
		default:
			a.vals[i] = pr.def
		}
	}
	if len(missing) > 0 {
		list := missing[0]
		if len(missing) > 1 {
			list = strings.Join(missing[:len(missing)-1], ", ") + " and " + missing[len(missing)-1]
		}
		s := ""
		if len(missing) > 1 {
			s = "s"
		}
		return nil, typeError("%s() missing %d required positional argument%s: %s", fn.name, len(missing), s, list)
	}
	return a, nil
}

func paramIndex(fn *function, name string) int {
	for i, p := range fn.params {
		if p.name == name {
			return i
		}
	}
	return -1
}
