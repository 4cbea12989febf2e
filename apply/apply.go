// Package apply runs a pipeline: it takes committed transactions from a
// source reader, hands them to a target writer (apply/pg; later dialects
// alike) in source commit order, and reports back to the source only what
// the target has durably committed together with its checkpoint row.
//
// The loop follows the shape of Vitess VReplication's vplayer: a bounded
// buffer decouples fetch and apply; when a backlog builds, several source
// transactions share one target commit; a supervisor classifies errors,
// stopping on permanent ones and resuming from the checkpoint otherwise.
package apply

import (
	"context"
	"errors"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Source is a reader of committed transactions (source/pgoutput.Reader).
type Source interface {
	// Identify connects once and describes the source server.
	Identify(ctx context.Context) (source.Server, error)
	// Stream delivers chunks in commit order from req.Start until ctx ends
	// (returning ctx.Err()) or the connection fails.
	Stream(ctx context.Context, req source.StreamRequest, out chan<- source.Chunk) error
}

// GoalSource is a Source whose catch-up goal is not its log end
// (Server.WALEnd): on a GaussDB CSN-ordered slot nothing but a commit or a
// decode position shows how far the stream is, so WAL written after the
// last replicated commit would put that end out of reach. Goal may write
// on the source (a decode position request) and is called once a run.
type GoalSource interface {
	Goal(ctx context.Context, srv source.Server) (source.Goal, error)
}

// Target writes into the target database, one open transaction at a time.
type Target interface {
	// Open (re)connects when needed and returns the pipeline's checkpoint.
	Open(ctx context.Context) (checkpoint.Row, error)
	// Apply writes changes of txn into the open target transaction,
	// beginning one if none is open.
	Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error
	// Commit writes cp in the open transaction (or alone, when none is
	// open) and commits. cp must not be behind the stored checkpoint.
	Commit(ctx context.Context, cp checkpoint.Row) error
	// Rollback abandons the open transaction, if any.
	Rollback(ctx context.Context) error
	// Close releases the connection.
	Close(ctx context.Context)
}

// DDLCommitter is a Target whose schema changes commit by themselves
// (MySQL). Before a schema change the pipeline commits what it applied so
// far with CommitPartial: cp is the checkpoint of the last complete source
// transaction, and the target also records that the first seq changes of
// txn are applied. The schema change itself must be safe to run again.
type DDLCommitter interface {
	CommitPartial(ctx context.Context, cp checkpoint.Row, txn *source.Txn, seq int) error
}

// DurableTarget is a Target that may commit asynchronously: a commit
// returns before it is on the target's disk (PostgreSQL with
// synchronous_commit = off, as its own apply worker runs), and a crash of
// the target loses it, data and checkpoint row together. Exactly once
// holds; never ahead is the pipeline's part. Like PostgreSQL's worker
// (worker.c, get_flush_position) it pairs every checkpoint committed with
// a position in the target's log at or past the end of its commit, and
// tells the source of a checkpoint only once the target reports its log
// flushed that far.
type DurableTarget interface {
	// Async reports whether commits may return before they are durable;
	// when not, the pipeline takes each as durable once it returns.
	Async() bool
	// LastCommit tells, for the commit that returned last (Commit, or
	// StreamCommit on a streamed transaction's connection), a position in
	// the target's log at or past its end, and how far the log was
	// flushed as it returned: the commit's own round trip learns both.
	LastCommit() (end, flushed source.LSN)
	// Flushed asks the target how far its log is flushed, and where it
	// ends now: at or past the end of every commit so far, by any session.
	Flushed(ctx context.Context) (flushed, end source.LSN, err error)
}

// StreamTarget is a Target that applies transactions the source streams
// while they are still in progress (PostgreSQL protocol 2, --stream-apply
// immediate): each in a target transaction of its own, on a connection of
// its own beside the Target's main one, committed together with the
// checkpoint row only when the source commits it. Until then nothing of it
// is visible, and abandoning it leaves nothing behind: after a restart the
// source streams an uncommitted transaction again from its start.
//
// Subtransactions become savepoints: the first change of subtransaction s
// sets one, and rolling s back returns to it, which discards s's changes
// and those of every subtransaction begun after it (its own nested ones).
//
// The pipeline commits the main transaction before every call that may
// send statements on a streamed transaction's connection (StreamApply,
// StreamAbort of a subtransaction, StreamCommit): the main transaction's
// row locks would otherwise block the streamed one, whose commit waits for
// the pipeline, in a deadlock the server cannot see. A StreamTarget is not
// safe for concurrent use; transactions are told apart by xid.
type StreamTarget interface {
	// StreamApply writes changes of the in-progress transaction txn
	// (txn.Xid is the top-level xid; each change's Sub names its
	// subtransaction), opening the transaction's connection and target
	// transaction on first use and setting a savepoint at each
	// subtransaction's first change. Schema changes are refused
	// (ErrStreamedDDL).
	StreamApply(ctx context.Context, txn *source.Txn, changes []source.Change) error
	// StreamAbort rolls back subtransaction sub of xid (to its savepoint;
	// nothing when none was set, or a rollback to an earlier one already
	// discarded it), or with sub 0 the whole transaction, releasing its
	// connection. An xid the target does not have is no error.
	StreamAbort(ctx context.Context, xid, sub uint64) error
	// StreamCommit writes cp in xid's transaction and commits it, then
	// releases its connection. When nothing of xid reached the target, it
	// writes cp alone, like Commit; the main transaction must not be open.
	StreamCommit(ctx context.Context, xid uint64, cp checkpoint.Row) error
	// StreamRollbackAll rolls back every open streamed transaction and
	// releases their connections (the end of a session). A failed rollback
	// closes the connection, which discards the transaction as well.
	StreamRollbackAll(ctx context.Context)
}

// ErrStreamedDDL refuses a schema change inside a transaction applied
// while in progress: a separate connection with DDL in an open
// transaction (implicitly committing on MySQL, invalidating the main
// connection's view of the tables) is not worth getting subtly wrong.
var ErrStreamedDDL = errors.New("a schema change inside a transaction streamed while in progress cannot be applied with --stream-apply immediate; run with --stream-apply spool")
