package apply

import (
	"context"
	"sync"
	"testing"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// asyncTarget is a recordingTarget that commits asynchronously into a
// pretend log: every commit (and every other session's write, moved) ends
// 0x100 further on, and the test says how far the log is flushed.
type asyncTarget struct {
	recordingTarget
	mu      sync.Mutex
	end     source.LSN // where the log ends
	flushed source.LSN
	polls   int
	onPoll  func(*asyncTarget) // when set, runs (locked) at each Flushed
}

func (t *asyncTarget) Async() bool { return true }

func (t *asyncTarget) Commit(ctx context.Context, cp checkpoint.Row) error {
	if err := t.recordingTarget.Commit(ctx, cp); err != nil {
		return err
	}
	t.mu.Lock()
	t.end += 0x100
	t.mu.Unlock()
	return nil
}

func (t *asyncTarget) LastCommit() (end, flushed source.LSN) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end, t.flushed
}

func (t *asyncTarget) Flushed(context.Context) (flushed, end source.LSN, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.polls++
	if t.onPoll != nil {
		t.onPoll(t)
	}
	return t.flushed, t.end, nil
}

func (t *asyncTarget) flushTo(l source.LSN) {
	t.mu.Lock()
	t.flushed = l
	t.mu.Unlock()
}

// TestAsyncAckWaitsForFlush: with a target that commits asynchronously,
// the source is told of a checkpoint only once the target's log is
// flushed past its commit, the checkpoint read at the start included;
// while checkpoints wait and nothing commits, the applier asks.
func TestAsyncAckWaitsForFlush(t *testing.T) {
	src := &fakeSource{
		server:   source.Server{SystemID: "sys", WALEnd: 0x900},
		sessions: []script{{chunks: chunks(txn(1, 0x200, 1), txn(2, 0x300, 1))}},
	}
	// The log ends at 0x1000 at the start; commits end at 0x1100, 0x1200.
	tgt := &asyncTarget{recordingTarget: recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x100}}, end: 0x1000, flushed: 0xf00}
	p := New(Config{IdleAdvance: 1 << 40, GroupTxns: 1}, src, tgt)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	waitUntil(t, func() bool { tgt.mu.Lock(); defer tgt.mu.Unlock(); return tgt.end == 0x1200 })
	for _, step := range []struct {
		flushed, want source.LSN
	}{
		{0xfff, 0},      // not even the checkpoint read at the start
		{0x1000, 0x100}, // the start's checkpoint, not txn 1
		{0x10ff, 0x100}, // txn 1 ends at 0x1100 at the latest: not yet
		{0x1100, 0x208}, // txn 1
		{0x11ff, 0x208}, // not txn 2
		{0x5000, 0x308}, // both
	} {
		before := p.Acked()
		tgt.flushTo(step.flushed)
		polls := pollCount(tgt)
		// Asked twice more (while something waits), the pipeline has
		// seen the new flush position.
		waitUntil(t, func() bool { return pollCount(tgt) >= polls+2 || p.Acked() != before })
		if got := p.Acked(); got != step.want {
			t.Errorf("flushed %s: acked %s, want %s", step.flushed, got, step.want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func pollCount(t *asyncTarget) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.polls
}

// TestAsyncStopSettles: on a clean stop and at the end of a catch-up the
// pipeline waits a moment for the target to flush, so that the source is
// told of the last commit before the run ends.
func TestAsyncStopSettles(t *testing.T) {
	for _, catchUp := range []bool{false, true} {
		src := &fakeSource{
			server:   source.Server{SystemID: "sys", WALEnd: 0x308},
			sessions: []script{{chunks: chunks(txn(1, 0x200, 1), txn(2, 0x300, 1))}},
		}
		tgt := &asyncTarget{recordingTarget: recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x100}}, end: 0x1000, flushed: 0x1000}
		p := New(Config{CatchUp: catchUp, IdleAdvance: 1 << 40, GroupTxns: 1}, src, tgt)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		if !catchUp {
			waitUntil(t, func() bool { tgt.mu.Lock(); defer tgt.mu.Unlock(); return tgt.end == 0x1200 })
			if got := p.Acked(); got != 0x100 {
				t.Fatalf("acked %s before anything was flushed", got)
			}
			// The walwriter flushes only after a while: after the stop.
			tgt.mu.Lock()
			tgt.onPoll = func(t *asyncTarget) {
				if t.polls > 3 {
					t.flushed = t.end
				}
			}
			tgt.mu.Unlock()
			cancel()
		} else {
			tgt.mu.Lock()
			tgt.onPoll = func(t *asyncTarget) { t.flushed = t.end }
			tgt.mu.Unlock()
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := p.Acked(); got != 0x308 {
			t.Errorf("catch-up %v: acked %s at the end, want 0/308", catchUp, got)
		}
	}
}
