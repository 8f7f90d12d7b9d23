package sessions

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Ended returns a channel closed once the session's init has exited: the
// session is dead (init ends it when an essential process of the desktop,
// Xvfb or guestd say, dies). It waits on a pidfd through the runtime's
// poller, so a watched session costs a goroutine, not a thread. A session
// whose init is already gone gets a closed channel.
func (e *Engine) Ended(id string) (<-chan struct{}, error) {
	rec, err := e.recordOf(id)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	pid := rec.Session.InitPID
	if pid <= 0 {
		close(ch)
		return ch, nil
	}
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		close(ch)
		return ch, nil
	}
	if err != nil {
		return nil, fmt.Errorf("watch init %d of session %s: %w", pid, id, err)
	}
	if s, alive := procStart(pid); !alive || s != rec.InitStart { // the pidfd pins the process: check it is init
		unix.Close(fd)
		close(ch)
		return ch, nil
	}
	// A non-blocking descriptor is registered with the poller; a pidfd
	// reads as ready once its process has exited.
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("watch init %d of session %s: %w", pid, id, err)
	}
	go func() {
		defer close(ch)
		defer f.Close()
		rc.Read(func(fd uintptr) bool {
			n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			return n > 0
		})
	}()
	return ch, nil
}

// heldClaims are a session's claims (its address block and its id range)
// as this engine holds them, beside its init: a session whose init died is
// still claimed until it is removed, so neither its address nor its ids go
// to another session while a client may still hold its lease.
type heldClaims struct {
	addr, ids       *os.File
	addrKey, idsKey string
}

// hold keeps copies of the claims of p's session until takeHeld or drop.
func (e *Engine) hold(p *Plan, addr, ids *os.File) {
	h := heldClaims{addr: addr, ids: ids, addrKey: addrKey(p.Net.Address), idsKey: idKey(p.IDs.Host)}
	e.mu.Lock()
	old, had := e.held[p.ID]
	e.held[p.ID] = h
	e.mu.Unlock()
	if had {
		old.close()
	}
}

// Close lets go of the claims this engine holds, kills the standbys it
// keeps and removes its spares; its sessions run on, held by their inits.
// A program that makes engines and goes on without them (tests, a daemon
// handing over to the next) closes them.
func (e *Engine) Close() {
	e.mu.Lock()
	if !e.closed {
		close(e.closing)
	}
	e.closed = true
	spares := e.spares
	e.spares = nil
	for _, sp := range spares {
		close(sp.gone)
		sp.proc.Kill() // one starting stops at once (its filler waits for it)
	}
	e.sparesChangedLocked()
	e.mu.Unlock()
	e.launching.Wait()
	// The filler is done: what ended and it did not remove is Close's.
	e.mu.Lock()
	for _, x := range e.endedSpares {
		spares = append(spares, x.sp)
	}
	e.endedSpares = nil
	e.mu.Unlock()
	for _, sp := range spares {
		if err := e.dropSpare(sp); err != nil {
			e.log.Warn("spare not removed", "id", sp.rec.Session.ID, "err", err)
		}
	}
	e.mu.Lock()
	standbys := e.standbys
	e.standbys = map[string]*standby{}
	e.mu.Unlock()
	for _, sb := range standbys {
		sb.kill()
	}
	e.mu.Lock()
	held := e.held
	e.held = map[string]heldClaims{}
	e.mu.Unlock()
	for _, h := range held {
		h.close()
	}
}

// holds reports whether this engine holds claims of id.
func (e *Engine) holds(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.held[id]
	return ok
}

// takeHeld hands over the claims this engine holds for id (nil if none),
// for a reset to pass to the new init.
func (e *Engine) takeHeld(id string) (addr, ids *os.File) {
	e.mu.Lock()
	defer e.mu.Unlock()
	h := e.held[id]
	delete(e.held, id)
	return h.addr, h.ids
}

// letGo closes the claims this engine holds for id and returns their keys;
// ok is false when it held none.
func (e *Engine) letGo(id string) (addrKey, idsKey string, ok bool) {
	e.mu.Lock()
	h, ok := e.held[id]
	delete(e.held, id)
	e.mu.Unlock()
	h.close()
	return h.addrKey, h.idsKey, ok
}

// drop lets go of the claims this engine holds for id and removes their
// files if nobody else holds them (the session was removed by another
// process while this one held them, say).
func (e *Engine) drop(id string) error {
	a, i, ok := e.letGo(id)
	if !ok {
		return nil
	}
	return releaseClaims(a, i)
}

// releaseClaims removes a session's address and id claim files if nobody
// holds them; an empty key is skipped.
func releaseClaims(addrKey, idsKey string) error {
	_, err := releaseClaim(AddrClaimDir, addrKey)
	if idsKey != "" {
		_, ierr := releaseClaim(IDClaimDir, idsKey)
		err = errors.Join(err, ierr)
	}
	return err
}

func (h heldClaims) close() {
	for _, f := range []*os.File{h.addr, h.ids} {
		if f != nil {
			f.Close()
		}
	}
}
