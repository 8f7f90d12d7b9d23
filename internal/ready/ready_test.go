package ready_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/drums-dev/drums/internal/ready"
	"github.com/drums-dev/drums/internal/testutil"
)

func TestLine(t *testing.T) {
	r, w := io.Pipe()
	go func() { io.WriteString(w, " :42 \nmore\n") }()
	line, err := ready.Line(context.Background(), r, make(chan struct{}))
	if err != nil || line != ":42" {
		t.Fatalf("Line = %q, %v; want \":42\"", line, err)
	}
}

func TestLineExited(t *testing.T) {
	// The daemon closes its end, then exits: Line waits for the exit.
	r, w := io.Pipe()
	exited := make(chan struct{})
	w.Close()
	go func() { close(exited) }()
	if _, err := ready.Line(context.Background(), r, exited); !errors.Is(err, ready.ErrExited) {
		t.Fatalf("closed pipe: %v, want ErrExited", err)
	}
	// The daemon exits with the pipe still open (a child holds it).
	r, _ = io.Pipe()
	if _, err := ready.Line(context.Background(), r, exited); !errors.Is(err, ready.ErrExited) {
		t.Fatalf("exited: %v, want ErrExited", err)
	}
}

func TestLineContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, _ := io.Pipe()
	if _, err := ready.Line(ctx, r, make(chan struct{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("open pipe: %v, want context.Canceled", err)
	}
	r, w := io.Pipe()
	w.Close()
	if _, err := ready.Line(ctx, r, make(chan struct{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("closed pipe, no exit: %v, want context.Canceled", err)
	}
}

func TestNameOwner(t *testing.T) {
	bus := testutil.StartDBus(t)
	conn := bus.Connect(t)
	const name = "dev.drums.ReadyTest"
	errc := make(chan error, 1)
	go func() { errc <- ready.NameOwner(testutil.WithTimeout(t), conn, name) }()
	owner := bus.Connect(t)
	if reply, err := owner.RequestName(name, dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("request %s: %v, %v", name, reply, err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("NameOwner: %v", err)
	}
	// An owner already there answers at once.
	if err := ready.NameOwner(testutil.WithTimeout(t), conn, name); err != nil {
		t.Fatalf("NameOwner of an owned name: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ready.NameOwner(ctx, conn, "dev.drums.Nobody"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("NameOwner of a name nobody owns: %v, want DeadlineExceeded", err)
	}
}
