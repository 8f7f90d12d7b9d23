package pyauto

import (
	"context"
	"fmt"
	"time"
)

// These files are pyautogui 0.9.54 on X11, function by function: the argument
// handling, defaults, fail-safe checks, pauses and the exact sequence of
// XTEST events its code sends, with Python's exceptions where its code
// raises them. Both the snippet fast path and the callback module run it.
// This one has the module's state and its function table; bind.go binds a
// call's arguments, helpers.go has the module-level helpers, x11.go the X11
// platform module (_pyautogui_x11), mouse.go and keyboard.go the public
// functions.

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
