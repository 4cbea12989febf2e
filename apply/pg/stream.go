package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Transactions streamed while in progress (apply.StreamTarget).
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

// stream is a streamed transaction open on the target.
type stream struct {
	w     *Target
	txn   *source.Txn // its in-progress Txn, to name it in errors
	saved apply.Savepoints
}

// StreamApply writes changes of the in-progress transaction txn on its own
// connection, opening it on first use.
func (t *Target) StreamApply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	var s *stream
	return apply.SubtransactionRuns(txn, changes, func(sub uint32, run []source.Change) error {
		if s == nil {
			var err error
			if s, err = t.openStream(ctx, txn); err != nil {
				return err
			}
		}
		if s.saved.Enter(txn.Xid, sub) {
			if err := s.w.savepoint(ctx, txn, "savepoint", "SAVEPOINT "+apply.SavepointName(sub)); err != nil {
				return err
			}
		}
		return s.w.Apply(ctx, txn, run)
	})
}

func (t *Target) openStream(ctx context.Context, txn *source.Txn) (*stream, error) {
	if s := t.streams[txn.Xid]; s != nil {
		return s, nil
	}
	w := &Target{cfg: t.cfg, log: t.log, wal: t.wal}
	if err := w.connect(ctx); err != nil {
		return nil, fmt.Errorf("connect for transaction xid %d, streamed while in progress: %w", txn.Xid, err)
	}
	if t.streams == nil {
		t.streams = map[uint32]*stream{}
	}
	s := &stream{w: w, txn: txn}
	t.streams[txn.Xid] = s
	t.log.Info("applying a transaction while it is in progress, on a connection of its own", "xid", txn.Xid, "open", len(t.streams))
	return s, nil
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
func (t *Target) StreamAbort(ctx context.Context, xid, sub uint32) error {
	s := t.streams[xid]
	if s == nil {
		return nil
	}
	if sub == 0 || sub == xid {
		t.endStream(ctx, xid, s)
		return nil
	}
	if !s.saved.RollbackTo(sub) {
		return nil
	}
	if err := s.w.savepoint(ctx, s.txn, "rollback to savepoint", "ROLLBACK TO SAVEPOINT "+apply.SavepointName(sub)); err != nil {
		return err
	}
	// Sent at once: the source released the subtransaction's locks at this
	// point, so the transactions that follow may take them on the main
	// connection, which must not wait for this one. For the same reason
	// the tables' definitions may change before this transaction touches
	// them again: learn them anew.
	if err := s.w.flush(ctx); err != nil {
		return err
	}
	s.w.forgetTables()
	return nil
}

// StreamCommit writes cp in xid's transaction and commits it.
func (t *Target) StreamCommit(ctx context.Context, xid uint32, cp checkpoint.Row) error {
	s := t.streams[xid]
	if s == nil {
		if t.inTx {
			return errors.New("streamed commit while the main target transaction is open")
		}
		return t.Commit(ctx, cp)
	}
	delete(t.streams, xid)
	defer s.w.Close(ctx)
	return s.w.Commit(ctx, cp)
}

// StreamRollbackAll rolls back every open streamed transaction.
func (t *Target) StreamRollbackAll(ctx context.Context) {
	for xid, s := range t.streams {
		t.endStream(ctx, xid, s)
	}
}

// endStream rolls a streamed transaction back and releases its
// connection; a failed rollback is discarded by the server as the
// connection closes.
func (t *Target) endStream(ctx context.Context, xid uint32, s *stream) {
	delete(t.streams, xid)
	if err := s.w.Rollback(ctx); err != nil {
		t.log.Warn("rollback of a streamed transaction failed; the target discards it as the connection closes", "xid", xid, "error", err.Error())
	}
	s.w.Close(ctx)
}

// closeStreams drops the connections of streamed transactions.
func (t *Target) closeStreams(ctx context.Context) {
	for xid, s := range t.streams {
		delete(t.streams, xid)
		s.w.Close(ctx)
		t.gone = append(t.gone, s.w.gone...) // fenced with the main session's
	}
}
