package pyauto

import (
	"context"
	"fmt"
)

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

// isValidKey is keyboardMapping.get(key) is not None.
func isValidKey(k pyValue) (pyValue, error) {
	if k.Kind == kindList {
		return none, typeError("unhashable type: 'list'")
	}
	return boolV(k.Kind == kindStr && keyboardMapping[k.Str] != 0), nil
}
