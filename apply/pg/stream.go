package pg

import (
	"context"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Transactions streamed while in progress (apply.StreamTarget), kept in
// an apply.Streams.
//
// Each streamed xid gets a writer of its own: a child Target on a
// connection of its own, with the main writer's configuration and session
// settings (session_replication_role = replica) but its own prepared
// statements, table and plan caches, which never reads or creates the
// checkpoint row. It writes through the same batches and COPY as the main
// writer, so errors name the xid and table alike. A subtransaction's first
// change is preceded by SAVEPOINT s_<sub>, queued in order behind
// everything before it (COPY runs flush the batch first, so order holds
// across both); a rolled-back subtransaction becomes ROLLBACK TO
// SAVEPOINT, sent at once with what is queued before it.

var _ apply.StreamTarget = (*Target)(nil)

// streamWriter is the child Target of one streamed transaction.
type streamWriter struct{ *Target }

var _ apply.StreamWriter = streamWriter{}

// StreamApply writes changes of the in-progress transaction txn on its own
// connection, opening it on first use.
func (t *Target) StreamApply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	return t.streams.Apply(ctx, t.log, txn, changes, t.openStream)
}

// openStream connects a child writer for a streamed transaction.
func (t *Target) openStream(ctx context.Context) (streamWriter, error) {
	w := &Target{cfg: t.cfg, log: t.log, wal: t.wal, parent: t}
	if err := w.connect(ctx); err != nil {
		return streamWriter{}, err
	}
	if err := w.setupStreamOrigin(ctx); err != nil {
		w.Close(ctx)
		return streamWriter{}, err
	}
	return streamWriter{w}, nil
}

// Savepoint queues SAVEPOINT name behind everything before it.
func (w streamWriter) Savepoint(ctx context.Context, txn *source.Txn, name string) error {
	return w.savepoint(ctx, txn, "savepoint", "SAVEPOINT "+name)
}

// RollbackTo sends ROLLBACK TO SAVEPOINT name at once (apply.StreamWriter
// says why) and forgets the tables' definitions.
func (w streamWriter) RollbackTo(ctx context.Context, txn *source.Txn, name string) error {
	if err := w.savepoint(ctx, txn, "rollback to savepoint", "ROLLBACK TO SAVEPOINT "+name); err != nil {
		return err
	}
	if err := w.flush(ctx); err != nil {
		return err
	}
	w.forgetTables()
	return nil
}

// savepoint queues a savepoint statement (op names it in errors) behind
// everything before it.
func (t *Target) savepoint(ctx context.Context, txn *source.Txn, op, sql string) error {
	if err := t.endRun(ctx); err != nil {
		return err
	}
	t.begin(txn)
	t.batch.add(sql, nil, apply.Origin{Op: op, Txn: txn, Expect: -1})
	return t.maybeFlush(ctx)
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
