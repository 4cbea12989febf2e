package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// refusingTarget is a skipTarget that refuses every change of one xid
// for good; its first refusals can be those of a set-based statement,
// met at the commit (ReplayError) as a window of net changes is.
type refusingTarget struct {
	*skipTarget
	refuse  uint64
	replays int  // how many refusals are set-based
	held    bool // the open transaction holds a change of refuse
}

func (t *refusingTarget) Apply(ctx context.Context, txn *source.Txn, changes []source.Change) error {
	if err := t.recordingTarget.Apply(ctx, txn, changes); err != nil || txn.Xid != t.refuse {
		return err
	}
	err := &Error{Op: "insert", Xid: txn.Xid, Commit: txn.Commit, Err: errors.New("duplicate key")}
	if t.replays == 0 {
		return err
	}
	t.held = true
	return nil
}

func (t *refusingTarget) Commit(ctx context.Context, cp checkpoint.Row) error {
	if t.held {
		t.held, t.replays = false, t.replays-1
		return &ReplayError{Err: &Error{Op: "insert", Xid: cp.Xid, Commit: cp.Commit, Err: errors.New("duplicate key")}}
	}
	return t.recordingTarget.Commit(ctx, cp)
}

func (t *refusingTarget) Rollback(ctx context.Context) error {
	t.held = false
	return t.recordingTarget.Rollback(ctx)
}

// runRefused plays txns 1 to 4 (0/100 to 0/400) to a target that refuses
// xid 3, the first session's four in one target transaction, and returns
// the target, Run's error and the sessions' start positions.
func runRefused(t *testing.T, replays int, pending *checkpoint.Skip, sessions int) (*refusingTarget, error, []source.LSN) {
	t.Helper()
	all := chunks(txn(1, 0x100, 1), txn(2, 0x200, 2), txn(3, 0x300, 1), txn(4, 0x400, 1), []source.Chunk{{End: 0x500}})
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x500}}
	for range sessions {
		src.sessions = append(src.sessions, script{chunks: all})
	}
	rec := &recordingTarget{cp: checkpoint.Row{Pipeline: "p", SystemID: "sys", End: 0x10}, gate: make(chan struct{})}
	tgt := &refusingTarget{skipTarget: &skipTarget{recordingTarget: rec, pending: pending}, refuse: 3, replays: replays}
	// The first Apply waits until the source has queued everything: the
	// applier sees the backlog, and groups.
	src.sent = make(chan struct{})
	go func() { <-src.sent; close(rec.gate) }()
	err := newTestPipeline(src, rec, true).withTarget(tgt).Run(t.Context())
	return tgt, err, src.starts
}

// A transaction refused in the middle of a group: the next session
// commits the transactions before it, each with its checkpoint, and the
// pipeline stops with the checkpoint right before the refused one, which
// the recorded stop names; decant skip of it is then honoured.
func TestRefusedMidGroupStopsRightBeforeIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replays  int
		sessions int
	}{
		{"one by one", 0, 2},
		{"set-based first", 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, err, starts := runRefused(t, tc.replays, nil, tc.sessions)
			var ae *Error
			if !errors.As(err, &ae) || ae.Xid != 3 || !NeedsPerson(err) || Replays(err) {
				t.Fatalf("Run: %v, want the refusal of xid 3, needing a person", err)
			}
			calls := tgt.calls()
			t.Log(calls)
			if len(starts) != 2 || starts[1] != 0x10 {
				t.Errorf("sessions started at %v, want a second from the checkpoint 0/10", starts)
			}
			// The second session's commits, after its open.
			_, second, _ := strings.Cut(calls, "; open; ")
			want := "begin; apply 1×1; checkpoint 0/108 xid 1; commit; begin; apply 2×2; checkpoint 0/208 xid 2; commit; begin; apply 3×1; rollback"
			if second != want {
				t.Errorf("second session:\n got %s\nwant %s", second, want)
			}
			if tgt.cp.End != 0x208 || tgt.cp.Xid != 2 {
				t.Errorf("checkpoint %s xid %d, want 0/208 xid 2 (right before xid 3)", tgt.cp.End, tgt.cp.Xid)
			}
			if len(tgt.stops) != 1 || tgt.stops[0].Commit != 0x300 || tgt.stops[0].Xid != 3 {
				t.Errorf("stops recorded %+v, want one at 0/300 xid 3", tgt.stops)
			}
			// decant skip --lsn 0/300 --xid 3, as the error says, then run
			// again from that checkpoint.
			next := &refusingTarget{skipTarget: &skipTarget{recordingTarget: &recordingTarget{cp: tgt.cp}, pending: &checkpoint.Skip{Pipeline: "p", Commit: 0x300, Xid: 3}}, refuse: 3}
			src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x500}, sessions: []script{{chunks: chunks(txn(3, 0x300, 1), txn(4, 0x400, 1), []source.Chunk{{End: 0x500}})}}}
			if err := newTestPipeline(src, next.recordingTarget, true).withTarget(next).Run(t.Context()); err != nil {
				t.Fatalf("the run after the skip: %v", err)
			}
			if c := next.calls(); !strings.Contains(c, "skipped 0/300 xid 3") || strings.Contains(c, "apply 3") || !strings.Contains(c, "apply 4×1") {
				t.Errorf("the run after the skip: %s", c)
			}
		})
	}
}

// A refusal of the group's first transaction stops at once: nothing
// before it is uncommitted.
func TestRefusedHeadStopsAtOnce(t *testing.T) {
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x500}, sessions: []script{{chunks: chunks(txn(3, 0x300, 1), txn(4, 0x400, 1))}}}
	rec := &recordingTarget{cp: checkpoint.Row{Pipeline: "p", SystemID: "sys", End: 0x210}}
	tgt := &refusingTarget{skipTarget: &skipTarget{recordingTarget: rec}, refuse: 3}
	err := newTestPipeline(src, rec, true).withTarget(tgt).Run(t.Context())
	var ae *Error
	if !errors.As(err, &ae) || ae.Xid != 3 || Replays(err) {
		t.Fatalf("Run: %v, want the refusal of xid 3", err)
	}
	if len(src.starts) != 1 || strings.Contains(rec.calls(), "commit") {
		t.Errorf("sessions %v, calls %s: want one session and no commit", src.starts, rec.calls())
	}
}

func TestRefusedBehindHead(t *testing.T) {
	head := &source.Txn{Xid: 1, Commit: 0x100}
	refused := func(op string, xid uint64, commit source.LSN) error {
		return &Error{Op: op, Xid: xid, Commit: commit, Err: errors.New("duplicate key")}
	}
	for _, tc := range []struct {
		name string
		head *source.Txn
		err  error
		want bool
	}{
		{"a later transaction", head, refused("insert", 2, 0x200), true},
		{"at the commit of a group of several", head, refused("commit", 2, 0x200), true},
		{"the head", head, refused("insert", 1, 0x100), false},
		{"another xid at the head's commit", head, refused("insert", 7, 0x100), true},
		{"no head", nil, refused("insert", 2, 0x200), false},
		{"the checkpoint's row", head, refused("checkpoint", 2, 0x200), false},
		{"streamed in progress", head, refused("insert", 2, 0), false},
		{"transient", head, &Error{Op: "insert", Xid: 2, Commit: 0x200, Err: &SkipCancelledError{}}, false},
		{"not an apply error", head, errors.New("spill directory full"), false},
	} {
		if got := refusedBehindHead(tc.head, tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
