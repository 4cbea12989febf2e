package apply

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

func TestParseConflictRule(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want ConflictRule
		err  string
	}{
		{spec: "insert_exists=skip", want: ConflictRule{InsertExists, PolicySkip}},
		{spec: "insert_exists=apply", want: ConflictRule{InsertExists, PolicyApply}},
		{spec: "update_missing=apply", want: ConflictRule{UpdateMissing, PolicyApply}},
		{spec: " delete_missing = skip ", want: ConflictRule{DeleteMissing, PolicySkip}},
		{spec: "update_differs=error", want: ConflictRule{UpdateDiffers, PolicyError}},
		{spec: "delete_differs=skip", want: ConflictRule{DeleteDiffers, PolicySkip}},
		{spec: "insert_exists", err: "is not KIND=POLICY"},
		{spec: "insert_exist=skip", err: `unknown conflict kind "insert_exist"`},
		{spec: "insert_exists=ignore", err: `unknown conflict policy "ignore" for insert_exists`},
		{spec: "delete_missing=apply", err: "delete_missing takes error or skip"},
		{spec: "update_differs=apply", err: "update_differs takes error or skip"},
	} {
		got, err := ParseConflictRule(tc.spec)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one containing %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}

func TestConflictPoliciesPerTable(t *testing.T) {
	items := source.TableName{Schema: "public", Name: "items"}
	other := source.TableName{Schema: "public", Name: "other"}
	var c ConflictPolicies
	if c.Any() || c.Resolves(items) {
		t.Fatal("the zero policies resolve something")
	}
	c.Set(source.TableName{}, []ConflictRule{{DeleteMissing, PolicySkip}})
	c.Set(items, []ConflictRule{{InsertExists, PolicyApply}, {DeleteMissing, PolicyError}})
	if got := c.Of(items); got[InsertExists] != PolicyApply || got[DeleteMissing] != PolicyError || got[UpdateMissing] != PolicyError {
		t.Errorf("items: %v", got)
	}
	if got := c.Of(other); got[DeleteMissing] != PolicySkip || got[InsertExists] != PolicyError {
		t.Errorf("other: %v", got)
	}
	if !c.Any() || !c.Resolves(other) || !c.Resolves(items) {
		t.Error("policies other than error not seen")
	}
	var off ConflictPolicies
	off.Set(items, []ConflictRule{{InsertExists, PolicyError}})
	if off.Any() || off.Resolves(items) {
		t.Error("error everywhere counts as resolving")
	}
}

func TestConflictTallyEach(t *testing.T) {
	var tally ConflictTally
	tally[UpdateMissing][PolicyApply] = 2
	tally[DeleteMissing][PolicySkip] = 1
	var got []string
	tally.Each(func(k ConflictKind, p ConflictPolicy, n int64) {
		got = append(got, k.String()+"="+p.String()+":"+string(rune('0'+n)))
	})
	if strings.Join(got, ",") != "update_missing=apply:2,delete_missing=skip:1" {
		t.Errorf("Each: %v", got)
	}
}

// conflictTarget is a recordingTarget whose every commit resolved one
// update_missing conflict by skipping it.
type conflictTarget struct {
	recordingTarget
	pending ConflictTally
}

func (t *conflictTarget) Commit(ctx context.Context, cp checkpoint.Row) error {
	if err := t.recordingTarget.Commit(ctx, cp); err != nil {
		return err
	}
	t.pending[UpdateMissing][PolicySkip]++
	return nil
}

func (t *conflictTarget) TakeConflicts() ConflictTally {
	c := t.pending
	t.pending = ConflictTally{}
	return c
}

// TestObserverHearsConflicts: what a ConflictCounter target resolved is
// told with the commit that resolved it, once.
func TestObserverHearsConflicts(t *testing.T) {
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x300},
		sessions: []script{{chunks: chunks(
			ops(2, 0x200, source.OpUpdate),
			[]source.Chunk{{End: 0x300}},
		)}},
	}
	tgt := &conflictTarget{recordingTarget: recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x100}}}
	obs := &recordingObserver{}
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, Observer: obs}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	var n int64
	for _, c := range obs.commits {
		n += c.Conflicts[UpdateMissing][PolicySkip]
	}
	if want := int64(len(obs.commits)); n != want || n == 0 {
		t.Errorf("observer heard %d conflicts over %d commits, want one per commit", n, len(obs.commits))
	}
}
