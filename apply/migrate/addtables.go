package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// AddTables (decant add-tables) brings tables into an initialized
// pipeline with their rows, while decant run streams or not, as
// PostgreSQL's tablesync workers do for a table that joins a
// subscription. The order keeps the handover exact:
//
//  1. each table's state is written 'copying' on the target
//     (decant.table_sync), before the table joins the publication, so
//     that the stream holds back at its first change;
//  2. the tables join the publication (keyless ones the append-only one,
//     with AppendOnly);
//  3. a temporary slot is created with an exported snapshot, consistent
//     at S: every change to the tables after step 2 is streamed by the
//     pipeline's slot, and those committed before S are in the snapshot;
//  4. the tables are emptied and copied under the snapshot;
//  5. their state is written 'ready' with S in one target transaction:
//     the stream drops their changes committed before S and applies the
//     later ones, once.
//
// An interrupted add-tables leaves the tables 'copying' (the stream keeps
// waiting for them) and its temporary slot gone with its session: run
// again, it copies them again from a new snapshot.

// AddTablesOptions are add-tables' choices beyond Config.
type AddTablesOptions struct {
	// Tables names the source tables to add.
	Tables source.TableFilter
	// AppendOnly names, among them, keyless tables whose rows are only
	// inserted, as InitOptions.AppendOnly.
	AppendOnly source.TableFilter
	// CreateTables creates missing target tables from the source catalog.
	CreateTables bool
	// Jobs and SplitBytes are the copy's, as InitOptions'.
	Jobs       int
	SplitBytes int64
	// Progress hears the copy; nil hears nothing.
	Progress CopyProgress
}

func (o AddTablesOptions) validate() error {
	if o.Tables.Empty() {
		return &UsageError{errors.New("add-tables: name the tables to add, like public.orders")}
	}
	return InitOptions{Copy: true, Jobs: o.Jobs, SplitBytes: o.SplitBytes}.validate()
}

// AddTablesResult is what add-tables did.
type AddTablesResult struct {
	// Added are the tables copied and handed over to the stream.
	Added []source.TableName
	// Already are the named tables the pipeline replicated already.
	Already []source.TableName
	// AsOf is the position the copy was taken at (S).
	AsOf source.LSN
	Rows int64
}

// AddTables adds tables to an initialized pipeline on a PostgreSQL
// source, with their rows.
func AddTables(ctx context.Context, cfg Config, o AddTablesOptions) (AddTablesResult, error) {
	if err := o.validate(); err != nil {
		return AddTablesResult{}, err
	}
	e, err := newEnv(cfg)
	if err != nil {
		return AddTablesResult{}, err
	}
	return e.addTables(ctx, o)
}

// SyncPipeline names the copy state (apply/bulk) of a pipeline's
// add-tables copies, apart from its initial copy's.
func SyncPipeline(pipeline string) string { return pipeline + "+add" }

func (e *env) addTables(ctx context.Context, o AddTablesOptions) (AddTablesResult, error) {
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		return AddTablesResult{}, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	defer func() { tgt.Close(context.WithoutCancel(ctx)) }()
	tables, res, err := e.tablesToAdd(ctx, src, tgt, o)
	if err != nil || len(tables) == 0 {
		return res, err
	}
	appendOnly := keylessAmong(tables, o.AppendOnly)
	names, _, err := e.checkTables(ctx, src, tgt, tables, appendOnly, InitOptions{CreateTables: o.CreateTables})
	if err != nil {
		return res, err
	}
	if err := tgt.SetSyncs(ctx, syncs(names, checkpoint.SyncCopying, 0)); err != nil {
		return res, err
	}
	if err := e.publish(ctx, src, names, appendOnly); err != nil {
		return res, err
	}
	for _, t := range appendOnly {
		e.cfg.Logger.Warn("append-only table: its UPDATEs and DELETEs on the source are not replicated, only INSERTs and TRUNCATEs", "table", t.String())
	}
	exp, err := src.ExportSyncSlot(ctx)
	if err != nil {
		return res, fmt.Errorf("add-tables of pipeline %s: %w (if its temporary slot exists, another add-tables of the pipeline is running: let it finish, then run this one again)", e.cfg.Pipeline, err)
	}
	defer exp.Close(context.WithoutCancel(ctx))
	e.cfg.Logger.Info("temporary slot created with an exported snapshot; copying the added tables as of it", "consistent_point", exp.Consistent.String(), "tables", len(names))
	if res.Rows, err = e.copyAdded(ctx, src, tgt, tables, exp, o); err != nil {
		return res, fmt.Errorf("add-tables copy: %w (the stream waits for these tables meanwhile: run decant add-tables again to copy them from a new snapshot)", err)
	}
	if err := tgt.SetSyncs(ctx, syncs(names, checkpoint.SyncReady, exp.Consistent)); err != nil {
		return res, err
	}
	res.Added, res.AsOf = names, exp.Consistent
	e.cfg.Logger.Info("added tables are ready: the stream applies their changes committed after the copy", "tables", joinNames(names), "as_of", exp.Consistent.String())
	return res, nil
}

// tablesToAdd checks the source and the pipeline's checkpoint, and
// returns the named tables still to add: those not yet published, and
// those a previous add-tables left copying. The others are Already.
func (e *env) tablesToAdd(ctx context.Context, src PGSource, tgt target, o AddTablesOptions) ([]source.Table, AddTablesResult, error) {
	var res AddTablesResult
	if err := src.CheckServer(ctx); err != nil {
		return nil, res, err
	}
	stored, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, res, &UsageError{fmt.Errorf("pipeline %s has no checkpoint on the target: run decant init (with --tables naming these tables too) instead of add-tables", e.cfg.Pipeline)}
	}
	if err != nil {
		return nil, res, err
	}
	systemID, err := src.SystemID(ctx)
	if err != nil {
		return nil, res, err
	}
	if stored.SystemID != systemID {
		return nil, res, fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: point --source at the pipeline's source", e.cfg.Pipeline, stored.SystemID, systemID)
	}
	tables, err := src.SelectTables(ctx, o.Tables)
	if err != nil {
		return nil, res, err
	}
	if len(tables) == 0 {
		return nil, res, &UsageError{fmt.Errorf("no source table matches %q; nothing to add", o.Tables)}
	}
	pubs, err := src.ReadPublications(ctx)
	if err != nil {
		return nil, res, err
	}
	states, err := tgt.ReadSyncs(ctx)
	if err != nil {
		return nil, res, err
	}
	copying := map[source.TableName]bool{}
	for _, s := range states {
		copying[s.Table] = s.State == checkpoint.SyncCopying
	}
	todo := slices.DeleteFunc(slices.Clone(tables), func(t source.Table) bool {
		published := slices.Contains(pubs.Tables, t.Name) || slices.Contains(pubs.AppendOnly, t.Name)
		if published && !copying[t.Name] {
			res.Already = append(res.Already, t.Name)
			return true
		}
		if copying[t.Name] {
			e.cfg.Logger.Warn("finishing an interrupted add-tables: the table is emptied and copied again from a new snapshot", "table", t.Name.String())
		}
		return false
	})
	return todo, res, nil
}

// publish adds the tables to the pipeline's publications, keeping those
// it has: the append-only ones to the append-only publication.
func (e *env) publish(ctx context.Context, src PGSource, names, appendOnly []source.TableName) error {
	pubs, err := src.ReadPublications(ctx)
	if err != nil {
		return err
	}
	want := source.Publications{Tables: union(pubs.Tables, minus(names, appendOnly)), AppendOnly: union(pubs.AppendOnly, appendOnly)}
	_, err = src.EnsurePublications(ctx, want)
	return err
}

// copyAdded empties the target tables and copies the source tables into
// them under the exported snapshot.
func (e *env) copyAdded(ctx context.Context, src PGSource, tgt target, tables []source.Table, exp *source.ExportedSlot, o AddTablesOptions) (int64, error) {
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return 0, err
	}
	names := make([]source.TableName, len(defs))
	for i, d := range defs {
		names[i] = d.Name
	}
	if err := tgt.Empty(ctx, names); err != nil {
		return 0, err
	}
	if err := tgt.ForgetAddCopy(ctx); err != nil {
		return 0, err
	}
	prog := &copySizes{next: o.Progress, bytes: map[source.TableName]int64{}}
	res, err := e.copyResuming(ctx, bulk.Config{
		Source: e.cfg.Source, Snapshot: exp.Snapshot, AsOf: exp.Consistent, Target: e.cfg.Target, Pipeline: SyncPipeline(e.cfg.Pipeline),
		Tables: defs, Router: e.cfg.Router, Columns: e.cfg.Columns, Policy: e.cfg.Policy, Jobs: o.Jobs, SplitBytes: o.SplitBytes,
		Progress: prog, Logger: e.cfg.Logger,
	})
	prog.stopped()
	if err != nil {
		return res.Rows, err
	}
	if o.Progress != nil {
		o.Progress.Finished(res, exp.Consistent)
	}
	return res.Rows, tgt.ForgetAddCopy(ctx)
}

// keylessAmong names the tables without a replica identity that filter
// matches: those add-tables publishes append-only. Unlike init, it does
// not refuse a pattern that matches none of them, so that one
// --append-only list (in a shared configuration file) serves init and
// every add-tables; a keyless table it misses is refused all the same.
func keylessAmong(tables []source.Table, filter source.TableFilter) []source.TableName {
	var out []source.TableName
	for _, t := range tables {
		if !filter.Empty() && !t.Replicable() && filter.Match(t.Name.Schema, t.Name.Name) {
			out = append(out, t.Name)
		}
	}
	return out
}

func syncs(names []source.TableName, state checkpoint.SyncState, asOf source.LSN) []checkpoint.TableSync {
	out := make([]checkpoint.TableSync, len(names))
	for i, n := range names {
		out[i] = checkpoint.TableSync{Table: n, State: state, AsOf: asOf}
	}
	return out
}

// union is a with the tables of b it lacks.
func union(a, b []source.TableName) []source.TableName {
	out := slices.Clone(a)
	for _, t := range b {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// TableSyncs reads the states of the tables add-tables brought into the
// pipeline, for decant run (apply.Config.TableSyncs) and status.
func TableSyncs(cfg Config) func(ctx context.Context) ([]checkpoint.TableSync, error) {
	return func(ctx context.Context) ([]checkpoint.TableSync, error) {
		return bulk.ReadSyncs(ctx, cfg.Target, cfg.Pipeline)
	}
}
