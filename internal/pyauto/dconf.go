package pyauto

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// dconfCache keeps _mouse_is_swapped's answer while nothing `dconf read`
// reads it from has changed. The read is a fork and exec of dconf, 4–5 ms
// on a 2-core machine (a third of an RL step of guestd), and pyautogui
// pays it in every Python process, which for OSWorld is every action;
// guestd pays it once per change instead, with the same answers.
//
// A fresh `dconf read` answers from the files of the profile: the user's
// database ($XDG_CONFIG_HOME/dconf/user, which dconf-service replaces on
// every write) and the system's (/etc/dconf/db, compiled by `dconf
// update`), as /etc/dconf/profile names them. The cache key is the
// identity (inode, size, modification time) of each; any change of one
// reads again. With DCONF_PROFILE set, or no home to find the user's
// database in, nothing is cached.
type dconfCache struct {
	read  func(ctx context.Context) bool
	paths []string // nil: never cache

	mu    sync.Mutex
	key   string
	val   bool
	valid bool
}

// newDconfCache caches read's answers; env is os.Getenv but in tests.
func newDconfCache(read func(ctx context.Context) bool, env func(string) string) *dconfCache {
	c := &dconfCache{read: read}
	if env("DCONF_PROFILE") != "" {
		return c
	}
	config := env("XDG_CONFIG_HOME")
	if config == "" && env("HOME") != "" {
		config = filepath.Join(env("HOME"), ".config")
	}
	if config != "" {
		c.paths = []string{filepath.Join(config, "dconf", "user"), "/etc/dconf/db", "/etc/dconf/profile"}
	}
	return c
}

// leftHanded is read's answer, from the cache while the files are the
// same. The key is taken before the read: a change during it is seen as a
// change by the next call.
func (c *dconfCache) leftHanded(ctx context.Context) bool {
	key, ok := c.identity()
	c.mu.Lock()
	if ok && c.valid && c.key == key {
		v := c.val
		c.mu.Unlock()
		return v
	}
	c.mu.Unlock()
	v := c.read(ctx)
	if ok && ctx.Err() == nil {
		c.mu.Lock()
		c.key, c.val, c.valid = key, v, true
		c.mu.Unlock()
	}
	return v
}

// identity names the current version of every file the answer depends
// on; "absent" is a version too.
func (c *dconfCache) identity() (string, bool) {
	if c.paths == nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range c.paths {
		fi, err := os.Stat(p)
		if err != nil {
			if !os.IsNotExist(err) {
				return "", false
			}
			fmt.Fprintf(&b, "%s absent\n", p)
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = uint64(st.Ino)
		}
		fmt.Fprintf(&b, "%s %d %d %d\n", p, ino, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), true
}
