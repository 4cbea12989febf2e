package apply

import (
	"io"
	"sync"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// recordingObserver keeps what an Observer is told.
type recordingObserver struct {
	mu       sync.Mutex
	started  []checkpoint.Row
	ended    []SessionEnd
	received []uint64 // xids
	commits  []Commit
	srcEnd   source.LSN
	acked    []source.LSN
	checks   int
	resyncs  []error // ResyncStarted's causes
	resynced []error // ResyncFinished's errors
}

var _ Observer = (*recordingObserver)(nil)

func (o *recordingObserver) SessionStarted(cp checkpoint.Row, walEnd source.LSN) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started = append(o.started, cp)
	o.srcEnd = max(o.srcEnd, walEnd)
}

func (o *recordingObserver) SessionEnded(e SessionEnd) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, e)
}

func (o *recordingObserver) Received(txn *source.Txn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.received = append(o.received, txn.Xid)
}

func (o *recordingObserver) Committed(c Commit) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.commits = append(o.commits, c)
}

func (o *recordingObserver) SourceEnd(end source.LSN) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.srcEnd = max(o.srcEnd, end)
}

func (o *recordingObserver) Acked(pos source.LSN) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.acked = append(o.acked, pos)
}

func (o *recordingObserver) SlotChecked(source.SlotState, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.checks++
}

func (o *recordingObserver) ResyncStarted(lost error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resyncs = append(o.resyncs, lost)
}

func (o *recordingObserver) ResyncFinished(err error, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.resynced = append(o.resynced, err)
}

func (o *recordingObserver) Beat(time.Time)          {}
func (o *recordingObserver) DDLRejected(RejectedDDL) {}

// ops builds a committed transaction with the given operations.
func ops(xid uint64, commit source.LSN, kinds ...source.Op) []source.Chunk {
	t := &source.Txn{Xid: xid, Commit: commit, CommitTime: time.Unix(int64(xid), 0)}
	changes := make([]source.Change, len(kinds))
	for i, k := range kinds {
		changes[i] = source.Change{Op: k, New: []source.Value{{Kind: source.ValueText, Data: []byte("abc")}}}
	}
	return []source.Chunk{{Txn: t, Changes: changes, Commit: true, End: commit + 8}}
}

// TestObserverHearsCommits: every target commit is told once with the
// source transactions, changes by operation and bytes it applied, and
// the checkpoint; sessions, the source's position and the acknowledged
// one are told as they happen.
func TestObserverHearsCommits(t *testing.T) {
	big := ops(3, 0x300, source.OpInsert, source.OpInsert)
	big[0].Bytes = 1000 // as a reader measured it
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x500},
		sessions: []script{{chunks: chunks(
			ops(1, 0x100, source.OpInsert), // already applied
			ops(2, 0x200, source.OpInsert, source.OpUpdate, source.OpDelete),
			big,
			[]source.Chunk{{End: 0x500}},
		)}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x180}}
	obs := &recordingObserver{}
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, Observer: obs}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var txns int
	var sum Tally
	for _, c := range obs.commits {
		txns += c.Txns
		for op, n := range c.Changes.Ops {
			sum.Ops[op] += n
		}
		sum.Bytes += c.Changes.Bytes
	}
	if txns != 2 || sum.Ops[source.OpInsert] != 3 || sum.Ops[source.OpUpdate] != 1 || sum.Ops[source.OpDelete] != 1 || sum.Total() != 5 {
		t.Errorf("commits told %d txns and changes %v, want 2 txns, 3 inserts, 1 update, 1 delete", txns, sum.Ops)
	}
	// xid 2's three changes are estimated (no Bytes from the reader), xid 3's taken as told.
	est := source.Chunk{Changes: ops(2, 0x200, source.OpInsert, source.OpUpdate, source.OpDelete)[0].Changes}
	if want := int64(est.Size() + 1000); sum.Bytes != want {
		t.Errorf("bytes told %d, want %d", sum.Bytes, want)
	}
	last := obs.commits[len(obs.commits)-1]
	if last.Checkpoint.End != 0x500 || p.Acked() != 0x500 {
		t.Errorf("last commit told checkpoint %s (acked %s), want 0/500", last.Checkpoint.End, p.Acked())
	}
	if got := obs.received; len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("received xids %v, want [2 3] (xid 1 was applied before)", got)
	}
	if len(obs.started) != 1 || len(obs.ended) != 1 || obs.ended[0].Err != nil || obs.ended[0].Retry {
		t.Errorf("sessions started %d, ended %+v; want one clean session", len(obs.started), obs.ended)
	}
	if obs.srcEnd != 0x500 {
		t.Errorf("source end heard %s, want 0/500", obs.srcEnd)
	}
	if len(obs.acked) == 0 || obs.acked[len(obs.acked)-1] != 0x500 {
		t.Errorf("acked told %v, want it to end at 0/500", obs.acked)
	}
}

// TestObserverHearsSessionEnds: a transient failure is told with the
// wait before the retry, a permanent one as the end.
func TestObserverHearsSessionEnds(t *testing.T) {
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x400},
		sessions: []script{
			{chunks: ops(1, 0x100, source.OpInsert), end: io.ErrUnexpectedEOF},
			{chunks: ops(2, 0x200, source.OpInsert)},
		},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}, failXid: 2}
	obs := &recordingObserver{}
	p := New(Config{IdleAdvance: time.Nanosecond, Backoff: time.Millisecond, Observer: obs}, src, tgt)
	if err := p.Run(t.Context()); err == nil {
		t.Fatal("Run ended without the constraint violation")
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.ended) != 2 {
		t.Fatalf("sessions ended %+v, want two", obs.ended)
	}
	first, second := obs.ended[0], obs.ended[1]
	if first.Class != ClassTransient || !first.Retry || first.Wait != time.Millisecond || !first.Connected {
		t.Errorf("first end %+v, want transient, retried after 1ms", first)
	}
	// A change the target refused for good waits for a person.
	if second.Class != ClassNeedsPerson || second.Retry || second.Err == nil {
		t.Errorf("second end %+v, want needs_person, not retried", second)
	}
}

// TestOnSlotCheckAndObserverBothHear: the older hook still hears the
// slot checks beside the Observer.
func TestOnSlotCheckAndObserverBothHear(t *testing.T) {
	var n int
	obs := &recordingObserver{}
	o := observer(Config{Observer: obs, OnSlotCheck: func(source.SlotState, error) { n++ }})
	o.SlotChecked(source.SlotState{}, nil)
	if n != 1 || obs.checks != 1 {
		t.Errorf("OnSlotCheck heard %d checks and the Observer %d, want 1 each", n, obs.checks)
	}
}
