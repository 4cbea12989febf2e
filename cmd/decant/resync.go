package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/source"
)

func resyncCmd() *cobra.Command {
	var f flags
	var yes bool
	var cpuProfile string
	o := migrate.DefaultResyncOptions()
	cmd := &cobra.Command{
		Use:   "resync",
		Short: "Repair a diverged target or one whose slot was lost, from a new slot's snapshot",
		Long: `Brings the target of an initialized pipeline back to exactly the source and
lets decant run stream on, without copying the tables again: for a slot
that was dropped, made again, invalidated or lost in a failover, or a
target that diverged (restored from a backup, rows changed behind decant's
back).

It refuses while decant run uses the slot. It sets the target's checkpoint
to 0/0 (decant run refuses the pipeline until a resync finishes), drops the
pipeline's slot if it still exists (asking first on a terminal; elsewhere
only with --yes), and makes a new one with an exported snapshot. Every
selected table (--tables selects the pipeline's tables, as for init) is
then compared with the source as of that snapshot as decant verify
compares it, span by span, and repaired where it differs: rows only the
target has are deleted, missing rows inserted, differing rows deleted and
inserted again, in batches of --batch rows per target transaction, written
as decant run writes them (renames, exclusions, conversions). A table
without a key is repaired as a multiset, one duplicate at a time. Last, the
checkpoint is set to the new slot's consistent point, from which decant run
streams on.

An interrupted resync leaves the checkpoint at 0/0: run decant resync
again (with --yes, as it drops the slot the interrupted one made); it
starts over from a new snapshot, and the tables it already repaired cost
one comparison each.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("resync supports PostgreSQL sources only for now")
			}
			if o.Jobs < 1 || o.SpanRows < 1 || o.Batch < 1 {
				return usagef("--jobs, --span-rows and --batch must be at least 1")
			}
			stop, err := startCPUProfile(cpuProfile)
			if err != nil {
				return err
			}
			log := logger(c)
			o.Confirm = confirmDrop(yes, c.Pipeline)
			o.Progress = newResyncProgress(log)
			res, err := migrate.Resync(cmd.Context(), c.workflow(log), o)
			if perr := stop(); err == nil {
				err = perr
			}
			if err != nil {
				return err
			}
			printResync(os.Stdout, c.Pipeline, res)
			return nil
		},
	}
	addFlags(cmd, &f, true)
	addMappingFlags(cmd, &f)
	fs := cmd.Flags()
	fs.BoolVar(&yes, "yes", false, "drop the pipeline's existing slot without asking")
	fs.IntVar(&o.Jobs, "jobs", o.Jobs, "spans compared and repaired at once (each holds sessions on either side)")
	fs.Int64Var(&o.SpanRows, "span-rows", o.SpanRows, "source rows per span of a table's key (an equal span costs one checksum)")
	fs.IntVar(&o.Batch, "batch", o.Batch, "rows repaired per target transaction")
	fs.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the resync to this file (Go pprof format, for go tool pprof)")
	return cmd
}

// confirmDrop answers resync's question before it drops an existing slot:
// yes with --yes, else the answer typed on a terminal, else no.
func confirmDrop(yes bool, pipeline string) func(source.SlotStatus) (bool, error) {
	return func(slot source.SlotStatus) (bool, error) {
		if yes {
			return true, nil
		}
		if !term.IsTerminal(int(os.Stdin.Fd())) {
			return false, nil
		}
		fmt.Fprintf(os.Stderr, "slot %s exists (confirmed %s): drop it and repair the target from a new one? [y/N] ", pipeline, slot.Confirmed)
		return readYes(os.Stdin)
	}
}

// readYes reads one line and reports whether it says yes.
func readYes(r io.Reader) (bool, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return false, err
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes", nil
}

// printResync says what resync did, in one line per table that differed.
func printResync(w io.Writer, pipeline string, r migrate.ResyncResult) {
	fmt.Fprintf(w, "resync of pipeline %s: %s; repaired in %.1fs, checkpoint at %s\n", pipeline, r.Report.Summary(), r.Elapsed.Seconds(), r.Checkpoint.End)
	for _, t := range r.Report.Differing() {
		fmt.Fprintf(w, "  repaired  %s\n", t.Lines()[0])
	}
}
