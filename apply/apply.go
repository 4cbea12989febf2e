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
