package pg

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// decant.skipped (checkpoint.Skip): the transactions an operator had run
// skip, the one run last stopped on, and a pending request.

var _ apply.SkipTarget = (*Target)(nil)

// PendingSkip reads the pipeline's pending skip; none when decant.skipped
// does not exist (a pipeline set up by an older decant).
func (t *Target) PendingSkip(ctx context.Context) (checkpoint.Skip, bool, error) {
	if err := t.await(); err != nil {
		return checkpoint.Skip{}, false, err
	}
	var rows []checkpoint.Skip
	err := t.bound().Do(ctx, "reading the pending skip", func(ctx context.Context) error {
		var err error
		rows, err = readSkips(ctx, t.conn, t.cfg.Pipeline, 2)
		return err
	})
	if err != nil {
		return checkpoint.Skip{}, false, err
	}
	s, ok := checkpoint.PendingOf(rows)
	return s, ok, nil
}

// RecordSkip queues the mark of the skip as done into the open
// transaction; Commit sends it with the checkpoint. Matching no row (a
// cancel came first) fails the batch with apply.SkipCancelledError.
func (t *Target) RecordSkip(_ context.Context, txn *source.Txn, s checkpoint.Skip) error {
	t.begin(txn)
	t.batch.add(checkpoint.PGSkipDone, s.PGDoneArgs(), apply.Origin{Op: "skip", Txn: txn, Expect: 1})
	return nil
}

// RecordStop writes the transaction the pipeline stopped on, in a
// transaction of its own; none may be open.
func (t *Target) RecordStop(ctx context.Context, s checkpoint.Skip) error {
	if t.conn == nil || t.conn.IsClosed() || t.inTx {
		return fmt.Errorf("no idle target session to record the stop at commit %s on", s.Commit)
	}
	return t.bound().Do(ctx, "recording where the pipeline stopped", func(ctx context.Context) error {
		return recordStop(ctx, t.conn, s)
	})
}

func recordStop(ctx context.Context, conn *pgx.Conn, s checkpoint.Skip) error {
	if _, err := conn.Exec(ctx, checkpoint.PGSkippedCreate); err != nil {
		return fmt.Errorf("create decant.skipped on the target: %w", describe(err))
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, checkpoint.PGStopForget, s.Pipeline); err != nil {
			return fmt.Errorf("record the stop at commit %s in decant.skipped: %w", s.Commit, describe(err))
		}
		if _, err := tx.Exec(ctx, checkpoint.PGStopRecord, s.Pipeline, s.Commit.String(), s.XidArg(), s.Error); err != nil {
			return fmt.Errorf("record the stop at commit %s in decant.skipped: %w", s.Commit, describe(err))
		}
		return nil
	})
}

// readSkips reads the pipeline's rows of decant.skipped not yet skipped,
// then the last skipped ones, at most n in all; none without the table.
func readSkips(ctx context.Context, conn *pgx.Conn, pipeline string, n int) ([]checkpoint.Skip, error) {
	rows, err := conn.Query(ctx, checkpoint.PGSkipsRead, pipeline, n)
	if err != nil {
		if Missing(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read decant.skipped: %w", describe(err))
	}
	var out []checkpoint.Skip
	var s checkpoint.Skip
	var xid, changes *int64
	var tables, errText *string
	var commitTime, stopped, requested, skipped *time.Time
	_, err = pgx.ForEachRow(rows, []any{&s.Commit, &xid, &commitTime, &tables, &changes, &errText, &stopped, &requested, &skipped}, func() error {
		r := checkpoint.Skip{Pipeline: pipeline, Commit: s.Commit}
		if xid != nil {
			r.Xid = uint64(*xid)
		}
		if changes != nil {
			r.Changes = *changes
		}
		if tables != nil {
			r.Tables = checkpoint.ParseTables(*tables)
		}
		if errText != nil {
			r.Error = *errText
		}
		r.CommitTime, r.StoppedAt, r.RequestedAt, r.SkippedAt = orZero(commitTime), orZero(stopped), orZero(requested), orZero(skipped)
		out = append(out, r)
		return nil
	})
	if err != nil {
		if Missing(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read decant.skipped: %w", describe(err))
	}
	return out, nil
}

func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// ReadSkips reads the pipeline's rows of decant.skipped: those not yet
// skipped (a pending request, where run stopped), then the last n skipped.
func (a *Admin) ReadSkips(ctx context.Context, n int) ([]checkpoint.Skip, error) {
	return readSkips(ctx, a.conn, a.cfg.Pipeline, n+2)
}

// RequestSkip makes the skip of s's transaction pending.
func (a *Admin) RequestSkip(ctx context.Context, s checkpoint.Skip) error {
	if _, err := a.conn.Exec(ctx, checkpoint.PGSkippedCreate); err != nil {
		return fmt.Errorf("create decant.skipped on the target: %w", describe(err))
	}
	if _, err := a.conn.Exec(ctx, checkpoint.PGSkipRequest, a.cfg.Pipeline, s.Commit.String(), s.XidArg()); err != nil {
		return fmt.Errorf("record the skip of commit %s in decant.skipped: %w", s.Commit, describe(err))
	}
	return nil
}

// CancelSkip withdraws the pending skip; it reports whether there was one.
func (a *Admin) CancelSkip(ctx context.Context) (bool, error) {
	tag, err := a.conn.Exec(ctx, checkpoint.PGSkipCancel, a.cfg.Pipeline)
	if Missing(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cancel the pending skip in decant.skipped: %w", describe(err))
	}
	return tag.RowsAffected() > 0, nil
}

// forgetSkips removes the pipeline's rows of decant.skipped (drop).
func (a *Admin) forgetSkips(ctx context.Context) error {
	_, err := a.conn.Exec(ctx, `DELETE FROM decant.skipped WHERE pipeline = $1`, a.cfg.Pipeline)
	if Missing(err) {
		return nil
	}
	return err
}
