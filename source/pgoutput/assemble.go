package pgoutput

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/decant/decant/source"
)

// Assembling transactions from the decoded events.
//
// An ordinary transaction (Begin … Commit) is handed over in chunks as it
// arrives: the source sends it only once it committed.
//
// A streamed transaction (protocol 2: its changes arrive in blocks while it
// is still in progress, interleaved with other transactions) is either
// spooled, per xid, under one memory budget shared by every transaction
// held, and handed over at Stream Commit (--stream-apply spool), or handed
// over block by block as chunks marked Streamed, with Abort chunks for
// rolled-back subtransactions and a final commit chunk (immediate), for a
// target that applies it in an open transaction of its own.
//
// A prepared transaction (protocol 3, two-phase) is spooled from Begin
// Prepare (or Stream Prepare) until COMMIT PREPARED, then handed over as a
// transaction committing there; ROLLBACK PREPARED discards it. While one is
// held, every chunk carries Hold, its prepare position: the checkpoint
// keeps it, so that a restart resumes before the PREPARE, which the source
// sends again only then.

// streamTxn is a streamed transaction in progress.
type streamTxn struct {
	txn   *source.Txn   // Streamed; the chunks' Txn in immediate mode
	spool *source.Spool // spool mode
	cur   []source.Change
	bytes int
}

// heldTxn is a prepared transaction awaiting COMMIT or ROLLBACK PREPARED.
type heldTxn struct {
	xid     uint64
	prepare source.LSN    // the PREPARE record's position
	spool   *source.Spool // its changes; nil when applied as a stream (immediate)
	stream  *source.Txn   // immediate mode: the streamed transaction left open on the target
}

// assembler is the per-connection transaction state of a stream.
type assembler struct {
	immediate bool
	budget    *source.Budget
	usage     *source.SpillUsage // nil: not counted
	dir       string
	prefix    string

	cur      source.Chunk // ordinary transaction: chunk being filled
	curBytes int
	// curTotal counts the changes of the ordinary transaction being
	// filled; hint, the last one's up to chunkChanges, is the capacity a
	// new chunk starts with: transactions in a stream tend to be alike,
	// and a chunk grown by append from nothing allocates twice its size.
	curTotal int
	hint     int
	holding  *heldTxn // Begin Prepare seen: changes go to its spool
	streams  map[uint64]*streamTxn
	prepared map[string]*heldTxn // by GID
}

func newAssembler(cfg Config) *assembler {
	return &assembler{
		immediate: cfg.StreamApply == "immediate",
		budget:    &source.Budget{Limit: cfg.MaxTxnMemory},
		usage:     cfg.Spill,
		dir:       cfg.SpillDir,
		prefix:    spillPrefix(cfg.Slot),
		streams:   map[uint64]*streamTxn{},
		prepared:  map[string]*heldTxn{},
	}
}

// spillPrefix names a slot's spill files, so that start-up finds the ones
// a killed run left.
func spillPrefix(slot string) string { return "decant-" + slot + "-" }

func (a *assembler) newSpool(xid uint64) *source.Spool {
	return &source.Spool{Dir: a.dir, Prefix: a.prefix, Budget: a.budget, Xid: xid, Usage: a.usage}
}

// close removes every spill file of the session.
func (a *assembler) close() {
	for _, st := range a.streams {
		if st.spool != nil {
			st.spool.Reset()
		}
	}
	for _, h := range a.prepared {
		if h.spool != nil {
			h.spool.Reset()
		}
	}
	if a.holding != nil && a.holding.spool != nil {
		a.holding.spool.Reset()
	}
}

// hold is the earliest prepare position held, 0 when none.
func (a *assembler) hold() source.LSN {
	var h source.LSN
	for _, t := range a.prepared {
		if h == 0 || t.prepare < h {
			h = t.prepare
		}
	}
	if a.holding != nil && (h == 0 || a.holding.prepare < h) {
		h = a.holding.prepare
	}
	return h
}

// event handles one decoded event; send hands a chunk over.
func (s *stream) event(ctx context.Context, ev Event) error {
	a := s.asm
	switch ev.Kind {
	case EventRelation:
		return s.describe(ctx, ev.Rel)
	case EventBegin:
		a.cur, a.curBytes, a.curTotal = source.Chunk{Txn: ev.Txn}, 0, 0
	case EventChange:
		if origin := s.dec.Origin(); origin != "" {
			// A decant pipeline may have applied it here from this
			// pipeline's target: sent on, it would echo back (echo.go).
			// Its commit still moves the checkpoint.
			if echo, err := s.r.echoes.echo(ctx, origin); echo || err != nil {
				return err
			}
		}
		if ev.Change.Op == source.OpDDL {
			if err := s.describeDDL(ctx, ev.Change.DDL); err != nil {
				return err
			}
		}
		return s.change(ctx, ev)
	case EventCommit:
		if s.r.log.Enabled(ctx, slog.LevelDebug) { // once per transaction: not even the positions' text without it
			s.r.log.Debug("commit received", "xid", ev.Txn.Xid, "commit", ev.Txn.Commit.String(), "end", ev.End.String())
		}
		a.cur.Commit, a.cur.End, a.cur.Bytes = true, ev.End, a.curBytes
		if err := s.send(ctx, a.cur); err != nil {
			return err
		}
		a.cur = source.Chunk{}
		if a.curTotal > 0 {
			a.hint = min(a.curTotal, chunkChanges)
		}
	case EventStreamStart:
		if a.streams[ev.Xid] == nil {
			st := &streamTxn{txn: &source.Txn{Xid: ev.Xid, Streamed: true}}
			if !a.immediate {
				st.spool = a.newSpool(ev.Xid)
			}
			a.streams[ev.Xid] = st
		}
	case EventStreamStop:
		if a.immediate {
			for xid := range a.streams {
				if err := s.flushStream(ctx, a.streams[xid]); err != nil {
					return err
				}
			}
		}
	case EventStreamAbort:
		return s.streamAbort(ctx, ev)
	case EventStreamCommit:
		return s.streamCommit(ctx, ev)
	case EventBeginPrepare:
		a.holding = &heldTxn{xid: ev.Txn.Xid, prepare: ev.Txn.Commit, spool: a.newSpool(ev.Txn.Xid)}
	case EventPrepare:
		if a.holding == nil {
			return fmt.Errorf("%w: PREPARE of xid %d without Begin Prepare", ErrMalformed, ev.Txn.Xid)
		}
		a.prepared[ev.GID] = a.holding
		a.holding = nil
		s.r.log.Info("prepared transaction held until COMMIT PREPARED", "xid", ev.Txn.Xid, "gid", ev.GID, "prepare", ev.Txn.Commit.String())
	case EventStreamPrepare:
		st := a.streams[ev.Xid]
		if st == nil {
			return fmt.Errorf("%w: Stream Prepare of xid %d, which was never streamed", ErrMalformed, ev.Xid)
		}
		if err := s.flushStream(ctx, st); err != nil {
			return err
		}
		delete(a.streams, ev.Xid)
		a.prepared[ev.GID] = &heldTxn{xid: ev.Xid, prepare: ev.Txn.Commit, spool: st.spool, stream: streamOrNil(a.immediate, st.txn)}
		s.r.log.Info("prepared transaction held until COMMIT PREPARED", "xid", ev.Xid, "gid", ev.GID, "prepare", ev.Txn.Commit.String())
	case EventCommitPrepared:
		return s.commitPrepared(ctx, ev)
	case EventRollbackPrepared:
		h := a.prepared[ev.GID]
		if h == nil {
			return nil // prepared before the resume point, never held: nothing to discard
		}
		delete(a.prepared, ev.GID)
		if h.stream != nil {
			return s.send(ctx, source.Chunk{Txn: h.stream, Abort: true})
		}
		return h.spool.Reset()
	}
	return nil
}

func streamOrNil(immediate bool, t *source.Txn) *source.Txn {
	if immediate {
		return t
	}
	return nil
}

// change files a change with the transaction it belongs to.
func (s *stream) change(ctx context.Context, ev Event) error {
	a := s.asm
	switch {
	case s.dec.InStream():
		st := a.streams[ev.Xid]
		if st == nil {
			return fmt.Errorf("%w: change of streamed xid %d outside its blocks", ErrMalformed, ev.Xid)
		}
		if !a.immediate {
			return st.spool.Add(ev.Change)
		}
		st.cur = append(st.cur, ev.Change)
		st.bytes += changeBytes(&ev.Change)
		if len(st.cur) >= chunkChanges || st.bytes >= chunkBytes {
			return s.flushStream(ctx, st)
		}
		return nil
	case a.holding != nil:
		return a.holding.spool.Add(ev.Change)
	}
	if a.cur.Changes == nil {
		a.cur.Changes = make([]source.Change, 0, max(a.hint, 1))
	}
	a.cur.Changes = append(a.cur.Changes, ev.Change)
	a.curBytes += changeBytes(&ev.Change)
	a.curTotal++
	if len(a.cur.Changes) >= chunkChanges || a.curBytes >= chunkBytes {
		a.cur.Bytes = a.curBytes
		if err := s.send(ctx, a.cur); err != nil {
			return err
		}
		a.cur, a.curBytes = source.Chunk{Txn: a.cur.Txn}, 0
	}
	return nil
}

// flushStream hands over what an immediate-mode stream gathered.
func (s *stream) flushStream(ctx context.Context, st *streamTxn) error {
	if len(st.cur) == 0 {
		return nil
	}
	c := source.Chunk{Txn: st.txn, Changes: st.cur, Bytes: st.bytes}
	st.cur, st.bytes = nil, 0
	return s.send(ctx, c)
}

func (s *stream) streamAbort(ctx context.Context, ev Event) error {
	a := s.asm
	st := a.streams[ev.Xid]
	if st == nil {
		return nil // aborted before any of it was streamed to this session
	}
	whole := ev.Sub == 0 || ev.Sub == ev.Xid
	if a.immediate {
		// What was gathered but not handed over may belong to the
		// aborted subtransaction: hand it over first, in order.
		if err := s.flushStream(ctx, st); err != nil {
			return err
		}
		c := source.Chunk{Txn: st.txn, Abort: true}
		if !whole {
			c.Sub = ev.Sub
		}
		if whole {
			delete(a.streams, ev.Xid)
		}
		return s.send(ctx, c)
	}
	if !whole {
		st.spool.DropSub(ev.Sub)
		return nil
	}
	delete(a.streams, ev.Xid)
	return st.spool.Reset()
}

func (s *stream) streamCommit(ctx context.Context, ev Event) error {
	a := s.asm
	st := a.streams[ev.Txn.Xid]
	if st == nil {
		// Nothing of it reached this session (a restart between its
		// last block and its commit cannot happen: the source streams it
		// again from the start), so it changed nothing replicated.
		return s.send(ctx, source.Chunk{Txn: ev.Txn, Commit: true, End: ev.End})
	}
	delete(a.streams, ev.Txn.Xid)
	s.r.log.Debug("streamed commit received", "xid", ev.Txn.Xid, "commit", ev.Txn.Commit.String(), "end", ev.End.String())
	if a.immediate {
		if err := s.flushStream(ctx, st); err != nil {
			return err
		}
		txn := *ev.Txn
		txn.Streamed = true
		return s.send(ctx, source.Chunk{Txn: &txn, Commit: true, End: ev.End})
	}
	return s.replay(ctx, st.spool, ev.Txn, ev.End)
}

func (s *stream) commitPrepared(ctx context.Context, ev Event) error {
	a := s.asm
	h := a.prepared[ev.GID]
	if h == nil {
		return fmt.Errorf("COMMIT PREPARED of transaction %q (xid %d) at %s, whose changes were decoded before decant's resume point and are not sent again: the checkpoint lost its hold on it; recopy the affected tables",
			ev.GID, ev.Xid, ev.Txn.Commit)
	}
	delete(a.prepared, ev.GID)
	if h.stream != nil {
		txn := *ev.Txn
		txn.Xid, txn.Streamed = h.stream.Xid, true
		return s.send(ctx, source.Chunk{Txn: &txn, Commit: true, End: ev.End})
	}
	return s.replay(ctx, h.spool, ev.Txn, ev.End)
}

// replay hands over a spooled transaction as committed at txn.Commit, the
// last chunk ending at end, and empties the spool.
func (s *stream) replay(ctx context.Context, sp *source.Spool, txn *source.Txn, end source.LSN) error {
	total, sent := sp.Len(), 0
	if sp.Spilled() {
		s.r.log.Info("large transaction spilled to disk", "xid", txn.Xid, "changes", total)
	}
	err := sp.Replay(chunkChanges, func(cs []source.Change) error {
		sent += len(cs)
		c := source.Chunk{Txn: txn, Changes: cs}
		if sent == total {
			c.Commit, c.End = true, end
		}
		return s.send(ctx, c)
	})
	if err == nil && total == 0 {
		err = s.send(ctx, source.Chunk{Txn: txn, Commit: true, End: end})
	}
	if rerr := sp.Reset(); err == nil {
		err = rerr
	}
	return err
}
