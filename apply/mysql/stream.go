package mysql

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Transactions streamed while in progress (apply.StreamTarget), kept in
// an apply.Streams.
//
// Each streamed xid gets a writer of its own: a child Target on a
// connection of its own, with the main writer's configuration and session
// settings but its own table and plan caches, which never reads the
// checkpoint row. It writes through the same multi-statement batches, so
// errors name the xid and table alike.
//
// Savepoints: a subtransaction's first change is preceded by SAVEPOINT
// s_<sub> in the batch. Each batch also sets its own savepoint,
// decant_batch, to find a failing statement (batch.go); setting it again
// replaces only that one, so the two never collide, and a diagnosis that
// rolls back to decant_batch removes an s_<sub> set in the same batch and
// sets it again as it replays the batch. ROLLBACK TO SAVEPOINT s_<sub>
// may remove decant_batch (when it was set after s_<sub>), so it is
// always the last statement of its batch, which is sent at once.
//
// Once a transaction is streamed, the child and the main connection run at
// READ COMMITTED (unless the target logs statements, binlog_format
// STATEMENT, where InnoDB needs REPEATABLE READ). A streamed transaction
// stays open for as long as the source's does; at REPEATABLE READ a scan
// for a row of a table without key (UPDATE/DELETE ... LIMIT 1) locks every
// row and gap it passes until the end of the transaction, and waits for
// every locked row it meets. At READ COMMITTED it keeps only the locks of
// the rows it changes and passes over rows others locked that do not match
// (semi-consistent read), as the source did.

var _ apply.StreamTarget = (*Target)(nil)

// streamWriter is the child Target of one streamed transaction.
type streamWriter struct{ *Target }

var _ apply.StreamWriter = streamWriter{}

// StreamApply writes changes of the in-progress transaction txn on its own
// connection, opening it on first use.
func (t *Target) StreamApply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	return t.streams.Apply(ctx, t.log, txn, changes, t.openStream)
}

// openStream connects a child writer for a streamed transaction, with both
// sessions at READ COMMITTED.
func (t *Target) openStream(ctx context.Context) (streamWriter, error) {
	if err := t.readCommitted(ctx); err != nil {
		return streamWriter{}, fmt.Errorf("main target session: %w", err)
	}
	w := &Target{cfg: t.cfg, log: t.log, parent: t}
	if err := w.connect(ctx); err != nil {
		return streamWriter{}, err
	}
	if err := w.readCommitted(ctx); err != nil {
		w.Close(ctx)
		return streamWriter{}, fmt.Errorf("target session: %w", err)
	}
	return streamWriter{w}, nil
}

// Savepoint queues SAVEPOINT name in the batch, behind everything before it.
func (w streamWriter) Savepoint(ctx context.Context, txn *source.Txn, name string) error {
	if err := w.endRun(ctx); err != nil {
		return err
	}
	w.begin()
	w.batch.add("SAVEPOINT "+name, nil, apply.Origin{Op: "savepoint", Txn: txn, Expect: -1})
	return nil
}

// RollbackTo sends ROLLBACK TO SAVEPOINT name at once, as the last
// statement of its batch (it may remove decant_batch), and forgets the
// tables' definitions (apply.StreamWriter says why). InnoDB keeps the row
// locks of the rolled-back statements until the transaction ends, unlike
// the source (lockHint).
func (w streamWriter) RollbackTo(ctx context.Context, txn *source.Txn, name string) error {
	if err := w.endRun(ctx); err != nil {
		return err
	}
	w.begin()
	w.batch.add("ROLLBACK TO SAVEPOINT "+name, nil, apply.Origin{Op: "rollback to savepoint", Txn: txn, Expect: -1})
	if err := w.flush(ctx); err != nil {
		return err
	}
	w.forgetTables()
	return nil
}

// readCommitted makes the session's next transactions READ COMMITTED,
// unless the server logs statements (binlog_format STATEMENT), where
// InnoDB refuses to write at that level.
func (t *Target) readCommitted(ctx context.Context) error {
	if t.readCommittedSet {
		return nil
	}
	t.readCommittedSet = true
	return t.bound().Do(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL", func(ctx context.Context) error {
		var format string
		if err := t.conn.QueryRowContext(ctx, "SELECT @@SESSION.binlog_format").Scan(&format); err != nil {
			return describe(err)
		}
		if format == "STATEMENT" {
			return nil
		}
		if _, err := t.conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"); err != nil {
			return describe(err)
		}
		return nil
	})
}

// StreamAbort rolls back subtransaction sub of xid, or all of xid.
func (t *Target) StreamAbort(ctx context.Context, xid, sub uint64) error {
	return t.streams.Abort(ctx, t.log, xid, sub)
}

// StreamCommit writes cp in xid's transaction and commits it.
func (t *Target) StreamCommit(ctx context.Context, xid uint64, cp checkpoint.Row) error {
	return t.streams.Commit(ctx, xid, cp, t, t.inTx)
}

// StreamRollbackAll rolls back every open streamed transaction.
func (t *Target) StreamRollbackAll(ctx context.Context) {
	t.streams.RollbackAll(ctx, t.log)
}

// closeStreams drops the connections of streamed transactions.
func (t *Target) closeStreams(ctx context.Context) {
	t.streams.Close(ctx, func(w streamWriter) {
		t.gone = append(t.gone, w.gone...) // fenced with the main session's
	})
}

// lockHint explains a lock wait timeout of the main connection while
// streamed transactions are open: one of them may hold the lock. The
// source's locks and the target's match, except that InnoDB keeps the row
// locks of statements rolled back to a savepoint until the transaction
// ends, while the source released them, so a later transaction may change
// those rows on the source and wait for them here. The error stays
// retryable (another session may hold the lock), and says what to do if
// it repeats.
func (t *Target) lockHint(err error) error {
	var my *mysql.MySQLError
	if err == nil || len(t.streams) == 0 || !errors.As(err, &my) || my.Number != 1205 {
		return err
	}
	return fmt.Errorf("%w (%d transactions applied while in progress are open, and InnoDB keeps the row locks of their rolled-back subtransactions until they end; if this repeats, run with --stream-apply spool)", err, len(t.streams))
}
