package images_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/drums-dev/drums/internal/ready"
	"github.com/drums-dev/drums/internal/testimage"
	"github.com/drums-dev/drums/sessions/images"
)

// In a built image, drums' xkbcomp answers Xvfb's call from the image's
// compile: the bytes the real xkbcomp writes for it, whatever the output
// file; any other input goes to the real one; and Xvfb starts with the real
// one unable to run.
func TestXkbcompCache(t *testing.T) {
	if !testimage.InImage(t, "core") {
		return
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(images.XkbcompCache, name))
		if err != nil {
			t.Fatalf("the image has no recorded compile: %v", err)
		}
		return b
	}
	args := strings.Split(strings.TrimSuffix(string(read("args")), "\x00"), "\x00")
	input, want := read("input"), read("output")
	dir := t.TempDir()
	compile := func(bin string, in []byte, out string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, filepath.Join(dir, out))...)
		cmd.Stdin = bytes.NewReader(in)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", bin, err, b)
		}
		return filepath.Join(dir, out)
	}
	// A keymap as text: xkbcomp's compiled files carry bytes of its heap
	// in their padding, different from one run to the next.
	keymap := func(xkm string) string {
		t.Helper()
		out, err := exec.Command(images.XkbcompReal, "-xkb", xkm, "-").Output()
		if err != nil {
			t.Fatalf("decompile %s: %v", xkm, err)
		}
		return string(out)
	}
	if got, _ := os.ReadFile(compile(images.XkbcompPath, input, "server-7.xkm")); !bytes.Equal(got, want) {
		t.Errorf("drums' xkbcomp for Xvfb's call: %d bytes, not the recorded %d", len(got), len(want))
	}
	recorded := filepath.Join(dir, "recorded.xkm")
	if err := os.WriteFile(recorded, want, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, rec := keymap(compile(images.XkbcompReal, input, "server-8.xkm")), keymap(recorded); got != rec {
		t.Errorf("the real xkbcomp compiles Xvfb's call to another keymap than the record's: the record is stale\n%s", cmp.Diff(rec, got))
	}
	other := bytes.Replace(input, []byte("+us+"), []byte("+de+"), 1)
	if bytes.Equal(other, input) {
		t.Fatalf("Xvfb's keymap has no us layout to change:\n%s", input)
	}
	got, real := keymap(compile(images.XkbcompPath, other, "de.xkm")), keymap(compile(images.XkbcompReal, other, "de-real.xkm"))
	if got != real {
		t.Errorf("another keymap through drums' xkbcomp is not the real one's:\n%s", cmp.Diff(real, got))
	}
	if got == keymap(recorded) {
		t.Error("another keymap through drums' xkbcomp is the recorded one")
	}

	// The real xkbcomp cannot run (this run's own copy of the image): an
	// Xvfb that starts had its keymap from the record.
	if err := os.Chmod(images.XkbcompReal, 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(images.XkbcompReal, 0o755)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var log bytes.Buffer
	xvfb := exec.Command("Xvfb", ":37", "-displayfd", "3", "-nolisten", "tcp", "-screen", "0", "640x480x24")
	xvfb.Stdout, xvfb.Stderr, xvfb.ExtraFiles = &log, &log, []*os.File{w}
	if err := xvfb.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	exited := make(chan struct{})
	go func() { xvfb.Wait(); close(exited) }()
	defer func() { xvfb.Process.Kill(); <-exited }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := ready.Line(ctx, r, exited); err != nil {
		t.Fatalf("Xvfb without the real xkbcomp: %v: %s", err, log.Bytes())
	}
}
