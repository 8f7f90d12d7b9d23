package pyauto

import (
	"context"
	"math"
)

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
