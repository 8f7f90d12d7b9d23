package bench

import (
	"context"
	"io"

	"github.com/drums-dev/drums/compat"
)

// sessionDesktop is compat's desktop (guestd, and main.py beside it unless
// the tree is zero) with its CPU time read from its cgroups.
type sessionDesktop struct {
	*compat.SessionDesktop
	proc procfs
}

// NewSessionDesktop brings up one desktop of the latency and step parts
// through compat (see compat.NewSessionDesktop); a zero tree makes one
// with guestd alone.
func NewSessionDesktop(ctx context.Context, eng compat.SessionEngine, tree compat.UpstreamTree, log io.Writer) (Desktop, error) {
	d, err := compat.NewSessionDesktop(ctx, eng, tree, "", log)
	if err != nil {
		return nil, err
	}
	return sessionDesktop{SessionDesktop: d, proc: procfs{"/proc"}}, nil
}

// CPU implements Desktop.
func (d sessionDesktop) CPU() (CPUSample, error) { return d.proc.cpu(d.Session().Plan.Cgroup) }
