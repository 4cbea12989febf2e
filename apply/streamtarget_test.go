package apply

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// fakeWriter is a StreamWriter that logs its calls to a shared log as
// "xid call [args]"; "apply sub:n" is n changes of subtransaction sub.
type fakeWriter struct {
	xid     uint64
	log     *[]string
	failAt  string // a call that fails
	changes int    // changes applied
}

func (w *fakeWriter) call(s string) error {
	*w.log = append(*w.log, s)
	if s == w.failAt {
		return errors.New("failed: " + s)
	}
	return nil
}

func (w *fakeWriter) name(call string) string {
	return strconv.FormatUint(uint64(w.xid), 10) + " " + call
}

func (w *fakeWriter) Apply(_ context.Context, txn *source.Txn, changes []source.Change) error {
	w.changes += len(changes)
	return w.call(w.name(fmt.Sprintf("apply %d:%d", changes[0].Sub, len(changes))))
}

func (w *fakeWriter) Savepoint(_ context.Context, txn *source.Txn, name string) error {
	return w.call(w.name("savepoint " + name))
}

func (w *fakeWriter) RollbackTo(_ context.Context, txn *source.Txn, name string) error {
	return w.call(w.name("rollback to " + name))
}

func (w *fakeWriter) Commit(_ context.Context, cp checkpoint.Row) error {
	return w.call(w.name("commit " + cp.End.String()))
}

func (w *fakeWriter) Rollback(context.Context) error { return w.call(w.name("rollback")) }
func (w *fakeWriter) Close(context.Context)          { w.call(w.name("close")) }

// fakeMain is the main writer a streamed commit without a stream falls to.
type fakeMain struct {
	Target
	log *[]string
}

func (m fakeMain) Commit(_ context.Context, cp checkpoint.Row) error {
	*m.log = append(*m.log, "main commit "+cp.End.String())
	return nil
}

func subChanges(subs ...uint64) []source.Change {
	out := make([]source.Change, len(subs))
	for i, s := range subs {
		out[i] = source.Change{Op: source.OpInsert, Sub: s}
	}
	return out
}

// TestStreams: the bookkeeping of transactions streamed while in
// progress that both targets share. Transaction 10 has subtransactions
// 11, 12 and 13.
func TestStreams(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	var calls []string
	opened := map[uint64]*fakeWriter{}
	openFor := func(xid uint64, fail error) func(context.Context) (*fakeWriter, error) {
		return func(context.Context) (*fakeWriter, error) {
			calls = append(calls, fmt.Sprint(xid, " open"))
			if fail != nil {
				return nil, fail
			}
			w := &fakeWriter{xid: xid, log: &calls}
			opened[xid] = w
			return w, nil
		}
	}
	want := func(step string, w ...string) {
		t.Helper()
		if !slices.Equal(calls, w) {
			t.Errorf("%s:\n got  %q\n want %q", step, calls, w)
		}
		calls = nil
	}
	var s Streams[*fakeWriter]
	a := &source.Txn{Xid: 10, Streamed: true}

	// Runs by subtransaction, a savepoint before each one's first change
	// (not for the top level, 0 or the xid itself), one connection.
	if err := s.Apply(ctx, log, a, subChanges(0, 0, 11, 11, 12, 10), openFor(10, nil)); err != nil {
		t.Fatal(err)
	}
	want("first chunk", "10 open", "10 apply 0:2", "10 savepoint s_11", "10 apply 11:2", "10 savepoint s_12", "10 apply 12:1", "10 apply 10:1")
	// A subtransaction that has its savepoint gets none again, even after
	// another one's changes.
	if err := s.Apply(ctx, log, a, subChanges(11, 13, 12), openFor(10, nil)); err != nil {
		t.Fatal(err)
	}
	want("second chunk", "10 apply 11:1", "10 savepoint s_13", "10 apply 13:1", "10 apply 12:1")
	if len(s) != 1 {
		t.Fatalf("%d streams open, want 1", len(s))
	}

	// Rolling back 12 discards 13's savepoint too (set after it); 11 keeps its own.
	if err := s.Abort(ctx, log, 10, 12); err != nil {
		t.Fatal(err)
	}
	want("rollback 12", "10 rollback to s_12")
	for _, sub := range []uint64{13, 12, 14} {
		if err := s.Abort(ctx, log, 10, sub); err != nil {
			t.Fatal(err)
		}
	}
	want("rollbacks with nothing to roll back to")
	if err := s.Apply(ctx, log, a, subChanges(12), openFor(10, nil)); err != nil {
		t.Fatal(err)
	}
	want("12 again", "10 savepoint s_12", "10 apply 12:1")
	if err := s.Abort(ctx, log, 11, 0); err != nil {
		t.Fatal(err)
	}
	want("abort of an xid without a stream")

	// Commit: the stream's own, then it is gone; without a stream, on the
	// main writer, unless its transaction is open.
	var mainLog []string
	main := fakeMain{log: &mainLog}
	if err := s.Commit(ctx, 10, checkpoint.Row{End: 0x100}, main, true); err != nil {
		t.Fatal(err)
	}
	want("commit", "10 commit 0/100", "10 close")
	if len(s) != 0 || len(mainLog) != 0 {
		t.Fatalf("after commit: %d streams, main %q", len(s), mainLog)
	}
	if err := s.Commit(ctx, 10, checkpoint.Row{End: 0x200}, main, false); err != nil || !slices.Equal(mainLog, []string{"main commit 0/200"}) {
		t.Errorf("commit without a stream: %v, main %q", err, mainLog)
	}
	if err := s.Commit(ctx, 10, checkpoint.Row{End: 0x300}, main, true); err == nil || !strings.Contains(err.Error(), "main target transaction is open") {
		t.Errorf("commit without a stream while the main transaction is open: %v", err)
	}
	want("commits without a stream")

	// Whole-transaction abort, RollbackAll and Close release their writers.
	for _, xid := range []uint64{1, 2, 3} {
		if err := s.Apply(ctx, log, &source.Txn{Xid: xid}, subChanges(0), openFor(xid, nil)); err != nil {
			t.Fatal(err)
		}
	}
	calls = nil
	if err := s.Abort(ctx, log, 1, 1); err != nil {
		t.Fatal(err)
	}
	want("abort of a whole transaction", "1 rollback", "1 close")
	opened[2].failAt = "2 rollback"
	s.RollbackAll(ctx, log)
	slices.Sort(calls)
	want("rollback all, one failing", "2 close", "2 rollback", "3 close", "3 rollback")
	if len(s) != 0 {
		t.Fatalf("%d streams open after RollbackAll", len(s))
	}
	if err := s.Apply(ctx, log, &source.Txn{Xid: 4}, subChanges(0), openFor(4, nil)); err != nil {
		t.Fatal(err)
	}
	calls = nil
	var closed []uint64
	s.Close(ctx, func(w *fakeWriter) {
		closed = append(closed, w.xid)
		calls = append(calls, "closed")
	})
	want("close", "4 close", "closed")
	if len(s) != 0 || !slices.Equal(closed, []uint64{4}) {
		t.Errorf("after Close: %d streams, closed %v", len(s), closed)
	}
}

// TestStreamsRefusals: a schema change is refused before anything opens;
// a failed connect names the xid and leaves no stream; a failed savepoint
// stops the chunk before its changes.
func TestStreamsRefusals(t *testing.T) {
	ctx := t.Context()
	log := slog.New(slog.DiscardHandler)
	var calls []string
	var s Streams[*fakeWriter]
	open := func(fail error, failAt string) func(context.Context) (*fakeWriter, error) {
		return func(context.Context) (*fakeWriter, error) {
			calls = append(calls, "open")
			if fail != nil {
				return nil, fail
			}
			return &fakeWriter{xid: 7, log: &calls, failAt: failAt}, nil
		}
	}
	txn := &source.Txn{Xid: 7, Commit: 0x50}
	ddl := append(subChanges(0), source.Change{Op: source.OpDDL, DDL: &source.DDL{Tag: "ALTER TABLE"}})
	err := s.Apply(ctx, log, txn, ddl, open(nil, ""))
	if !errors.Is(err, ErrStreamedDDL) || len(calls) != 0 || len(s) != 0 {
		t.Errorf("schema change: %v, calls %q, %d streams", err, calls, len(s))
	}

	err = s.Apply(ctx, log, txn, subChanges(0), open(errors.New("connection refused"), ""))
	if err == nil || err.Error() != "connect for transaction xid 7, streamed while in progress: connection refused" || len(s) != 0 {
		t.Errorf("failed connect: %v, %d streams", err, len(s))
	}
	calls = nil
	err = s.Apply(ctx, log, txn, subChanges(0, 9, 9), open(nil, "7 savepoint s_9"))
	if err == nil || !slices.Equal(calls, []string{"open", "7 apply 0:1", "7 savepoint s_9"}) {
		t.Errorf("failed savepoint: %v, calls %q", err, calls)
	}
}
