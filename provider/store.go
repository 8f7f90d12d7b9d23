package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drums-dev/drums/provider/client"
)

// store keeps what the daemon owns on disk, one small JSON file per object,
// so that a daemon killed at any instant leaves a state the next one can
// adopt:
//
//	STATE/lock                        flock held by the running daemon
//	STATE/desktops/ID.json            a leased or warm desktop
//	STATE/snapshots/NAME.json         a snapshot's record
//	STATE/snapshots/data/NAME-RAND/   its files (an upper layer)
//
// Files are replaced by rename, so a reader sees the old or the new record,
// never half of one. There is no fsync: the records must survive the
// daemon's death (the page cache does), not the machine's, since desktops do
// not survive a reboot either.
type store struct {
	dir string
}

// desktopRecord is a desktop as persisted. Only leased and ready desktops
// have one; a desktop being created or recycled when the daemon dies is
// removed by the next one.
type desktopRecord struct {
	// ID is the API's id of the desktop (a new one each time it is handed
	// out); Session the engine's, which names the record's file.
	ID           string    `json:"id"`
	Session      string    `json:"session"`
	Shape        Shape     `json:"shape"`
	SnapshotDir  string    `json:"snapshot_dir,omitempty"`
	State        string    `json:"state"`
	Created      time.Time `json:"created"`
	LeaseExpires time.Time `json:"lease_expires,omitzero"`
	LeaseSeconds int       `json:"lease_seconds,omitempty"`
	Holder       string    `json:"holder,omitempty"`
	Takeover     bool      `json:"takeover,omitempty"`
}

// snapshotRecord is a snapshot as persisted: its API view and its files.
type snapshotRecord struct {
	client.Snapshot
	Dir string `json:"dir"`
}

func (s *store) desktopsDir() string  { return filepath.Join(s.dir, "desktops") }
func (s *store) snapshotsDir() string { return filepath.Join(s.dir, "snapshots") }
func (s *store) dataDir() string      { return filepath.Join(s.dir, "snapshots", "data") }

func (s *store) init() error {
	for _, d := range []string{s.dir, s.desktopsDir(), s.snapshotsDir(), s.dataDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create state directory %s: %w", d, err)
		}
	}
	return nil
}

// removeTemps removes the temporary files of writes a killed daemon left
// half done (writeJSON's, before their rename). Call with the state lock
// held: then no write is in flight.
func (s *store) removeTemps() error {
	var errs []error
	for _, d := range []string{s.desktopsDir(), s.snapshotsDir()} {
		tmps, _ := filepath.Glob(filepath.Join(d, ".tmp-*"))
		for _, t := range tmps {
			if err := os.Remove(t); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove %s: %w", t, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (s *store) desktopPath(id string) string {
	return filepath.Join(s.desktopsDir(), url.PathEscape(id)+".json")
}

func (s *store) putDesktop(r desktopRecord) error {
	return writeJSON(s.desktopPath(r.Session), r)
}

// DefaultStateDir is the daemon's state directory for an engine's state
// directory and prefix, when --provider-dir does not say.
func DefaultStateDir(engineStateDir, prefix string) string {
	return filepath.Join(engineStateDir, "provider-"+prefix)
}

// ForgetDesktops removes the daemon's records of sessions that are gone
// (drums sweep removed them) from the state directory dir, and returns the
// files it removed.
func ForgetDesktops(dir string, sessions []string) ([]string, error) {
	s := store{dir: dir}
	var removed []string
	var errs []error
	for _, id := range sessions {
		path := s.desktopPath(id)
		switch err := os.Remove(path); {
		case err == nil:
			removed = append(removed, path)
		case !errors.Is(err, fs.ErrNotExist):
			errs = append(errs, fmt.Errorf("remove record of desktop %s: %w", id, err))
		}
	}
	return removed, errors.Join(errs...)
}

// deleteDesktop removes the record of the engine's session id.
func (s *store) deleteDesktop(id string) error {
	if err := os.Remove(s.desktopPath(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record of desktop %s: %w", id, err)
	}
	return nil
}

func (s *store) desktops() ([]desktopRecord, error) {
	var out []desktopRecord
	err := readAll(s.desktopsDir(), func(b []byte) error {
		var r desktopRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func (s *store) putSnapshot(r snapshotRecord) error {
	return writeJSON(filepath.Join(s.snapshotsDir(), r.Name+".json"), r)
}

func (s *store) deleteSnapshot(name string) error {
	if err := os.Remove(filepath.Join(s.snapshotsDir(), name+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove record of snapshot %s: %w", name, err)
	}
	return nil
}

func (s *store) snapshots() ([]snapshotRecord, error) {
	var out []snapshotRecord
	err := readAll(s.snapshotsDir(), func(b []byte) error {
		var r snapshotRecord
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// newSnapshotDir names a fresh directory for a snapshot's files; a name saved
// again gets a new directory, so desktops started from the old files keep
// them until they are gone.
func (s *store) newSnapshotDir(name string) (string, error) {
	d, err := os.MkdirTemp(s.dataDir(), name+"-")
	if err != nil {
		return "", fmt.Errorf("create directory for snapshot %s: %w", name, err)
	}
	return d, nil
}

// snapshotDirs lists every directory under data/.
func (s *store) snapshotDirs() ([]string, error) {
	ents, err := os.ReadDir(s.dataDir())
	if err != nil {
		return nil, fmt.Errorf("list snapshot data: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(s.dataDir(), e.Name()))
		}
	}
	return out, nil
}

// readAll calls fn with the contents of every *.json file in dir. A record
// that cannot be parsed (a disk filled mid-write before rename is impossible,
// but a person may edit them) is an error naming the file.
func readAll(dir string, fn func([]byte) error) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read record %s: %w", p, err)
		}
		if err := fn(b); err != nil {
			return fmt.Errorf("parse record %s: %w", p, err)
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("write record %s: %w", path, err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write record %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write record %s: %w", path, err)
	}
	return nil
}
