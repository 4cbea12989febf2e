package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// The bookkeeping a StreamTarget keeps for the transactions it applies
// while in progress, the same for every dialect: which xids are open, on
// which writer, with which savepoints. The SQL stays the target's: a
// StreamWriter is a target's writer of one such transaction.

// StreamWriter writes one transaction streamed while in progress: a child
// of a target's main writer, on a connection of its own, with a target
// transaction of its own.
type StreamWriter interface {
	// Apply writes changes of the transaction (all of one subtransaction)
	// into its target transaction, beginning it if none is open.
	Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error
	// Savepoint sets savepoint name behind everything written before it.
	Savepoint(ctx context.Context, txn *source.Txn, name string) error
	// RollbackTo rolls back to savepoint name, and sends that at once with
	// what is queued before it: the source released the subtransaction's
	// locks there, so transactions after it may take them on the main
	// connection, which must not wait for this one. For the same reason
	// the tables' definitions may change before this transaction touches
	// them again: the writer learns them anew.
	RollbackTo(ctx context.Context, txn *source.Txn, name string) error
	// Commit writes cp in the transaction and commits it.
	Commit(ctx context.Context, cp checkpoint.Row) error
	// Rollback abandons the transaction.
	Rollback(ctx context.Context) error
	// Close releases the connection.
	Close(ctx context.Context)
}

// Streams is a StreamTarget's open streamed transactions, by xid, each
// with its writer. The targets keep one beside their main writer and hand
// it their StreamTarget calls; the zero value is an empty set. It is not
// safe for concurrent use.
type Streams[W StreamWriter] map[uint64]*openStream[W]

// openStream is one streamed transaction open on the target.
type openStream[W StreamWriter] struct {
	w     W
	txn   *source.Txn // its in-progress Txn, to name it in errors
	saved Savepoints
}

// Apply is StreamTarget.StreamApply: it writes changes of the in-progress
// transaction txn through its writer, which open connects on its first
// change, and sets a savepoint before each subtransaction's first change.
// Schema changes are refused before anything is opened or written.
func (s *Streams[W]) Apply(ctx context.Context, log *slog.Logger, txn *source.Txn, changes []source.Change, open func(context.Context) (W, error)) error {
	var st *openStream[W]
	return subtransactionRuns(txn, changes, func(sub uint64, run []source.Change) error {
		if st == nil {
			var err error
			if st, err = s.open(ctx, log, txn, open); err != nil {
				return err
			}
		}
		if st.saved.Enter(txn.Xid, sub) {
			if err := st.w.Savepoint(ctx, txn, SavepointName(sub)); err != nil {
				return err
			}
		}
		return st.w.Apply(ctx, txn, run)
	})
}

// open returns txn's stream, connecting a writer for it if it has none.
func (s *Streams[W]) open(ctx context.Context, log *slog.Logger, txn *source.Txn, open func(context.Context) (W, error)) (*openStream[W], error) {
	if st := (*s)[txn.Xid]; st != nil {
		return st, nil
	}
	w, err := open(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect for transaction xid %d, streamed while in progress: %w", txn.Xid, err)
	}
	if *s == nil {
		*s = Streams[W]{}
	}
	st := &openStream[W]{w: w, txn: txn}
	(*s)[txn.Xid] = st
	log.Info("applying a transaction while it is in progress, on a connection of its own", "xid", txn.Xid, "open", len(*s))
	return st, nil
}

// Abort is StreamTarget.StreamAbort: it rolls back subtransaction sub of
// xid to its savepoint (nothing when it has none, or a rollback to an
// earlier one discarded it), or with sub 0 or xid the whole transaction,
// releasing its writer. An xid without a stream is nothing to do.
func (s *Streams[W]) Abort(ctx context.Context, log *slog.Logger, xid, sub uint64) error {
	st := (*s)[xid]
	if st == nil {
		return nil
	}
	if sub == 0 || sub == xid {
		s.end(ctx, log, xid, st)
		return nil
	}
	if !st.saved.RollbackTo(sub) {
		return nil
	}
	return st.w.RollbackTo(ctx, st.txn, SavepointName(sub))
}

// Commit is StreamTarget.StreamCommit: it commits xid's transaction with
// cp and releases its writer. When nothing of xid reached the target it
// writes cp alone through main, the target's main writer, whose own
// transaction must not be open (mainOpen).
func (s *Streams[W]) Commit(ctx context.Context, xid uint64, cp checkpoint.Row, main Target, mainOpen bool) error {
	st := (*s)[xid]
	if st == nil {
		if mainOpen {
			return errors.New("streamed commit while the main target transaction is open")
		}
		return main.Commit(ctx, cp)
	}
	delete(*s, xid)
	defer st.w.Close(ctx)
	return st.w.Commit(ctx, cp)
}

// RollbackAll is StreamTarget.StreamRollbackAll: it rolls back every open
// streamed transaction and releases their writers.
func (s *Streams[W]) RollbackAll(ctx context.Context, log *slog.Logger) {
	for xid, st := range *s {
		s.end(ctx, log, xid, st)
	}
}

// end rolls a streamed transaction back and releases its writer; a failed
// rollback is discarded by the server as the connection closes.
func (s *Streams[W]) end(ctx context.Context, log *slog.Logger, xid uint64, st *openStream[W]) {
	delete(*s, xid)
	if err := st.w.Rollback(ctx); err != nil {
		log.Warn("rollback of a streamed transaction failed; the target discards it as the connection closes", "xid", xid, "error", err.Error())
	}
	st.w.Close(ctx)
}

// Close releases every writer without a rollback (the main writer's
// session ends, and the server discards what they hold), calling closed
// with each after it is closed.
func (s *Streams[W]) Close(ctx context.Context, closed func(W)) {
	for xid, st := range *s {
		delete(*s, xid)
		st.w.Close(ctx)
		closed(st.w)
	}
}

// Savepoints keeps, for one transaction applied while in progress, the
// subtransactions that have a savepoint in its target transaction, in the
// order they were set. Streams asks it when to set a savepoint and
// whether a rollback to one is due.
//
// A subtransaction's changes follow its savepoint; those of
// subtransactions nested in it come after too, so rolling back to it
// discards exactly what the source's rollback discards. A subtransaction
// without changes for the target never gets one, and rolling it back is
// nothing to do.
type Savepoints struct {
	subs []uint64       // in the order set
	at   map[uint64]int // index in subs
}

// Enter reports whether a change of subtransaction sub of transaction xid
// needs a savepoint first (sub is a subtransaction without one), and then
// records it. Changes of xid itself (sub == xid, or 0) need none.
func (s *Savepoints) Enter(xid, sub uint64) bool {
	if sub == 0 || sub == xid {
		return false
	}
	if n := len(s.subs); n > 0 && s.subs[n-1] == sub {
		return false
	}
	if _, ok := s.at[sub]; ok {
		return false
	}
	if s.at == nil {
		s.at = map[uint64]int{}
	}
	s.at[sub] = len(s.subs)
	s.subs = append(s.subs, sub)
	return true
}

// RollbackTo reports whether sub has a savepoint to roll back to, and
// then forgets it and every later one: the rollback discards their
// changes, and the subtransactions are over.
func (s *Savepoints) RollbackTo(sub uint64) bool {
	i, ok := s.at[sub]
	if !ok {
		return false
	}
	for _, later := range s.subs[i:] {
		delete(s.at, later)
	}
	s.subs = s.subs[:i]
	return true
}

// Len is how many savepoints are set.
func (s *Savepoints) Len() int { return len(s.subs) }

// SavepointName is the SQL name of subtransaction sub's savepoint; it
// needs no quoting in either dialect.
func SavepointName(sub uint64) string { return "s_" + strconv.FormatUint(sub, 10) }

// subtransactionRuns checks that a streamed transaction's changes hold no
// schema change, then calls fn for each run of consecutive changes of one
// subtransaction (Change.Sub), in order: a savepoint goes before a
// subtransaction's first run.
func subtransactionRuns(txn *source.Txn, changes []source.Change, fn func(sub uint64, run []source.Change) error) error {
	for i := range changes {
		if changes[i].Op == source.OpDDL {
			return StreamedDDLError(txn, changes[i].DDL)
		}
	}
	for len(changes) > 0 {
		sub := changes[0].Sub
		n := 1
		for n < len(changes) && changes[n].Sub == sub {
			n++
		}
		if err := fn(sub, changes[:n]); err != nil {
			return err
		}
		changes = changes[n:]
	}
	return nil
}
