//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/drums-dev/drums/provider"
	"github.com/drums-dev/drums/sessions"
)

func init() {
	commands["sweep"] = command{summary: "remove leftovers of crashed sessions (veths, tables, cgroups, processes, dirs)", run: runSweep}
}

func runSweep(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("drums sweep", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, "Usage: drums sweep [flags]\n\nRemoves every leftover of --prefix that is not a live session: records of dead\nor interrupted sessions, their processes, veths, nftables tables, cgroups,\ndirectories and address claims (in /run/drums/addr). Live sessions and sessions\nbeing created are left alone, and so are dead sessions a running daemon keeps\nclaimed for a lease. The daemon's records of the sessions it removed go too\n(--provider-dir).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var ef engineFlags
	ef.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	providerDir := fs.String("provider-dir", "", "the daemon's records, as drums serve --provider-dir (default STATE-DIR/provider-PREFIX)")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return err
	}
	cfg, err := ef.config()
	if err != nil {
		return err
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	if *providerDir == "" {
		*providerDir = provider.DefaultStateDir(cfg.StateDir, cfg.Prefix)
	}
	rep, err := e.Sweep(ctx)
	records, rerr := provider.ForgetDesktops(*providerDir, rep.Sessions)
	err = errors.Join(err, rerr)
	if *asJSON {
		out := struct {
			sessions.SweepReport
			Records []string `json:"records"` // the daemon's records of removed sessions
		}{rep, records}
		if jerr := json.NewEncoder(os.Stdout).Encode(out); jerr != nil {
			return jerr
		}
	} else if rep.Empty() && len(records) == 0 {
		fmt.Println("nothing to sweep")
	} else {
		for _, l := range []struct {
			what  string
			items []string
		}{{"sessions", rep.Sessions}, {"veths", rep.Veths}, {"nft tables", rep.Tables}, {"cgroups", rep.Cgroups}, {"dirs", rep.Dirs}, {"address claims", rep.Claims}, {"daemon records", records}} {
			if len(l.items) > 0 {
				fmt.Printf("%s: %v\n", l.what, l.items)
			}
		}
		if len(rep.Processes) > 0 {
			fmt.Printf("processes: %v\n", rep.Processes)
		}
	}
	return err
}
