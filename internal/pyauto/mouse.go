package pyauto

import (
	"context"
	"fmt"
	"math"
)

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
