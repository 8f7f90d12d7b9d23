// Package ctxtime is time.Sleep cut short by a context, for pauses that
// must end when the request or run they belong to is cancelled: pyautogui's
// sleeps in internal/pyauto, the polls of internal/x11, the retry and
// settle pauses in tasks.
package ctxtime
