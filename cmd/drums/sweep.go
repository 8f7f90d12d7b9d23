//go:build linux

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
)

func init() {
	commands["sweep"] = command{summary: "remove leftovers of crashed sessions (veths, tables, cgroups, processes, dirs)", run: runSweep}
}

func runSweep(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("drums sweep", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(os.Stderr, "Usage: drums sweep [flags]\n\nRemoves every leftover of --prefix that is not a live session: records of dead\nor interrupted sessions, their processes, veths, nftables tables, cgroups,\ndirectories and address claims (in /run/drums/addr). Live sessions and sessions\nbeing created are left alone.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	var ef engineFlags
	ef.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil
	} else if err != nil {
		return badUsage(err)
	}
	e, err := ef.engine()
	if err != nil {
		return err
	}
	rep, err := e.Sweep(ctx)
	if *asJSON {
		if jerr := json.NewEncoder(os.Stdout).Encode(rep); jerr != nil {
			return jerr
		}
	} else if rep.Empty() {
		fmt.Println("nothing to sweep")
	} else {
		for _, l := range []struct {
			what  string
			items []string
		}{{"sessions", rep.Sessions}, {"veths", rep.Veths}, {"nft tables", rep.Tables}, {"cgroups", rep.Cgroups}, {"dirs", rep.Dirs}, {"address claims", rep.Claims}} {
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
