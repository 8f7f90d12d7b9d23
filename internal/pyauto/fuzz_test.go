package pyauto

import (
	"strings"
	"testing"
)

// The snippet parser takes whatever a client sends to /execute: it never
// panics, and a trailing newline changes nothing about what it parses,
// as in Python, but for one case: a last line that ends in a backslash
// continues onto the newline added, so Python refuses the code without it
// ("unexpected EOF") and takes it with it.
func FuzzSnippet(f *testing.F) {
	for _, s := range []string{
		"import pyautogui; pyautogui.click(100, 200)",
		"import pyautogui\npyautogui.typewrite('hello', interval=0.05)\npyautogui.hotkey('ctrl', 'c')",
		"pyautogui.moveTo(x=1e3, y=-0x10); pyautogui.press(['a', \"b\"])",
		"import time; time.sleep(0.5)",
		"pyautogui.click(*[1, 2])",
		"pyautogui.write('\\u00e9\\n', )",
		"import pyautogui as p; p.scroll(-5)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, code string) {
		stmts, ok := parseSnippet(code)
		stmts2, ok2 := parseSnippet(code + "\n")
		continued := !ok && ok2 && strings.HasSuffix(code, "\\\n")
		if !continued && (ok != ok2 || len(stmts) != len(stmts2)) {
			t.Fatalf("parseSnippet(%q): ok %v, %d statements; with a newline: ok %v, %d", code, ok, len(stmts), ok2, len(stmts2))
		}
	})
}
