package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Skipping a transaction on an operator's request (decant skip).
//
// The request is a pending row on the target (checkpoint.Skip), read at
// every session's start. The transaction it names must be the next one
// the pipeline would apply: anything else (an earlier or later commit, a
// position at which nothing commits, another xid) stops the pipeline
// with both positions, since skipping by a mistaken position would drop
// a transaction nobody looked at. Its changes are not applied; the row is
// marked skipped, with what the transaction held, in the target
// transaction that moves the checkpoint past it, so a crash leaves both
// or neither. A transaction is skipped whole or not at all.

// SkipTarget is a Target that keeps decant.skipped.
type SkipTarget interface {
	// PendingSkip reads the pipeline's pending skip, if any.
	PendingSkip(ctx context.Context) (checkpoint.Skip, bool, error)
	// RecordSkip marks the pending skip s done inside the open target
	// transaction (beginning one when none is open), which the next
	// Commit commits with the checkpoint past txn. A skip cancelled
	// meanwhile fails it (SkipCancelledError).
	RecordSkip(ctx context.Context, txn *source.Txn, s checkpoint.Skip) error
	// RecordStop writes, on its own, the transaction the pipeline stopped
	// on and the error, for decant skip and status.
	RecordStop(ctx context.Context, s checkpoint.Skip) error
}

// SkipRefusedError stops the pipeline because a pending skip does not
// name the next transaction to apply, or names one that cannot be
// skipped. It needs a person: decant skip again, or --cancel.
type SkipRefusedError struct {
	Pipeline string
	Skip     checkpoint.Skip
	Reason   string
}

func (e *SkipRefusedError) Error() string {
	want := "commit " + e.Skip.Commit.String()
	if e.Skip.Xid != 0 {
		want += fmt.Sprintf(" (xid %d)", e.Skip.Xid)
	}
	return fmt.Sprintf("pending skip of %s refused: %s; cancel it with decant skip --cancel --pipeline %s, or request the right one", want, e.Reason, e.Pipeline)
}

// NeedsPerson: the operator must change the request.
func (e *SkipRefusedError) NeedsPerson() bool { return true }

// SkipCancelledError: the skip was cancelled while the pipeline was about
// to do it. The next session reads the requests again.
type SkipCancelledError struct{ Commit source.LSN }

func (e *SkipCancelledError) Error() string {
	return fmt.Sprintf("the pending skip of commit %s was cancelled while run was skipping it; resuming without it", e.Commit)
}

// Retryable: a new session applies the transaction instead.
func (e *SkipCancelledError) Retryable() bool { return true }

// skipping is a session's pending skip and the transaction being skipped.
type skipping struct {
	pipeline string
	want     checkpoint.Skip
	pending  bool
	txn      *source.Txn // the transaction being skipped, from its first chunk
	tables   []string    // the source tables of its changes, in order of appearance
	changes  int64
}

// readSkip reads the target's pending skip at a session's start, and
// refuses one behind the checkpoint cp: its transaction was applied.
func (p *Pipeline) readSkip(ctx context.Context, cp checkpoint.Row) (*skipping, error) {
	sk := &skipping{pipeline: cp.Pipeline}
	st, ok := p.tgt.(SkipTarget)
	if !ok {
		return sk, nil
	}
	want, pending, err := st.PendingSkip(ctx)
	if err != nil || !pending {
		return sk, err
	}
	sk.want, sk.pending = want, true
	if want.Commit < cp.End {
		return nil, sk.refuse(fmt.Sprintf("the target already has every transaction that commits before %s (the checkpoint's resume position)", cp.End))
	}
	p.log.Info("a skip is pending", "commit", want.Commit.String(), "xid", want.Xid)
	return sk, nil
}

func (s *skipping) refuse(reason string) error {
	return &SkipRefusedError{Pipeline: s.pipeline, Skip: s.want, Reason: reason}
}

// judge tells whether chunk c, not yet on the target, belongs to the
// transaction to skip; it refuses a chunk that shows the request does not
// name the next transaction to apply.
func (s *skipping) judge(c source.Chunk, stored checkpoint.Row) (bool, error) {
	if !s.pending {
		return false, nil
	}
	switch {
	case c.Txn == nil:
		if c.End > s.want.Commit {
			return false, s.refuse(fmt.Sprintf("no transaction commits there: the source has nothing else to send before %s", c.End))
		}
		return false, nil
	case c.Txn == s.txn:
		return true, nil
	case c.Txn.Streamed:
		return false, s.refuse(fmt.Sprintf("the next transaction, xid %d, is streamed while in progress (--stream-apply immediate), so its commit position is not known before it is applied; run with --stream-apply spool until the skip is done", c.Txn.Xid))
	case c.Txn.Commit != s.want.Commit:
		return false, s.refuse(fmt.Sprintf("the next transaction to apply is commit %s (xid %d)", c.Txn.Commit, c.Txn.Xid))
	case s.want.Xid != 0 && c.Txn.Xid != s.want.Xid:
		return false, s.refuse(fmt.Sprintf("the transaction at that commit is xid %d", c.Txn.Xid))
	case stored.Skip(c.Txn) > 0:
		return false, s.refuse("part of it is already on the target (a schema change committed by itself); a transaction is skipped whole or not at all")
	}
	s.txn = c.Txn
	return true, nil
}

// count notes what a skipped chunk held; a schema change is refused, as
// the target's tables would fall behind the source's.
func (s *skipping) count(c source.Chunk) error {
	for i := range c.Changes {
		ch := &c.Changes[i]
		if ch.Op == source.OpDDL {
			tag := "a schema change"
			if ch.DDL != nil && ch.DDL.Tag != "" {
				tag = ch.DDL.Tag
			}
			return s.refuse(fmt.Sprintf("the transaction holds %s, which decant does not skip (the target's tables would fall behind the source's)", tag))
		}
		for _, name := range changeTables(ch) {
			if n := name.String(); !slices.Contains(s.tables, n) {
				s.tables = append(s.tables, n)
			}
		}
	}
	s.changes += int64(len(c.Changes))
	return nil
}

// changeTables are the source tables a change touches.
func changeTables(ch *source.Change) []source.TableName {
	if ch.Op == source.OpTruncate {
		names := make([]source.TableName, 0, len(ch.Truncated))
		for _, rel := range ch.Truncated {
			names = append(names, rel.Table())
		}
		return names
	}
	if ch.Rel == nil {
		return nil
	}
	return []source.TableName{ch.Rel.Table()}
}

// done is the row that records the skip of txn.
func (s *skipping) done(txn *source.Txn) checkpoint.Skip {
	d := s.want
	d.Xid, d.CommitTime = txn.Xid, txn.CommitTime
	d.Tables, d.Changes = s.tables, s.changes
	return d
}

// skipChunk passes over a chunk of the transaction to skip; with its
// commit chunk it records the skip in the group's target transaction.
func (p *Pipeline) skipChunk(ctx context.Context, g *group, sk *skipping, c source.Chunk) error {
	if err := sk.count(c); err != nil {
		return err
	}
	if !c.Commit {
		return nil
	}
	st := p.tgt.(SkipTarget) // a skip is pending only on a SkipTarget
	d := sk.done(c.Txn)
	if !g.open {
		g.open, g.begun = true, time.Now()
	}
	if err := st.RecordSkip(ctx, c.Txn, d); err != nil {
		return err
	}
	p.log.Info("skipping transaction as requested", "xid", d.Xid, "commit", d.Commit.String(), "tables", len(d.Tables), "changes", d.Changes)
	// Done once the group commits; a failure ends the session, and the
	// next one reads the request again.
	sk.pending, sk.txn = false, nil
	return nil
}

// recordStop writes the transaction a permanent apply error stopped on,
// so that decant skip can check the position it is given against it. A
// failure to write it is only logged: the error itself stops the
// pipeline all the same.
func (p *Pipeline) recordStop(ctx context.Context, pipeline string, err error) {
	st, ok := p.tgt.(SkipTarget)
	var ae *Error
	if !ok || !errors.As(err, &ae) || ae.Commit == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s := checkpoint.Skip{Pipeline: pipeline, Commit: ae.Commit, Xid: ae.Xid, Error: err.Error()}
	if werr := st.RecordStop(rctx, s); werr != nil {
		p.log.Warn("could not record on the target where the pipeline stopped; decant skip will not show the error", "error", werr.Error())
	}
}
