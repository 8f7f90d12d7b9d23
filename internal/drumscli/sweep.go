//go:build linux

package drumscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/drums-dev/drums/provider"
	"github.com/drums-dev/drums/sessions"
)

// sweepConfig is the configuration of `drums sweep`.
type sweepConfig struct {
	Engine      sessions.Config
	JSON        bool
	ProviderDir string // the daemon's records; "" is drums serve's default
}

func parseSweep(args []string, stderr io.Writer) (sweepConfig, error) {
	var cfg sweepConfig
	fs := newFlags("drums sweep", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: drums sweep [flags]\n\nRemoves every leftover of --prefix that is not a live session: records of dead\nor interrupted sessions, their processes, veths, nftables tables, cgroups,\ndirectories and address claims (in /run/drums/addr). Live sessions and sessions\nbeing created are left alone, and so are dead sessions a running daemon keeps\nclaimed for a lease. The daemon's records of the sessions it removed go too\n(--provider-dir).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var ef engineFlags
	ef.register(fs)
	fs.BoolVar(&cfg.JSON, "json", false, "print the report as JSON")
	fs.StringVar(&cfg.ProviderDir, "provider-dir", "", "the daemon's records, as drums serve --provider-dir (default STATE-DIR/provider-PREFIX)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.Engine, err = ef.config(stderr); err != nil {
		return cfg, err
	}
	if cfg.ProviderDir == "" {
		cfg.ProviderDir = provider.DefaultStateDir(cfg.Engine.StateDir, cfg.Engine.Prefix)
	}
	return cfg, nil
}

func runSweep(ctx context.Context, cfg sweepConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	defer e.Close()
	rep, err := e.Sweep(ctx)
	records, rerr := provider.ForgetDesktops(cfg.ProviderDir, rep.Sessions)
	err = errors.Join(err, rerr)
	if cfg.JSON {
		out := struct {
			sessions.SweepReport
			Records []string `json:"records"` // the daemon's records of removed sessions
		}{rep, records}
		if jerr := json.NewEncoder(s.out).Encode(out); jerr != nil {
			return jerr
		}
	} else if rep.Empty() && len(records) == 0 {
		fmt.Fprintln(s.out, "nothing to sweep")
	} else {
		for _, l := range []struct {
			what  string
			items []string
		}{{"sessions", rep.Sessions}, {"veths", rep.Veths}, {"nft tables", rep.Tables}, {"cgroups", rep.Cgroups}, {"dirs", rep.Dirs}, {"address claims", rep.Claims}, {"daemon records", records}} {
			if len(l.items) > 0 {
				fmt.Fprintf(s.out, "%s: %v\n", l.what, l.items)
			}
		}
		if len(rep.Processes) > 0 {
			fmt.Fprintf(s.out, "processes: %v\n", rep.Processes)
		}
	}
	return err
}
