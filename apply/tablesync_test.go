package apply

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

var (
	addedRel = &source.Relation{Schema: "public", Name: "orders"}
	otherRel = &source.Relation{Schema: "public", Name: "accounts"}
)

// syncReader serves states, which next (when set) replaces after each read.
type syncReader struct {
	states []checkpoint.TableSync
	next   func(reads int) []checkpoint.TableSync
	reads  int
}

func (r *syncReader) read(context.Context) ([]checkpoint.TableSync, error) {
	r.reads++
	out := r.states
	if r.next != nil {
		r.states = r.next(r.reads)
	}
	return out, nil
}

func ready(asOf source.LSN) []checkpoint.TableSync {
	return []checkpoint.TableSync{{Table: addedRel.Table(), State: checkpoint.SyncReady, AsOf: asOf}}
}

func tables(changes []source.Change) string {
	var s []string
	for _, c := range changes {
		if c.Op == source.OpTruncate {
			for _, r := range c.Truncated {
				s = append(s, "truncate "+r.Name)
			}
			continue
		}
		s = append(s, c.Rel.Name)
	}
	return strings.Join(s, ",")
}

// Of a ready table, the changes of transactions committed before the
// copy's position are dropped (the copy holds them), from the position
// on applied; other tables' changes always pass; a TRUNCATE loses just
// the copied table.
func TestSyncGateDropsWhatTheCopyHolds(t *testing.T) {
	changes := []source.Change{
		{Op: source.OpInsert, Rel: addedRel}, {Op: source.OpUpdate, Rel: otherRel},
		{Op: source.OpTruncate, Rel: addedRel, Truncated: []*source.Relation{addedRel, otherRel}},
		{Op: source.OpTruncate, Rel: addedRel, Truncated: []*source.Relation{addedRel}},
	}
	for _, c := range []struct {
		commit source.LSN
		want   string
	}{
		{0x100, "accounts,truncate accounts"},
		{0x1ff, "accounts,truncate accounts"},
		{0x200, "orders,accounts,truncate orders,truncate accounts,truncate orders"},
		{0x300, "orders,accounts,truncate orders,truncate accounts,truncate orders"},
	} {
		r := &syncReader{states: ready(0x200)}
		g := newSyncGate(r.read, slog.New(slog.DiscardHandler), func(time.Time) {})
		got, err := g.filter(context.Background(), &source.Txn{Xid: 1, Commit: c.commit}, changes)
		if err != nil {
			t.Fatal(err)
		}
		if tables(got) != c.want {
			t.Errorf("commit %s: applies %q, want %q", c.commit, tables(got), c.want)
		}
	}
	if changes[2].Rel != addedRel || len(changes[2].Truncated) != 2 {
		t.Error("filter changed the chunk's own changes")
	}
}

// At a change to a table still copying the gate waits, says so, and
// goes on with the state the copy left; a table it has not seen makes it
// read the states again, one it has seen does not.
func TestSyncGateWaitsForCopy(t *testing.T) {
	r := &syncReader{}
	r.next = func(reads int) []checkpoint.TableSync {
		switch {
		case reads < 3:
			return []checkpoint.TableSync{{Table: addedRel.Table(), State: checkpoint.SyncCopying}}
		default:
			return ready(0x200)
		}
	}
	var log bytes.Buffer
	beats := 0
	g := newSyncGate(r.read, slog.New(slog.NewTextHandler(&log, nil)), func(time.Time) { beats++ })
	if err := g.start(context.Background()); err != nil { // a session starts: no state yet
		t.Fatal(err)
	}
	other := []source.Change{{Op: source.OpInsert, Rel: otherRel}}
	if _, err := g.filter(context.Background(), &source.Txn{Commit: 0x50}, other); err != nil {
		t.Fatal(err)
	}
	if _, err := g.filter(context.Background(), &source.Txn{Commit: 0x60}, other); err != nil || r.reads != 2 {
		t.Fatalf("reads %d after two changes to one unseen table, want 2 (start, first sight); %v", r.reads, err)
	}
	added := []source.Change{{Op: source.OpInsert, Rel: addedRel}}
	wait, err := g.copying(context.Background(), added)
	if err != nil || !wait {
		t.Fatalf("copying: %v, %v; want true", wait, err)
	}
	got, err := g.filter(context.Background(), &source.Txn{Commit: 0x100}, added)
	if err != nil || len(got) != 0 {
		t.Fatalf("after the wait: %q, %v; want the change dropped (before the copy's position)", tables(got), err)
	}
	if !strings.Contains(log.String(), "waiting for decant add-tables to finish copying") || !strings.Contains(log.String(), "copy is ready") {
		t.Errorf("the wait was not logged:\n%s", log.String())
	}
	if beats == 0 {
		t.Error("the wait did not tell the Observer that the apply loop is alive")
	}
	if n := strings.Count(log.String(), "waiting for decant"); n != 1 {
		t.Errorf("the wait was logged more than once:\n%s", log.String())
	}
}

// A waiting gate ends with its context.
func TestSyncGateWaitEndsWithContext(t *testing.T) {
	r := &syncReader{states: []checkpoint.TableSync{{Table: addedRel.Table(), State: checkpoint.SyncCopying}}}
	r.next = func(int) []checkpoint.TableSync { return r.states }
	g := newSyncGate(r.read, slog.New(slog.DiscardHandler), func(time.Time) {})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.filter(ctx, &source.Txn{Commit: 0x100}, []source.Change{{Op: source.OpInsert, Rel: addedRel}}); err != context.Canceled {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// A transaction streamed in progress applies to a ready table only once
// the checkpoint has passed the copy's position.
func TestSyncGateStreamed(t *testing.T) {
	r := &syncReader{states: ready(0x200)}
	r.next = func(int) []checkpoint.TableSync { return ready(0x200) }
	g := newSyncGate(r.read, slog.New(slog.DiscardHandler), func(time.Time) {})
	c := source.Chunk{Txn: &source.Txn{Xid: 9, Streamed: true}, Changes: []source.Change{{Op: source.OpInsert, Rel: addedRel}}}
	if err := g.streamed(context.Background(), c, 0x100); err == nil || !strings.Contains(err.Error(), "--stream-apply spool") {
		t.Errorf("streamed before the copy's position: %v, want an error naming --stream-apply spool", err)
	}
	if err := g.streamed(context.Background(), c, 0x200); err != nil {
		t.Errorf("streamed at the copy's position: %v", err)
	}
}

// The pipeline commits the complete transactions it holds before it
// waits for a copy, and applies of the added table only what the copy
// does not hold, in commit order with the rest.
func TestPipelineWaitsForAddedTable(t *testing.T) {
	change := func(rels ...*source.Relation) []source.Change {
		var out []source.Change
		for _, r := range rels {
			out = append(out, source.Change{Op: source.OpInsert, Rel: r})
		}
		return out
	}
	one := func(xid uint64, commit source.LSN, rels ...*source.Relation) source.Chunk {
		return source.Chunk{Txn: &source.Txn{Xid: xid, Commit: commit}, Changes: change(rels...), Commit: true, End: commit + 8}
	}
	src := &fakeSource{
		server: source.Server{SystemID: "sys", WALEnd: 0x400},
		sessions: []script{{chunks: []source.Chunk{
			one(1, 0x100, otherRel),
			one(2, 0x150, addedRel),           // in the copy, taken at 0x180
			one(3, 0x200, addedRel, otherRel), // after it
			{End: 0x400},
		}}},
	}
	tgt := &recordingTarget{cp: checkpoint.Row{SystemID: "sys", End: 0x10}, gate: make(chan struct{})}
	src.sent = make(chan struct{})
	go func() { <-src.sent; close(tgt.gate) }()
	r := &syncReader{}
	r.next = func(reads int) []checkpoint.TableSync {
		if reads < 3 {
			return []checkpoint.TableSync{{Table: addedRel.Table(), State: checkpoint.SyncCopying}}
		}
		return ready(0x180)
	}
	p := New(Config{CatchUp: true, IdleAdvance: time.Nanosecond, TableSyncs: r.read}, src, tgt)
	if err := p.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Transaction 2 is left without changes: its checkpoint is written
	// alone (IdleAdvance is 1 ns here).
	want := "open; begin; apply 1×1; checkpoint 0/108 xid 1; commit; checkpoint 0/158 alone; begin; apply 3×2; checkpoint 0/400 xid 3; commit"
	if got := tgt.calls(); got != want {
		t.Errorf("calls:\n got %s\nwant %s", got, want)
	}
}

// Changes alternating between tables read the states once per table new
// to the session, not once per change.
func TestSyncGateReadsOncePerNewTable(t *testing.T) {
	r := &syncReader{states: ready(0x200)}
	r.next = func(int) []checkpoint.TableSync { return ready(0x200) }
	g := newSyncGate(r.read, slog.New(slog.DiscardHandler), func(time.Time) {})
	if err := g.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		rel := []*source.Relation{addedRel, otherRel}[i%2]
		if _, err := g.filter(context.Background(), &source.Txn{Commit: 0x300}, []source.Change{{Op: source.OpInsert, Rel: rel}}); err != nil {
			t.Fatal(err)
		}
	}
	if r.reads != 3 {
		t.Errorf("%d reads of the states for 100 changes to 2 tables, want 3 (the start, each table once)", r.reads)
	}
	if err := g.start(context.Background()); err != nil || r.reads != 4 {
		t.Errorf("a new session: %d reads, %v; want 4", r.reads, err)
	}
}

// The gate is on the apply loop's path for every change: a chunk of
// changes to tables it knows costs no allocation.
func TestSyncGateCostsNoAllocationPerChange(t *testing.T) {
	r := &syncReader{}
	g := newSyncGate(r.read, slog.New(slog.DiscardHandler), func(time.Time) {})
	ctx := context.Background()
	if err := g.start(ctx); err != nil {
		t.Fatal(err)
	}
	changes := make([]source.Change, 512)
	for i := range changes {
		changes[i] = source.Change{Op: source.OpInsert, Rel: []*source.Relation{addedRel, otherRel}[i/256]}
	}
	txn := &source.Txn{Commit: 0x300}
	if _, err := g.filter(ctx, txn, changes); err != nil { // each table seen once
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := g.copying(ctx, changes); err != nil {
			t.Fatal(err)
		}
		if _, err := g.filter(ctx, txn, changes); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 4 {
		t.Errorf("%.0f allocations for a chunk of 512 changes, want a few per chunk at most", allocs)
	}
}
