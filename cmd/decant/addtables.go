package main

import (
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/source"
)

func addTablesCmd() *cobra.Command {
	var f flags
	var o initOptions
	cmd := &cobra.Command{
		Use:   "add-tables LIST",
		Short: "Add tables to an initialized pipeline with their rows, while run streams or not",
		Long: `Adds the source tables LIST names (a comma list of schema.table patterns, '*'
matches any run of characters) to an initialized pipeline, with their rows,
whether decant run is running or not. For each table it records the state
'copying' on the target (decant.table_sync, decant_table_sync on MySQL),
adds it to the pipeline's publication (a keyless table named by
--append-only to the append-only one, as init does; other keyless tables
are refused), creates it on the target with --create-tables, then empties
the target table and copies the source rows under the exported snapshot of
a temporary slot, consistent at a position S, and records 'ready' with S.

A running decant run waits at the first change to a table still copying
(it says so in a log line, and holds the changes after it back with it; it
does not spool them) and goes on once the table is ready: of the table's
changes it drops those committed before S, which the copy holds, and
applies the later ones, once. The other tables stream until then.

An interrupted add-tables leaves its tables 'copying', and run waits for
them: run add-tables again, it copies them again from a new snapshot.
Tables the pipeline replicates already are left as they are.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.load(cmd)
			if err != nil {
				return err
			}
			if c.gaussSource() {
				return usagef("add-tables supports PostgreSQL sources only for now")
			}
			opts, err := o.addOptions(args[0])
			if err != nil {
				return err
			}
			log := logger(c)
			opts.Progress = newCopyProgress(log, nil)
			res, err := migrate.AddTables(cmd.Context(), c.workflow(log), opts)
			if err != nil {
				return err
			}
			printAddTables(os.Stdout, c.Pipeline, res)
			return nil
		},
	}
	addFlags(cmd, &f, false)
	addMappingFlags(cmd, &f)
	fs := cmd.Flags()
	fs.BoolVar(&o.create, "create-tables", false, "create missing target tables from the source catalog (mapped types, keys, indexes)")
	fs.Var((*tableFlag)(&o.appendOnly), "append-only", "comma list of schema.table patterns among LIST: keyless tables whose rows are only inserted, published for inserts and truncates only")
	fs.IntVar(&o.jobs, "jobs", runtime.NumCPU(), "parallel copy workers (tables, and ranges of large tables)")
	fs.StringVar(&o.splitSize, "split-size", "64MiB", "copy tables larger than this in block ranges of about this size, in parallel")
	return cmd
}

// addOptions checks add-tables' list and flags before anything connects.
func (o initOptions) addOptions(list string) (migrate.AddTablesOptions, error) {
	var opts migrate.AddTablesOptions
	var err error
	if opts.Tables, err = source.ParseTableFilter(list); err != nil || opts.Tables.Empty() {
		return opts, usagef("add-tables LIST: give a comma list of schema.table patterns, like public.orders,public.items")
	}
	if opts.AppendOnly, err = source.ParseTableFilter(string(o.appendOnly)); err != nil {
		return opts, usagef("--append-only: %v", err)
	}
	if o.jobs < 1 {
		return opts, usagef("invalid --jobs %d: give at least 1", o.jobs)
	}
	n, err := parseBytes(o.splitSize)
	if err != nil || n < migrate.MinSplitBytes {
		return opts, usagef("invalid --split-size %q: give a size of at least 64KiB, like 64MiB or 1GiB", o.splitSize)
	}
	opts.CreateTables, opts.Jobs, opts.SplitBytes = o.create, o.jobs, int64(n)
	return opts, nil
}

// printAddTables says what add-tables did.
func printAddTables(w io.Writer, pipeline string, r migrate.AddTablesResult) {
	for _, t := range r.Already {
		fmt.Fprintf(w, "pipeline %s: %s is replicated already; left as it is\n", pipeline, t)
	}
	if len(r.Added) == 0 {
		return
	}
	fmt.Fprintf(w, "pipeline %s: added %d table(s), %d rows copied as of %s; the stream applies their later changes\n", pipeline, len(r.Added), r.Rows, r.AsOf)
	for _, t := range r.Added {
		fmt.Fprintf(w, "  ready  %s\n", t)
	}
}
