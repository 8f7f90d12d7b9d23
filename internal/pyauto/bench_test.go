package pyauto

import (
	"context"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
	"github.com/drums-dev/drums/internal/x11"
)

func benchNative(b *testing.B) *Native {
	desk := testutil.StartDesktop(b, testutil.DesktopOptions{Width: 1920, Height: 1080, WM: true})
	disp, err := x11.Open(desk.X.Display)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { disp.Close() })
	n, err := New(disp, Options{Python: python, SocketDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { n.Close() })
	return n
}

func benchRun(b *testing.B, code string) {
	n := benchNative(b)
	argv := []string{"python", "-c", code}
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, stderr, exit, handled := n.Run(ctx, argv); !handled || exit != 0 {
			b.Fatalf("Run: handled %v, exit %d, %s", handled, exit, stderr)
		}
	}
}

// BenchmarkFastPathClick is guestd's own cost for a click: parse, dry
// pass, dconf's left-handed setting (pyautogui's primary button; read
// once, then while dconf's files are unchanged from the cache), XTEST,
// with PAUSE = 0.
func BenchmarkFastPathClick(b *testing.B) {
	benchRun(b, "import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; pyautogui.click(100, 200)")
}

// BenchmarkFastPathClickLeft is the same with button='left', which needs
// no setting.
func BenchmarkFastPathClickLeft(b *testing.B) {
	benchRun(b, "import pyautogui; import time; pyautogui.FAILSAFE = False; pyautogui.PAUSE = 0; pyautogui.click(100, 200, button='left')")
}

// BenchmarkFastPathDesktopEnvClick is an OSWorld action as DesktopEnv.step
// sends it: pyautogui's default PAUSE of 0.1 s dominates.
func BenchmarkFastPathDesktopEnvClick(b *testing.B) {
	benchRun(b, desktopEnv+"pyautogui.click(100, 200)")
}
