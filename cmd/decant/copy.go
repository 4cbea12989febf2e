package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// The initial copy (init --copy, migrate). The slot is created together
// with an exported snapshot of the moment it became consistent; every
// selected table is copied under that snapshot, by parallel workers, while
// the session that exported it stays open; streaming then starts at the
// slot's consistent point, so nothing is missed or applied twice.

// exportForCopy creates the pipeline's slot with an exported snapshot.
// The checkpoint row is written once the copy is done, so a slot without
// one is left by an interrupted init: it is dropped and, where a copy had
// begun, the tables it filled are emptied. Its snapshot ended with the
// process that exported it, and rows changed since cannot be told apart
// from rows copied, so the copy starts over.
func exportForCopy(ctx context.Context, c config, src *pgx.Conn, tgt targetAdmin, names []source.TableName, hasRow bool, log *slog.Logger) (*pgoutput.Exported, error) {
	if hasRow {
		return nil, usagef("pipeline %s is already initialized; --copy copies the tables when a pipeline starts: run decant drop --yes first (and empty the target tables), then init --copy", c.Pipeline)
	}
	slot, err := pgoutput.ReadSlot(ctx, src, c.Pipeline)
	if err != nil {
		return nil, err
	}
	if slot.Exists {
		asOf, remaining, err := bulk.Pending(ctx, c.Target, c.Pipeline)
		if err != nil {
			return nil, err
		}
		if asOf != 0 {
			log.Warn("restarting an interrupted initial copy: the snapshot it was taken under ended with the process that exported it, so the tables it filled are emptied and copied again",
				"pipeline", c.Pipeline, "as_of", asOf.String(), "unfinished_tables", len(remaining))
		} else {
			log.Warn("dropping the slot of an interrupted init; no table had been copied yet", "slot", c.Pipeline)
		}
		if err := restartCopy(ctx, c, src, tgt, names, asOf != 0); err != nil {
			return nil, err
		}
	}
	return pgoutput.ExportSlot(ctx, c.Source, c.Pipeline)
}

// restartCopy undoes an interrupted copy: slot, copy state, and the rows
// it put in the target tables.
func restartCopy(ctx context.Context, c config, src *pgx.Conn, tgt targetAdmin, names []source.TableName, copied bool) error {
	if copied {
		if err := tgt.Empty(ctx, names); err != nil {
			return err
		}
		if err := bulk.Forget(ctx, c.Target, c.Pipeline); err != nil {
			return err
		}
	}
	_, err := pgoutput.DropSlot(ctx, src, c.Pipeline)
	return err
}

// copyRetries is how many times a copy interrupted by a lost connection
// is resumed within the process.
const copyRetries = 5

// copyTables copies the selected tables under the exported snapshot, then
// builds the secondary indexes of the tables init created.
func copyTables(ctx context.Context, c config, o initOptions, src *pgx.Conn, exp *pgoutput.Exported, tables []pgoutput.Table, created []*source.TableDef, log *slog.Logger) error {
	defs, err := describeTables(ctx, src, tables)
	if err != nil {
		return err
	}
	split, err := o.copySplit()
	if err != nil {
		return err
	}
	progress := newCopyProgress(log)
	cfg := bulk.Config{
		Source: c.Source, Snapshot: exp.Snapshot, AsOf: exp.Consistent, Target: c.Target, Pipeline: c.Pipeline,
		Tables: defs, Router: c.router(), Columns: c.columns, Policy: c.policy, Jobs: o.jobs, SplitBytes: split,
		Progress: progress, Logger: log,
	}
	var res bulk.Result
	// The snapshot lives as long as this process holds the exporting
	// session: a worker's lost connection is retried, and only the tables
	// (or ranges) not yet recorded as copied are copied again.
	// Backoff as run's reconnects: 1 s doubling, five retries (31 s).
	for attempt, wait := 1, time.Second; ; attempt, wait = attempt+1, wait*2 {
		res, err = bulk.Copy(ctx, cfg)
		if err == nil || attempt > copyRetries || !apply.Transient(err) || errors.Is(err, bulk.ErrSnapshotGone) {
			break
		}
		log.Warn("initial copy interrupted; resuming what is not copied yet", "error", err.Error(), "attempt", attempt, "retry_in", wait.String())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	progress.Wait()
	if err != nil {
		return fmt.Errorf("initial copy: %w (run decant init --copy again to restart it)", err)
	}
	if len(created) > 0 {
		start := time.Now()
		if err := buildIndexes(ctx, c, created, o.jobs, progress.copiedBytes); err != nil {
			return err
		}
		log.Info("keys and indexes built", "tables", len(created), "seconds", time.Since(start).Seconds())
	}
	log.Info("initial copy done", "tables", res.Tables, "rows", res.Rows, "MB", float64(res.Bytes)/1e6,
		"seconds", res.Elapsed.Seconds(), "rows_per_s", float64(res.Rows)/max(res.Elapsed.Seconds(), 0.001))
	fmt.Printf("copied %d tables, %d rows (%.1f MB) in %.1fs as of %s\n", res.Tables, res.Rows, float64(res.Bytes)/1e6, res.Elapsed.Seconds(), exp.Consistent)
	return nil
}

// buildIndexes builds the keys and indexes of the tables init created for
// the copy, largest table first, a table per connection, on up to jobs
// connections at once (new ones: the copy may have outlived those opened
// before it).
func buildIndexes(ctx context.Context, c config, defs []*source.TableDef, jobs int, size func(source.TableName) int64) error {
	defs = slices.Clone(defs)
	slices.SortStableFunc(defs, func(a, b *source.TableDef) int { return cmp.Compare(size(b.Name), size(a.Name)) })
	queue := make(chan *source.TableDef, len(defs))
	for _, d := range defs {
		queue <- d
	}
	close(queue)
	g, gctx := errgroup.WithContext(ctx)
	for range min(jobs, len(defs)) {
		g.Go(func() error {
			tgt, err := openAdmin(gctx, c)
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

// copyFinished refuses to stream while the pipeline's initial copy is
// unfinished: the tables would lack rows that the stream never brings.
// The checkpoint row, written only after the copy, guards that too; this
// says why. A target it cannot read now is left to the pipeline, which
// retries the connection.
func copyFinished(ctx context.Context, c config, log *slog.Logger) error {
	if c.gaussSource() {
		return nil
	}
	_, remaining, err := bulk.Pending(ctx, c.Target, c.Pipeline)
	if err != nil {
		log.Debug("could not read the initial copy's state on the target", "error", err.Error())
		return nil
	}
	if len(remaining) > 0 {
		return fmt.Errorf("the initial copy of pipeline %s did not finish (%s still to copy): run decant init --copy again to restart it", c.Pipeline, joinNames(remaining))
	}
	return nil
}

func migrateCmd() *cobra.Command {
	var f flags
	o := initOptions{copy: true}
	var catchUp bool
	var slotWait time.Duration
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "init --copy, then run: copy the tables as of a snapshot, then keep the target up to date",
		Long: `Does what decant init --copy and then decant run do: checks source and
target, creates the publication and a slot with an exported snapshot, copies
every selected table under it (--jobs workers; with --create-tables the
target tables are made first and their keys and indexes built after the
data), then streams from the slot's consistent point until SIGINT/SIGTERM,
or with --catch-up until the target has everything committed before the
streaming began. Then check it with decant verify, and switch over with
decant cutover.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, log, err := runInit(cmd, &f, o)
			if err != nil {
				return err
			}
			return runPipeline(cmd.Context(), c, catchUp, slotWait, log)
		},
	}
	addInitFlags(cmd, &f, &o, false)
	addStreamFlags(cmd, &f)
	cmd.Flags().BoolVar(&catchUp, "catch-up", false, "exit 0 once the target has what the source committed before streaming began")
	cmd.Flags().DurationVar(&slotWait, "slot-wait", 60*time.Second, "how long to keep retrying while the slot is held by another session")
	return cmd
}

// copyCmd is init --copy under the name a migration's first step goes by.
func copyCmd() *cobra.Command {
	var f flags
	o := initOptions{copy: true}
	cmd := &cobra.Command{
		Use:   "copy",
		Short: "init --copy: create the pipeline and copy the tables as of its slot's snapshot",
		Long: `Does what decant init --copy does: checks source and target, creates the
publication and a slot with an exported snapshot, copies every selected
table under it (--jobs workers, large tables in --split-size block ranges;
with --create-tables the target tables are made first and their keys and
indexes built after the data), then writes the checkpoint at the slot's
consistent point. decant run then streams from exactly there. An
interrupted copy is restarted by running decant copy again.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, _, err := runInit(cmd, &f, o)
			return err
		},
	}
	addInitFlags(cmd, &f, &o, false)
	return cmd
}
