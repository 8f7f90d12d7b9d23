package pyauto

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/drums-dev/drums/internal/ctxtime"
)

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
