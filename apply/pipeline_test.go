package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// fakeSource serves scripted sessions: each Stream call plays the next
// script and then ends with its error (nil: wait for the context).
type fakeSource struct {
	mu       sync.Mutex
	server   source.Server
	sessions []script
	starts   []source.LSN  // Start of every Stream call
	sent     chan struct{} // when set, closed once the first session's chunks are all sent
}

type script struct {
	before func() // when set, runs first (what happens elsewhere meanwhile)
	chunks []source.Chunk
	end    error
}

func (s *fakeSource) Identify(context.Context) (source.Server, error) { return s.server, nil }

func (s *fakeSource) Stream(ctx context.Context, req source.StreamRequest, out chan<- source.Chunk) error {
	s.mu.Lock()
	s.starts = append(s.starts, req.Start)
	first := len(s.starts) == 1
	var sc script
	if len(s.sessions) > 0 {
		sc, s.sessions = s.sessions[0], s.sessions[1:]
	}
	s.mu.Unlock()
	if req.SystemID != s.server.SystemID {
		return fmt.Errorf("system id %s requested", req.SystemID)
	}
	if sc.before != nil {
		sc.before()
	}
	for _, c := range sc.chunks {
		// The server skips what the client already has (the chunks of a
		// transaction streamed in progress carry no commit position yet).
		if c.Txn != nil && c.Txn.Commit != 0 && c.Txn.Commit < req.Start {
			continue
		}
		select {
		case out <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.sent != nil && first {
		close(s.sent)
	}
	if sc.end != nil {
		return sc.end
	}
	<-ctx.Done()
	return ctx.Err()
}

// recordingTarget logs every call and keeps the committed checkpoint.
type recordingTarget struct {
	mu       sync.Mutex
	log      []string
	cp       checkpoint.Row
	open     bool
	failXid  uint64        // Apply of this xid fails permanently
	gate     chan struct{} // when set, the first Apply waits for it
	gateOnce sync.Once
}

func (t *recordingTarget) record(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.log = append(t.log, fmt.Sprintf(format, args...))
}

func (t *recordingTarget) calls() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.log, "; ")
}

func (t *recordingTarget) Open(context.Context) (checkpoint.Row, error) {
	t.record("open")
	return t.cp, nil
}

func (t *recordingTarget) Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	if t.gate != nil {
		t.gateOnce.Do(func() { <-t.gate })
	}
	if !t.open {
		t.record("begin")
		t.open = true
	}
	t.record("apply %d×%d", txn.Xid, len(changes))
	if txn.Xid == t.failXid {
		return &Error{Op: "insert", Xid: txn.Xid, Commit: txn.Commit, Err: errors.New("check constraint")}
	}
	return nil
}

func (t *recordingTarget) Commit(_ context.Context, cp checkpoint.Row) error {
	if t.open {
		t.record("checkpoint %s xid %d; commit", cp.End, cp.Xid)
	} else {
		t.record("checkpoint %s alone", cp.End)
	}
	t.open = false
	t.mu.Lock()
	t.cp = cp
	t.mu.Unlock()
	return nil
}

func (t *recordingTarget) Rollback(context.Context) error {
	if t.open {
		t.record("rollback")
	}
	t.open = false
	return nil
}

func (t *recordingTarget) Close(context.Context) {}

// txn builds the chunks of one transaction with n changes.
func txn(xid uint64, commit source.LSN, n int) []source.Chunk {
	t := &source.Txn{Xid: xid, Commit: commit}
	return []source.Chunk{{Txn: t, Changes: make([]source.Change, n), Commit: true, End: commit + 8}}
}

func chunks(parts ...[]source.Chunk) []source.Chunk {
	var out []source.Chunk
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func newTestPipeline(src *fakeSource, tgt *recordingTarget, catchUp bool) *Pipeline {
	return New(Config{CatchUp: catchUp, IdleAdvance: time.Nanosecond}, src, tgt)
}

func TestCatchUpAppliesInOrderAndSkipsApplied(t *testing.T) {
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x400},
		sessions: []script{{chunks: chunks(
			txn(1, 0x100, 2), // before the checkpoint: already applied
			txn(2, 0x200, 1),
			txn(3, 0x300, 3),
			[]source.Chunk{{End: 0x400}}, // idle mark: nothing else below 0x400
		)}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x180}, gate: make(chan struct{})}
	p := newTestPipeline(src, tgt, true)
	// The first Apply waits until the source has queued everything: the
	// applier sees the backlog.
	src.sent = make(chan struct{})
	go func() { <-src.sent; close(tgt.gate) }()
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "open; begin; apply 2×1; apply 3×3; checkpoint 0/400 xid 3; commit"
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
	if p.Acked() != 0x400 {
		t.Errorf("acked %s, want 0/400", p.Acked())
	}
	if src.starts[0] != 0x180 {
		t.Errorf("streamed from %s, want the checkpoint 0/180", src.starts[0])
	}
}

func TestEachTransactionCommitsWithoutBacklog(t *testing.T) {
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x208}}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
	// One chunk at a time: the applier never sees a backlog.
	src.sessions = []script{{chunks: txn(1, 0x100, 1)}}
	runUntilAcked(t, newTestPipeline(src, tgt, false), 0x108)
	if want := "open; begin; apply 1×1; checkpoint 0/108 xid 1; commit"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

// A backlog keeps a group open for the next transaction; when the next
// chunk writes nothing (here the first part of a transaction whose commit
// has not come, without changes for the target) and the source then falls
// silent, the group still commits within GroupDelay: no target
// transaction waits for a chunk that may never come.
func TestOpenGroupCommitsWithoutAnotherChunk(t *testing.T) {
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x208}, sent: make(chan struct{})}
	next := &source.Txn{Xid: 2, Commit: 0x200}
	src.sessions = []script{{chunks: chunks(txn(1, 0x100, 1), []source.Chunk{{Txn: next}})}}
	// The first Apply waits until both chunks are queued, so the applier
	// sees the backlog when transaction 1 commits.
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}, gate: make(chan struct{})}
	go func() {
		<-src.sent
		close(tgt.gate)
	}()
	runUntilAcked(t, New(Config{GroupDelay: 50 * time.Millisecond, IdleAdvance: time.Nanosecond}, src, tgt), 0x108)
	if want := "open; begin; apply 1×1; checkpoint 0/108 xid 1; commit"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

// On one thread (run --procs 1) the reader waits for the applier to
// yield whenever the channel is full: a backlog longer than the channel
// still shares one commit.
func TestOneThreadBacklogSharesCommits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 300
	var parts [][]source.Chunk
	for i := range n {
		parts = append(parts, txn(uint64(i+1), source.LSN(0x100*(i+1)), 1))
	}
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: source.LSN(0x100*n + 8)},
		sessions: []script{{chunks: chunks(parts...)}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
	p := New(Config{CatchUp: true, Buffer: 8, GroupDelay: time.Hour, IdleAdvance: time.Nanosecond}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(tgt.calls(), "commit"); got != 1 {
		t.Errorf("%d transactions in %d commits, want 1: %s", n, got, tgt.calls())
	}
	if got := strings.Count(tgt.calls(), "apply "); got != n {
		t.Errorf("%d transactions applied, want %d", got, n)
	}
}

func TestReconnectResumesFromCheckpoint(t *testing.T) {
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x308},
		sessions: []script{
			{chunks: txn(1, 0x100, 1), end: io.ErrUnexpectedEOF},           // connection lost after one txn
			{chunks: chunks(txn(1, 0x100, 1), txn(2, 0x300, 1)), end: nil}, // replayed from the checkpoint
		},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}}
	p := newTestPipeline(src, tgt, true)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(src.starts) != 2 || src.starts[1] != 0x108 {
		t.Errorf("stream starts %v, want the second at the checkpoint 0/108", src.starts)
	}
	if got := strings.Count(tgt.calls(), "apply 1×1"); got != 1 {
		t.Errorf("txn 1 applied %d times: %s", got, tgt.calls())
	}
	if p.Acked() != 0x308 {
		t.Errorf("acked %s, want 0/308", p.Acked())
	}
}

func TestPermanentErrorStopsAndRollsBack(t *testing.T) {
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x900},
		// A second session when 1 and 2 shared a target transaction: it
		// commits 1 first (isolate.go).
		sessions: []script{{chunks: chunks(txn(1, 0x100, 1), txn(2, 0x200, 1), txn(3, 0x300, 1))},
			{chunks: chunks(txn(1, 0x100, 1), txn(2, 0x200, 1), txn(3, 0x300, 1))}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}, failXid: 2}
	p := newTestPipeline(src, tgt, false)
	err := p.Run(t.Context())
	var ae *Error
	if !errors.As(err, &ae) || ae.Xid != 2 {
		t.Fatalf("Run returned %v, want the apply error of xid 2", err)
	}
	if !strings.HasSuffix(tgt.calls(), "apply 2×1; rollback") || strings.Contains(tgt.calls(), "apply 3") {
		t.Errorf("calls: %s", tgt.calls())
	}
	if p.Acked() > 0x108 {
		t.Errorf("acked %s: past the failed transaction", p.Acked())
	}
}

func TestSystemMismatchIsPermanent(t *testing.T) {
	src := &fakeSource{server: source.Server{SystemID: "other"}}
	tgt := &recordingTarget{cp: checkpoint.Row{Pipeline: "p", SystemID: "sys"}}
	err := newTestPipeline(src, tgt, false).Run(t.Context())
	if err == nil || !strings.Contains(err.Error(), "different source server") {
		t.Fatalf("Run returned %v", err)
	}
}

func TestIdleMarkAdvancesWithoutData(t *testing.T) {
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x500},
		sessions: []script{{chunks: []source.Chunk{{End: 0x300}, {End: 0x200}, {End: 0x500}}}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x100}}
	if err := newTestPipeline(src, tgt, true).Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if want := "open; checkpoint 0/300 alone; checkpoint 0/500 alone"; tgt.calls() != want {
		t.Errorf("calls:\n got %s\nwant %s", tgt.calls(), want)
	}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{io.ErrUnexpectedEOF, true},
		{fmt.Errorf("receive: %w", io.EOF), true},
		{&Error{Op: "insert", Err: errors.New("bad")}, false},
		{errors.New("malformed"), false},
		{context.Canceled, false},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{fmt.Errorf("spill: %w", &fs.PathError{Op: "write", Path: "/spill/f", Err: syscall.EIO}), false},
		{&source.SpillFullError{Dir: "/spill", Err: &fs.PathError{Op: "write", Path: "/spill/f", Err: syscall.ENOSPC}}, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// runUntilAcked runs p until it has acknowledged acked, then stops it.
func runUntilAcked(t *testing.T, p *Pipeline, acked source.LSN) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitUntil(t, func() bool { return p.Acked() == acked })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(time.Millisecond)
	}
}
