package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Transactions streamed while in progress (--stream-apply immediate).
//
// Their chunks (Txn.Streamed) bypass the group: changes go to the
// StreamTarget as they come, a rolled-back subtransaction or transaction
// is rolled back there, and the commit chunk (a new Txn with the commit
// position) commits the streamed transaction with its checkpoint, in
// source commit order with everything else.
//
// Before it hands over a streamed change, subtransaction rollback or
// commit (anything that may send statements on a stream's connection),
// the applier commits the open group: its row locks would make the
// streamed transaction wait for a commit that only the applier itself can
// make (a deadlock the target cannot see), and at a streamed commit the
// group's checkpoint update would block the streamed one on the checkpoint
// row. Stream blocks are large (logical_decoding_work_mem), so the extra
// commits are few.

// streaming is the applier's state for streamed transactions.
type streaming struct {
	// replayEnd, when set, is the checkpoint's End at a session start
	// that resumed before it (at a held prepared transaction, Row.Hold):
	// until the source passes it, a streamed transaction may be one the
	// target already has, whose changes fail there (a duplicate key, a row
	// already gone). Only its commit position tells, so until then a
	// permanent failure waits for the commit in failed.
	replayEnd source.LSN
	failed    map[uint64]error  // by xid
	tallies   map[uint64]*Tally // the changes handed over, by xid
}

func newStreaming(cp checkpoint.Row) *streaming {
	s := &streaming{failed: map[uint64]error{}, tallies: map[uint64]*Tally{}}
	if cp.Resume() < cp.End {
		s.replayEnd = cp.End
	}
	return s
}

// passed notes a chunk: once the source delivers a commit at or past
// replayEnd, or reports that nothing else commits below it, every
// transaction the target already had has come by.
func (s *streaming) passed(c source.Chunk) {
	if s.replayEnd == 0 {
		return
	}
	if (c.Txn == nil && c.End >= s.replayEnd) || (c.Txn != nil && c.Commit && c.Txn.Commit >= s.replayEnd) {
		s.replayEnd = 0
	}
}

// tally is what was handed over of streamed transaction xid. A
// subtransaction rolled back stays counted: its changes were applied, then
// undone.
func (s *streaming) tally(xid uint64) *Tally {
	t := s.tallies[xid]
	if t == nil {
		t = &Tally{}
		s.tallies[xid] = t
	}
	return t
}

// applyStreamed handles a chunk of a streamed transaction: changes, then
// an abort or the commit. It reports whether the target committed (the
// group, or the streamed transaction).
func (p *Pipeline) applyStreamed(ctx context.Context, g *group, stored *checkpoint.Row, ss *streaming, c source.Chunk) (bool, error) {
	st, ok := p.tgt.(StreamTarget)
	if !ok {
		return false, fmt.Errorf("the source streams transaction xid %d while it is in progress, but this target cannot apply it so; run with --stream-apply spool", c.Txn.Xid)
	}
	xid := c.Txn.Xid
	wrote := false
	if err := p.sync.streamed(ctx, c, stored.End); err != nil {
		return false, err
	}
	if len(c.Changes) > 0 && ss.failed[xid] == nil {
		var err error
		if wrote, err = p.commitGroup(ctx, g, stored); err != nil {
			return false, err
		}
		if err := streamApply(ctx, st, c); err == nil {
			ss.tally(xid).add(c.Changes, c.Bytes)
		} else {
			if ss.replayEnd == 0 || Transient(err) {
				return wrote, err
			}
			p.log.Info("a transaction streamed again after a restart failed; its commit tells whether the target has it already", "xid", xid, "error", err.Error())
			ss.failed[xid] = err
			if err := st.StreamAbort(ctx, xid, 0); err != nil {
				return wrote, err
			}
		}
	}
	var err error
	committed := false
	switch {
	case c.Abort && c.Sub == 0:
		delete(ss.failed, xid)
		delete(ss.tallies, xid)
		p.log.Debug("streamed transaction rolled back", "xid", xid)
		err = st.StreamAbort(ctx, xid, 0)
	case c.Abort:
		// Sends what the target holds of the transaction, then the
		// rollback to the savepoint: the group goes first.
		if committed, err = p.commitGroup(ctx, g, stored); err == nil {
			p.log.Debug("streamed subtransaction rolled back", "xid", xid, "sub", c.Sub)
			err = st.StreamAbort(ctx, xid, c.Sub)
		}
	case c.Commit:
		committed, err = p.streamCommit(ctx, st, g, stored, ss, c)
	}
	return wrote || committed, err
}

// streamApply hands a streamed chunk's changes over; schema changes are
// refused.
func streamApply(ctx context.Context, st StreamTarget, c source.Chunk) error {
	if i := firstDDL(c.Changes); i >= 0 {
		return StreamedDDLError(c.Txn, c.Changes[i].DDL)
	}
	return st.StreamApply(ctx, c.Txn, c.Changes)
}

// streamCommit commits a streamed transaction with its checkpoint, after
// the group (commit order), unless the target has it already.
func (p *Pipeline) streamCommit(ctx context.Context, st StreamTarget, g *group, stored *checkpoint.Row, ss *streaming, c source.Chunk) (bool, error) {
	xid := c.Txn.Xid
	wrote, err := p.commitGroup(ctx, g, stored)
	if err != nil {
		return false, err
	}
	failed := ss.failed[xid]
	delete(ss.failed, xid)
	tally := ss.tally(xid)
	delete(ss.tallies, xid)
	done, err := stored.Applied(c.Txn)
	if err != nil {
		return wrote, err
	}
	if done {
		// Streamed again after a restart: the target has it. Only the
		// resume position may move.
		p.log.Debug("streamed transaction already applied", "xid", xid, "commit", c.Txn.Commit.String())
		g.cp.End, g.cp.Hold = max(g.cp.End, c.End), c.Hold
		return wrote, st.StreamAbort(ctx, xid, 0)
	}
	if failed != nil {
		return wrote, failed
	}
	cp := g.cp.After(c.Txn, c.End)
	cp.Hold = c.Hold
	p.obs.Received(c.Txn)
	p.obs.SourceEnd(c.End)
	began := time.Now()
	if err := st.StreamCommit(ctx, xid, cp); err != nil {
		return wrote, err
	}
	p.log.Debug("committed streamed transaction", "xid", xid, "end", cp.End.String())
	*stored = cp
	p.committedAs(cp, Commit{Txns: 1, Changes: *tally, Duration: time.Since(began)})
	*g = group{cp: cp}
	return true, nil
}

// commitGroup commits the group, if one is open, before statements go out
// on a stream's connection; it reports whether it did. A group is whole
// transactions: the source never sends a streamed block inside another
// transaction.
func (p *Pipeline) commitGroup(ctx context.Context, g *group, stored *checkpoint.Row) (bool, error) {
	if !g.open {
		return false, nil
	}
	if g.midTxn {
		return false, fmt.Errorf("the source sent a streamed block inside transaction xid %d, which it never does; stopping rather than committing part of it", g.txn.Xid)
	}
	return true, p.commit(ctx, g, stored)
}

// StreamedDDLError refuses schema change d inside streamed transaction
// txn (ErrStreamedDDL), naming the command and its first table.
func StreamedDDLError(txn *source.Txn, d *source.DDL) error {
	e := &Error{Op: "ddl", Xid: txn.Xid, Commit: txn.Commit, Err: ErrStreamedDDL}
	if d != nil {
		if len(d.Tables) > 0 {
			e.Table = d.Tables[0].Name
		} else if len(d.Dropped) > 0 {
			e.Table = d.Dropped[0].Name
		}
		if d.Tag != "" {
			e.Err = fmt.Errorf("%s: %w", d.Tag, ErrStreamedDDL)
		}
	}
	return e
}

// rollbackStreams abandons every open streamed transaction when the
// applier stops: the source streams them again from their start after a
// restart. It runs during shutdown too, so it gets its own short deadline.
func (p *Pipeline) rollbackStreams(ctx context.Context) {
	st, ok := p.tgt.(StreamTarget)
	if !ok {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	st.StreamRollbackAll(rctx)
}
