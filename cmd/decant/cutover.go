package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	var reverse string
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
  verify     (with --verify) compares source and target as decant verify;
  reverse    (with --reverse NAME, PostgreSQL to PostgreSQL only) sets up
             pipeline NAME in the other direction, the target as its source
             and the source as its target: its publication and slot on the
             target, created now, after the fence, and its checkpoint on the
             source, so that every write on the new primary from now on
             flows back once decant run applies NAME (with --source and
             --target swapped). Transactions decant applied carry its
             replication origin and are never sent back.

From a GaussDB or openGauss source the steps are fence and catch-up: the
fence is the next CSN with a decode position behind it on a CSN-ordered slot
(enable-decode-position=true), the log end on an LSN-ordered one; sequences,
--verify and --reverse need a PostgreSQL source.

Stop the writers on the source before the fence for a clean switch: what
they commit after it is not covered. Exit 0 only when every step passed;
1 otherwise, with the report.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			log := logger(c)
			n, err := startNotifier(cmd.Context(), c, w, log)
			if err != nil {
				return err
			}
			defer stopNotifier(cmd.Context(), n, log)
			o, err := c.cutoverOptions(cmd.Flags().Changed("reverse"), reverse, verify, log)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			r, err := c.cutover()(ctx, c.workflow(log), o)
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
	cmd.Flags().StringVar(&reverse, "reverse", "", "after a safe cutover, set up pipeline `NAME` from the target back to the source (PostgreSQL only)")
	return cmd
}

// cutover is the workflow for the source's kind.
func (c *config) cutover() func(context.Context, migrate.Config, migrate.CutoverOptions) (*migrate.CutoverReport, error) {
	if c.gaussSource() {
		return migrate.CutoverGauss
	}
	return migrate.Cutover
}

// cutoverOptions are cutover's choices: with reverse, the reverse
// pipeline's configuration.
func (c *config) cutoverOptions(reverse bool, name string, verify bool, log *slog.Logger) (migrate.CutoverOptions, error) {
	o := migrate.CutoverOptions{Verify: verify, VerifyOptions: migrate.DefaultVerifyOptions()}
	if reverse {
		rc, err := c.reversed(name)
		if err != nil {
			return o, err
		}
		w := rc.workflow(log)
		o.Reverse = &w
	}
	return o, nil
}

// reversed is the configuration of pipeline name in the other direction:
// the ends swapped, the same tables under the same names (apply/migrate
// sets them from the forward pipeline's).
func (c *config) reversed(name string) (*config, error) {
	if c.mysqlTarget() {
		return nil, usagef("--reverse: fallback replication is supported between PostgreSQL servers only, and the target is MySQL")
	}
	if name == c.Pipeline {
		return nil, usagef("--reverse %s: the reverse pipeline needs a name of its own, not the forward pipeline's", name)
	}
	r := *c
	r.Source, r.Target, r.Pipeline = c.Target, c.Source, name
	r.Tables, r.Map, r.Columns = "", nil, nil
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("--reverse %s: %w", name, err)
	}
	return &r, nil
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
