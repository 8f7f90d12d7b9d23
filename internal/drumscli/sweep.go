//go:build linux

package drumscli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/drums-dev/drums/sessions"
)

// sweepConfig is the configuration of `drums sweep`.
type sweepConfig struct {
	Engine sessions.Config
	JSON   bool
}

func parseSweep(args []string, stderr io.Writer) (sweepConfig, error) {
	var cfg sweepConfig
	fs := newFlags("drums sweep", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage: drums sweep [flags]\n\nRemoves every leftover of --prefix that is not a live session: records of dead\nor interrupted sessions, their processes, veths, nftables tables, cgroups,\ndirectories and address claims (in /run/drums/addr). Live sessions and sessions\nbeing created are left alone.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var ef engineFlags
	ef.register(fs)
	fs.BoolVar(&cfg.JSON, "json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	var err error
	cfg.Engine, err = ef.config(stderr)
	return cfg, err
}

func runSweep(ctx context.Context, cfg sweepConfig, s stdio) error {
	e, err := sessions.New(cfg.Engine)
	if err != nil {
		return err
	}
	rep, err := e.Sweep(ctx)
	if cfg.JSON {
		if jerr := json.NewEncoder(s.out).Encode(rep); jerr != nil {
			return jerr
		}
	} else if rep.Empty() {
		fmt.Fprintln(s.out, "nothing to sweep")
	} else {
		for _, l := range []struct {
			what  string
			items []string
		}{{"sessions", rep.Sessions}, {"veths", rep.Veths}, {"nft tables", rep.Tables}, {"cgroups", rep.Cgroups}, {"dirs", rep.Dirs}, {"address claims", rep.Claims}} {
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
