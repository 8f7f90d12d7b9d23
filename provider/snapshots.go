package provider

import (
	"context"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/drums-dev/drums/provider/client"
)

// SaveSnapshot freezes a leased desktop's files (its upper layer) as the
// named snapshot, replacing one of that name. Running processes are not
// saved: a desktop started from the snapshot boots a fresh desktop stack
// over those files. Warm desktops of the old version leave their pools.
func (m *Manager) SaveSnapshot(ctx context.Context, id, name string) (client.Snapshot, error) {
	if err := checkSnapshotName(name); err != nil {
		return client.Snapshot{}, err
	}
	d, err := m.lockLeased(id)
	if err != nil {
		return client.Snapshot{}, err
	}
	defer d.op.Unlock()
	dir, err := m.st.newSnapshotDir(name)
	if err != nil {
		m.mu.Unlock()
		return client.Snapshot{}, err
	}
	m.pending[dir]++ // not collected while the copy runs
	m.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.CreateTimeout)
	err = m.eng.SaveUpper(cctx, d.sess.ID, dir)
	cancel()

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[dir]--; m.pending[dir] <= 0 {
		delete(m.pending, dir)
	}
	if err != nil {
		m.met.failure("snapshot")
		m.gcSnapshotsLocked()
		return client.Snapshot{}, fmt.Errorf("save files of desktop %s as snapshot %s: %w", d.id, name, err)
	}
	rec := snapshotRecord{
		Snapshot: client.Snapshot{Name: name, Source: d.id, Width: d.shape.Width, Height: d.shape.Height, Created: time.Now()},
		Dir:      dir,
	}
	if err := m.st.putSnapshot(rec); err != nil {
		m.met.failure("snapshot")
		m.gcSnapshotsLocked()
		return client.Snapshot{}, err
	}
	m.snaps[name] = rec
	m.drainSnapshotLocked(name)
	m.gcSnapshotsLocked()
	return rec.Snapshot, nil
}

// Snapshots lists the saved snapshots by name.
func (m *Manager) Snapshots() []client.Snapshot {
	m.mu.Lock()
	out := make([]client.Snapshot, 0, len(m.snaps))
	for _, r := range m.snaps {
		out = append(out, r.Snapshot)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DeleteSnapshot forgets a snapshot; deleting one that does not exist
// succeeds. Leased desktops started from it keep its files until released.
func (m *Manager) DeleteSnapshot(name string) error {
	if err := checkSnapshotName(name); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.snaps[name]; !ok {
		return nil
	}
	if err := m.st.deleteSnapshot(name); err != nil {
		return err
	}
	delete(m.snaps, name)
	m.drainSnapshotLocked(name)
	m.gcSnapshotsLocked()
	m.kickFiller()
	return nil
}

// drainSnapshotLocked retires the warm desktops started from an older
// version of the named snapshot; the filler starts new ones if the pool
// stays.
func (m *Manager) drainSnapshotLocked(name string) {
	cur := m.snaps[name].Dir
	for s, p := range m.pools {
		if s.Snapshot != name {
			continue
		}
		keep := p.ready[:0]
		for _, d := range p.ready {
			if d.snapDir == cur {
				keep = append(keep, d)
			} else {
				m.retireLocked(d)
			}
		}
		p.ready = keep
	}
	m.kickFiller()
}

// gcSnapshotsLocked removes, in the background, snapshot directories that
// no snapshot, desktop or start in flight uses. A directory once unused is
// never used again (new saves get new directories), so the removal can run
// without the lock.
func (m *Manager) gcSnapshotsLocked() {
	dirs, err := m.st.snapshotDirs()
	if err != nil {
		m.log.Warn("collect snapshot data", "err", err)
		return
	}
	used := map[string]bool{}
	for _, r := range m.snaps {
		used[r.Dir] = true
	}
	for _, d := range m.desktops {
		used[d.snapDir] = true
	}
	for dir := range m.pending {
		used[dir] = true
	}
	var unused []string
	for _, dir := range dirs {
		if !used[dir] {
			unused = append(unused, dir)
		}
	}
	if len(unused) == 0 {
		return
	}
	m.bg.Add(1)
	go func() {
		defer m.bg.Done()
		for _, dir := range unused {
			if err := os.RemoveAll(dir); err != nil {
				m.log.Warn("remove unused snapshot data", "dir", dir, "err", err)
			}
		}
	}()
}
