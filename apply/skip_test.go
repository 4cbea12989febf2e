package apply

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// skipTarget is a recordingTarget that keeps decant.skipped.
type skipTarget struct {
	*recordingTarget
	pending *checkpoint.Skip
	stops   []checkpoint.Skip
}

var _ SkipTarget = (*skipTarget)(nil)

func (t *skipTarget) PendingSkip(context.Context) (checkpoint.Skip, bool, error) {
	if t.pending == nil {
		return checkpoint.Skip{}, false, nil
	}
	return *t.pending, true, nil
}

func (t *skipTarget) RecordSkip(_ context.Context, txn *source.Txn, s checkpoint.Skip) error {
	if !t.open {
		t.record("begin")
		t.open = true
	}
	t.record("skipped %s xid %d: %s, %d changes", s.Commit, s.Xid, strings.Join(s.Tables, " "), s.Changes)
	t.pending = nil
	return nil
}

func (t *skipTarget) RecordStop(_ context.Context, s checkpoint.Skip) error {
	t.stops = append(t.stops, s)
	return nil
}

var (
	relA = &source.Relation{Schema: "public", Name: "a"}
	relB = &source.Relation{Schema: "public", Name: "b"}
)

// runSkip runs a catch-up over chunks with a skip pending at want and
// returns the target's calls and Run's error.
func runSkip(t *testing.T, want checkpoint.Skip, cs ...[]source.Chunk) (string, error) {
	t.Helper()
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x400}, sessions: []script{{chunks: chunks(cs...)}}}
	tgt := &skipTarget{recordingTarget: &recordingTarget{cp: checkpoint.Row{Pipeline: "p", SystemID: "sys", End: 0x80}}, pending: &want}
	err := newTestPipeline(src, tgt.recordingTarget, true).withTarget(tgt).Run(t.Context())
	return tgt.calls(), err
}

// withTarget swaps the pipeline's target (the constructor takes a
// *recordingTarget).
func (p *Pipeline) withTarget(tgt Target) *Pipeline {
	p.tgt = tgt
	return p
}

// twoTables is a transaction of three changes to two tables, in two chunks.
func twoTables(xid uint64, commit source.LSN) []source.Chunk {
	txn := &source.Txn{Xid: xid, Commit: commit}
	return []source.Chunk{
		{Txn: txn, Changes: []source.Change{{Op: source.OpInsert, Rel: relA}, {Op: source.OpUpdate, Rel: relB}}},
		{Txn: txn, Changes: []source.Change{{Op: source.OpDelete, Rel: relA}}, Commit: true, End: commit + 8},
	}
}

func TestSkipRecordsInTheCheckpointTransaction(t *testing.T) {
	calls, err := runSkip(t, checkpoint.Skip{Pipeline: "p", Commit: 0x200, Xid: 2},
		twoTables(2, 0x200), txn(3, 0x300, 1), []source.Chunk{{End: 0x400}})
	if err != nil {
		t.Fatal(err)
	}
	// Transactions may share a commit when a backlog waits: whatever the
	// grouping, the skip comes before the checkpoint past it, inside one
	// BEGIN/COMMIT, and none of its changes is applied.
	if strings.Contains(calls, "apply 2") {
		t.Errorf("the skipped transaction was applied: %s", calls)
	}
	skipAt := strings.Index(calls, "skipped 0/200 xid 2: public.a public.b, 3 changes")
	t.Log(calls)
	if skipAt < 0 {
		t.Fatalf("no skip recorded with its tables and changes: %s", calls)
	}
	rest := calls[skipAt:]
	commit := strings.Index(rest, "; commit")
	if commit < 0 || strings.Contains(rest[:commit], "begin") || strings.Contains(rest[:commit], "checkpoint 0/1") {
		t.Errorf("the skip is not committed with a checkpoint past it: %s", calls)
	}
	if !strings.Contains(calls, "apply 3×1") {
		t.Errorf("the transaction after the skip was not applied: %s", calls)
	}
	// The idle mark moves the checkpoint in the group of xid 3, or alone
	// when that group committed before the mark came.
	if !strings.HasSuffix(calls, "checkpoint 0/400 xid 3; commit") && !strings.HasSuffix(calls, "commit; checkpoint 0/400 alone") {
		t.Errorf("the checkpoint did not move to the idle mark last: %s", calls)
	}
}

func TestSkipRefusals(t *testing.T) {
	streamed := []source.Chunk{{Txn: &source.Txn{Xid: 9, Streamed: true}, Changes: make([]source.Change, 1)}}
	ddl := []source.Chunk{{Txn: &source.Txn{Xid: 2, Commit: 0x200}, Changes: []source.Change{{Op: source.OpDDL, DDL: &source.DDL{Tag: "ALTER TABLE"}}}, Commit: true, End: 0x208}}
	for _, tc := range []struct {
		name   string
		want   checkpoint.Skip
		chunks [][]source.Chunk
		says   []string
	}{
		{"later than the next", checkpoint.Skip{Commit: 0x200}, [][]source.Chunk{txn(1, 0x100, 1), txn(2, 0x200, 1)},
			[]string{"pending skip of commit 0/200 refused", "next transaction to apply is commit 0/100 (xid 1)", "decant skip --cancel --pipeline p"}},
		{"earlier than the next", checkpoint.Skip{Commit: 0x180}, [][]source.Chunk{txn(2, 0x200, 1)},
			[]string{"commit 0/180", "next transaction to apply is commit 0/200"}},
		{"another xid", checkpoint.Skip{Commit: 0x100, Xid: 7}, [][]source.Chunk{txn(1, 0x100, 1)},
			[]string{"commit 0/100 (xid 7)", "is xid 1"}},
		{"nothing commits there", checkpoint.Skip{Commit: 0x300}, [][]source.Chunk{{{End: 0x400}}},
			[]string{"no transaction commits there", "before 0/400"}},
		{"behind the checkpoint", checkpoint.Skip{Commit: 0x40}, [][]source.Chunk{txn(1, 0x100, 1)},
			[]string{"commit 0/40", "before 0/80"}},
		{"streamed in progress", checkpoint.Skip{Commit: 0x200}, [][]source.Chunk{streamed},
			[]string{"xid 9", "--stream-apply spool"}},
		{"a schema change", checkpoint.Skip{Commit: 0x200}, [][]source.Chunk{ddl},
			[]string{"ALTER TABLE", "does not skip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, err := runSkip(t, tc.want, tc.chunks...)
			var refused *SkipRefusedError
			if !errors.As(err, &refused) || !NeedsPerson(err) {
				t.Fatalf("Run: %v, want a SkipRefusedError that needs a person", err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			if strings.Contains(calls, "apply") || strings.Contains(calls, "skipped") || strings.Contains(calls, "commit") {
				t.Errorf("something was written: %s", calls)
			}
		})
	}
}

func TestPermanentErrorRecordsWhereItStopped(t *testing.T) {
	both := chunks(txn(1, 0x100, 1), txn(2, 0x200, 1))
	src := &fakeSource{server: source.Server{SystemID: "sys", WALEnd: 0x900}, sessions: []script{{chunks: both}, {chunks: both}}}
	tgt := &skipTarget{recordingTarget: &recordingTarget{cp: checkpoint.Row{Pipeline: "p", SystemID: "sys", End: 0x10}, failXid: 2}}
	err := newTestPipeline(src, tgt.recordingTarget, false).withTarget(tgt).Run(t.Context())
	if !NeedsPerson(err) {
		t.Fatalf("Run: %v, want the apply error", err)
	}
	if len(tgt.stops) != 1 || tgt.stops[0].Commit != 0x200 || tgt.stops[0].Xid != 2 || tgt.stops[0].Pipeline != "p" || tgt.stops[0].Error != err.Error() {
		t.Errorf("stops recorded %+v, want one at 0/200 xid 2 with the error", tgt.stops)
	}
}
