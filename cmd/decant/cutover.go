package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
)

func cutoverCmd() *cobra.Command {
	var f flags
	var w webhookFlags
	var timeout time.Duration
	var verify, asJSON bool
	cmd := &cobra.Command{
		Use:   "cutover",
		Short: "Say whether it is safe to switch to the target: fence, catch-up, sequences, verify",
		Long: `Run while decant run applies the pipeline. Steps, each reported:

  fence      writes a transactional logical decoding message on the source
             and notes the source's WAL position after its commit;
  catch-up   waits until the target's checkpoint has reached that position:
             everything the source committed before the fence is on the
             target;
  sequences  copies each selected table's sequence positions (serial and
             identity columns) to the target: setval on PostgreSQL,
             AUTO_INCREMENT on MySQL, so new rows on the target do not
             collide with copied ones;
  verify     (with --verify) compares source and target as decant verify.

Stop the writers on the source before the fence for a clean switch: what
they commit after it is not covered. Exit 0 only when every step passed;
1 otherwise, with the report.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("cutover supports PostgreSQL sources only for now")
			}
			log := logger(c)
			n, err := startNotifier(cmd.Context(), c, w, log)
			if err != nil {
				return err
			}
			defer stopNotifier(cmd.Context(), n, log)
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r, err := migrate.Cutover(ctx, c.workflow(log), migrate.CutoverOptions{Verify: verify, VerifyOptions: migrate.DefaultVerifyOptions()})
			if err != nil {
				n.Cutover(false, "cutover could not finish: "+err.Error())
				return err
			}
			if err := printCutover(os.Stdout, r, asJSON); err != nil {
				return err
			}
			if !r.OK {
				n.Cutover(false, "cutover is not safe: "+r.Failed())
				return errors.New("cutover is not safe: " + r.Failed())
			}
			n.Cutover(true, "safe to switch: the target holds everything committed on the source before the fence")
			return nil
		},
	}
	addFlags(cmd, &f, true)
	addMappingFlags(cmd, &f)
	addWebhookFlags(cmd, &w)
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up (exit 1) if the steps do not finish within this time")
	cmd.Flags().BoolVar(&verify, "verify", false, "also compare source and target table by table")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

// printCutover prints the report, as JSON or as a line per step.
func printCutover(w io.Writer, r *migrate.CutoverReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "cutover of pipeline %s\n", r.Pipeline)
	for _, s := range r.Steps {
		mark := "ok  "
		if !s.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  %s %-10s %6.1fs  %s\n", mark, s.Name, s.Seconds, s.Detail)
		for _, it := range s.Items {
			fmt.Fprintf(w, "                         %s\n", it)
		}
	}
	if r.OK {
		fmt.Fprintln(w, "safe to switch: the target holds everything committed on the source before the fence")
	} else {
		fmt.Fprintln(w, "NOT safe to switch")
	}
	return nil
}
