package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/source"
)

func skipCmd() *cobra.Command {
	var f flags
	var lsn string
	var xid uint64
	var cancel bool
	cmd := &cobra.Command{
		Use:   "skip",
		Short: "Have the next run skip the transaction the target refused (--lsn), or cancel that (--cancel)",
		Long: `Records on the target that the next decant run skips the source transaction
that commits at --lsn: the commit position printed by the error that stopped
run. Run skips it only if it is the next transaction to apply, and records
the skip (its xid, commit time, tables and number of changes) in
decant.skipped (decant_skipped on MySQL) in the same target transaction that
moves the checkpoint past it; otherwise run stops naming both positions.
--xid checks that the transaction is the one meant. --cancel withdraws a
pending skip. decant status shows a pending skip and the last skipped.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if cancel {
				return cancelSkip(cmd, c, lsn)
			}
			if lsn == "" {
				return usagef("skip needs --lsn, the commit position from the error that stopped run (or --cancel)")
			}
			at, err := source.ParseLSN(lsn)
			if err != nil || at == 0 {
				return usagef("invalid --lsn %q: give the commit position from the error that stopped run, like 0/16B3748", lsn)
			}
			req, err := migrate.RequestSkip(cmd.Context(), c.workflow(nil), at, xid)
			if err != nil {
				return err
			}
			printSkipRequest(cmd, c.Pipeline, req)
			return nil
		},
	}
	addFlags(cmd, &f, false)
	cmd.Flags().StringVar(&lsn, "lsn", "", "skip: the commit position of the transaction to skip, from the error that stopped run")
	cmd.Flags().Uint64Var(&xid, "xid", 0, "skip: the transaction's xid, checked against it (from the same error)")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "skip: withdraw the pending skip")
	return cmd
}

func cancelSkip(cmd *cobra.Command, c config, lsn string) error {
	if lsn != "" {
		return usagef("skip --cancel withdraws the pending skip, whatever its position: leave out --lsn")
	}
	found, err := migrate.CancelSkip(cmd.Context(), c.workflow(nil))
	if err != nil {
		return err
	}
	if !found {
		fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s: no skip was pending\n", c.Pipeline)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "pipeline %s: pending skip cancelled\n", c.Pipeline)
	return nil
}

func printSkipRequest(cmd *cobra.Command, pipeline string, req migrate.SkipRequest) {
	w := cmd.OutOrStdout()
	what := "commit " + req.Commit.String()
	if req.Xid != 0 {
		what += fmt.Sprintf(" (xid %d)", req.Xid)
	}
	fmt.Fprintf(w, "pipeline %s: the next run skips the transaction at %s, if it is the next one to apply\n", pipeline, what)
	switch {
	case req.Error != "":
		fmt.Fprintf(w, "run stopped there on: %s\n", req.Error)
	case req.StoppedElsewhere != 0:
		fmt.Fprintf(w, "note: run last stopped at commit %s, not there; run refuses the skip unless it names the next transaction\n", req.StoppedElsewhere)
	}
}
