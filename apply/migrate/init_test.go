package migrate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

var copyOptions = InitOptions{Copy: true, Jobs: 2, SplitBytes: MinSplitBytes}

// A first init checks before it changes anything, and writes the
// checkpoint row last, at the point where the slot became consistent.
func TestInitOrder(t *testing.T) {
	w := newWorld(t)
	res, err := w.env().init(context.Background(), InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.inOrder("source.check", "source.tables", "target.check", "target.read-checkpoint", "source.read-slot",
		"source.publication 2", "source.identify", "source.slot", "target.checkpoint at 0/1000 on session 1")
	if w.has("source.export") || w.has("copy") {
		t.Errorf("init without a copy exported a snapshot or copied:\n%s", strings.Join(w.calls, "\n"))
	}
	if !res.Changed || res.Tables != 2 || res.Checkpoint.SystemID != "7001" || res.Checkpoint.Commit != 0x1000 {
		t.Errorf("result %+v", res)
	}

	// Again: nothing changes, and the result says so.
	res, err = w.env().init(context.Background(), InitOptions{})
	if err != nil || res.Changed {
		t.Errorf("second init: changed %v, %v", res.Changed, err)
	}
}

// With a copy the slot comes with an exported snapshot, the tables are
// copied under it while the exporting session stays open, and only then
// is the checkpoint row written, on a fresh target session.
func TestInitCopyOrder(t *testing.T) {
	w := newWorld(t)
	w.missing = []source.TableName{{Schema: "public", Name: "b"}}
	prog := &recordProgress{w: w}
	o := copyOptions
	o.CreateTables, o.Progress = true, prog
	if _, err := w.env().init(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	w.inOrder("target.drop-unfinished", "target.create 1 indexes=false", "source.publication",
		"source.export", "copy snap-1 as of 0/1000", "progress.stopped", "target.connect 2", "target.indexes public.b",
		"progress.finished 2 tables as of 0/1000", "target.close 1", "target.connect 3",
		"target.checkpoint at 0/1000 on session 3", "source.export-close")
	if w.has("source.slot") {
		t.Error("a copy created its slot without an exported snapshot")
	}
	cfg := w.copied[0]
	if cfg.Jobs != 2 || cfg.SplitBytes != MinSplitBytes || len(cfg.Tables) != 2 || cfg.Pipeline != "p" {
		t.Errorf("copy config %+v", cfg)
	}
}

type recordProgress struct{ w *world }

func (p *recordProgress) Planned(source.TableName, int64, int64) {}
func (p *recordProgress) Copied(source.TableName, int64, int64)  {}
func (p *recordProgress) Done(source.TableName)                  {}
func (p *recordProgress) Stopped()                               { p.w.call("progress.stopped") }
func (p *recordProgress) Finished(res bulk.Result, asOf source.LSN) {
	p.w.call("progress.finished %d tables as of %s", res.Tables, asOf)
}

// The slot of an interrupted init --copy has no checkpoint row: the
// tables it filled are emptied, its copy state forgotten and its slot
// dropped before a new slot and snapshot are made.
func TestInitCopyRestartsInterrupted(t *testing.T) {
	w := newWorld(t)
	w.slot.Exists, w.pendingAt = true, 0x900
	if _, err := w.env().init(context.Background(), copyOptions); err != nil {
		t.Fatal(err)
	}
	w.inOrder("target.copy-pending", "target.empty 2", "target.forget-copy", "source.drop-slot", "source.export", "copy", "target.checkpoint")

	// No copy had started: only the slot goes.
	w = newWorld(t)
	w.slot.Exists = true
	if _, err := w.env().init(context.Background(), copyOptions); err != nil {
		t.Fatal(err)
	}
	w.inOrder("target.copy-pending", "source.drop-slot", "source.export")
	if w.has("target.empty") || w.has("target.forget-copy") {
		t.Errorf("emptied tables no copy had filled:\n%s", strings.Join(w.calls, "\n"))
	}
}

// A copy that fails leaves no checkpoint row, so run refuses to stream
// into the half-copied tables; one that lost a connection is resumed.
func TestInitCopyFailure(t *testing.T) {
	w := newWorld(t)
	w.copyErrs = []error{errors.New("copy table public.a: disk full")}
	_, err := w.env().init(context.Background(), copyOptions)
	if err == nil || !strings.Contains(err.Error(), "run decant init --copy again") || !strings.Contains(err.Error(), "public.a") {
		t.Fatalf("error %v", err)
	}
	if w.has("target.checkpoint") || len(w.copied) != 1 {
		t.Errorf("after a permanent copy failure:\n%s", strings.Join(w.calls, "\n"))
	}

	w = newWorld(t)
	w.copyErrs = []error{lostConnection{}, lostConnection{}}
	if _, err := w.env().init(context.Background(), copyOptions); err != nil {
		t.Fatal(err)
	}
	if len(w.copied) != 3 || !w.has("target.checkpoint") {
		t.Errorf("copies %d after two lost connections:\n%s", len(w.copied), strings.Join(w.calls, "\n"))
	}

	w = newWorld(t)
	w.copyErrs = []error{lostConnection{}, lostConnection{}, lostConnection{}, lostConnection{}, lostConnection{}, lostConnection{}}
	if _, err := w.env().init(context.Background(), copyOptions); err == nil || len(w.copied) != copyRetries+1 {
		t.Errorf("copies %d, error %v: want %d copies, then the error", len(w.copied), err, copyRetries+1)
	}
}

type lostConnection struct{}

func (lostConnection) Error() string   { return "connection lost" }
func (lostConnection) Retryable() bool { return true }

// init refuses what would lose or mix up changes, before it creates a
// slot: a checkpoint row whose slot is gone, one of another source
// system, and a copy into an initialized pipeline.
func TestInitRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		setup func(w *world)
		o     InitOptions
		want  string
	}{
		"slot gone": {func(w *world) { w.row = &checkpoint.Row{SystemID: "7001", End: 0x500} }, InitOptions{}, "slot p is missing on the source"},
		"other source": {func(w *world) {
			w.row, w.slot.Exists = &checkpoint.Row{SystemID: "6999"}, true
		}, InitOptions{}, "from source system 6999, but this source is 7001"},
		"copy into initialized": {func(w *world) {
			w.row, w.slot.Exists = &checkpoint.Row{SystemID: "7001"}, true
		}, copyOptions, "already initialized"},
		"no tables":      {func(w *world) { w.tables = nil }, InitOptions{}, "no source table matches"},
		"missing target": {func(w *world) { w.missing = []source.TableName{{Schema: "public", Name: "a"}} }, InitOptions{}, "target lacks table(s) public.a"},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			c.setup(w)
			_, err := w.env().init(context.Background(), c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if w.has("source.slot") || w.has("source.export") || w.has("target.checkpoint") {
				t.Errorf("changed the pipeline after refusing it:\n%s", strings.Join(w.calls, "\n"))
			}
			var u *UsageError
			if errors.As(err, &u) != (name == "copy into initialized") {
				t.Errorf("usage error: %v", errors.As(err, &u))
			}
		})
	}
}

// Missing target tables are not created while something else is refused
// (here a source table without a replica identity): the refusal names the
// other problem, not the tables that would have been created.
func TestInitCreateTablesRefused(t *testing.T) {
	w := newWorld(t)
	w.tables[1].Identity = source.IdentityNothing
	w.missing = []source.TableName{{Schema: "public", Name: "a"}}
	_, err := w.env().init(context.Background(), InitOptions{CreateTables: true})
	if err == nil || !strings.Contains(err.Error(), "public.b have no primary key") || strings.Contains(err.Error(), "target lacks") {
		t.Fatalf("error %v", err)
	}
	if w.has("target.create") {
		t.Error("created tables although init refused")
	}
}

func TestInitOptionsValidate(t *testing.T) {
	for _, o := range []InitOptions{{Copy: true, SplitBytes: MinSplitBytes}, {Copy: true, Jobs: 1, SplitBytes: 1024}} {
		if _, err := Init(context.Background(), Config{Source: "s", Target: "t", Pipeline: "p"}, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := InitGauss(context.Background(), Config{Source: "s", Target: "t", Pipeline: "p"}, copyOptions); !errors.As(err, new(*UsageError)) {
		t.Errorf("copy from GaussDB: %v, want a usage error", err)
	}
}

// --append-only picks the selected tables without a replica identity;
// a table it names that has one is published whole; a pattern that names
// no selected table is a usage error.
func TestAppendOnlyTables(t *testing.T) {
	tables := []source.Table{
		{Name: source.TableName{Schema: "public", Name: "pgbench_history"}, Identity: source.IdentityDefault},
		{Name: source.TableName{Schema: "public", Name: "pgbench_accounts"}, Identity: source.IdentityDefault, HasPK: true},
		{Name: source.TableName{Schema: "public", Name: "audit_log"}, Identity: source.IdentityNothing},
		{Name: source.TableName{Schema: "public", Name: "audit_full"}, Identity: source.IdentityFull},
	}
	tests := []struct {
		list, appendOnly, whole, err string
	}{
		{"", "", "", ""},
		{"public.pgbench_history", "public.pgbench_history", "", ""},
		{"public.*", "public.pgbench_history, public.audit_log", "public.pgbench_accounts, public.audit_full", ""},
		{"public.audit_*", "public.audit_log", "public.audit_full", ""},
		{"public.pgbench_history,public.nope*", "", "", "--append-only: public.nope* match(es) no table that --tables selects"},
	}
	for _, tt := range tests {
		f, err := source.ParseTableFilter(tt.list)
		if err != nil {
			t.Fatal(err)
		}
		ao, whole, err := appendOnlyTables(tables, f)
		var usage *UsageError
		switch {
		case tt.err != "" && (!errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tt.err)):
			t.Errorf("%q: error %v, want a usage error starting %q", tt.list, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.list, err)
		}
		if joinNames(ao) != tt.appendOnly || joinNames(whole) != tt.whole {
			t.Errorf("%q: append-only %q, whole %q; want %q, %q", tt.list, joinNames(ao), joinNames(whole), tt.appendOnly, tt.whole)
		}
	}
}

// Init publishes the append-only tables apart from the others: the
// source is asked for both sets at once.
func TestInitAppendOnly(t *testing.T) {
	w := newWorld(t)
	w.tables[1].Identity = source.IdentityNothing
	f, err := source.ParseTableFilter(w.tables[1].Name.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.env().init(context.Background(), InitOptions{}); err == nil || !strings.Contains(err.Error(), "--append-only") {
		t.Errorf("init of a table without identity: %v, want a refusal naming --append-only", err)
	}
	if _, err := w.env().init(context.Background(), InitOptions{AppendOnly: f}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.publishedAppendOnly, []source.TableName{w.tables[1].Name}) || !slices.Equal(w.publishedWhole, []source.TableName{w.tables[0].Name}) {
		t.Errorf("published whole %v, append-only %v", w.publishedWhole, w.publishedAppendOnly)
	}
}
