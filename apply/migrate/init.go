package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// InitOptions are init's choices beyond Config.
type InitOptions struct {
	// CreateTables creates missing target tables from the source catalog.
	CreateTables bool
	// DDL installs the source's DDL capture and records the tables'
	// definitions on the target, for schema changes to start from.
	DDL bool
	// Copy creates the slot with an exported snapshot and copies every
	// selected table under it before the checkpoint row is written.
	Copy bool
	// Jobs is how many copy workers run at once (Copy; at least 1).
	Jobs int
	// SplitBytes: the copy cuts tables larger than this into block ranges
	// of about this size (Copy; at least 64 KiB).
	SplitBytes int64
	// Progress hears the copy; nil hears nothing.
	Progress CopyProgress
	// AppendOnly names, among the selected tables, keyless ones whose rows
	// are only inserted: those without a replica identity are published
	// through the pipeline's append-only publication (inserts and
	// truncates only), so the source needs no ALTER TABLE and their
	// UPDATEs and DELETEs, not replicated, keep working there. The empty
	// filter names none.
	AppendOnly source.TableFilter
}

// MinSplitBytes is the smallest InitOptions.SplitBytes.
const MinSplitBytes = 64 << 10

func (o InitOptions) validate() error {
	if o.Copy && (o.Jobs < 1 || o.SplitBytes < MinSplitBytes) {
		return fmt.Errorf("init: copy needs at least 1 job and a split size of at least 64KiB, got %d and %d bytes", o.Jobs, o.SplitBytes)
	}
	return nil
}

// InitResult is what init did.
type InitResult struct {
	// Tables is how many source tables the pipeline replicates; 0 for a
	// GaussDB source, whose decoding selects them.
	Tables int
	// Checkpoint is the pipeline's checkpoint row.
	Checkpoint checkpoint.Row
	// Changed is false when the pipeline was initialized already, as
	// asked: init changed nothing.
	Changed bool
}

// Init initialises the pipeline on a PostgreSQL source: it checks the
// source and the selected tables, updates the publication, creates the
// slot and writes the checkpoint row at the slot's consistent point; with
// Copy it copies the tables in between. Running it again changes nothing
// (a changed table selection updates the publication).
func Init(ctx context.Context, cfg Config, o InitOptions) (InitResult, error) {
	if err := o.validate(); err != nil {
		return InitResult{}, err
	}
	e, err := newEnv(cfg)
	if err != nil {
		return InitResult{}, err
	}
	return e.init(ctx, o)
}

// initPlan is what init found, and did on the source, before the slot.
type initPlan struct {
	tables     []source.Table
	names      []source.TableName
	created    []*source.TableDef // target tables init made; for a copy, without secondary indexes yet
	hasRow     bool               // the target holds the pipeline's checkpoint row
	systemID   string
	appendOnly []source.TableName // published append-only
	whole      []source.TableName // named by AppendOnly, but published whole: they have a replica identity
	changes    source.PublicationChanges
}

func (e *env) init(ctx context.Context, o InitOptions) (InitResult, error) {
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		return InitResult{}, err
	}
	defer src.Close(ctx)
	defer func() {
		if tgt != nil {
			tgt.Close(ctx)
		}
	}()
	p, err := e.prepare(ctx, src, tgt, o)
	if err != nil {
		return InitResult{}, err
	}
	var start source.LSN
	var slotCreated bool
	if o.Copy {
		exp, err := e.exportForCopy(ctx, src, tgt, p.names, p.hasRow)
		if err != nil {
			return InitResult{}, err
		}
		defer exp.Close(ctx)
		start, slotCreated = exp.Consistent, true
		e.cfg.Logger.Info("slot created with an exported snapshot", "slot", e.cfg.Pipeline, "consistent_point", start.String(), "snapshot", exp.Snapshot)
		// The checkpoint row comes after the copy: until it exists, run
		// refuses to stream into half-copied tables, and init --copy
		// knows to start over.
		if err := e.copyTables(ctx, src, exp, p, o); err != nil {
			return InitResult{}, err
		}
		// The copy resumes after lost target connections; the session
		// opened before it may be one of them.
		tgt.Close(ctx)
		if tgt, err = e.target(ctx); err != nil {
			return InitResult{}, err
		}
	} else if start, slotCreated, err = src.EnsureSlot(ctx); err != nil {
		return InitResult{}, err
	}
	row, rowCreated, err := tgt.EnsureCheckpoint(ctx, checkpoint.Row{Pipeline: e.cfg.Pipeline, SystemID: p.systemID, Commit: start, End: start, DDL: o.DDL})
	if err != nil {
		return InitResult{}, err
	}
	e.logInit(p, o, start, slotCreated, rowCreated, row)
	changed := slotCreated || rowCreated || p.changes.Changed()
	return InitResult{Tables: len(p.names), Checkpoint: row, Changed: changed}, nil
}

// prepare checks the source and the tables (creating missing target
// tables when asked), refuses a checkpoint row of another slot or source
// system, updates the publication and, with DDL, installs the capture:
// everything init does before the slot.
func (e *env) prepare(ctx context.Context, src PGSource, tgt target, o InitOptions) (*initPlan, error) {
	if err := src.CheckServer(ctx); err != nil {
		return nil, err
	}
	tables, err := src.SelectTables(ctx, e.cfg.Tables)
	if err != nil {
		return nil, err
	}
	if len(tables) == 0 {
		return nil, fmt.Errorf("no source table matches --tables %q; nothing to replicate", e.cfg.Tables)
	}
	p := &initPlan{tables: tables}
	if p.appendOnly, p.whole, err = appendOnlyTables(tables, o.AppendOnly); err != nil {
		return nil, err
	}
	if p.names, p.created, err = e.checkTables(ctx, src, tgt, tables, p.appendOnly, o); err != nil {
		return nil, err
	}
	stored, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
	p.hasRow = err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return nil, err
	}
	slot, err := src.ReadSlot(ctx)
	if err != nil {
		return nil, err
	}
	if p.hasRow && !slot.Exists {
		return nil, fmt.Errorf("the target holds a checkpoint for pipeline %s at %s but slot %s is missing on the source, so changes after it are lost: run decant resync to repair the target from a new slot",
			e.cfg.Pipeline, stored.End, e.cfg.Pipeline)
	}
	want := source.Publications{Tables: minus(p.names, p.appendOnly), AppendOnly: p.appendOnly}
	if p.changes, err = src.EnsurePublications(ctx, want); err != nil {
		return nil, err
	}
	if p.systemID, err = src.SystemID(ctx); err != nil {
		return nil, err
	}
	if p.hasRow && stored.SystemID != p.systemID {
		return nil, fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: use another --pipeline or run decant drop --yes for it", e.cfg.Pipeline, stored.SystemID, p.systemID)
	}
	if o.DDL {
		if err := e.setupDDL(ctx, src, tgt, tables); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// appendOnlyTables picks the tables filter names among the selected ones:
// those without a replica identity are published append-only, the others
// (whole) as every table is, since their UPDATEs and DELETEs can be. A
// pattern that names none of the selected tables is refused: it is most
// likely a typo, and would leave a keyless table refused or unreplicated.
func appendOnlyTables(tables []source.Table, filter source.TableFilter) (appendOnly, whole []source.TableName, err error) {
	if filter.Empty() {
		return nil, nil, nil
	}
	names := make([]source.TableName, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	if bad := filter.Unmatched(names); len(bad) > 0 {
		return nil, nil, &UsageError{fmt.Errorf("--append-only: %s match(es) no table that --tables selects; name selected keyless tables, like public.pgbench_history", strings.Join(bad, ", "))}
	}
	for _, t := range tables {
		switch {
		case !filter.Match(t.Name.Schema, t.Name.Name):
		case t.Replicable():
			whole = append(whole, t.Name)
		default:
			appendOnly = append(appendOnly, t.Name)
		}
	}
	return appendOnly, whole, nil
}

// logInit logs what init changed, and warns of every append-only table.
func (e *env) logInit(p *initPlan, o InitOptions, start source.LSN, slotCreated, rowCreated bool, row checkpoint.Row) {
	log := e.cfg.Logger
	e.logPublications(p, slotCreated)
	if slotCreated && !o.Copy {
		log.Info("slot created", "slot", e.cfg.Pipeline, "consistent_point", start.String())
	}
	if rowCreated {
		log.Info("checkpoint created", "pipeline", e.cfg.Pipeline, "position", row.End.String())
	}
}

// logPublications logs what init changed in the publications, and warns
// of every append-only table, at every init: the source's UPDATEs and
// DELETEs on it are not replicated.
func (e *env) logPublications(p *initPlan, slotCreated bool) {
	log := e.cfg.Logger
	ch := p.changes
	added := slices.Concat(ch.Added, ch.AppendOnlyAdded)
	removed := slices.Concat(ch.Removed, ch.AppendOnlyRemoved)
	// A table in both lists moved from one publication to the other: it
	// was replicated before, and is still.
	moved := slices.DeleteFunc(slices.Clone(added), func(t source.TableName) bool { return !slices.Contains(removed, t) })
	added, removed = minus(added, moved), minus(removed, moved)
	switch {
	case slotCreated && len(added) == len(p.names):
		log.Info("publications created", "publication", e.cfg.Pipeline, "tables", len(p.names)-len(p.appendOnly), "append_only_tables", len(p.appendOnly))
	case len(added)+len(removed) > 0:
		log.Warn("publication tables changed; rows that already existed in added tables are not copied",
			"publication", e.cfg.Pipeline, "added", joinNames(added), "removed", joinNames(removed))
	}
	if len(moved) > 0 {
		log.Info("tables moved between the publication and the append-only one", "tables", joinNames(moved))
	}
	for _, t := range p.whole {
		log.Info("--append-only names a table with a replica identity: it is replicated whole, updates and deletes included", "table", t.String())
	}
	for _, t := range p.appendOnly {
		log.Warn("append-only table: its UPDATEs and DELETEs on the source are not replicated, only INSERTs and TRUNCATEs", "table", t.String())
	}
}

// minus is ts without the tables in drop.
func minus(ts, drop []source.TableName) []source.TableName {
	return slices.DeleteFunc(slices.Clone(ts), func(t source.TableName) bool { return slices.Contains(drop, t) })
}

// checkTables refuses tables whose updates the source cannot publish,
// two source tables landing in one target table, and tables or columns the
// target lacks or cannot hold, listing all of them at once.
// With CreateTables it makes the missing ones first (for a copy, without
// their secondary indexes, which are built after it) and returns their
// definitions.
func (e *env) checkTables(ctx context.Context, src PGSource, tgt target, tables []source.Table, appendOnly []source.TableName, o InitOptions) ([]source.TableName, []*source.TableDef, error) {
	names, rels, noIdentity, err := relations(ctx, src, tables, appendOnly)
	if err != nil {
		return nil, nil, err
	}
	if err := e.cfg.Router.CheckCollisions(names); err != nil {
		return nil, nil, err
	}
	if o.Copy && o.CreateTables {
		// Tables an interrupted init --copy --create-tables made hold part
		// of a copy and lack their keys and indexes: make them again.
		dropped, err := tgt.DropUnfinished(ctx, names)
		if err != nil {
			return nil, nil, err
		}
		for _, t := range dropped {
			e.cfg.Logger.Warn("dropped a target table left by an interrupted initial copy; it is created and copied again", "table", t.String())
		}
	}
	problems, created, err := e.checkTarget(ctx, src, tgt, tables, rels, o, len(noIdentity) == 0)
	if err != nil {
		return nil, nil, err
	}
	if len(noIdentity) > 0 {
		problems = append(problems, fmt.Sprintf("source table(s) %s have no primary key (a DEFERRABLE one does not count) and no replica identity, so PostgreSQL would refuse their UPDATEs and DELETEs once published: add a primary key, or run ALTER TABLE ... REPLICA IDENTITY FULL, or, if their rows are only ever inserted, name them in --append-only (their UPDATEs and DELETEs are then not replicated), or leave them out of --tables",
			strings.Join(noIdentity, ", ")))
	}
	if len(problems) > 0 {
		return nil, nil, errors.New(strings.Join(problems, "; "))
	}
	return names, created, nil
}

// relations reads the tables' relations from the source, and names the
// tables without a replica identity that are not published append-only.
func relations(ctx context.Context, src PGSource, tables []source.Table, appendOnly []source.TableName) ([]source.TableName, []*source.Relation, []string, error) {
	var noIdentity []string
	names := make([]source.TableName, len(tables))
	rels := make([]*source.Relation, len(tables))
	for i, t := range tables {
		names[i] = t.Name
		if !t.Replicable() && !slices.Contains(appendOnly, t.Name) {
			noIdentity = append(noIdentity, t.Name.String())
		}
		rel, err := src.Relation(ctx, t)
		if err != nil {
			return nil, nil, nil, err
		}
		rels[i] = rel
	}
	return names, rels, noIdentity, nil
}

// checkTarget asks the target what keeps the relations from being
// applied, a missing table first. With CreateTables, what keeps a missing
// table from being created is refused with the rest, before anything is
// created (the missing tables themselves are then not refused: they would
// be created); when nothing is refused (replicable says the source side
// passed too), they are created and the target asked again. It returns
// the definitions of the tables it created.
func (e *env) checkTarget(ctx context.Context, src PGSource, tgt target, tables []source.Table, rels []*source.Relation, o InitOptions, replicable bool) ([]string, []*source.TableDef, error) {
	missing, problems, notes, err := tgt.Check(ctx, rels)
	if err != nil {
		return nil, nil, err
	}
	var created []*source.TableDef
	if o.CreateTables && len(missing) > 0 {
		defs, err := e.describeMissing(ctx, src, tables, missing)
		if err != nil {
			return nil, nil, err
		}
		problems = append(problems, tgt.CheckCreate(defs)...)
		if !replicable || len(problems) > 0 {
			e.logNotes(notes)
			return problems, nil, nil
		}
		if err := e.createDefs(ctx, tgt, defs, !o.Copy); err != nil {
			return nil, nil, err
		}
		if missing, problems, notes, err = tgt.Check(ctx, rels); err != nil {
			return nil, nil, err
		}
		created = defs
	}
	e.logNotes(notes)
	if len(missing) > 0 {
		problems = append([]string{fmt.Sprintf("target lacks table(s) %s; create them on the target first", joinNames(missing))}, problems...)
	}
	return problems, created, nil
}

func (e *env) logNotes(notes []string) {
	for _, n := range notes {
		e.cfg.Logger.Warn(n)
	}
}

// setupDDL installs the source's DDL capture and records the current
// definitions of the replicated tables on the target, from which later
// schema changes are computed. It runs before the slot exists, so the
// first schema change the slot sees is already captured.
func (e *env) setupDDL(ctx context.Context, src PGSource, tgt target, tables []source.Table) error {
	if err := src.InstallDDLCapture(ctx, e.cfg.Tables); err != nil {
		return err
	}
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return err
	}
	if err := tgt.RecordSchema(ctx, defs); err != nil {
		return err
	}
	e.cfg.Logger.Info("DDL capture installed", "pipeline", e.cfg.Pipeline, "tables", len(defs))
	return nil
}

// describeMissing reads the source definitions of the tables whose
// target tables are missing.
func (e *env) describeMissing(ctx context.Context, src PGSource, tables []source.Table, missing []source.TableName) ([]*source.TableDef, error) {
	return describeTables(ctx, src, slices.DeleteFunc(slices.Clone(tables), func(t source.Table) bool {
		return !slices.Contains(missing, e.cfg.Router.Route(t.Name))
	}))
}

// describeTables reads the source definitions of tables. Each caller
// reads them when it needs them: a schema change in between is then seen,
// or captured (init with DDL installs its capture before it records them).
func describeTables(ctx context.Context, src PGSource, tables []source.Table) ([]*source.TableDef, error) {
	defs := make([]*source.TableDef, len(tables))
	for i, t := range tables {
		var err error
		if defs[i], err = src.DescribeTable(ctx, t.Name); err != nil {
			return nil, err
		}
	}
	return defs, nil
}

// createDefs creates target tables from source definitions and logs what
// could not be carried over.
func (e *env) createDefs(ctx context.Context, tgt Admin, defs []*source.TableDef, indexes bool) error {
	notes, err := tgt.Create(ctx, defs, indexes)
	if err != nil {
		return err
	}
	for _, d := range defs {
		e.cfg.Logger.Info("target table created", "source", d.Name.String(), "target", joinNames([]source.TableName{e.cfg.Router.Route(d.Name)}))
	}
	for _, n := range notes {
		e.cfg.Logger.Warn("create-tables: " + n)
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
