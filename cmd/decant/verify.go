package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/apply/verify"
)

func verifyCmd() *cobra.Command {
	var f flags
	o := migrate.DefaultVerifyOptions()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Compare source and target table by table and name the keys that differ",
		Long: `Compares every selected source table with its target table: row counts, and
a hash of every row over spans of the primary key (about --span-rows source
rows each; one span when a key column is text-like, which the two servers
would otherwise sort differently). Values are compared as decant writes
them: columns renamed and left out as configured, each source value
converted as the target writer converts it, then both sides brought to one
normal form, so a PostgreSQL -> MySQL pair compares equal when the data is.

On a PostgreSQL target both servers first count each span and checksum its
rows' text; spans that agree are not read further. The others (every span
on a MySQL target, where only decant can convert values as the writer does)
are streamed from both sides in key order and merged in decant, so the
report names the keys missing on the target, extra on the target, and
different; memory holds one row per side and the listed keys. A table
without a key is compared by row count and a hash of all its rows (a
multiset): the report says whether it differs, not where.

It can run while decant run applies changes: spans that differ are compared
again once the target's checkpoint has reached the source's WAL position
(waiting at most --recheck-wait; at once when the pipeline's slot is not in
use), and only what still differs is reported. Row values other than keys
are never printed.

Exit 0 when every table is equal, 1 with the report when not.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("verify supports PostgreSQL sources only for now")
			}
			if o.Jobs < 1 || o.SpanRows < 1 || o.MaxKeys < 1 {
				return usagef("--jobs, --span-rows and --max-keys must be at least 1")
			}
			rep, err := migrate.Verify(cmd.Context(), c.workflow(logger(c)), o)
			if err != nil {
				return err
			}
			if asJSON {
				if err := printVerifyJSON(os.Stdout, c.Pipeline, rep); err != nil {
					return err
				}
			} else {
				printVerify(os.Stdout, c.Pipeline, rep)
			}
			return rep.Err()
		},
	}
	addFlags(cmd, &f, true)
	addMappingFlags(cmd, &f)
	fs := cmd.Flags()
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "spans compared at once (each holds one session on either side)")
	fs.Int64Var(&o.SpanRows, "span-rows", o.SpanRows, "source rows per span of a table's key")
	fs.IntVar(&o.MaxKeys, "max-keys", o.MaxKeys, "keys listed per table for each of missing, extra and different")
	fs.DurationVar(&o.RecheckWait, "recheck-wait", o.RecheckWait, "how long to wait for the target to catch up before comparing differing spans again (0: compare them again at once)")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}

func printVerifyJSON(w io.Writer, pipeline string, rep *verify.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Pipeline string `json:"pipeline"`
		*verify.Report
	}{pipeline, rep})
}

func printVerify(w io.Writer, pipeline string, rep *verify.Report) {
	fmt.Fprintf(w, "verify of pipeline %s: %s\n", pipeline, rep.Summary())
	for _, t := range rep.Tables {
		if t.Equal {
			fmt.Fprintf(w, "  ok    %s -> %s: %d rows\n", t.Source, t.Target, t.SourceRows)
			continue
		}
		lines := t.Lines()
		fmt.Fprintf(w, "  DIFF  %s\n", lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "          %s\n", l)
		}
	}
}
