package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
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
is restarted by running init --copy again.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := runInit(cmd, &f, o)
			return err
		},
	}
	addInitFlags(cmd, &f, &o, true)
	return cmd
}

// runInit is init's work, which copy and migrate do too: it loads the
// configuration and initialises the pipeline, copying the tables when
// o.copy is set.
func runInit(cmd *cobra.Command, f *flags, o initOptions) (config, *slog.Logger, error) {
	c, err := f.load(cmd)
	if err != nil {
		return c, nil, err
	}
	log := logger(c)
	if c.gaussSource() {
		if o.copy {
			return c, log, usagef("the initial copy needs a PostgreSQL source (an exported snapshot); for GaussDB, copy the tables first, then init and run")
		}
		return c, log, initGauss(cmd.Context(), c, o, log)
	}
	return c, log, initPipeline(cmd.Context(), c, o, log)
}

// addInitFlags adds init's flags (copy and migrate, which always copy,
// take all but --copy).
func addInitFlags(cmd *cobra.Command, f *flags, o *initOptions, withCopy bool) {
	addFlags(cmd, f, true)
	addMappingFlags(cmd, f)
	cmd.Flags().BoolVar(&o.create, "create-tables", false, "create missing target tables from the source catalog (mapped types, keys, indexes)")
	cmd.Flags().BoolVar(&o.ddl, "ddl", false, "replicate schema changes: install an event trigger on the source that reports DDL in the stream")
	addCopyFlags(cmd, o, withCopy)
}

// addCopyFlags adds the initial copy's flags.
func addCopyFlags(cmd *cobra.Command, o *initOptions, withCopy bool) {
	if withCopy {
		cmd.Flags().BoolVar(&o.copy, "copy", false, "copy the selected tables' rows as of the slot's creation (exported snapshot), then stream from there; the target tables must be empty")
	}
	cmd.Flags().IntVar(&o.jobs, "jobs", runtime.NumCPU(), "parallel copy workers (tables, and ranges of large tables)")
	cmd.Flags().StringVar(&o.splitSize, "split-size", "64MiB", "copy tables larger than this in block ranges of about this size, in parallel")
}

// copySplit checks --jobs and --split-size.
func (o initOptions) copySplit() (int64, error) {
	if o.jobs < 1 {
		return 0, usagef("invalid --jobs %d: give at least 1", o.jobs)
	}
	n, err := parseBytes(o.splitSize)
	if err != nil || n < 64<<10 {
		return 0, usagef("invalid --split-size %q: give a size of at least 64KiB, like 64MiB or 1GiB", o.splitSize)
	}
	return int64(n), nil
}

// initOptions are init's own flags.
type initOptions struct {
	create    bool   // --create-tables
	ddl       bool   // --ddl
	copy      bool   // --copy
	jobs      int    // --jobs
	splitSize string // --split-size
}

func initPipeline(ctx context.Context, c config, o initOptions, log *slog.Logger) error {
	if o.copy {
		if _, err := o.copySplit(); err != nil {
			return err
		}
	}
	src, tgt, err := connectBoth(ctx, c)
	if err != nil {
		return err
	}
	defer src.Close(ctx)
	defer func() { tgt.Close(ctx) }()

	if err := pgoutput.CheckServer(ctx, src, c.Pipeline); err != nil {
		return err
	}
	tables, err := pgoutput.SelectTables(ctx, src, c.filter)
	if err != nil {
		return err
	}
	if len(tables) == 0 {
		return fmt.Errorf("no source table matches --tables %q; nothing to replicate", c.filter)
	}
	names, created, err := checkTables(ctx, c, src, tgt, tables, o, log)
	if err != nil {
		return err
	}

	stored, err := tgt.ReadCheckpoint(ctx, c.Pipeline)
	hasRow := err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	slot, err := pgoutput.ReadSlot(ctx, src, c.Pipeline)
	if err != nil {
		return err
	}
	if hasRow && !slot.Exists {
		return fmt.Errorf("the target holds a checkpoint for pipeline %s at %s but slot %s is missing on the source, so changes after it are lost: run decant drop --yes, then init again and recopy the tables",
			c.Pipeline, stored.End, c.Pipeline)
	}

	added, removed, err := pgoutput.EnsurePublication(ctx, src, c.Pipeline, names)
	if err != nil {
		return err
	}
	reader, err := pgoutput.NewReader(pgoutput.Config{DSN: c.Source, Slot: c.Pipeline, Publication: c.Pipeline})
	if err != nil {
		return err
	}
	srv, err := reader.Identify(ctx)
	if err != nil {
		return err
	}
	if hasRow && stored.SystemID != srv.SystemID {
		return fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: use another --pipeline or run decant drop --yes for it", c.Pipeline, stored.SystemID, srv.SystemID)
	}
	if o.ddl {
		if err := setupDDL(ctx, c, src, tgt, tables, log); err != nil {
			return err
		}
	}
	var start source.LSN
	var slotCreated bool
	var exported *pgoutput.Exported
	if o.copy {
		if exported, err = exportForCopy(ctx, c, src, tgt, names, hasRow, log); err != nil {
			return err
		}
		defer exported.Close(ctx)
		start, slotCreated = exported.Consistent, true
		log.Info("slot created with an exported snapshot", "slot", c.Pipeline, "consistent_point", start.String(), "snapshot", exported.Snapshot)
		// The checkpoint row comes after the copy: until it exists, run
		// refuses to stream into half-copied tables, and init --copy
		// knows to start over.
		if err := copyTables(ctx, c, o, src, exported, tables, created, log); err != nil {
			return err
		}
		// The copy resumes after lost target connections; the one opened
		// before it may be one of them.
		tgt.Close(ctx)
		if tgt, err = openAdmin(ctx, c); err != nil {
			return err
		}
	} else if start, slotCreated, err = pgoutput.EnsureSlot(ctx, src, c.Pipeline); err != nil {
		return err
	}
	row, rowCreated, err := tgt.EnsureCheckpoint(ctx, checkpoint.Row{Pipeline: c.Pipeline, SystemID: srv.SystemID, Commit: start, End: start})
	if err != nil {
		return err
	}

	switch {
	case len(added) == len(names) && slotCreated:
		log.Info("publication created", "publication", c.Pipeline, "tables", len(names))
	case len(added)+len(removed) > 0:
		log.Warn("publication tables changed; rows that already existed in added tables are not copied",
			"publication", c.Pipeline, "added", joinNames(added), "removed", joinNames(removed))
	}
	if slotCreated && !o.copy {
		log.Info("slot created", "slot", c.Pipeline, "consistent_point", start.String())
	}
	if rowCreated {
		log.Info("checkpoint created", "pipeline", c.Pipeline, "position", row.End.String())
	}
	if !slotCreated && !rowCreated && len(added)+len(removed) == 0 {
		fmt.Printf("pipeline %s is already initialized (%d tables, checkpoint %s); nothing to do\n", c.Pipeline, len(names), row.End)
		return nil
	}
	fmt.Printf("pipeline %s initialized: %d tables, slot and checkpoint at %s\n", c.Pipeline, len(names), row.End)
	return nil
}

// checkTables refuses tables whose updates the source cannot publish,
// two source tables landing in one target table, and tables or columns the
// target lacks or cannot hold, listing all of them at once.
// With --create-tables it makes the missing ones first (for a copy,
// without their secondary indexes, which are built after it) and returns
// their definitions.
func checkTables(ctx context.Context, c config, src *pgx.Conn, tgt targetAdmin, tables []pgoutput.Table, o initOptions, log *slog.Logger) ([]source.TableName, []*source.TableDef, error) {
	var noIdentity []string
	names := make([]source.TableName, len(tables))
	rels := make([]*source.Relation, len(tables))
	for i, t := range tables {
		names[i] = t.Name
		if !t.Replicable() {
			noIdentity = append(noIdentity, t.Name.String())
		}
		rel, err := pgoutput.Relation(ctx, src, t)
		if err != nil {
			return nil, nil, err
		}
		rels[i] = rel
	}
	if err := c.router().CheckCollisions(names); err != nil {
		return nil, nil, err
	}
	if o.copy && o.create {
		// Tables an interrupted init --copy --create-tables made hold part
		// of a copy and lack their keys and indexes: make them again.
		dropped, err := tgt.DropUnfinished(ctx, names)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range dropped {
			log.Warn("dropped a target table left by an interrupted initial copy; it is created and copied again", "table", t.String())
		}
	}
	missing, problems, notes, err := tgt.Check(ctx, rels)
	if err != nil {
		return nil, nil, err
	}
	// With --create-tables, what keeps a missing table from being created
	// is refused with the rest, before anything is created.
	var created []*source.TableDef
	toCreate := o.create && len(missing) > 0
	if toCreate {
		if created, err = describeMissing(ctx, c, src, tables, missing); err != nil {
			return nil, nil, err
		}
		problems = append(problems, tgt.CheckCreate(created)...)
	}
	if toCreate && len(noIdentity) == 0 && len(problems) == 0 {
		if err := createDefs(ctx, c, tgt, created, !o.copy, log); err != nil {
			return nil, nil, err
		}
		if missing, problems, notes, err = tgt.Check(ctx, rels); err != nil {
			return nil, nil, err
		}
		toCreate = false
	}
	for _, n := range notes {
		log.Warn(n)
	}
	if len(missing) > 0 && !toCreate {
		problems = append([]string{fmt.Sprintf("target lacks table(s) %s; create them on the target first", joinNames(missing))}, problems...)
	}
	if len(noIdentity) > 0 {
		problems = append(problems, fmt.Sprintf("source table(s) %s have no primary key (a DEFERRABLE one does not count) and no replica identity, so PostgreSQL would refuse their UPDATEs and DELETEs once published: add a primary key, or run ALTER TABLE ... REPLICA IDENTITY FULL, or leave them out of --tables",
			strings.Join(noIdentity, ", ")))
	}
	if len(problems) > 0 {
		return nil, nil, errors.New(strings.Join(problems, "; "))
	}
	return names, created, nil
}

// setupDDL installs the source's DDL capture and records the current
// definitions of the replicated tables on the target, from which later
// schema changes are computed. It runs before the slot exists, so the
// first schema change the slot sees is already captured.
func setupDDL(ctx context.Context, c config, src *pgx.Conn, tgt targetAdmin, tables []pgoutput.Table, log *slog.Logger) error {
	if err := pgoutput.InstallDDLCapture(ctx, src, c.Pipeline, c.Pipeline, c.filter); err != nil {
		return err
	}
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return err
	}
	if err := tgt.RecordSchema(ctx, defs); err != nil {
		return err
	}
	log.Info("DDL capture installed", "pipeline", c.Pipeline, "tables", len(defs))
	return nil
}

// describeMissing reads the source definitions of the tables whose
// target tables are missing.
func describeMissing(ctx context.Context, c config, src *pgx.Conn, tables []pgoutput.Table, missing []source.TableName) ([]*source.TableDef, error) {
	router := c.router()
	return describeTables(ctx, src, slices.DeleteFunc(slices.Clone(tables), func(t pgoutput.Table) bool {
		return !slices.Contains(missing, router.Route(t.Name))
	}))
}

// describeTables reads the source definitions of tables. Each caller
// reads them when it needs them: a schema change in between is then seen,
// or captured (init --ddl installs its capture before it records them).
func describeTables(ctx context.Context, src *pgx.Conn, tables []pgoutput.Table) ([]*source.TableDef, error) {
	defs := make([]*source.TableDef, len(tables))
	for i, t := range tables {
		var err error
		if defs[i], err = pgoutput.DescribeTable(ctx, src, t.Name); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// createDefs creates target tables from source definitions and logs what
// could not be carried over.
func createDefs(ctx context.Context, c config, tgt targetAdmin, defs []*source.TableDef, indexes bool, log *slog.Logger) error {
	router := c.router()
	notes, err := tgt.Create(ctx, defs, indexes)
	if err != nil {
		return err
	}
	for _, d := range defs {
		log.Info("target table created", "source", d.Name.String(), "target", joinNames([]source.TableName{router.Route(d.Name)}))
	}
	for _, n := range notes {
		log.Warn("create-tables: " + n)
	}
	return nil
}

func joinNames(ts []source.TableName) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, ", ")
}
