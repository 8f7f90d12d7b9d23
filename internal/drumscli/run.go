//go:build linux

package drumscli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/drums-dev/drums/internal/mainjob"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
	"github.com/drums-dev/drums/tasks"
)

// runConfig is the configuration of `drums run`: the job's, and the image
// store it builds the image in.
type runConfig struct {
	Job      mainjob.Config
	ImageDir string
}

func parseRun(args []string, stderr io.Writer) (runConfig, error) {
	cfg := runConfig{Job: mainjob.Config{Desktops: 3, Socket: client.DefaultSocketPath(), Width: 1280, Height: 800, Timeout: 15 * time.Minute,
		Out: filepath.Join(os.TempDir(), "drums-run-"+time.Now().Format("20060102-150405"))}}
	j := &cfg.Job
	fs := newFlags("run", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: drums run [flags]

The main job, unattended, in a few minutes (root):
  1. builds the desktops' image (drums image build osworld; an existing one
     is reused at once, a first build takes a few minutes),
  2. starts the daemon (drums serve) unless one answers on --socket,
  3. leases --desktops desktops in parallel,
  4. drives one OSWorld-style episode on each through the guest API, as
     OSWorld's PythonController does: reset and setup, screenshot,
     accessibility tree, pyautogui actions through /execute, evaluation by
     a getter,
  5. runs the built-in tasks end to end (score before and after their
     scripted solutions: files, terminal, gsettings, a GTK app, Chromium),
  6. prints a table and where the screenshots are, and stops the daemon it
     started.
It exits non-zero when an episode or a built-in task does not go from 0 to 1.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.IntVar(&j.Desktops, "desktops", j.Desktops, "desktops brought up in parallel")
	fs.StringVar(&j.Out, "out", j.Out, "directory for screenshots, the built-in tasks' report and the daemon's log")
	fs.StringVar(&j.Socket, "socket", j.Socket, "the daemon's unix socket (default $DRUMS_SOCKET, else /run/drums/drums.sock)")
	fs.IntVar(&j.Width, "width", j.Width, "screen width of the desktops")
	fs.IntVar(&j.Height, "height", j.Height, "screen height of the desktops")
	fs.StringVar(&cfg.ImageDir, "image-dir", images.DefaultDir, "the image store")
	fs.StringVar(&j.Image, "image", sessions.DefaultImage, "the image the desktops run from (built first when it is a built-in recipe's)")
	fs.DurationVar(&j.Timeout, "timeout", j.Timeout, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q (see drums run --help)", fs.Args())
	}
	if j.Desktops < 1 {
		return cfg, fmt.Errorf("--desktops %d: must be at least 1", j.Desktops)
	}
	return cfg, nil
}

func runRun(ctx context.Context, cfg runConfig, s stdio) error {
	j := cfg.Job
	return mainjob.Run(ctx, j, mainjob.Host{
		EnsureImage: func(ctx context.Context) error { return ensureImage(ctx, cfg.ImageDir, j.Image, s.err) },
		ConnectDaemon: func(ctx context.Context, logDir string) (*tasks.Daemon, error) {
			return connectDaemon(ctx, j.Socket, true, logDir, []string{"--pool-size", fmt.Sprint(j.Desktops),
				"--image-dir", cfg.ImageDir, "--image", j.Image}, s.err)
		},
		Stdout: s.out, Stderr: s.err,
	})
}
