package pyauto

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/drums-dev/drums/internal/testutil"
)

// askTwice is what c answers when asked twice in a row.
func askTwice(ctx context.Context, c *dconfCache) [2]bool {
	return [2]bool{c.leftHanded(ctx), c.leftHanded(ctx)}
}

// The left-handed setting is read again only when the user's database
// changes (or appears); without a home, or with DCONF_PROFILE, every call
// reads.
func TestDconfCache(t *testing.T) {
	home := t.TempDir()
	reads, answer := 0, false
	read := func(context.Context) bool { reads++; return answer }
	env := map[string]string{"HOME": home}
	c := newDconfCache(read, func(k string) string { return env[k] })
	ctx := context.Background()
	if got := askTwice(ctx, c); got != [2]bool{false, false} || reads != 1 {
		t.Fatalf("no database yet: %d reads, want 1", reads)
	}
	db := filepath.Join(home, ".config", "dconf", "user")
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		t.Fatal(err)
	}
	answer = true
	if err := os.WriteFile(db, []byte("GVariant v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := askTwice(ctx, c); got != [2]bool{true, true} || reads != 2 {
		t.Errorf("after the database appeared: %v after %d reads, want true after 2", got, reads)
	}
	// dconf-service replaces the file on a write.
	answer = false
	tmp := db + ".new"
	if err := os.WriteFile(tmp, []byte("GVariant v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, db); err != nil {
		t.Fatal(err)
	}
	if c.leftHanded(ctx) || reads != 3 {
		t.Errorf("after a write: %d reads, want 3", reads)
	}
	// A read cut short by its context is not kept.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := os.WriteFile(db, []byte("GVariant v3, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.leftHanded(cancelled)
	c.leftHanded(ctx)
	if reads != 5 {
		t.Errorf("after a cancelled read: %d reads, want 5", reads)
	}

	for name, env := range map[string]map[string]string{"no home": {}, "DCONF_PROFILE": {"HOME": home, "DCONF_PROFILE": "other"}} {
		reads = 0
		c := newDconfCache(read, func(k string) string { return env[k] })
		c.leftHanded(ctx)
		c.leftHanded(ctx)
		if reads != 2 {
			t.Errorf("%s: %d reads of 2 calls, want 2", name, reads)
		}
	}
}

// Tier 1: over the real dconf, a write through dconf-service (what
// gsettings does) is seen by the next read of the setting, and between
// writes dconf is not run again.
func TestDconfCacheFollowsDconf(t *testing.T) {
	testutil.Tier1(t, "dconf", "dbus-daemon")
	home, runtime := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_RUNTIME_DIR", runtime)
	for _, k := range []string{"XDG_CONFIG_HOME", "DCONF_PROFILE"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	bus := testutil.StartDBus(t, "XDG_RUNTIME_DIR="+runtime)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus.Address)
	reads := 0
	c := newDconfCache(func(ctx context.Context) bool { reads++; return dconfLeftHanded(ctx) }, os.Getenv)
	ctx := testutil.WithTimeout(t)
	write := func(v string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, "dconf", "write", leftHandedKey, v).CombinedOutput(); err != nil {
			t.Fatalf("dconf write %s: %v %s", v, err, out)
		}
	}
	if got := askTwice(ctx, c); got != [2]bool{false, false} || reads != 1 {
		t.Fatalf("before any write: %v after %d reads, want false after 1", got, reads)
	}
	write("true")
	if got := askTwice(ctx, c); got != [2]bool{true, true} || reads != 2 {
		t.Errorf("after writing true: %v after %d reads, want true after 2", got, reads)
	}
	write("false")
	if c.leftHanded(ctx) || reads != 3 {
		t.Errorf("after writing false: %d reads, want 3 answering false", reads)
	}
}
