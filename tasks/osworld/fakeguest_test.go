package osworld

import (
	"testing"
	"time"

	"github.com/drums-dev/drums/guestd/client"
	"github.com/drums-dev/drums/internal/testutil"
)

// testEnv is an Env over the fake guest with short pauses.
func testEnv(t *testing.T, f *testutil.FakeGuest) *Env {
	g := client.New(f.URL(), nil)
	g.Retry = client.Retry{Attempts: 3, Pause: time.Millisecond}
	g.FileRetry = g.Retry
	t.Cleanup(g.Close)
	return &Env{
		Guest:   g,
		TaskID:  "task-1",
		Screen:  Screen{Width: 1920, Height: 1080, Password: "password"},
		WorkDir: t.TempDir(),
		Timeouts: Timeouts{
			Open: 5 * time.Second, Until: 500 * time.Millisecond, Launch: 5 * time.Second,
			CDPConnect: 2 * time.Second, PageLoad: 2 * time.Second, Ready: 300 * time.Millisecond, Pause: time.Millisecond,
		},
	}
}
