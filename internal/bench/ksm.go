package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ksmfs is the host's kernel same-page merging: its controls and counters
// in /sys/kernel/mm/ksm (dir; tests lay out a fake one). The controls are
// host-global: the density part sets them for its own measurement only
// and puts back what it found (KSMSettings.restore), also when it fails or
// is interrupted.
type ksmfs struct{ dir string }

// KSMCounters are ksmd's counters (Documentation/admin-guide/mm/ksm.rst):
// PagesShared pages are in use as merged pages, PagesSharing more pages
// map them (the memory saved, in pages), FullScans counts ksmd's passes
// over all marked memory; GeneralProfit is the kernel's estimate of the
// bytes saved less the cost of its own metadata.
type KSMCounters struct {
	PagesShared   int64 `json:"pages_shared"`
	PagesSharing  int64 `json:"pages_sharing"`
	PagesUnshared int64 `json:"pages_unshared"`
	FullScans     int64 `json:"full_scans"`
	GeneralProfit int64 `json:"general_profit_bytes"`
}

// ksmControls are the files the density part writes, in the order it
// writes them: the rate first, run last (so that ksmd starts at the rate
// it is given); restore writes them back in the reverse order.
var ksmControls = []string{"sleep_millisecs", "pages_to_scan", "run"}

// KSMSettings are the values of ksmControls, by name.
type KSMSettings map[string]string

func (k ksmfs) read(name string) (string, error) {
	data, err := os.ReadFile(filepath.Join(k.dir, name))
	if err != nil {
		return "", fmt.Errorf("read ksm %s: %w", name, err)
	}
	return strings.TrimSpace(string(data)), nil
}

func (k ksmfs) readInt(name string) (int64, error) {
	s, err := k.read(name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse ksm %s %q: %w", name, s, err)
	}
	return v, nil
}

func (k ksmfs) write(name, value string) error {
	if err := os.WriteFile(filepath.Join(k.dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("set ksm %s to %s: %w", name, value, err)
	}
	return nil
}

// counters reads ksmd's counters.
func (k ksmfs) counters() (KSMCounters, error) {
	var c KSMCounters
	for _, f := range []struct {
		name string
		v    *int64
	}{{"pages_shared", &c.PagesShared}, {"pages_sharing", &c.PagesSharing}, {"pages_unshared", &c.PagesUnshared},
		{"full_scans", &c.FullScans}, {"general_profit", &c.GeneralProfit}} {
		v, err := k.readInt(f.name)
		if err != nil {
			return KSMCounters{}, err
		}
		*f.v = v
	}
	return c, nil
}

// settings reads the controls the density part may change.
func (k ksmfs) settings() (KSMSettings, error) {
	s := KSMSettings{}
	for _, name := range ksmControls {
		v, err := k.read(name)
		if err != nil {
			return nil, err
		}
		s[name] = v
	}
	return s, nil
}

// start runs ksmd at pagesToScan pages every sleep, and returns what it
// found, for restore. If a write fails, what was written is put back.
func (k ksmfs) start(pagesToScan int, sleep time.Duration) (KSMSettings, error) {
	was, err := k.settings()
	if err != nil {
		return nil, err
	}
	want := KSMSettings{"sleep_millisecs": strconv.FormatInt(sleep.Milliseconds(), 10), "pages_to_scan": strconv.Itoa(pagesToScan), "run": "1"}
	for _, name := range ksmControls {
		if err := k.write(name, want[name]); err != nil {
			return nil, errors.Join(err, k.restore(was))
		}
	}
	return was, nil
}

// restore writes back the controls as they were, run first (so that ksmd
// stops before its rate changes). Pages merged meanwhile stay merged until
// written to or freed (run=2 would unmerge them; the desktops that hold
// them are removed after).
func (k ksmfs) restore(was KSMSettings) error {
	var errs []error
	for i := len(ksmControls) - 1; i >= 0; i-- {
		name := ksmControls[i]
		if v, ok := was[name]; ok {
			errs = append(errs, k.write(name, v))
		}
	}
	return errors.Join(errs...)
}

// ksmdPID finds ksmd, the kernel thread that scans and merges: a kernel
// thread keeps its pid until the host reboots, so once is enough.
func (p procfs) ksmdPID() (int, error) {
	ents, err := os.ReadDir(p.root)
	if err != nil {
		return 0, fmt.Errorf("find ksmd: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(p.root, e.Name(), "comm"))
		if err == nil && strings.TrimSpace(string(comm)) == "ksmd" {
			return pid, nil
		}
	}
	return 0, errors.New("no ksmd thread in /proc (a kernel without CONFIG_KSM?)")
}

// ksmdCPU is the CPU time ksmd (pid, from ksmdPID) has used since boot.
func (p procfs) ksmdCPU(pid int) (time.Duration, error) {
	st, err := p.stat(pid)
	if err != nil {
		return 0, fmt.Errorf("ksmd's cpu time: %w", err)
	}
	return st.CPU, nil
}
