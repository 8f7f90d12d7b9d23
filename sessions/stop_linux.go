package sessions

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// reap waits for an init this process started, so it never stays a zombie,
// and returns a channel closed once it is reaped.
func (e *Engine) reap(cmd *exec.Cmd) chan struct{} {
	pid := cmd.Process.Pid
	e.mu.Lock()
	defer e.mu.Unlock()
	if ch, ok := e.children[pid]; ok {
		return ch
	}
	ch := make(chan struct{})
	e.children[pid] = ch
	go func() {
		cmd.Wait()
		e.mu.Lock()
		delete(e.children, pid)
		e.mu.Unlock()
		close(ch)
	}()
	return ch
}

// stopInit kills a session's init and waits until it is gone; with it go
// every process, mount and the network namespace of the session. The pid is
// trusted only while its start time matches the record. meanwhile runs
// while the kernel tears the namespaces down (deleting the host veth then
// overlaps the processes' deaths instead of following them).
func (e *Engine) stopInit(ctx context.Context, pid int, start uint64, meanwhile ...func() error) error {
	fd, err := killInit(pid, start)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range meanwhile {
		errs = append(errs, f())
	}
	if fd >= 0 {
		errs = append(errs, e.waitInit(ctx, pid, fd))
		unix.Close(fd)
	}
	return errors.Join(errs...)
}

// killInit sends SIGKILL to init and returns a pidfd to wait on, or -1 when
// the process is already gone (or the pid is another process's now).
func killInit(pid int, start uint64) (int, error) {
	if pid <= 0 {
		return -1, nil
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return -1, nil
	}
	if err != nil {
		return -1, fmt.Errorf("open init %d: %w", pid, err)
	}
	if s, _ := procStart(pid); s != start { // the pidfd pins the process: check it is init
		unix.Close(fd)
		return -1, nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		unix.Close(fd)
		return -1, fmt.Errorf("kill init %d: %w", pid, err)
	}
	return fd, nil
}

// waitInit waits until the pidfd of a killed init is readable, which for a
// PID namespace's init is after every other process in it is gone, and for
// an init this process started until it is reaped (so it has left its
// cgroups).
func (e *Engine) waitInit(ctx context.Context, pid, fd int) error {
	for {
		// The timeout only lets ctx be checked; the wait is for the pidfd.
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 50)
		if n > 0 {
			break
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("wait for init %d: %w", pid, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for init %d: %w", pid, ctx.Err())
		}
	}
	e.mu.Lock()
	ch := e.children[pid]
	e.mu.Unlock()
	if ch != nil {
		<-ch
	}
	return nil
}

// teardown removes everything of a session but its directory: init (and so
// its processes, mounts and namespaces), the host veth, the nftables table
// and the cgroups. Absent things are success.
func (e *Engine) teardown(ctx context.Context, rec *record) error {
	var errs []error
	veth := hostVeth(e.cfg.Prefix, rec.Session.Slot)
	recorded := rec.initAlive()
	// A frozen session's processes die of SIGKILL only once thawed (cgroup
	// v1's freezer): thaw it after the kill.
	errs = append(errs, e.stopInit(ctx, rec.Session.InitPID, rec.InitStart,
		func() error { return deleteLink(veth) }, func() error { return e.thawOrphan(ctx, rec) }))
	if rec.Standby != nil { // another process's standby (this one's was dropped)
		errs = append(errs, e.stopInit(ctx, rec.Standby.PID, rec.Standby.Start))
	}
	if !recorded {
		// The record names no running init: its creator may have died
		// between starting one and recording it. Find it by command line.
		for _, pid := range findInits(e.cfg.Prefix)[rec.Session.ID] {
			start, _ := procStart(pid)
			errs = append(errs, e.stopInit(ctx, pid, start))
		}
	}
	errs = append(errs, e.teardownSlot(ctx, rec.Session.Slot, rec.Session.ID))
	addr := sessionAddr(e.cfg.Network, rec.Session.Slot)
	if rec.Plan != nil {
		addr = rec.Plan.Net.Address
	}
	// The host's sockets to the address die with it, before the address
	// can go to another session: a client's kept-alive connection then
	// fails at once instead of reaching the next desktop there.
	if err := destroySockets(addr.Addr()); err != nil && !errors.Is(err, errNoSockDestroy) {
		errs = append(errs, err)
	}
	// init is gone, and with it its hold on the claims; this process lets
	// go of its own (whose keys it knows even when the record has no plan).
	addrK, idsK := addrKey(addr), ""
	if rec.Plan != nil {
		idsK = idKey(rec.Plan.IDs.Host)
	}
	if a, i, ok := e.letGo(rec.Session.ID); ok {
		addrK, idsK = a, i
	}
	errs = append(errs, releaseClaims(addrK, idsK))
	return errors.Join(errs...)
}

// teardownSlot removes the host-global state named after a slot and id.
func (e *Engine) teardownSlot(ctx context.Context, slot int, id string) error {
	var errs []error
	errs = append(errs, deleteLink(hostVeth(e.cfg.Prefix, slot)))
	if nft, err := nftables.New(); err != nil {
		errs = append(errs, fmt.Errorf("nftables: %w", err))
	} else {
		errs = append(errs, deleteTable(nft, tableName(e.cfg.Prefix, slot)))
	}
	cg := e.facts.cgroups.plan(id, Limits{})
	errs = append(errs, removeCgroup(ctx, cg), removeCgroup(ctx, otherIncarnation(&Plan{Cgroup: cg}).Cgroup))
	return errors.Join(errs...)
}

// sessionAddr is the session address of slot.
func sessionAddr(network netip.Prefix, slot int) netip.Prefix {
	_, addr := slotAddrs(network, slot)
	return addr
}
