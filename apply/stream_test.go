package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// streamTarget is a recordingTarget that also applies streamed
// transactions; each streamed xid has a transaction of its own.
type streamTarget struct {
	*recordingTarget
	streams      map[uint64]bool // xids with an open streamed transaction
	failStream   uint64          // StreamApply of this xid fails permanently
	transientXid uint64          // the first Apply of this xid fails as a lost connection would
	failedOnce   bool
}

func newStreamTarget(cp checkpoint.Row) *streamTarget {
	return &streamTarget{recordingTarget: &recordingTarget{cp: cp}, streams: map[uint64]bool{}}
}

func (t *streamTarget) Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	if txn.Xid == t.transientXid && !t.failedOnce {
		t.failedOnce = true
		return io.ErrUnexpectedEOF
	}
	return t.recordingTarget.Apply(ctx, txn, changes)
}

func (t *streamTarget) StreamApply(_ context.Context, txn *source.Txn, changes []source.Change) error {
	if t.gate != nil {
		t.gateOnce.Do(func() { <-t.gate })
	}
	if t.open {
		return errors.New("StreamApply while the main transaction is open")
	}
	if !txn.Streamed || txn.Commit != 0 {
		return fmt.Errorf("StreamApply of %+v", txn)
	}
	t.streams[txn.Xid] = true
	t.record("stream %d apply ×%d", txn.Xid, len(changes))
	if txn.Xid == t.failStream {
		return &Error{Op: "insert", Xid: txn.Xid, Err: errors.New("duplicate key")}
	}
	return nil
}

func (t *streamTarget) StreamAbort(_ context.Context, xid, sub uint64) error {
	if !t.streams[xid] {
		return nil
	}
	if sub != 0 {
		t.record("stream %d abort sub %d", xid, sub)
		return nil
	}
	t.record("stream %d abort", xid)
	delete(t.streams, xid)
	return nil
}

func (t *streamTarget) StreamCommit(_ context.Context, xid uint64, cp checkpoint.Row) error {
	if t.open {
		return errors.New("StreamCommit while the main transaction is open")
	}
	t.record("stream %d commit %s xid %d", xid, cp.End, cp.Xid)
	delete(t.streams, xid)
	t.mu.Lock()
	t.cp = cp
	t.mu.Unlock()
	return nil
}

func (t *streamTarget) StreamRollbackAll(context.Context) {
	if len(t.streams) == 0 {
		return
	}
	xids := make([]uint64, 0, len(t.streams))
	for xid := range t.streams {
		xids = append(xids, xid)
	}
	slices.Sort(xids)
	t.record("stream rollback %v", xids)
	clear(t.streams)
}

// streamed returns the Txn of an in-progress streamed transaction and a
// chunk of its changes, one per subtransaction xid given (the top-level
// xid for its own changes).
func streamed(xid uint64) *source.Txn { return &source.Txn{Xid: xid, Streamed: true} }

func streamChunk(t *source.Txn, subs ...uint64) source.Chunk {
	c := source.Chunk{Txn: t}
	for _, sub := range subs {
		c.Changes = append(c.Changes, source.Change{Op: source.OpInsert, Sub: sub})
	}
	return c
}

// streamCommit is the chunk that commits streamed transaction xid: a new
// Txn with the commit position.
func streamCommit(xid uint64, commit source.LSN) source.Chunk {
	return source.Chunk{Txn: &source.Txn{Xid: xid, Commit: commit, Streamed: true}, Commit: true, End: commit + 8}
}

// runGated runs a catch-up pipeline whose target waits until the source
// has queued every chunk, so that the applier sees a backlog throughout.
func runGated(t *testing.T, src *fakeSource, tgt *streamTarget) (*Pipeline, error) {
	t.Helper()
	src.sent = make(chan struct{})
	tgt.gate = make(chan struct{})
	go func() { <-src.sent; close(tgt.gate) }()
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond}, src, tgt)
	return p, p.Run(t.Context())
}

func TestStreamedInterleaveWithOrdinary(t *testing.T) {
	s100, s200 := streamed(100), streamed(200)
	last := streamCommit(200, 0x500)
	last.Hold = 0x450
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x508},
		sessions: []script{{chunks: chunks(
			[]source.Chunk{streamChunk(s100, 100, 100)},
			txn(1, 0x100, 1),
			[]source.Chunk{streamChunk(s200, 200)},
			txn(2, 0x200, 1),
			[]source.Chunk{streamChunk(s100, 100), streamCommit(100, 0x300)},
			txn(3, 0x400, 1),
			[]source.Chunk{last},
		)}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	p, err := runGated(t, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	// Ordinary transactions share a target commit while the backlog lasts,
	// but the group is committed before each streamed block and before
	// each streamed commit, so commits keep the source's order.
	want := strings.Join([]string{
		"open",
		"stream 100 apply ×2",
		"begin", "apply 1×1",
		"checkpoint 0/108 xid 1; commit",
		"stream 200 apply ×1",
		"begin", "apply 2×1",
		"checkpoint 0/208 xid 2; commit",
		"stream 100 apply ×1",
		"stream 100 commit 0/308 xid 100",
		"begin", "apply 3×1",
		"checkpoint 0/408 xid 3; commit",
		"stream 200 commit 0/508 xid 200",
	}, "; ")
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
	if tgt.cp.Hold != 0x450 || tgt.cp.Commit != 0x500 {
		t.Errorf("checkpoint %+v, want commit 0/500 hold 0/450", tgt.cp)
	}
	if p.Acked() != 0x450 {
		t.Errorf("acked %s, want the hold 0/450", p.Acked())
	}
}

func TestStreamedAborts(t *testing.T) {
	s100, s300 := streamed(100), streamed(300)
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x208},
		sessions: []script{{chunks: chunks(
			[]source.Chunk{streamChunk(s100, 100, 101, 101)},
			txn(1, 0x100, 1),
			[]source.Chunk{
				{Txn: s100, Abort: true, Sub: 101},
				streamChunk(s100, 100),
				streamChunk(s300, 300),
			},
			txn(2, 0x180, 1),
			[]source.Chunk{{Txn: s300, Abort: true}, streamCommit(100, 0x200)},
		)}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	if _, err := runGated(t, src, tgt); err != nil {
		t.Fatal(err)
	}
	// The group is committed before the rollback to a savepoint (which
	// sends statements on the stream's connection), not before a whole
	// rollback.
	want := "open; stream 100 apply ×3; begin; apply 1×1; checkpoint 0/108 xid 1; commit; stream 100 abort sub 101; " +
		"stream 100 apply ×1; stream 300 apply ×1; begin; apply 2×1; stream 300 abort; " +
		"checkpoint 0/188 xid 2; commit; stream 100 commit 0/208 xid 100"
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
}

// After a restart at a held prepared transaction (Hold before End), the
// source sends again what committed between the two, streamed
// transactions included. Their changes come before their commit position
// does, so they are applied, and rolled back once the commit shows that
// the target has them; if they fail meanwhile (duplicate keys), the
// failure waits for the commit too.
func TestStreamedAlreadyApplied(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", fail), func(t *testing.T) {
			s100 := streamed(100)
			src := &fakeSource{
				server: source.Server{SystemID: "sys", WALEnd: 0x708},
				sessions: []script{{chunks: chunks(
					[]source.Chunk{streamChunk(s100, 100)},
					txn(1, 0x280, 1), // applied
					[]source.Chunk{streamCommit(100, 0x300)},
					txn(5, 0x700, 1),
				)}},
			}
			tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x600, Commit: 0x5f0, Hold: 0x200})
			if fail {
				tgt.failStream = 100
			}
			p, err := runGated(t, src, tgt)
			if err != nil {
				t.Fatal(err)
			}
			want := "open; stream 100 apply ×1; stream 100 abort; begin; apply 5×1; checkpoint 0/708 xid 5; commit"
			if got := tgt.calls(); got != want {
				t.Errorf("calls:\n got %s\nwant %s", got, want)
			}
			if src.starts[0] != 0x200 {
				t.Errorf("streamed from %s, want the hold 0/200", src.starts[0])
			}
			if p.Acked() != 0x708 {
				t.Errorf("acked %s, want 0/708", p.Acked())
			}
		})
	}
}

func TestStreamedFailureAfterReplayIsReported(t *testing.T) {
	s100 := streamed(100)
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: chunks(
			[]source.Chunk{streamChunk(s100, 100)}, // fails; applied or not?
			txn(5, 0x650, 1),                       // past the replay: not applied
			[]source.Chunk{streamCommit(100, 0x680)},
		)}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x600, Hold: 0x200})
	tgt.failStream = 100
	_, err := runGated(t, src, tgt)
	var ae *Error
	if !errors.As(err, &ae) || ae.Xid != 100 || !strings.Contains(err.Error(), "duplicate key") {
		t.Fatalf("Run returned %v, want the failure of xid 100", err)
	}
	// Everything committed before it is on the target.
	want := "open; stream 100 apply ×1; stream 100 abort; begin; apply 5×1; checkpoint 0/658 xid 5; commit"
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
}

func TestStreamedFailureStops(t *testing.T) {
	s100 := streamed(100)
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: chunks([]source.Chunk{streamChunk(s100, 100)}, txn(5, 0x650, 1))}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x600})
	tgt.failStream = 100
	_, err := runGated(t, src, tgt)
	var ae *Error
	if !errors.As(err, &ae) || ae.Xid != 100 {
		t.Fatalf("Run returned %v, want the failure of xid 100", err)
	}
	if want := "open; stream 100 apply ×1; stream rollback [100]"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

func TestStreamedDDLRefused(t *testing.T) {
	s100 := streamed(100)
	ddl := source.Change{Op: source.OpDDL, Sub: 100, DDL: &source.DDL{Tag: "ALTER TABLE",
		Tables: []*source.TableDef{{Name: source.TableName{Schema: "public", Name: "t"}}}}}
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: []source.Chunk{
			streamChunk(s100, 100),
			{Txn: s100, Changes: []source.Change{{Op: source.OpInsert, Sub: 100}, ddl}},
		}}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	_, err := runGated(t, src, tgt)
	if !errors.Is(err, ErrStreamedDDL) || Transient(err) {
		t.Fatalf("Run returned %v, want the permanent ErrStreamedDDL", err)
	}
	msg := err.Error()
	for _, want := range []string{"xid 100 (in progress", "public.t", "ALTER TABLE", "--stream-apply spool"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if want := "open; stream 100 apply ×1; stream rollback [100]"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

func TestStreamedRolledBackWhenOrdinaryFails(t *testing.T) {
	s100 := streamed(100)
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: chunks([]source.Chunk{streamChunk(s100, 100)}, txn(2, 0x200, 1))}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	tgt.failXid = 2
	_, err := runGated(t, src, tgt)
	var ae *Error
	if !errors.As(err, &ae) || ae.Xid != 2 {
		t.Fatalf("Run returned %v, want the failure of xid 2", err)
	}
	if want := "open; stream 100 apply ×1; begin; apply 2×1; rollback; stream rollback [100]"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

func TestStreamedRolledBackOnStop(t *testing.T) {
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: []source.Chunk{streamChunk(streamed(100), 100)}}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	p := New(Config{}, src, tgt)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitUntil(t, func() bool { return strings.Contains(tgt.calls(), "stream 100 apply") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := "open; stream 100 apply ×1; stream rollback [100]"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

// A session that fails mid-stream leaves nothing of the streamed
// transaction; the next one receives it again from its start.
func TestStreamedResumeAfterTransientError(t *testing.T) {
	s100, again := streamed(100), streamed(100)
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x308},
		sessions: []script{
			{chunks: chunks([]source.Chunk{streamChunk(s100, 100)}, txn(1, 0x100, 1))},
			{chunks: chunks([]source.Chunk{streamChunk(again, 100)}, txn(1, 0x100, 1), []source.Chunk{streamCommit(100, 0x300)})},
		},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	tgt.transientXid = 1
	p := New(Config{CatchUp: true}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "open; stream 100 apply ×1; stream rollback [100]; " +
		"open; stream 100 apply ×1; begin; apply 1×1; checkpoint 0/108 xid 1; commit; stream 100 commit 0/308 xid 100"
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
}

func TestStreamedNeedsStreamTarget(t *testing.T) {
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: []source.Chunk{streamChunk(streamed(100), 100)}}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
	err := newTestPipeline(src, tgt, false).Run(t.Context())
	if err == nil || Transient(err) || !strings.Contains(err.Error(), "--stream-apply spool") {
		t.Fatalf("Run returned %v", err)
	}
}

// A streamed block inside an ordinary transaction never comes; if it did,
// committing the group would commit part of that transaction.
func TestStreamedInsideTransactionRefused(t *testing.T) {
	first := txn(1, 0x100, 1)[0]
	first.Commit, first.End = false, 0
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: []source.Chunk{first, streamChunk(streamed(100), 100)}}},
	}
	tgt := newStreamTarget(checkpoint.Row{SystemID: "sys", End: 0x10})
	_, err := runGated(t, src, tgt)
	if err == nil || !strings.Contains(err.Error(), "inside transaction xid 1") {
		t.Fatalf("Run returned %v", err)
	}
	if want := "open; begin; apply 1×1; rollback"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

func TestSavepoints(t *testing.T) {
	const xid = 10
	var s Savepoints
	// The top level needs none; each subtransaction one, at its first change.
	for _, c := range []struct {
		sub  uint64
		want bool
	}{{xid, false}, {0, false}, {11, true}, {11, false}, {12, true}, {11, false}, {13, true}, {xid, false}} {
		if got := s.Enter(xid, c.sub); got != c.want {
			t.Errorf("Enter(%d) = %v, want %v", c.sub, got, c.want)
		}
	}
	// Rolling back to 12 discards 13 (set after it) and leaves 11.
	if !s.RollbackTo(12) || s.Len() != 1 {
		t.Errorf("RollbackTo(12): %d left, want 1", s.Len())
	}
	if s.RollbackTo(13) || s.RollbackTo(12) {
		t.Error("a savepoint discarded by an earlier rollback is rolled back to again")
	}
	if s.RollbackTo(99) {
		t.Error("a subtransaction without changes has a savepoint")
	}
	if !s.Enter(xid, 14) || !s.RollbackTo(11) || s.Len() != 0 {
		t.Errorf("RollbackTo(11): %d left, want 0", s.Len())
	}
	if got := SavepointName(4294967295); got != "s_4294967295" {
		t.Errorf("SavepointName = %s", got)
	}
}
