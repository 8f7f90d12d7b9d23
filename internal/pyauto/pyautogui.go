package pyauto

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/drums-dev/drums/internal/ctxtime"
)

// This file is pyautogui 0.9.54 on X11, function by function: the argument
// handling, defaults, fail-safe checks, pauses and the exact sequence of
// XTEST events its code sends, with Python's exceptions where its code
// raises them. Both the snippet fast path and the callback module run it.

// settings are the pyautogui module globals a call depends on.
type settings struct {
	pause           pyValue // PAUSE (asserted to be a number when used)
	failsafe        bool    // bool(FAILSAFE)
	failsafePoints  [][2]int64
	minimumDuration float64
	minimumSleep    float64
}

// pyautogui's defaults.
const (
	defaultPause           = 0.1
	defaultMinimumDuration = 0.1
	defaultMinimumSleep    = 0.05
)

// defaultSettings is the module state right after `import pyautogui` on a
// w x h screen (FAILSAFE_POINTS are the four corners, computed at import).
func defaultSettings(w, h int) settings {
	return settings{
		pause:           floatV(defaultPause),
		failsafe:        true,
		failsafePoints:  cornerPoints(w, h),
		minimumDuration: defaultMinimumDuration,
		minimumSleep:    defaultMinimumSleep,
	}
}

func cornerPoints(w, h int) [][2]int64 {
	r, b := int64(w-1), int64(h-1)
	return [][2]int64{{0, 0}, {0, b}, {r, 0}, {r, b}}
}

// proc is the pyautogui module of one Python process: its globals and its
// per-process caches. The fast path makes one per snippet, the callback
// server one per connection.
type proc struct {
	in  Input
	set settings
	// dry makes a validation pass: it checks every argument and computes
	// every position but sends no input, sleeps not, and skips the
	// fail-safe (which depends on where the pointer will be).
	dry bool
	// leftHanded reads GNOME's left-handed setting the way pyautogui's
	// _mouse_is_swapped does (dconf read); nil means not swapped.
	leftHanded func(ctx context.Context) bool
	swapped    *bool
	// userTween evaluates a tween function of the callback module's
	// process at the given points.
	userTween func(ctx context.Context, id int, ns []float64) ([]float64, error)
	// wait sleeps (time.sleep, PAUSE, tween steps); nil is a real timer.
	// Tests count the sleeps instead.
	wait func(ctx context.Context, d time.Duration) error

	// The screen size, read once: pyautogui reads it from its connection
	// setup, which does not change while the process lives.
	w, h  int
	sized bool
}

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

type param struct {
	name string
	def  pyValue
	req  bool
}

type function struct {
	name    string // the def's name, which Python's binding errors print
	params  []param
	varargs bool // *args
	varkw   bool // **kwargs
	// checked: wrapped in _genericPyAutoGUIChecks, which runs
	// failSafeCheck() before and _handlePause(kwargs.get("_pause", True))
	// after the body.
	checked bool
	body    func(p *proc, ctx context.Context, a *args) (pyValue, error)
}

func opt(name string, def pyValue) param { return param{name: name, def: def} }
func req(name string) param              { return param{name: name, req: true} }

var (
	primary   = strV("primary")
	leftV     = strV("left")
	zeroF     = floatV(0)
	trueV     = boolV(true)
	falseV    = boolV(false)
	pauseP    = opt("_pause", trueV)
	logNone   = opt("logScreenshot", none)
	logFalse  = opt("logScreenshot", falseV)
	tweenP    = opt("tween", linearTween)
	durationP = opt("duration", zeroF)
)

// functions are the pyautogui functions both paths run, by every name
// pyautogui exports them under. Read-only after init (which breaks the
// initialization cycle: bodies call other functions through call).
var functions map[string]*function

func init() { functions = newFunctions() }

func newFunctions() map[string]*function {
	multiClick := func(name string, n int64) *function {
		return &function{name: name, checked: true, params: []param{
			opt("x", none), opt("y", none), opt("interval", zeroF), opt("button", leftV), durationP, tweenP, logNone, pauseP},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) {
				return none, p.callPos(ctx, "click", a.get("x"), a.get("y"), intV(n), a.get("interval"), a.get("button"),
					a.get("duration"), a.get("tween"), a.get("logScreenshot"), kwarg{"_pause", falseV})
			}}
	}
	// leftClick, rightClick, middleClick call click(…, _pause=_pause):
	// the inner click pauses too, so they pause twice.
	oneButton := func(name, button string) *function {
		return &function{name: name, checked: true, params: []param{
			opt("x", none), opt("y", none), opt("interval", zeroF), durationP, tweenP, logNone, pauseP},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) {
				return none, p.callPos(ctx, "click", a.get("x"), a.get("y"), intV(1), a.get("interval"), strV(button),
					a.get("duration"), a.get("tween"), a.get("logScreenshot"), kwarg{"_pause", a.get("_pause")})
			}}
	}
	upDown := func(name string, down bool) *function {
		return &function{name: name, checked: true, params: []param{
			opt("x", none), opt("y", none), opt("button", primary), durationP, tweenP, logNone, pauseP},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) { return none, p.mouseUpDown(ctx, a, down) }}
	}
	scroll := func(name string, horizontal bool) *function {
		return &function{name: name, checked: true, params: []param{
			req("clicks"), opt("x", none), opt("y", none), logNone, pauseP},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) {
				return none, p.scroll(ctx, a, horizontal)
			}}
	}
	key := func(name string, down bool) *function {
		return &function{name: name, checked: true, params: []param{req("key"), logNone, pauseP},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) { return none, p.keyUpDown(ctx, a, down) }}
	}
	fs := map[string]*function{
		"click": {name: "click", checked: true, body: (*proc).click, params: []param{
			opt("x", none), opt("y", none), opt("clicks", intV(1)), opt("interval", zeroF), opt("button", primary),
			durationP, tweenP, logNone, pauseP}},
		"leftClick":   oneButton("leftClick", "left"),
		"rightClick":  oneButton("rightClick", "right"),
		"middleClick": oneButton("middleClick", "middle"),
		"doubleClick": multiClick("doubleClick", 2),
		"tripleClick": multiClick("tripleClick", 3),
		"mouseDown":   upDown("mouseDown", true),
		"mouseUp":     upDown("mouseUp", false),
		"scroll":      scroll("scroll", false),
		"vscroll":     scroll("vscroll", false),
		"hscroll":     scroll("hscroll", true),
		"moveTo": {name: "moveTo", checked: true, body: (*proc).moveToFn, params: []param{
			opt("x", none), opt("y", none), durationP, tweenP, logFalse, pauseP}},
		"moveRel": {name: "moveRel", checked: true, body: (*proc).moveRel, params: []param{
			opt("xOffset", none), opt("yOffset", none), durationP, tweenP, logFalse, pauseP}},
		"dragTo": {name: "dragTo", checked: true, body: (*proc).dragTo, params: []param{
			opt("x", none), opt("y", none), durationP, tweenP, opt("button", primary), logNone, pauseP,
			opt("mouseDownUp", trueV)}},
		"dragRel": {name: "dragRel", checked: true, body: (*proc).dragRel, params: []param{
			opt("xOffset", intV(0)), opt("yOffset", intV(0)), durationP, tweenP, opt("button", primary), logNone,
			pauseP, opt("mouseDownUp", trueV)}},
		"keyDown": key("keyDown", true),
		"keyUp":   key("keyUp", false),
		"press": {name: "press", checked: true, body: (*proc).press, params: []param{
			req("keys"), opt("presses", intV(1)), opt("interval", zeroF), logNone, pauseP}},
		"typewrite": {name: "typewrite", checked: true, body: (*proc).typewrite, params: []param{
			req("message"), opt("interval", zeroF), logNone, pauseP}},
		"hotkey":   {name: "hotkey", checked: true, varargs: true, varkw: true, body: (*proc).hotkey},
		"position": {name: "position", body: (*proc).positionFn, params: []param{opt("x", none), opt("y", none)}},
		"size":     {name: "size", body: (*proc).sizeFn},
		"onScreen": {name: "onScreen", body: (*proc).onScreen, params: []param{req("x"), opt("y", none)}},
		"isValidKey": {name: "isValidKey", params: []param{req("key")},
			body: func(p *proc, ctx context.Context, a *args) (pyValue, error) { return isValidKey(a.get("key")) }},
	}
	// pyautogui's aliases are the same function objects.
	fs["move"], fs["drag"], fs["write"], fs["shortcut"], fs["resolution"] =
		fs["moveRel"], fs["dragRel"], fs["typewrite"], fs["hotkey"], fs["size"]
	return fs
}

// call runs pyautogui.<name>(*pos, **kw).
func (p *proc) call(ctx context.Context, name string, pos []pyValue, kw []kwarg) (pyValue, error) {
	fn, ok := functions[name]
	if !ok {
		return none, &pyError{Type: "AttributeError", Msg: fmt.Sprintf("module 'pyautogui' has no attribute %s", quote(name))}
	}
	if fn.checked {
		if err := p.failSafeCheck(ctx); err != nil {
			return none, err
		}
	}
	a, err := bind(fn, pos, kw)
	if err != nil {
		return none, err
	}
	v, err := fn.body(p, ctx, a)
	if err != nil || !fn.checked {
		return v, err
	}
	return v, p.handlePause(ctx, a.kwget("_pause", trueV))
}

// callPos calls a pyautogui function the way pyautogui's own code calls it
// internally: positional arguments, then keyword ones.
func (p *proc) callPos(ctx context.Context, name string, vals ...any) error {
	var pos []pyValue
	var kw []kwarg
	for _, v := range vals {
		switch v := v.(type) {
		case pyValue:
			pos = append(pos, v)
		case kwarg:
			kw = append(kw, v)
		}
	}
	_, err := p.call(ctx, name, pos, kw)
	return err
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

// --- module-level helpers -------------------------------------------------

// failSafeCheck raises FailSafeException when FAILSAFE is on and the
// pointer is on one of FAILSAFE_POINTS.
func (p *proc) failSafeCheck(ctx context.Context) error {
	if p.dry || !p.set.failsafe {
		return nil
	}
	x, y, err := p.pointer(ctx)
	if err != nil {
		return err
	}
	if p.onFailsafePoint(x, y) {
		return errFailSafe
	}
	return nil
}

func (p *proc) onFailsafePoint(x, y int64) bool {
	for _, pt := range p.set.failsafePoints {
		if pt[0] == x && pt[1] == y {
			return true
		}
	}
	return false
}

// handlePause is _handlePause: sleep PAUSE when _pause is truthy.
func (p *proc) handlePause(ctx context.Context, pause pyValue) error {
	if !pause.truthy() {
		return nil
	}
	if !p.set.pause.isNumber() {
		return &pyError{Type: "AssertionError"}
	}
	return p.sleep(ctx, p.set.pause)
}

// maxSleep is the longest time.sleep Python accepts (_PyTime_t
// nanoseconds).
const maxSleep = float64(math.MaxInt64) / 1e9

// sleep is time.sleep(v).
func (p *proc) sleep(ctx context.Context, v pyValue) error {
	if !v.isNumber() {
		return typeError("'%s' object cannot be interpreted as an integer", v.typeName())
	}
	s := v.num()
	switch {
	case math.IsNaN(s):
		return &pyError{Type: "ValueError", Msg: "Invalid value NaN (not a number)"}
	case s < 0:
		return &pyError{Type: "ValueError", Msg: "sleep length must be non-negative"}
	case s > maxSleep:
		return &pyError{Type: "OverflowError", Msg: "timestamp too large to convert to C _PyTime_t"}
	}
	return p.sleepSeconds(ctx, s)
}

func (p *proc) sleepSeconds(ctx context.Context, s float64) error {
	if p.dry || s <= 0 {
		return nil
	}
	d := time.Duration(s * float64(time.Second))
	if p.wait != nil {
		return p.wait(ctx, d)
	}
	return ctxtime.Sleep(ctx, d)
}

// logScreenshot stands for _logScreenshot, which saves a PNG of the screen
// into the process's working directory when asked to.
func logScreenshot(v pyValue) error {
	if v.truthy() {
		return &pyError{Type: "NotImplementedError", Msg: "drums' native pyautogui does not support logScreenshot"}
	}
	return nil
}

func (p *proc) size(ctx context.Context) (int, int, error) {
	if !p.sized {
		w, h, err := p.in.ScreenSize(ctx)
		if err != nil {
			return 0, 0, err
		}
		p.w, p.h, p.sized = w, h, true
	}
	return p.w, p.h, nil
}

func (p *proc) pointer(ctx context.Context) (int64, int64, error) {
	x, y, err := p.in.CursorPosition(ctx)
	return int64(x), int64(y), err
}

// position is pyautogui.position(x, y): the pointer, each coordinate
// overridden by int() of the argument when that is not None.
func (p *proc) position(ctx context.Context, x, y pyValue) (int64, int64, error) {
	px, py, err := p.pointer(ctx)
	if err != nil {
		return 0, 0, err
	}
	if !x.isNone() {
		if px, err = pyInt(x); err != nil {
			return 0, 0, err
		}
	}
	if !y.isNone() {
		if py, err = pyInt(y); err != nil {
			return 0, 0, err
		}
	}
	return px, py, nil
}

// normalizeXY is _normalizeXYArgs.
func (p *proc) normalizeXY(ctx context.Context, first, second pyValue) (int64, int64, error) {
	switch {
	case first.isNone() && second.isNone():
		return p.pointer(ctx)
	case first.isNone():
		px, _, err := p.pointer(ctx)
		if err != nil {
			return 0, 0, err
		}
		y, err := pyInt(second)
		return px, y, err
	case second.isNone() && first.Kind != kindStr && !first.isSeq():
		_, py, err := p.pointer(ctx)
		if err != nil {
			return 0, 0, err
		}
		x, err := pyInt(first)
		return x, py, err
	case first.Kind == kindStr:
		return 0, 0, &pyError{Type: "NotImplementedError",
			Msg: "drums' native pyautogui does not locate images on the screen"}
	case first.isSeq():
		switch len(first.Items) {
		case 2:
			if !second.isNone() {
				return 0, 0, pyautoguiError("When passing a sequence for firstArg, secondArg must not be passed (received %s).", second.repr())
			}
			x, err := pyInt(first.Items[0])
			if err != nil {
				return 0, 0, err
			}
			y, err := pyInt(first.Items[1])
			return x, y, err
		case 4:
			if !second.isNone() {
				return 0, 0, pyautoguiError("When passing a sequence for firstArg, secondArg must not be passed and default to None (received %s).", second.repr())
			}
			// pyscreeze.center: left + int(width / 2), top + int(height / 2).
			var c [4]int64
			for i, it := range first.Items {
				if it.Kind != kindInt {
					return 0, 0, &pyError{Type: "NotImplementedError",
						Msg: "drums' native pyautogui takes a (left, top, width, height) box of ints only"}
				}
				c[i] = it.Int
			}
			return c[0] + int64(float64(c[2])/2), c[1] + int64(float64(c[3])/2), nil
		}
		return 0, 0, pyautoguiError("The supplied sequence must have exactly 2 or exactly 4 elements (%d were received).", len(first.Items))
	}
	x, err := pyInt(first)
	if err != nil {
		return 0, 0, err
	}
	y, err := pyInt(second)
	return x, y, err
}

// normalizeButton is _normalizeButton on Linux: button.lower(), then one of
// the names; primary and secondary follow the left-handed setting.
func (p *proc) normalizeButton(ctx context.Context, b pyValue) (int, error) {
	if b.Kind != kindStr {
		return 0, &pyError{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute 'lower'", b.typeName())}
	}
	switch pyLower(b.Str) {
	case "left":
		return 1, nil
	case "middle":
		return 2, nil
	case "right":
		return 3, nil
	case "primary":
		if p.mouseSwapped(ctx) {
			return 3, nil
		}
		return 1, nil
	case "secondary":
		if p.mouseSwapped(ctx) {
			return 1, nil
		}
		return 3, nil
	}
	return 0, pyautoguiError("button argument must be one of ('left', 'middle', 'right', 'primary', 'secondary', 1, 2, 3, 4, 5, 6, 7)")
}

// mouseSwapped is _mouse_is_swapped, read once per process as pyautogui
// caches it.
func (p *proc) mouseSwapped(ctx context.Context) bool {
	if p.dry || p.leftHanded == nil {
		return false
	}
	if p.swapped == nil {
		s := p.leftHanded(ctx)
		p.swapped = &s
	}
	return *p.swapped
}

// --- the X11 platform module (_pyautogui_x11) -----------------------------

// structError is what python-xlib raises when a coordinate does not fit
// the XTEST request's 16-bit field.
var structError = &pyError{Type: "struct.error", Msg: "'h' format requires -32768 <= number <= 32767"}

// moveTo is _moveTo: an absolute motion.
func (p *proc) moveTo(ctx context.Context, x, y int64) error {
	if x < math.MinInt16 || x > math.MaxInt16 || y < math.MinInt16 || y > math.MaxInt16 {
		return structError
	}
	return p.in.MoveTo(ctx, int(x), int(y))
}

func (p *proc) button(ctx context.Context, b int, down bool) error {
	return p.in.Button(ctx, b, down)
}

// clickAt is _click: _mouseDown then _mouseUp, each moving first.
func (p *proc) clickAt(ctx context.Context, x, y int64, b int) error {
	for _, down := range []bool{true, false} {
		if err := p.moveTo(ctx, x, y); err != nil {
			return err
		}
		if err := p.button(ctx, b, down); err != nil {
			return err
		}
	}
	return nil
}

// keyEvent is _keyDown / _keyUp for one key name: keys pyautogui does not
// map are ignored; Shift is held around the press of an upper-case letter
// or shifted symbol, whatever the keymap says.
func (p *proc) keyEvent(ctx context.Context, key pyValue, down bool) error {
	if key.Kind == kindList {
		return typeError("unhashable type: 'list'")
	}
	if key.Kind != kindStr {
		return nil // hashable, never a key of the mapping
	}
	sym := keyboardMapping[key.Str]
	if sym == 0 {
		return nil
	}
	if !down {
		return p.in.Key(ctx, sym, false)
	}
	shift := isShiftCharacter(key.Str)
	if shift {
		if err := p.in.Key(ctx, ksShiftL, true); err != nil {
			return err
		}
	}
	if err := p.in.Key(ctx, sym, true); err != nil {
		return err
	}
	if shift {
		return p.in.Key(ctx, ksShiftL, false)
	}
	return nil
}

// --- public functions -----------------------------------------------------

// mouseMoveDrag is _mouseMoveDrag (a drag on X11 is a move with a button
// held): x and y nil mean "stay", offsets are added, a duration above
// MINIMUM_DURATION walks the tween in steps of at least MINIMUM_SLEEP.
func (p *proc) mouseMoveDrag(ctx context.Context, x, y *int64, xOff, yOff, duration, tween pyValue) error {
	var xo, yo int64
	var err error
	if !xOff.isNone() {
		if xo, err = pyInt(xOff); err != nil {
			return err
		}
	}
	if !yOff.isNone() {
		if yo, err = pyInt(yOff); err != nil {
			return err
		}
	}
	if x == nil && y == nil && xo == 0 && yo == 0 {
		return nil
	}
	sx, sy, err := p.pointer(ctx)
	if err != nil {
		return err
	}
	tx, ty := sx, sy
	if x != nil {
		tx = *x
	}
	if y != nil {
		ty = *y
	}
	tx, ty = tx+xo, ty+yo
	w, h, err := p.size(ctx)
	if err != nil {
		return err
	}
	steps := [][2]float64{{float64(tx), float64(ty)}}
	var sleepAmount float64
	long, err := greater(duration, p.set.minimumDuration)
	if err != nil {
		return err
	}
	if long {
		d := duration.num()
		numSteps := float64(max(w, h))
		sleepAmount = d / numSteps
		if sleepAmount < p.set.minimumSleep {
			if p.set.minimumSleep == 0 {
				return &pyError{Type: "ZeroDivisionError", Msg: "float division by zero"}
			}
			n, err := pyInt(floatV(d / p.set.minimumSleep))
			if err != nil {
				return err
			}
			if n == 0 {
				return &pyError{Type: "ZeroDivisionError", Msg: "float division by zero"}
			}
			numSteps = float64(n)
			sleepAmount = d / numSteps
		}
		ns := make([]float64, int(numSteps))
		for i := range ns {
			ns[i] = float64(i) / numSteps
		}
		ts, err := p.tweenValues(ctx, tween, ns)
		if err != nil {
			return err
		}
		steps = steps[:0]
		for _, t := range ts {
			steps = append(steps, [2]float64{float64(tx-sx)*t + float64(sx), float64(ty-sy)*t + float64(sy)})
		}
		steps = append(steps, [2]float64{float64(tx), float64(ty)})
	}
	var lx, ly int64
	for _, s := range steps {
		if len(steps) > 1 {
			if err := p.sleepSeconds(ctx, sleepAmount); err != nil {
				return err
			}
		}
		if lx, err = roundInt(s[0]); err != nil {
			return err
		}
		if ly, err = roundInt(s[1]); err != nil {
			return err
		}
		if !p.onFailsafePoint(lx, ly) {
			if err := p.failSafeCheck(ctx); err != nil {
				return err
			}
		}
		if err := p.moveTo(ctx, lx, ly); err != nil {
			return err
		}
	}
	if !p.onFailsafePoint(lx, ly) {
		return p.failSafeCheck(ctx)
	}
	return nil
}

// roundInt is int(round(v)): round half to even.
func roundInt(v float64) (int64, error) {
	r := math.RoundToEven(v)
	switch {
	case math.IsNaN(r):
		return 0, &pyError{Type: "ValueError", Msg: "cannot convert float NaN to integer"}
	case math.IsInf(r, 0):
		return 0, &pyError{Type: "OverflowError", Msg: "cannot convert float infinity to integer"}
	case math.Abs(r) > 1<<53:
		return 0, structError // far outside any 16-bit coordinate
	}
	return int64(r), nil
}

// tweenValues is tween(n) for every n.
func (p *proc) tweenValues(ctx context.Context, tween pyValue, ns []float64) ([]float64, error) {
	if tween.Kind != kindFunc {
		return nil, typeError("'%s' object is not callable", tween.typeName())
	}
	if tween.Func == "" {
		if p.userTween == nil {
			return nil, typeError("'function' object is not callable")
		}
		vs, err := p.userTween(ctx, tween.Callable, ns)
		if err == nil && len(vs) != len(ns) {
			err = fmt.Errorf("tween function gave %d values for %d points", len(vs), len(ns))
		}
		return vs, err
	}
	f, ok := tweens[tween.Func]
	if !ok {
		return nil, typeError("'function' object is not callable")
	}
	out := make([]float64, len(ns))
	for i, n := range ns {
		out[i] = f(n)
	}
	return out, nil
}

func (p *proc) click(ctx context.Context, a *args) (pyValue, error) {
	b, err := p.normalizeButton(ctx, a.get("button"))
	if err != nil {
		return none, err
	}
	x, y, err := p.normalizeXY(ctx, a.get("x"), a.get("y"))
	if err != nil {
		return none, err
	}
	if err := p.mouseMoveDrag(ctx, &x, &y, none, none, a.get("duration"), a.get("tween")); err != nil {
		return none, err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return none, err
	}
	clicks := a.get("clicks")
	if clicks.Kind != kindInt && clicks.Kind != kindBool {
		return none, typeError("'%s' object cannot be interpreted as an integer", clicks.typeName())
	}
	for i := int64(0); i < int64(clicks.num()); i++ {
		if err := p.failSafeCheck(ctx); err != nil {
			return none, err
		}
		if err := p.clickAt(ctx, x, y, b); err != nil {
			return none, err
		}
		if err := p.sleep(ctx, a.get("interval")); err != nil {
			return none, err
		}
	}
	return none, nil
}

func (p *proc) mouseUpDown(ctx context.Context, a *args, down bool) error {
	b, err := p.normalizeButton(ctx, a.get("button"))
	if err != nil {
		return err
	}
	x, y, err := p.normalizeXY(ctx, a.get("x"), a.get("y"))
	if err != nil {
		return err
	}
	if err := p.mouseMoveDrag(ctx, &x, &y, none, none, intV(0), none); err != nil {
		return err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return err
	}
	if err := p.moveTo(ctx, x, y); err != nil {
		return err
	}
	return p.button(ctx, b, down)
}

func (p *proc) scroll(ctx context.Context, a *args, horizontal bool) error {
	x, y := a.get("x"), a.get("y")
	if x.isSeq() {
		var err error
		if x, err = index(x, 0); err != nil {
			return err
		}
		if y, err = index(a.get("x"), 1); err != nil {
			return err
		}
	}
	px, py, err := p.position(ctx, x, y)
	if err != nil {
		return err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return err
	}
	clicks, err := pyInt(a.get("clicks"))
	if err != nil || clicks == 0 {
		return err
	}
	up, down := 4, 5
	if horizontal {
		up, down = 7, 6 // right, left
	}
	b := up
	if clicks < 0 {
		b, clicks = down, -clicks
	}
	for i := int64(0); i < clicks; i++ {
		if err := p.clickAt(ctx, px, py, b); err != nil {
			return err
		}
	}
	return nil
}

func (p *proc) moveToFn(ctx context.Context, a *args) (pyValue, error) {
	x, y, err := p.normalizeXY(ctx, a.get("x"), a.get("y"))
	if err != nil {
		return none, err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return none, err
	}
	return none, p.mouseMoveDrag(ctx, &x, &y, none, none, a.get("duration"), a.get("tween"))
}

func (p *proc) moveRel(ctx context.Context, a *args) (pyValue, error) {
	// _normalizeXYArgs turns missing offsets into the pointer position,
	// so moveRel() moves by the position itself: pyautogui's behaviour.
	xo, yo, err := p.normalizeXY(ctx, a.get("xOffset"), a.get("yOffset"))
	if err != nil {
		return none, err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return none, err
	}
	return none, p.mouseMoveDrag(ctx, nil, nil, intV(xo), intV(yo), a.get("duration"), a.get("tween"))
}

// downUp is mouseDown/mouseUp(button=button, logScreenshot=False,
// _pause=False) as the drag functions call them.
func (p *proc) downUp(ctx context.Context, name string, button pyValue) error {
	_, err := p.call(ctx, name, nil, []kwarg{{"button", button}, {"logScreenshot", falseV}, {"_pause", falseV}})
	return err
}

func (p *proc) dragTo(ctx context.Context, a *args) (pyValue, error) {
	x, y, err := p.normalizeXY(ctx, a.get("x"), a.get("y"))
	if err != nil {
		return none, err
	}
	return none, p.drag(ctx, a, &x, &y, none, none)
}

func (p *proc) dragRel(ctx context.Context, a *args) (pyValue, error) {
	xo, yo := a.get("xOffset"), a.get("yOffset")
	if xo.isNone() {
		xo = intV(0)
	}
	if yo.isNone() {
		yo = intV(0)
	}
	if xo.isSeq() {
		seq := xo
		var err error
		if xo, err = index(seq, 0); err != nil {
			return none, err
		}
		if yo, err = index(seq, 1); err != nil {
			return none, err
		}
	}
	if xo.equalsZero() && yo.equalsZero() {
		return none, nil
	}
	mx, my, err := p.pointer(ctx)
	if err != nil {
		return none, err
	}
	return none, p.drag(ctx, a, &mx, &my, xo, yo)
}

// drag is the end both drag functions share: _logScreenshot, mouseDown
// when mouseDownUp, the move (see mouseMoveDrag), then mouseUp.
func (p *proc) drag(ctx context.Context, a *args, x, y *int64, xOff, yOff pyValue) error {
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return err
	}
	upDown := a.get("mouseDownUp").truthy()
	if upDown {
		if err := p.downUp(ctx, "mouseDown", a.get("button")); err != nil {
			return err
		}
	}
	if err := p.mouseMoveDrag(ctx, x, y, xOff, yOff, a.get("duration"), a.get("tween")); err != nil {
		return err
	}
	if upDown {
		return p.downUp(ctx, "mouseUp", a.get("button"))
	}
	return nil
}

// keyName is `if len(key) > 1: key = key.lower()`.
func keyName(k pyValue) (pyValue, error) {
	n, err := pyLen(k)
	if err != nil {
		return none, err
	}
	if n <= 1 {
		return k, nil
	}
	if k.Kind != kindStr {
		return none, &pyError{Type: "AttributeError", Msg: fmt.Sprintf("'%s' object has no attribute 'lower'", k.typeName())}
	}
	return strV(pyLower(k.Str)), nil
}

func (p *proc) keyUpDown(ctx context.Context, a *args, down bool) error {
	k, err := keyName(a.get("key"))
	if err != nil {
		return err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return err
	}
	return p.keyEvent(ctx, k, down)
}

// joinCheck is the `",".join(keys)` pyautogui evaluates for its log call:
// it fails on any item that is not a string.
func joinCheck(items []pyValue) error {
	for i, it := range items {
		if it.Kind != kindStr {
			return typeError("sequence item %d: expected str instance, %s found", i, it.typeName())
		}
	}
	return nil
}

func (p *proc) press(ctx context.Context, a *args) (pyValue, error) {
	keysArg := a.get("keys")
	var keys []pyValue
	if keysArg.Kind == kindStr {
		k, err := keyName(keysArg)
		if err != nil {
			return none, err
		}
		keys = []pyValue{k}
	} else {
		items, err := iterate(keysArg)
		if err != nil {
			return none, err
		}
		for _, s := range items {
			k, err := keyName(s)
			if err != nil {
				return none, err
			}
			keys = append(keys, k)
		}
	}
	interval, err := pyFloat(a.get("interval"))
	if err != nil {
		return none, err
	}
	if err := joinCheck(keys); err != nil {
		return none, err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return none, err
	}
	presses := a.get("presses")
	if presses.Kind != kindInt && presses.Kind != kindBool {
		return none, typeError("'%s' object cannot be interpreted as an integer", presses.typeName())
	}
	for i := int64(0); i < int64(presses.num()); i++ {
		for _, k := range keys {
			if err := p.failSafeCheck(ctx); err != nil {
				return none, err
			}
			if err := p.keyEvent(ctx, k, true); err != nil {
				return none, err
			}
			if err := p.keyEvent(ctx, k, false); err != nil {
				return none, err
			}
		}
		if err := p.sleep(ctx, floatV(interval)); err != nil {
			return none, err
		}
	}
	return none, nil
}

func (p *proc) typewrite(ctx context.Context, a *args) (pyValue, error) {
	interval, err := pyFloat(a.get("interval"))
	if err != nil {
		return none, err
	}
	if err := logScreenshot(a.get("logScreenshot")); err != nil {
		return none, err
	}
	chars, err := iterate(a.get("message"))
	if err != nil {
		return none, err
	}
	for _, c := range chars {
		if c, err = keyName(c); err != nil {
			return none, err
		}
		if _, err := p.call(ctx, "press", []pyValue{c}, []kwarg{{"_pause", falseV}}); err != nil {
			return none, err
		}
		if err := p.sleep(ctx, floatV(interval)); err != nil {
			return none, err
		}
		if err := p.failSafeCheck(ctx); err != nil {
			return none, err
		}
	}
	return none, nil
}

func (p *proc) hotkey(ctx context.Context, a *args) (pyValue, error) {
	interval, err := pyFloat(a.kwget("interval", zeroF))
	if err != nil {
		return none, err
	}
	keys := a.star
	if len(keys) > 0 && keys[0].isSeq() {
		keys = keys[0].Items
	}
	if err := joinCheck(keys); err != nil {
		return none, err
	}
	if err := logScreenshot(a.kwget("logScreenshot", none)); err != nil {
		return none, err
	}
	for _, k := range keys {
		k, _ = keyName(k)
		if err := p.keyEvent(ctx, k, true); err != nil {
			return none, err
		}
		if err := p.sleep(ctx, floatV(interval)); err != nil {
			return none, err
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		k, _ := keyName(keys[i])
		if err := p.keyEvent(ctx, k, false); err != nil {
			return none, err
		}
		if err := p.sleep(ctx, floatV(interval)); err != nil {
			return none, err
		}
	}
	return none, nil
}

func (p *proc) positionFn(ctx context.Context, a *args) (pyValue, error) {
	x, y, err := p.position(ctx, a.get("x"), a.get("y"))
	return tupleV(intV(x), intV(y)), err
}

func (p *proc) sizeFn(ctx context.Context, _ *args) (pyValue, error) {
	w, h, err := p.size(ctx)
	return tupleV(intV(int64(w)), intV(int64(h))), err
}

func (p *proc) onScreen(ctx context.Context, a *args) (pyValue, error) {
	x, y, err := p.normalizeXY(ctx, a.get("x"), a.get("y"))
	if err != nil {
		return none, err
	}
	w, h, err := p.size(ctx)
	if err != nil {
		return none, err
	}
	return boolV(x >= 0 && x < int64(w) && y >= 0 && y < int64(h)), nil
}

// isValidKey is keyboardMapping.get(key) is not None.
func isValidKey(k pyValue) (pyValue, error) {
	if k.Kind == kindList {
		return none, typeError("unhashable type: 'list'")
	}
	return boolV(k.Kind == kindStr && keyboardMapping[k.Str] != 0), nil
}
