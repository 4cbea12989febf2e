package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	mysqlerr "github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// decant_skipped (checkpoint.Skip): the transactions an operator had run
// skip, the one run last stopped on, and a pending request.

var _ apply.SkipTarget = (*Target)(nil)

// missingTable reports MySQL's "table doesn't exist".
func missingTable(err error) bool {
	var my *mysqlerr.MySQLError
	return errors.As(err, &my) && my.Number == 1146
}

// PendingSkip reads the pipeline's pending skip; none when decant_skipped
// does not exist (a pipeline set up by an older decant).
func (t *Target) PendingSkip(ctx context.Context) (checkpoint.Skip, bool, error) {
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

// RecordSkip opens the transaction, locks the pending row (a cancel then
// waits for the commit) and queues the mark of the skip as done, which
// Commit sends with the checkpoint. A skip no longer pending fails with
// apply.SkipCancelledError.
func (t *Target) RecordSkip(ctx context.Context, txn *source.Txn, s checkpoint.Skip) error {
	t.begin()
	if err := t.flush(ctx); err != nil {
		return err
	}
	var n int
	err := t.bound().Do(ctx, "locking the pending skip", func(ctx context.Context) error {
		return t.conn.QueryRowContext(ctx, checkpoint.MySQLSkipLock, s.Pipeline, uint64(s.Commit)).Scan(&n)
	})
	if err != nil {
		return &apply.Error{Op: "skip", Xid: txn.Xid, Commit: txn.Commit, Err: describe(err)}
	}
	if n != 1 {
		return &apply.Error{Op: "skip", Xid: txn.Xid, Commit: txn.Commit, Err: &apply.SkipCancelledError{Commit: s.Commit}}
	}
	t.batch.add(checkpoint.MySQLSkipDone, s.MySQLDoneArgs(), apply.Origin{Op: "skip", Txn: txn, Expect: -1})
	return nil
}

// RecordStop writes the transaction the pipeline stopped on, in a
// transaction of its own; none may be open.
func (t *Target) RecordStop(ctx context.Context, s checkpoint.Skip) error {
	if t.conn == nil || t.inTx {
		return fmt.Errorf("no idle target session to record the stop at commit %s on", s.Commit)
	}
	return t.bound().Do(ctx, "recording where the pipeline stopped", func(ctx context.Context) error {
		return recordStop(ctx, t.conn, s)
	})
}

func recordStop(ctx context.Context, conn *sql.Conn, s checkpoint.Skip) error {
	if _, err := conn.ExecContext(ctx, checkpoint.MySQLSkippedCreate); err != nil {
		return fmt.Errorf("create decant_skipped on the target: %w", describe(err))
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record the stop at commit %s in decant_skipped: %w", s.Commit, describe(err))
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, checkpoint.MySQLStopForget, s.Pipeline); err != nil {
		return fmt.Errorf("record the stop at commit %s in decant_skipped: %w", s.Commit, describe(err))
	}
	if _, err := tx.ExecContext(ctx, checkpoint.MySQLStopRecord, s.Pipeline, uint64(s.Commit), s.XidArg(), s.Error); err != nil {
		return fmt.Errorf("record the stop at commit %s in decant_skipped: %w", s.Commit, describe(err))
	}
	return tx.Commit()
}

// readSkips reads the pipeline's rows of decant_skipped not yet skipped,
// then the last skipped ones, at most n in all; none without the table.
func readSkips(ctx context.Context, db checkpoint.Querier, pipeline string, n int) ([]checkpoint.Skip, error) {
	rows, err := db.QueryContext(ctx, checkpoint.MySQLSkipsRead, pipeline, n)
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read decant_skipped: %w", describe(err))
	}
	defer rows.Close()
	var out []checkpoint.Skip
	for rows.Next() {
		var commit uint64
		var xid sql.Null[uint64]
		var changes sql.NullInt64
		var commitTime, tables, errText, stopped, requested, skipped sql.NullString
		if err := rows.Scan(&commit, &xid, &commitTime, &tables, &changes, &errText, &stopped, &requested, &skipped); err != nil {
			return nil, fmt.Errorf("read decant_skipped: %w", err)
		}
		s := checkpoint.Skip{Pipeline: pipeline}
		checkpoint.ScanMySQLSkip(&s, commit, xid, commitTime, tables, changes, errText, stopped, requested, skipped)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read decant_skipped: %w", describe(err))
	}
	return out, nil
}

// ReadSkips reads the pipeline's rows of decant_skipped: those not yet
// skipped (a pending request, where run stopped), then the last n skipped.
func (a *Admin) ReadSkips(ctx context.Context, n int) ([]checkpoint.Skip, error) {
	return readSkips(ctx, a.s.Conn, a.cfg.Pipeline, n+2)
}

// RequestSkip makes the skip of s's transaction pending.
func (a *Admin) RequestSkip(ctx context.Context, s checkpoint.Skip) error {
	if _, err := a.s.Conn.ExecContext(ctx, checkpoint.MySQLSkippedCreate); err != nil {
		return fmt.Errorf("create decant_skipped on the target: %w", describe(err))
	}
	if _, err := a.s.Conn.ExecContext(ctx, checkpoint.MySQLSkipRequest, a.cfg.Pipeline, uint64(s.Commit), s.XidArg()); err != nil {
		return fmt.Errorf("record the skip of commit %s in decant_skipped: %w", s.Commit, describe(err))
	}
	return nil
}

// CancelSkip withdraws the pending skip; it reports whether there was one.
// It waits for a run that is committing the skip (RecordSkip locks the row).
func (a *Admin) CancelSkip(ctx context.Context) (bool, error) {
	res, err := a.s.Conn.ExecContext(ctx, checkpoint.MySQLSkipCancel, a.cfg.Pipeline)
	if missingTable(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("cancel the pending skip in decant_skipped: %w", describe(err))
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// forgetSkips removes the pipeline's rows of decant_skipped (drop).
func (a *Admin) forgetSkips(ctx context.Context) error {
	_, err := a.s.Conn.ExecContext(ctx, `DELETE FROM decant_skipped WHERE pipeline = ?`, a.cfg.Pipeline)
	if missingTable(err) {
		return nil
	}
	return err
}
