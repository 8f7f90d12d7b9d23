//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/drums-dev/drums/internal/mainjob"
	"github.com/drums-dev/drums/provider/client"
	"github.com/drums-dev/drums/sessions"
	"github.com/drums-dev/drums/sessions/images"
	"github.com/drums-dev/drums/tasks"
)

func init() {
	commands["run"] = command{
		summary: "the main job: image, daemon, desktops in parallel, an episode on each, the built-in tasks",
		run:     runMain,
	}
}

func runMain(ctx context.Context, args []string) error {
	cfg := mainjob.Config{Desktops: 3, Socket: client.DefaultSocketPath(), Width: 1280, Height: 800, Timeout: 15 * time.Minute,
		Out: filepath.Join(os.TempDir(), "drums-run-"+time.Now().Format("20060102-150405"))}
	var imageDir string
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
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
	fs.IntVar(&cfg.Desktops, "desktops", cfg.Desktops, "desktops brought up in parallel")
	fs.StringVar(&cfg.Out, "out", cfg.Out, "directory for screenshots, the built-in tasks' report and the daemon's log")
	fs.StringVar(&cfg.Socket, "socket", cfg.Socket, "the daemon's unix socket (default $DRUMS_SOCKET, else /run/drums/drums.sock)")
	fs.IntVar(&cfg.Width, "width", cfg.Width, "screen width of the desktops")
	fs.IntVar(&cfg.Height, "height", cfg.Height, "screen height of the desktops")
	fs.StringVar(&imageDir, "image-dir", images.DefaultDir, "the image store")
	fs.StringVar(&cfg.Image, "image", sessions.DefaultImage, "the image the desktops run from (built first when it is a built-in recipe's)")
	fs.DurationVar(&cfg.Timeout, "timeout", cfg.Timeout, "bound on the whole run")
	if err := fs.Parse(args); err != nil {
		return badUsage(err)
	}
	if fs.NArg() > 0 {
		return badUsage(fmt.Errorf("unexpected arguments %q (see drums run --help)", fs.Args()))
	}
	if cfg.Desktops < 1 {
		return badUsage(fmt.Errorf("--desktops %d: must be at least 1", cfg.Desktops))
	}
	return mainjob.Run(ctx, cfg, mainjob.Host{
		EnsureImage: func(ctx context.Context) error { return ensureImage(ctx, imageDir, cfg.Image) },
		ConnectDaemon: func(ctx context.Context, logDir string) (*tasks.Daemon, error) {
			return connectDaemon(ctx, cfg.Socket, true, logDir, []string{"--pool-size", fmt.Sprint(cfg.Desktops),
				"--image-dir", imageDir, "--image", cfg.Image})
		},
		Stdout: os.Stdout, Stderr: os.Stderr,
	})
}
