package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// GaussDB and openGauss sources have no publications: the tables come
// from the white-table-list decoding option (Config.Gauss, made from the
// table selection), and the slot is created with
// pg_create_logical_replication_slot. They have no initial copy.

// InitGauss initialises the pipeline on a GaussDB or openGauss source:
// with CreateTables it creates the missing target tables, with DDL it
// records the tables' definitions (which needs the enable-ddl-decoding
// option), then it creates the slot and writes the checkpoint row at the
// slot's position. Copy is refused: the copy needs an exported snapshot,
// which these sources do not give.
func InitGauss(ctx context.Context, cfg Config, o InitOptions) (InitResult, error) {
	if o.Copy {
		return InitResult{}, &UsageError{errors.New("the initial copy needs a PostgreSQL source (an exported snapshot); for GaussDB, copy the tables first, then init and run")}
	}
	if cfg.Gauss == nil {
		return InitResult{}, errors.New("migrate: Config.Gauss is not set; the caller passes the GaussDB decoding options (source/gauss.Options)")
	}
	if o.DDL && !cfg.Gauss.DDL() {
		return InitResult{}, &UsageError{errors.New("--ddl needs the decoding option enable-ddl-decoding=true (--source-option enable-ddl-decoding=true), or the source does not send DDL")}
	}
	e, err := newEnv(cfg)
	if err != nil {
		return InitResult{}, err
	}
	for _, w := range cfg.Gauss.Warnings() {
		e.cfg.Logger.Warn(w)
	}
	src, err := e.cfg.openGauss(ctx)
	if err != nil {
		return InitResult{}, err
	}
	defer src.Close(ctx)
	tgt, err := e.target(ctx)
	if err != nil {
		return InitResult{}, err
	}
	defer tgt.Close(ctx)
	if err := e.checkGaussPipeline(ctx, src, tgt); err != nil {
		return InitResult{}, err
	}
	if o.CreateTables || o.DDL {
		if err := e.gaussTables(ctx, src, tgt, o); err != nil {
			return InitResult{}, err
		}
	}
	slot, created, err := src.EnsureSlot(ctx)
	if err != nil {
		return InitResult{}, err
	}
	row, rowCreated, err := tgt.EnsureCheckpoint(ctx, checkpoint.Row{
		Pipeline: cfg.Pipeline, SystemID: slot.SystemID, Commit: slot.Confirmed, End: slot.Confirmed, CSN: slot.ConfirmedCSN, DDL: o.DDL,
	})
	if err != nil {
		return InitResult{}, err
	}
	if created {
		e.cfg.Logger.Info("slot created", "slot", cfg.Pipeline, "plugin", slot.Plugin, "position", slot.Confirmed.String(), "csn", slot.ConfirmedCSN)
	}
	return InitResult{Checkpoint: row, Changed: created || rowCreated}, nil
}

// checkGaussPipeline refuses a checkpoint row without its slot, or of
// another source system.
func (e *env) checkGaussPipeline(ctx context.Context, src GaussSource, tgt target) error {
	stored, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
	hasRow := err == nil
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return err
	}
	slot, err := src.Slot(ctx)
	if err != nil {
		return err
	}
	if hasRow && !slot.Exists {
		return fmt.Errorf("the target holds a checkpoint for pipeline %s but slot %s is missing on the source, so changes after it are lost: run decant drop --yes, then init again and recopy the tables", e.cfg.Pipeline, e.cfg.Pipeline)
	}
	if hasRow && stored.SystemID != slot.SystemID {
		return fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: use another --pipeline or run decant drop --yes for it", e.cfg.Pipeline, stored.SystemID, slot.SystemID)
	}
	return nil
}

// gaussTables reads the selected tables from the source catalog, creates
// the missing ones on the target (CreateTables) and records their
// definitions for schema changes to start from (DDL).
func (e *env) gaussTables(ctx context.Context, src GaussSource, tgt target, o InitOptions) error {
	defs, err := src.DescribeTables(ctx, e.cfg.Tables)
	if err != nil {
		return err
	}
	if len(defs) == 0 {
		return fmt.Errorf("no source table matches --tables %q; nothing to replicate", e.cfg.Tables)
	}
	if o.CreateTables {
		if err := e.createMissing(ctx, tgt, defs); err != nil {
			return err
		}
	}
	if o.DDL {
		if err := tgt.RecordSchema(ctx, defs); err != nil {
			return err
		}
		e.cfg.Logger.Info("table definitions recorded for schema changes", "pipeline", e.cfg.Pipeline, "tables", len(defs))
	}
	return nil
}

// createMissing creates, with their indexes, the tables the target lacks.
func (e *env) createMissing(ctx context.Context, tgt target, defs []*source.TableDef) error {
	rels := make([]*source.Relation, len(defs))
	for i, d := range defs {
		rels[i] = d.Relation()
	}
	missing, _, _, err := tgt.Check(ctx, rels)
	if err != nil {
		return err
	}
	var create []*source.TableDef
	for _, d := range defs {
		if slices.Contains(missing, e.cfg.Router.Route(d.Name)) {
			create = append(create, d)
		}
	}
	return e.createDefs(ctx, tgt, create, true)
}

// ReadStatusGauss reads a GaussDB or openGauss pipeline's slot and checkpoint.
// Lag in seconds is the time since the checkpoint was last written, when
// no run streams and WAL is pending.
func ReadStatusGauss(ctx context.Context, cfg Config) (Status, error) {
	st := Status{Pipeline: cfg.Pipeline}
	e, err := newEnv(cfg)
	if err != nil {
		return st, err
	}
	src, err := e.cfg.openGauss(ctx)
	if err != nil {
		return st, err
	}
	defer src.Close(ctx)
	tgt, err := e.target(ctx)
	if err != nil {
		return st, err
	}
	defer tgt.Close(ctx)
	s, err := src.Slot(ctx)
	if err != nil {
		return st, err
	}
	st.SourceLSN = s.Current.String()
	st.Slot = SlotStatus{Exists: s.Exists, Active: s.Active}
	if s.Exists {
		st.Slot.Confirmed = s.Confirmed.String()
		st.Slot.ConfirmedCSN = s.ConfirmedCSN
	}
	cp, err := tgt.ReadCheckpoint(ctx, cfg.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.fillCheckpoint(cp, s.Current)
	if st.Skips, err = readSkipStatus(ctx, tgt, cp); err != nil {
		return st, err
	}
	if !s.Active && st.LagBytes > 0 {
		st.LagSeconds = sinceSeconds(cp.AppliedTime)
	}
	return st, nil
}

// DropGauss drops a GaussDB or openGauss pipeline's slot, its recorded
// table definitions, the replication origins of a PostgreSQL target and
// its checkpoint row.
func DropGauss(ctx context.Context, cfg Config) (Dropped, error) {
	var d Dropped
	e, err := newEnv(cfg)
	if err != nil {
		return d, err
	}
	src, err := e.cfg.openGauss(ctx)
	if err != nil {
		return d, err
	}
	defer src.Close(ctx)
	tgt, err := e.target(ctx)
	if err != nil {
		return d, err
	}
	defer tgt.Close(ctx)
	if d.Slot, err = src.DropSlot(ctx); err != nil {
		return d, err
	}
	if err := tgt.ForgetSchema(ctx); err != nil {
		return d, err
	}
	if d.Origins, err = dropOrigins(ctx, tgt); err != nil {
		return d, err
	}
	d.Checkpoint, err = tgt.DeleteCheckpoint(ctx, cfg.Pipeline)
	return d, err
}
