package migrate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/source"
)

// The initial copy (Init with Copy). The slot is created together with an
// exported snapshot of the moment it became consistent; every selected
// table is copied under that snapshot, by parallel workers, while the
// session that exported it stays open; streaming then starts at the
// slot's consistent point, so nothing is missed or applied twice.

// CopyProgress hears the initial copy: apply/bulk's calls per table while
// it runs, Stopped once its workers have all returned (whether the copy
// failed or not), and Finished with the totals once the copy and the
// index builds are done.
type CopyProgress interface {
	bulk.Progress
	Stopped()
	Finished(res bulk.Result, asOf source.LSN)
}

// copyRetries is how many times a copy interrupted by a lost connection
// is resumed within the process; the first wait is env.backoff (1 s),
// doubling, as run's reconnects (five retries, 31 s).
const copyRetries = 5

// exportForCopy creates the pipeline's slot with an exported snapshot.
// The checkpoint row is written once the copy is done, so a slot without
// one is left by an interrupted init: it is dropped and, where a copy had
// begun, the tables it filled are emptied. Its snapshot ended with the
// process that exported it, and rows changed since cannot be told apart
// from rows copied, so the copy starts over.
func (e *env) exportForCopy(ctx context.Context, src PGSource, tgt target, names []source.TableName, hasRow bool) (*source.ExportedSlot, error) {
	if hasRow {
		return nil, &UsageError{fmt.Errorf("pipeline %s is already initialized; --copy copies the tables when a pipeline starts: run decant drop --yes first (and empty the target tables), then init --copy", e.cfg.Pipeline)}
	}
	slot, err := src.ReadSlot(ctx)
	if err != nil {
		return nil, err
	}
	if slot.Exists {
		asOf, remaining, err := tgt.CopyPending(ctx)
		if err != nil {
			return nil, err
		}
		if asOf != 0 {
			e.cfg.Logger.Warn("restarting an interrupted initial copy: the snapshot it was taken under ended with the process that exported it, so the tables it filled are emptied and copied again",
				"pipeline", e.cfg.Pipeline, "as_of", asOf.String(), "unfinished_tables", len(remaining))
		} else {
			e.cfg.Logger.Warn("dropping the slot of an interrupted init; no table had been copied yet", "slot", e.cfg.Pipeline)
		}
		if err := restartCopy(ctx, src, tgt, names, asOf != 0); err != nil {
			return nil, err
		}
	}
	return src.ExportSlot(ctx)
}

// restartCopy undoes an interrupted copy: the rows it put in the target
// tables, the copy state, and the slot.
func restartCopy(ctx context.Context, src PGSource, tgt target, names []source.TableName, copied bool) error {
	if copied {
		if err := tgt.Empty(ctx, names); err != nil {
			return err
		}
		if err := tgt.ForgetCopy(ctx); err != nil {
			return err
		}
	}
	_, err := src.DropSlot(ctx)
	return err
}

// copyTables copies the selected tables under the exported snapshot, then
// builds the secondary indexes of the tables init created.
func (e *env) copyTables(ctx context.Context, src PGSource, exp *source.ExportedSlot, p *initPlan, o InitOptions) error {
	defs, err := describeTables(ctx, src, p.tables)
	if err != nil {
		return err
	}
	prog := &copySizes{next: o.Progress, bytes: map[source.TableName]int64{}}
	res, err := e.copyResuming(ctx, bulk.Config{
		Source: e.cfg.Source, Snapshot: exp.Snapshot, AsOf: exp.Consistent, Target: e.cfg.Target, Pipeline: e.cfg.Pipeline,
		Tables: defs, Router: e.cfg.Router, Columns: e.cfg.Columns, Policy: e.cfg.Policy, Jobs: o.Jobs, SplitBytes: o.SplitBytes,
		Progress: prog, Logger: e.cfg.Logger,
	})
	prog.stopped()
	if err != nil {
		return fmt.Errorf("initial copy: %w (run decant init --copy again to restart it)", err)
	}
	if len(p.created) > 0 {
		start := time.Now()
		if err := e.buildIndexes(ctx, p.created, o.Jobs, prog.bytes); err != nil {
			return err
		}
		e.cfg.Logger.Info("keys and indexes built", "tables", len(p.created), "seconds", time.Since(start).Seconds())
	}
	e.cfg.Logger.Info("initial copy done", "tables", res.Tables, "rows", res.Rows, "MB", float64(res.Bytes)/1e6,
		"seconds", res.Elapsed.Seconds(), "rows_per_s", float64(res.Rows)/max(res.Elapsed.Seconds(), 0.001))
	if o.Progress != nil {
		o.Progress.Finished(res, exp.Consistent)
	}
	return nil
}

// copyResuming runs the copy, and again after a lost connection: the
// snapshot lives as long as this process holds the exporting session, so
// only the tables (or ranges) not yet recorded as copied are copied again.
func (e *env) copyResuming(ctx context.Context, cfg bulk.Config) (bulk.Result, error) {
	for attempt, wait := 1, e.backoff; ; attempt, wait = attempt+1, wait*2 {
		res, err := e.copy(ctx, cfg)
		if err == nil || attempt > copyRetries || !apply.Transient(err) || errors.Is(err, bulk.ErrSnapshotGone) {
			return res, err
		}
		e.cfg.Logger.Warn("initial copy interrupted; resuming what is not copied yet", "error", err.Error(), "attempt", attempt, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// buildIndexes builds the keys and indexes of the tables init created for
// the copy, largest table first, a table per session, on up to jobs
// sessions at once (new ones: the copy may have outlived those opened
// before it).
func (e *env) buildIndexes(ctx context.Context, defs []*source.TableDef, jobs int, size map[source.TableName]int64) error {
	defs = slices.Clone(defs)
	slices.SortStableFunc(defs, func(a, b *source.TableDef) int { return cmp.Compare(size[b.Name], size[a.Name]) })
	queue := make(chan *source.TableDef, len(defs))
	for _, d := range defs {
		queue <- d
	}
	close(queue)
	g, gctx := errgroup.WithContext(ctx)
	for range min(jobs, len(defs)) {
		g.Go(func() error {
			tgt, err := e.target(gctx)
			if err != nil {
				return err
			}
			defer tgt.Close(context.WithoutCancel(gctx))
			for d := range queue {
				if gctx.Err() != nil {
					return nil
				}
				if err := tgt.CreateIndexes(gctx, []*source.TableDef{d}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// copySizes passes the copy's progress on and keeps what each table's
// copy read from the source, which orders the index builds. apply/bulk
// serialises the calls.
type copySizes struct {
	next  CopyProgress // nil hears nothing
	bytes map[source.TableName]int64
}

var _ bulk.Progress = (*copySizes)(nil)

// Planned starts a table's count again: a resumed copy reports every
// table from the start, done tasks included.
func (s *copySizes) Planned(table source.TableName, rows, bytes int64) {
	s.bytes[table] = 0
	if s.next != nil {
		s.next.Planned(table, rows, bytes)
	}
}

func (s *copySizes) Copied(table source.TableName, rows, bytes int64) {
	s.bytes[table] += bytes
	if s.next != nil {
		s.next.Copied(table, rows, bytes)
	}
}

func (s *copySizes) Done(table source.TableName) {
	if s.next != nil {
		s.next.Done(table)
	}
}

func (s *copySizes) stopped() {
	if s.next != nil {
		s.next.Stopped()
	}
}

// CopyFinished refuses to stream while the pipeline's initial copy is
// unfinished: the tables would lack rows that the stream never brings.
// The checkpoint row, written only after the copy, guards that too; this
// says why. A target it cannot read now is left to the pipeline, which
// retries the connection. For PostgreSQL sources (GaussDB ones have no
// initial copy).
func CopyFinished(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	_, remaining, err := bulk.Pending(ctx, cfg.Target, cfg.Pipeline)
	if err != nil {
		cfg.Logger.Debug("could not read the initial copy's state on the target", "error", err.Error())
		return nil
	}
	if len(remaining) > 0 {
		return fmt.Errorf("the initial copy of pipeline %s did not finish (%s still to copy): run decant init --copy again to restart it", cfg.Pipeline, joinNames(remaining))
	}
	return nil
}
