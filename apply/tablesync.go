package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// A table that decant add-tables brings into the pipeline is copied under
// a snapshot of its own while the stream goes on (checkpoint.TableSync).
// The stream hands it over exactly, as PostgreSQL's apply worker does
// with a tablesync worker: while the table is copying, the stream waits at
// its first change (the change itself, and everything after it, applies
// once the copy is ready); once ready, a transaction the copy holds (one
// committed before the copy's snapshot) has its changes to the table
// dropped, any later one applied.

// syncPoll is how often a stream waiting for a copy reads the states,
// and syncReload how old they may grow before a change reads them again.
const (
	syncPoll   = 500 * time.Millisecond
	syncReload = 30 * time.Second
)

// syncGate decides, change by change, what the stream applies of the
// tables add-tables brings in. It reads the states at a session's start,
// again whenever a change comes for a table the session has not seen
// before (which a table that just joined the publication always is), and
// at most every syncReload otherwise: one read per new table, not one per
// change.
type syncGate struct {
	read func(ctx context.Context) ([]checkpoint.TableSync, error)
	log  *slog.Logger
	// beat tells the Observer that the apply loop, waiting here for a
	// copy, is alive: a wait is no hang (/healthz).
	beat   func(time.Time)
	states map[source.TableName]checkpoint.TableSync
	looked map[source.TableName]bool // tables the session has seen
	loaded time.Time                 // when the states were read
}

func newSyncGate(read func(ctx context.Context) ([]checkpoint.TableSync, error), log *slog.Logger, beat func(time.Time)) *syncGate {
	return &syncGate{read: read, log: log, beat: beat}
}

// start reads the states as a session starts, and forgets the tables
// the session before saw.
func (s *syncGate) start(ctx context.Context) error {
	s.looked = map[source.TableName]bool{}
	return s.load(ctx)
}

// load reads the states again; a gate without a reader has none.
func (s *syncGate) load(ctx context.Context) error {
	if s.read == nil {
		return nil
	}
	syncs, err := s.read(ctx)
	if err != nil {
		return err
	}
	s.states = make(map[source.TableName]checkpoint.TableSync, len(syncs))
	for _, st := range syncs {
		s.states[st.Table] = st
	}
	s.loaded = time.Now()
	return nil
}

// lookup returns table's state, reading the states first when the table
// is new to the session or they have grown old.
func (s *syncGate) lookup(ctx context.Context, table source.TableName) (checkpoint.TableSync, error) {
	if s.looked == nil {
		s.looked = map[source.TableName]bool{}
	}
	if !s.looked[table] || time.Since(s.loaded) > syncReload {
		if err := s.load(ctx); err != nil {
			return checkpoint.TableSync{}, err
		}
		s.looked[table] = true
	}
	return s.states[table], nil
}

// filter returns the changes of txn the stream applies: those to tables
// whose copy holds txn dropped, after waiting for the copy of any table
// still copying. A target may keep the changes it is given until its
// commit, so a filtered list is a new slice.
func (s *syncGate) filter(ctx context.Context, txn *source.Txn, changes []source.Change) ([]source.Change, error) {
	if s.read == nil {
		return changes, nil
	}
	drop := false
	err := eachTable(changes, func(rel *source.Relation) error {
		st, err := s.state(ctx, txn, rel.Table())
		drop = drop || (st.State == checkpoint.SyncReady && st.Copied(txn))
		return err
	})
	if err != nil {
		return nil, err
	}
	if !drop {
		return changes, nil
	}
	kept := make([]source.Change, 0, len(changes))
	for _, c := range changes {
		if c, ok := s.keep(txn, c); ok {
			kept = append(kept, c)
		}
	}
	return kept, nil
}

// keep reports whether c applies, a TRUNCATE without the tables whose
// copy holds txn.
func (s *syncGate) keep(txn *source.Txn, c source.Change) (source.Change, bool) {
	copied := func(rel *source.Relation) bool {
		st, ok := s.states[rel.Table()]
		return ok && st.Copied(txn)
	}
	if c.Op != source.OpTruncate {
		return c, c.Rel == nil || !copied(c.Rel)
	}
	var rels []*source.Relation
	for _, rel := range c.Truncated {
		if !copied(rel) {
			rels = append(rels, rel)
		}
	}
	if len(rels) == 0 {
		return c, false
	}
	c.Truncated = rels
	if c.Rel != nil && copied(c.Rel) {
		c.Rel = rels[0]
	}
	return c, true
}

// eachTable calls f with each table the changes write to: once for a run
// of changes to one relation, so that a chunk of a bulk load costs a
// lookup, not one per row (this is on the apply loop's path for every
// change).
func eachTable(changes []source.Change, f func(*source.Relation) error) error {
	var last *source.Relation
	for i := range changes {
		c := &changes[i]
		if c.Op == source.OpTruncate && len(c.Truncated) > 0 {
			for _, rel := range c.Truncated {
				if err := f(rel); err != nil {
					return err
				}
			}
			last = nil
			continue
		}
		if c.Rel == nil || c.Op == source.OpDDL || c.Rel == last {
			continue
		}
		last = c.Rel
		if err := f(c.Rel); err != nil {
			return err
		}
	}
	return nil
}

// errCopying ends eachTable at a table still copying.
var errCopying = errors.New("copying")

// copying reports whether a change writes to a table still copying, so
// that the stream is about to wait (filter waits).
func (s *syncGate) copying(ctx context.Context, changes []source.Change) (bool, error) {
	if s.read == nil {
		return false, nil
	}
	err := eachTable(changes, func(rel *source.Relation) error {
		st, err := s.lookup(ctx, rel.Table())
		if err == nil && st.State == checkpoint.SyncCopying {
			return errCopying
		}
		return err
	})
	if errors.Is(err, errCopying) {
		return true, nil
	}
	return false, err
}

// streamed judges a chunk of a transaction streamed while in progress,
// whose commit position is not known yet: it waits for a table still
// copying, then applies the changes to a ready table only when the
// target's checkpoint (stored) has passed the copy's position, so that
// the transaction surely commits after it. Otherwise the transaction may
// be in the copy already: the pipeline stops rather than guess.
func (s *syncGate) streamed(ctx context.Context, c source.Chunk, stored source.LSN) error {
	if s.read == nil {
		return nil
	}
	return eachTable(c.Changes, func(rel *source.Relation) error {
		st, err := s.state(ctx, c.Txn, rel.Table())
		if err == nil && st.State == checkpoint.SyncReady && st.AsOf > stored {
			err = fmt.Errorf("transaction xid %d, streamed while in progress, writes to table %s, whose add-tables copy was taken at %s, past the checkpoint %s: it may be in the copy already; run decant run with --stream-apply spool until the pipeline has passed %s",
				c.Txn.Xid, rel.Table(), st.AsOf, stored, st.AsOf)
		}
		return err
	})
}

// state returns table's state (lookup), waiting while it is copying.
func (s *syncGate) state(ctx context.Context, txn *source.Txn, table source.TableName) (checkpoint.TableSync, error) {
	st, err := s.lookup(ctx, table)
	if err != nil || st.State != checkpoint.SyncCopying {
		return st, err
	}
	s.log.Warn("waiting for decant add-tables to finish copying the table: the stream holds here until its copy is ready (it does not spool the table's changes meanwhile)",
		"table", table.String(), "commit", txn.Commit.String(), "xid", txn.Xid)
	began := time.Now()
	for st.State == checkpoint.SyncCopying {
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case now := <-time.After(syncPoll):
			s.beat(now)
		}
		if err := s.load(ctx); err != nil {
			return st, err
		}
		var ok bool
		if st, ok = s.states[table]; !ok {
			return st, fmt.Errorf("table %s: its add-tables state disappeared from the target while the stream waited for its copy (decant drop?)", table)
		}
	}
	s.log.Info("the table's copy is ready: the stream goes on, applying its changes committed after the copy's snapshot", "table", table.String(),
		"as_of", st.AsOf.String(), "waited", time.Since(began).Round(time.Millisecond).String())
	return st, nil
}
