package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/apply/verify"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// slotPoll is how often resync looks again at a slot that is still
// active, within ResyncOptions.SlotWait.
const slotPoll = 250 * time.Millisecond

// Resync (decant resync) brings back a pipeline whose slot can no longer
// stream what the target lacks (dropped, made again, invalidated, lost in
// a failover) or whose target diverged, by repairing the target rather
// than copying it again. The order keeps it exact, as the initial copy's
// does:
//
//  1. the checkpoint row is set to position 0 first: no slot can stream
//     from there, so run refuses (and says to resync) until a resync
//     finishes, also after one was interrupted;
//  2. the old slot is dropped and a new one made with an exported
//     snapshot;
//  3. every table is compared with the source as of that snapshot and
//     repaired where it differs (apply/verify's repair);
//  4. the checkpoint row is set to the new slot's consistent point, from
//     which run streams on.
//
// Repairs commit batch by batch, so an interrupted resync is restarted
// from scratch: run again, it makes another slot and snapshot and finds
// by comparison what is still to repair. Resync is a function of its
// Config and options, so that run could call it when it finds its slot
// gone (--on-slot-lost resync, once the pipeline stops its reader first).

// ResyncOptions are resync's choices beyond Config.
type ResyncOptions struct {
	Jobs     int   // spans compared and repaired at once (at least 1)
	SpanRows int64 // source rows per span of a table's key
	// Batch is how many rows one target transaction repairs.
	Batch int
	// Confirm is asked before the existing slot is dropped; nil, or a
	// false answer, refuses.
	Confirm func(slot source.SlotStatus) (bool, error)
	// Progress hears each table planned, each span compared and each
	// table done; nil hears nothing.
	Progress verify.Progress
	// SlotWait is how long an active slot may take to come free before
	// resync refuses it: run --on-slot-lost resync calls resync as soon
	// as its own stream ended, before the source's walsender has noticed.
	// 0 refuses an active slot at once (a decant run holds it).
	SlotWait time.Duration
}

// DefaultResyncOptions are resync's defaults.
func DefaultResyncOptions() ResyncOptions {
	v := DefaultVerifyOptions()
	return ResyncOptions{Jobs: v.Jobs, SpanRows: 10_000, Batch: 1000}
}

func (o ResyncOptions) validate() error {
	if o.Jobs < 1 || o.SpanRows < 1 || o.Batch < 1 {
		return fmt.Errorf("resync: --jobs, --span-rows and --batch must be at least 1, got %d, %d and %d", o.Jobs, o.SpanRows, o.Batch)
	}
	return nil
}

// ResyncResult is what resync did.
type ResyncResult struct {
	// Report is the comparison as of the new snapshot, before repair:
	// what differed, and was repaired.
	Report *verify.Report
	// Checkpoint is the pipeline's checkpoint row at the new slot's
	// consistent point.
	Checkpoint checkpoint.Row
	// DroppedSlot says an old slot existed and was dropped.
	DroppedSlot bool
	Elapsed     time.Duration
}

// Resync repairs the target of an initialised pipeline on a PostgreSQL
// source and moves its checkpoint to a new slot's consistent point.
func Resync(ctx context.Context, cfg Config, o ResyncOptions) (ResyncResult, error) {
	if err := o.validate(); err != nil {
		return ResyncResult{}, err
	}
	e, err := newEnv(cfg)
	if err != nil {
		return ResyncResult{}, err
	}
	start := time.Now()
	res, err := e.resync(ctx, o)
	res.Elapsed = time.Since(start)
	return res, err
}

func (e *env) resync(ctx context.Context, o ResyncOptions) (ResyncResult, error) {
	src, tgt, err := e.connectBoth(ctx)
	if err != nil {
		return ResyncResult{}, err
	}
	defer src.Close(context.WithoutCancel(ctx))
	defer func() { tgt.Close(context.WithoutCancel(ctx)) }()
	tables, stored, err := e.checkResync(ctx, src, tgt)
	if err != nil {
		return ResyncResult{}, err
	}
	var res ResyncResult
	if res.DroppedSlot, err = e.releaseSlot(ctx, src, tgt, stored, o); err != nil {
		return res, err
	}
	exp, err := src.ExportSlot(ctx)
	if err != nil {
		return res, err
	}
	defer exp.Close(context.WithoutCancel(ctx))
	e.cfg.Logger.Info("slot created with an exported snapshot; repairing the target as of it", "slot", e.cfg.Pipeline, "consistent_point", exp.Consistent.String())
	if res.Report, err = e.repair(ctx, src, tables, exp, o); err != nil {
		return res, fmt.Errorf("resync of pipeline %s: %w (run decant resync again: it starts over from a new slot and repairs what is still different)", e.cfg.Pipeline, err)
	}
	// The repairs may have outlived the session opened before them.
	tgt.Close(ctx)
	if tgt, err = e.target(ctx); err != nil {
		return res, err
	}
	res.Checkpoint = checkpoint.Row{Pipeline: e.cfg.Pipeline, SystemID: stored.SystemID, Commit: exp.Consistent, End: exp.Consistent}
	if err := tgt.ResetCheckpoint(ctx, res.Checkpoint); err != nil {
		return res, err
	}
	e.cfg.Logger.Info("checkpoint moved to the new slot's consistent point", "pipeline", e.cfg.Pipeline, "position", exp.Consistent.String())
	return res, nil
}

// checkResync checks the source, the tables and the target's checkpoint
// row, keeps the publication to the selected tables and refuses a
// pipeline that is not initialised or belongs to another source system.
func (e *env) checkResync(ctx context.Context, src PGSource, tgt target) ([]source.Table, checkpoint.Row, error) {
	if err := src.CheckServer(ctx); err != nil {
		return nil, checkpoint.Row{}, err
	}
	stored, err := tgt.ReadCheckpoint(ctx, e.cfg.Pipeline)
	if errors.Is(err, checkpoint.ErrNotFound) {
		return nil, stored, &UsageError{fmt.Errorf("pipeline %s has no checkpoint on the target, so there is nothing to resync: run decant init --copy to start it", e.cfg.Pipeline)}
	}
	if err != nil {
		return nil, stored, err
	}
	systemID, err := src.SystemID(ctx)
	if err != nil {
		return nil, stored, err
	}
	if stored.SystemID != systemID {
		return nil, stored, fmt.Errorf("the target holds pipeline %s from source system %s, but this source is %s: resync only a target of this source (a promoted physical standby keeps the system's id), or use another --pipeline", e.cfg.Pipeline, stored.SystemID, systemID)
	}
	tables, err := src.SelectTables(ctx, e.cfg.Tables)
	if err != nil {
		return nil, stored, err
	}
	if len(tables) == 0 {
		return nil, stored, fmt.Errorf("no source table matches --tables %q; nothing to resync", e.cfg.Tables)
	}
	names := make([]source.TableName, len(tables))
	for i, t := range tables {
		names[i] = t.Name
	}
	if err := e.cfg.Router.CheckCollisions(names); err != nil {
		return nil, stored, err
	}
	// The tables stay in the publication they are in: an append-only
	// table is still published for inserts only.
	current, err := src.ReadPublications(ctx)
	if err != nil {
		return nil, stored, err
	}
	appendOnly := slices.DeleteFunc(slices.Clone(current.AppendOnly), func(t source.TableName) bool { return !slices.Contains(names, t) })
	if _, err := src.EnsurePublications(ctx, source.Publications{Tables: minus(names, appendOnly), AppendOnly: appendOnly}); err != nil {
		return nil, stored, err
	}
	return tables, stored, nil
}

// releaseSlot refuses a slot in use (a decant run holds the pipeline),
// asks before dropping one that exists, then sets the checkpoint row to
// position 0 so that no run streams into the target until the resync is
// done, and drops the slot.
func (e *env) releaseSlot(ctx context.Context, src PGSource, tgt target, stored checkpoint.Row, o ResyncOptions) (bool, error) {
	slot, err := e.inactiveSlot(ctx, src, o.SlotWait)
	if err != nil {
		return false, err
	}
	if slot.Exists {
		ok := false
		if o.Confirm != nil {
			if ok, err = o.Confirm(slot); err != nil {
				return false, err
			}
		}
		if !ok {
			return false, &UsageError{fmt.Errorf("slot %s exists (confirmed %s, target checkpoint %s): resync drops it and makes a new one; add --yes to confirm", e.cfg.Pipeline, slot.Confirmed, stored.End)}
		}
	}
	if stored.End != 0 {
		e.cfg.Logger.Warn("checkpoint set to 0/0 until the resync is done; decant run refuses the pipeline meanwhile", "pipeline", e.cfg.Pipeline, "was", stored.End.String())
	}
	if err := tgt.ResetCheckpoint(ctx, checkpoint.Row{Pipeline: e.cfg.Pipeline}); err != nil {
		return false, err
	}
	if !slot.Exists {
		return false, nil
	}
	if _, err := src.DropSlot(ctx); err != nil {
		return false, err
	}
	e.cfg.Logger.Info("old slot dropped", "slot", e.cfg.Pipeline, "confirmed", slot.Confirmed.String())
	return true, nil
}

// inactiveSlot reads the pipeline's slot, waiting up to wait for an
// active one to come free, and refuses one still in use.
func (e *env) inactiveSlot(ctx context.Context, src PGSource, wait time.Duration) (source.SlotStatus, error) {
	deadline := time.Now().Add(wait)
	for {
		slot, err := src.ReadSlot(ctx)
		if err != nil || !slot.Active {
			return slot, err
		}
		if !time.Now().Before(deadline) {
			return slot, fmt.Errorf("slot %s is in use (PID %d on the source): a decant run holds pipeline %s; stop it, then run decant resync", e.cfg.Pipeline, slot.ActivePID, e.cfg.Pipeline)
		}
		select {
		case <-ctx.Done():
			return slot, ctx.Err()
		case <-time.After(slotPoll):
		}
	}
}

// repair compares every table with the source as of the exported
// snapshot and repairs what differs; a table that cannot be compared
// fails the resync.
func (e *env) repair(ctx context.Context, src PGSource, tables []source.Table, exp *source.ExportedSlot, o ResyncOptions) (*verify.Report, error) {
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return nil, err
	}
	rep, err := verify.Run(ctx, verify.Config{
		Source: e.cfg.Source, Target: e.cfg.Target, MySQL: e.cfg.MySQLTarget(),
		Tables: defs, Router: e.cfg.Router, Columns: e.cfg.Columns, Policy: e.cfg.Policy,
		Jobs: o.Jobs, SpanRows: o.SpanRows, Logger: e.cfg.Logger, Snapshot: exp.Snapshot,
		Repair: &verify.Repair{Writer: e.rowWriter(exp.Consistent), Batch: o.Batch, Progress: o.Progress},
	})
	if err != nil {
		return nil, err
	}
	for _, t := range rep.Tables {
		if t.Error != "" {
			return rep, fmt.Errorf("table %s: %s", t.Source, t.Error)
		}
	}
	return rep, nil
}

// rowWriter opens the stream's own writer for the target, as run would
// (one change at a time: no window of net changes to gather), for the
// repairs' inserts. Each batch commits with the checkpoint row as it
// stands (position 0 while the resync runs), which the writer's
// checkpoint update requires.
func (e *env) rowWriter(asOf source.LSN) func(ctx context.Context) (verify.RowWriter, error) {
	return func(ctx context.Context) (verify.RowWriter, error) {
		var t apply.Target
		var err error
		if e.cfg.MySQLTarget() {
			t, err = mysql.New(mysql.Config{DSN: e.cfg.Target, Pipeline: e.cfg.Pipeline, Router: e.cfg.Router, Columns: e.cfg.Columns, Policy: e.cfg.Policy, Plain: true, Logger: e.cfg.Logger})
		} else {
			t, err = pg.New(pg.Config{DSN: e.cfg.Target, Pipeline: e.cfg.Pipeline, Router: e.cfg.Router, Columns: e.cfg.Columns, Plain: true, Logger: e.cfg.Logger})
		}
		if err != nil {
			return nil, err
		}
		cp, err := t.Open(ctx)
		if err != nil {
			t.Close(ctx)
			return nil, err
		}
		return &rowWriter{t: t, cp: cp, txn: &source.Txn{Commit: asOf}}, nil
	}
}

// rowWriter hands repaired rows to a stream writer as inserts.
type rowWriter struct {
	t       apply.Target
	cp      checkpoint.Row
	txn     *source.Txn
	changes []source.Change
}

var _ verify.RowWriter = (*rowWriter)(nil)

func (w *rowWriter) Insert(ctx context.Context, rel *source.Relation, rows [][]source.Value) error {
	w.changes = w.changes[:0]
	for _, r := range rows {
		w.changes = append(w.changes, source.Change{Op: source.OpInsert, Rel: rel, New: r})
	}
	return w.t.Apply(ctx, w.txn, w.changes)
}

func (w *rowWriter) Commit(ctx context.Context) error { return w.t.Commit(ctx, w.cp) }

func (w *rowWriter) Close(ctx context.Context) { w.t.Close(ctx) }
