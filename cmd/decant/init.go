package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply/migrate"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

func initCmd() *cobra.Command {
	var f flags
	var o initOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Check the source, create the publication, the slot and the target checkpoint",
		Long: `Checks the source (wal_level = logical, the REPLICATION privilege, a free
slot), checks that every selected table exists on the target, creates the
publication for the selected tables and a pgoutput slot, and creates the
checkpoint table on the target with the pipeline's row at the slot's
consistent point. Running it again changes nothing (a changed --tables list
updates the publication).

With --copy, the slot is created with an exported snapshot and every
selected table is copied under it (--jobs workers, large tables in ranges;
with --create-tables, keys and indexes are built after the data), so that
decant run afterwards neither misses nor repeats a row. An interrupted copy
is restarted by running init --copy again. --jobs and --split-size are for
the copy: without --copy they are refused.

With --append-only, the selected tables it names that have no replica
identity are published through a second publication, <pipeline>_append_only,
with publish = 'insert, truncate': their inserts and truncates are
replicated, their UPDATEs and DELETEs keep working on the source and are
not replicated (init warns of each such table). Without it such tables are
refused.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := runInit(cmd, &f, o)
			return err
		},
	}
	addInitFlags(cmd, &f, &o, true)
	return cmd
}

// initOptions are init's own flags.
type initOptions struct {
	create     bool      // --create-tables
	ddl        bool      // --ddl
	copy       bool      // --copy
	jobs       int       // --jobs
	splitSize  string    // --split-size
	appendOnly tableList // --append-only
}

// addInitFlags adds init's flags (copy and migrate, which always copy,
// take all but --copy).
func addInitFlags(cmd *cobra.Command, f *flags, o *initOptions, withCopy bool) {
	addFlags(cmd, f, true)
	addMappingFlags(cmd, f)
	cmd.Flags().BoolVar(&o.create, "create-tables", false, "create missing target tables from the source catalog (mapped types, keys, indexes)")
	cmd.Flags().BoolVar(&o.ddl, "ddl", false, "replicate schema changes: install an event trigger on the source that reports DDL in the stream")
	cmd.Flags().Var((*tableFlag)(&o.appendOnly), "append-only", "comma list of schema.table patterns among --tables: keyless tables whose rows are only inserted, published for inserts and truncates only (their UPDATEs and DELETEs on the source are not replicated)")
	if withCopy {
		cmd.Flags().BoolVar(&o.copy, "copy", false, "copy the selected tables' rows as of the slot's creation (exported snapshot), then stream from there; the target tables must be empty")
	}
	cmd.Flags().IntVar(&o.jobs, "jobs", runtime.NumCPU(), "parallel copy workers (tables, and ranges of large tables)")
	cmd.Flags().StringVar(&o.splitSize, "split-size", "64MiB", "copy tables larger than this in block ranges of about this size, in parallel")
}

// options checks init's flags before anything connects. --jobs and
// --split-size only say how to copy: without a copy they are refused
// rather than ignored, so that a mistyped command does not pass unnoticed.
func (o initOptions) options(cmd *cobra.Command) (migrate.InitOptions, error) {
	opts := migrate.InitOptions{CreateTables: o.create, DDL: o.ddl, Copy: o.copy}
	var err error
	if opts.AppendOnly, err = source.ParseTableFilter(string(o.appendOnly)); err != nil {
		return opts, usagef("--append-only: %v", err)
	}
	if !o.copy {
		for _, name := range []string{"jobs", "split-size"} {
			if cmd.Flags().Changed(name) {
				return opts, usagef("--%s is for the initial copy: add --copy, or leave it out", name)
			}
		}
		return opts, nil
	}
	if o.jobs < 1 {
		return opts, usagef("invalid --jobs %d: give at least 1", o.jobs)
	}
	n, err := parseBytes(o.splitSize)
	if err != nil || n < migrate.MinSplitBytes {
		return opts, usagef("invalid --split-size %q: give a size of at least 64KiB, like 64MiB or 1GiB", o.splitSize)
	}
	opts.Jobs, opts.SplitBytes = o.jobs, int64(n)
	return opts, nil
}

// runInit is init's work, which copy and migrate do too: it loads the
// configuration, initialises the pipeline (copying the tables when
// o.copy is set) and says what it did.
func runInit(cmd *cobra.Command, f *flags, o initOptions) (config, *slog.Logger, error) {
	c, opts, log, err := loadInit(cmd, f, o)
	if err != nil {
		return c, log, err
	}
	_, err = initPipeline(cmd.Context(), c, opts, log)
	return c, log, err
}

// loadInit loads init's configuration and options, and the logger.
func loadInit(cmd *cobra.Command, f *flags, o initOptions) (config, migrate.InitOptions, *slog.Logger, error) {
	c, err := f.load(cmd)
	if err != nil {
		return c, migrate.InitOptions{}, nil, err
	}
	opts, err := o.options(cmd)
	if err != nil {
		return c, opts, nil, err
	}
	if c.gaussSource() && !opts.AppendOnly.Empty() {
		return c, opts, nil, usagef("--append-only is for PostgreSQL sources: a GaussDB or openGauss slot decodes every change of the tables it selects")
	}
	log := logger(c)
	if opts.Copy {
		opts.Progress = newCopyProgress(log, nil)
	}
	return c, opts, log, nil
}

// initPipeline initialises the pipeline (and copies the tables with
// opts.Copy) and says what it did.
func initPipeline(ctx context.Context, c config, opts migrate.InitOptions, log *slog.Logger) (migrate.InitResult, error) {
	initialize := migrate.Init
	if c.gaussSource() {
		initialize = migrate.InitGauss
	}
	res, err := initialize(ctx, c.workflow(log), opts)
	if err != nil {
		return res, err
	}
	printInit(c, res)
	return res, nil
}

// printInit says what init did, in one line.
func printInit(c config, r migrate.InitResult) {
	pos := positionText(r.Checkpoint)
	switch {
	case c.gaussSource() && !r.Changed:
		fmt.Printf("pipeline %s is already initialized (checkpoint %s); nothing to do\n", c.Pipeline, pos)
	case c.gaussSource():
		fmt.Printf("pipeline %s initialized: slot and checkpoint at %s\n", c.Pipeline, pos)
	case !r.Changed:
		fmt.Printf("pipeline %s is already initialized (%d tables, checkpoint %s); nothing to do\n", c.Pipeline, r.Tables, pos)
	default:
		fmt.Printf("pipeline %s initialized: %d tables, slot and checkpoint at %s\n", c.Pipeline, r.Tables, pos)
	}
}

// positionText is a checkpoint's resume position, with its CSN on a
// CSN-ordered GaussDB slot.
func positionText(r checkpoint.Row) string {
	if r.CSN != 0 {
		return fmt.Sprintf("%s (CSN %d)", r.End, r.CSN)
	}
	return r.End.String()
}
