package migrate

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Cutover writes the fence, waits until the checkpoint has passed it, and
// only then carries the sequences over.
func TestCutoverOrder(t *testing.T) {
	w := newWorld(t)
	w.row = &checkpoint.Row{Pipeline: "p"}
	w.rowAt = func(n int) source.LSN { return source.LSN(0x1800 + n*0x400) } // behind, then at 0/2000
	a := source.TableName{Schema: "public", Name: "a"}
	w.sequences = map[source.TableName][]source.Sequence{a: {{Table: a, Column: "id", Next: 42}}}
	r := w.env().cutover(context.Background(), CutoverOptions{})
	if !r.OK || len(r.Steps) != 3 {
		t.Fatalf("report %+v", r)
	}
	w.inOrder("source.fence", "target.read-checkpoint", "source.tables", "source.sequences public.a", "target.sequence public.a.id")
	if w.reads != 3 {
		t.Errorf("read the checkpoint %d times, want until it reached the fence (3)", w.reads)
	}
	names := []string{r.Steps[0].Name, r.Steps[1].Name, r.Steps[2].Name}
	if !slices.Equal(names, []string{"fence", "catch-up", "sequences"}) {
		t.Errorf("steps %v", names)
	}
	if got := r.Steps[1].Detail; got != "target checkpoint at 0/2000 (last commit 0/0)" {
		t.Errorf("catch-up detail %q", got)
	}
	if got := r.Steps[2]; got.Detail != "1 synchronised" || len(got.Items) != 1 || got.Items[0] != "public.a.id: next value 42" {
		t.Errorf("sequences step %+v", got)
	}
}

// A checkpoint that never reaches the fence fails the catch-up step when
// time runs out, and no sequence is touched.
func TestCutoverNotCaughtUp(t *testing.T) {
	w := newWorld(t)
	w.row = &checkpoint.Row{Pipeline: "p", End: 0x1000}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	r := w.env().cutover(ctx, CutoverOptions{Verify: true})
	if r.OK || len(r.Steps) != 2 || r.Steps[1].OK {
		t.Fatalf("report %+v", r)
	}
	if want := "catch-up: the target's checkpoint is at 0/1000, short of the fence at 0/2000"; !strings.HasPrefix(r.Failed(), want) {
		t.Errorf("failed %q, want it to start with %q", r.Failed(), want)
	}
	if w.has("source.sequences") || w.has("target.sequence") {
		t.Errorf("sequences touched before the target caught up:\n%s", strings.Join(w.calls, "\n"))
	}
}

// Verify waits for the target only while a run holds the slot: after a
// fence, until the checkpoint passes it or the wait is over.
func TestVerifySettle(t *testing.T) {
	w := newWorld(t)
	e := w.env()
	if err := e.settle(context.Background(), &fakeSource{w}, time.Second); err != nil || w.has("source.fence") {
		t.Fatalf("settle without a running pipeline: %v\n%s", err, strings.Join(w.calls, "\n"))
	}
	w.slot.Exists, w.slot.Active = true, true
	w.row = &checkpoint.Row{Pipeline: "p"}
	w.rowAt = func(n int) source.LSN { return source.LSN(n * 0x1000) }
	if err := e.settle(context.Background(), &fakeSource{w}, time.Second); err != nil {
		t.Fatal(err)
	}
	w.inOrder("source.fence", "target.connect", "target.read-checkpoint")
	if w.reads != 3 {
		t.Errorf("read the checkpoint %d times, want until it reached the fence (3)", w.reads)
	}
	w.rowAt = func(int) source.LSN { return 0 }
	if err := e.settle(context.Background(), &fakeSource{w}, 10*time.Millisecond); err != nil {
		t.Errorf("a target that does not catch up ends the wait, not the verify: %v", err)
	}
}

// Drop removes the slot first (refused while a run uses it) and the
// checkpoint row last.
func TestDropOrder(t *testing.T) {
	w := newWorld(t)
	w.slot.Exists = true
	w.row = &checkpoint.Row{Pipeline: "p"}
	e := w.env()
	src, tgt, err := e.connectBoth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.drop(context.Background(), src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	w.inOrder("source.drop-slot", "source.drop-publication", "source.remove-ddl-capture", "target.forget-schema", "target.forget-copy", "target.delete-checkpoint")
	if d != (Dropped{Slot: true, Publication: true, Checkpoint: true}) {
		t.Errorf("dropped %+v", d)
	}
}

// Status measures lag in bytes from the checkpoint's resume position, and
// in seconds by the source's flush lag while a run streams.
func TestStatusLag(t *testing.T) {
	w := newWorld(t)
	w.slot = source.SlotStatus{Exists: true, Active: true, ActivePID: 12, Current: 0x3000, Confirmed: 0x2000, FlushLag: 1500 * time.Millisecond, HasFlushLag: true}
	w.row = &checkpoint.Row{Pipeline: "p", Commit: 0x1f00, End: 0x2000}
	e := w.env()
	st, err := e.status(context.Background(), &fakeSource{w}, &fakeTarget{w: w})
	if err != nil {
		t.Fatal(err)
	}
	if st.LagBytes != 0x1000 || st.LagSeconds != 1.5 || !st.Checkpoint.Exists || st.Checkpoint.EndLSN != "0/2000" || st.Checkpoint.CommitTime != nil {
		t.Errorf("status %+v", st)
	}
	w.row = nil
	if st, err = e.status(context.Background(), &fakeSource{w}, &fakeTarget{w: w}); err != nil || st.Checkpoint.Exists || st.Slot.ActivePID != 12 {
		t.Errorf("without a checkpoint: %+v, %v", st, err)
	}
}
