package sessions

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/drums-dev/drums/internal/treecopy"
)

// SaveUpper copies the session's upper layer (every file it wrote, deleted
// or made opaque) into dir, which must not exist or be empty. The session
// is frozen meanwhile, so the copy is consistent; a Request.Snapshot of dir
// starts a session from it.
func (e *Engine) SaveUpper(ctx context.Context, id, dir string) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("save upper layer to %s: not empty: %w", dir, ErrBadRequest)
	}
	rec, lk, err := e.ready(ctx, id)
	if err != nil {
		return err
	}
	defer lk.unlock()
	src := rec.Plan.Root.UpperDir
	if src == "" {
		src = fmt.Sprintf("/proc/%d/fd/%d/upper", rec.Session.InitPID, rec.UpperFD)
	}
	// The freeze has a deadline: a copy that outlasts FreezeLimit is
	// abandoned. If this process dies meanwhile, the session stays frozen
	// until the next holder of its lock thaws it (thawOrphan).
	fctx, cancelFreeze := context.WithTimeout(ctx, e.cfg.FreezeLimit)
	defer cancelFreeze()
	err = freeze(fctx, rec.Plan.Cgroup, true)
	if err == nil {
		err = treecopy.Copy(fctx, src, dir, treecopy.Unshift(rec.Plan.IDs.Host, rec.Plan.IDs.Size))
	}
	cctx, cancel := cleanupContext()
	defer cancel()
	return errors.Join(err, freeze(cctx, rec.Plan.Cgroup, false))
}

// thawOrphan thaws a session that a SaveUpper left frozen when its process
// died (the kernel keeps a freezer's state; nobody else would undo it). The
// caller holds the session's lock, which SaveUpper holds while frozen, so
// a frozen session found then has no live freezer. A session without a
// cgroup is success.
func (e *Engine) thawOrphan(ctx context.Context, rec *record) error {
	cg := e.facts.cgroups.plan(rec.Session.ID, Limits{})
	if rec.Plan != nil {
		cg = rec.Plan.Cgroup
	}
	frozen, err := isFrozen(cg)
	if err != nil || !frozen {
		return err
	}
	e.log.Warn("session left frozen by a process that died: thawing it", "id", rec.Session.ID)
	return freeze(ctx, cg, false)
}
