package migrate

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

var (
	tableA = source.TableName{Schema: "public", Name: "a"}
	tableB = source.TableName{Schema: "public", Name: "b"}
)

func addOptions() AddTablesOptions {
	f, _ := source.ParseTableFilter("public.*")
	return AddTablesOptions{Tables: f, Jobs: 1, SplitBytes: MinSplitBytes}
}

// initialized is a world whose pipeline replicates a already.
func initialized(t *testing.T) *world {
	w := newWorld(t)
	w.row = &checkpoint.Row{Pipeline: "p", SystemID: w.systemID, End: 0x800}
	w.published = []source.TableName{tableA}
	return w
}

// add-tables marks the tables copying before they join the publication,
// copies them under the temporary slot's snapshot on emptied target
// tables, with a copy state of its own, and marks them ready at the
// snapshot's position last, while the snapshot is still held.
func TestAddTablesOrder(t *testing.T) {
	w := initialized(t)
	res, err := w.env().addTables(context.Background(), addOptions())
	if err != nil {
		t.Fatal(err)
	}
	w.inOrder("source.check", "target.read-checkpoint", "source.identify", "source.tables", "target.check",
		"target.sync copying 1 as of 0/0", "source.publication 2", "source.export-sync", "target.empty 1",
		"target.forget-add-copy", "copy snap-sync as of 0/1000", "target.sync ready 1 as of 0/1000", "source.export-sync-close")
	if n := len(slices.DeleteFunc(slices.Clone(w.calls), func(c string) bool { return c != "target.forget-add-copy" })); n != 2 {
		t.Errorf("the add-tables copy state was forgotten %d times, want before and after the copy", n)
	}
	if w.has("source.export ") || w.has("source.slot") || w.has("source.drop-slot") {
		t.Errorf("add-tables touched the pipeline's slot:\n%s", strings.Join(w.calls, "\n"))
	}
	if got := w.copied[0]; got.Pipeline != "p+add" || len(got.Tables) != 1 || got.Tables[0].Name != tableB {
		t.Errorf("copy: pipeline %q, tables %v; want p+add and public.b only", got.Pipeline, got.Tables)
	}
	if !slices.Equal(res.Added, []source.TableName{tableB}) || !slices.Equal(res.Already, []source.TableName{tableA}) || res.AsOf != 0x1000 {
		t.Errorf("result %+v", res)
	}
	if !slices.Contains(w.publishedWhole, tableA) || !slices.Contains(w.publishedWhole, tableB) {
		t.Errorf("publication asked for %v, want a kept and b added", w.publishedWhole)
	}
}

// A table an interrupted add-tables left copying is copied again, though
// it is published already; a ready one is left as it is.
func TestAddTablesResume(t *testing.T) {
	w := initialized(t)
	w.published = []source.TableName{tableA, tableB}
	w.syncs = []checkpoint.TableSync{{Table: tableB, State: checkpoint.SyncCopying}}
	res, err := w.env().addTables(context.Background(), addOptions())
	if err != nil {
		t.Fatal(err)
	}
	w.inOrder("target.sync copying 1", "source.export-sync", "target.empty 1", "copy snap-sync", "target.sync ready 1 as of 0/1000")
	if !slices.Equal(res.Added, []source.TableName{tableB}) {
		t.Errorf("added %v, want public.b", res.Added)
	}

	// Now both are ready: nothing to do, nothing touched.
	w.calls = nil
	res, err = w.env().addTables(context.Background(), addOptions())
	if err != nil || len(res.Added) != 0 || len(res.Already) != 2 {
		t.Errorf("add-tables of ready tables: %+v, %v", res, err)
	}
	if w.has("target.sync") || w.has("source.export-sync") || w.has("target.empty") {
		t.Errorf("add-tables of ready tables changed something:\n%s", strings.Join(w.calls, "\n"))
	}
}

// A failed copy leaves the tables copying (the stream keeps waiting),
// and says to run add-tables again.
func TestAddTablesCopyFails(t *testing.T) {
	w := initialized(t)
	w.copyErrs = []error{errors.New("disk full")}
	_, err := w.env().addTables(context.Background(), addOptions())
	if err == nil || !strings.Contains(err.Error(), "run decant add-tables again") {
		t.Fatalf("error %v, want one that says to run add-tables again", err)
	}
	if w.has("target.sync ready") {
		t.Error("a failed copy marked the tables ready")
	}
	if len(w.syncs) != 1 || w.syncs[0].State != checkpoint.SyncCopying {
		t.Errorf("states %v, want public.b copying", w.syncs)
	}
}

// A pipeline that is not initialized is refused before anything changes.
func TestAddTablesNotInitialized(t *testing.T) {
	w := newWorld(t)
	_, err := w.env().addTables(context.Background(), addOptions())
	var usage *UsageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "decant init") {
		t.Fatalf("error %v, want a usage error naming decant init", err)
	}
	if w.has("target.sync") || w.has("source.publication") {
		t.Errorf("refused add-tables changed something:\n%s", strings.Join(w.calls, "\n"))
	}
}

// A keyless table is refused unless --append-only names it, as init
// refuses it; named, it joins the append-only publication. A pattern
// that matches none of the tables is no error for add-tables.
func TestAddTablesKeyless(t *testing.T) {
	tableC := source.TableName{Schema: "public", Name: "c"}
	w := initialized(t)
	w.tables = append(w.tables, source.Table{Name: tableC, Identity: source.IdentityDefault})
	_, err := w.env().addTables(context.Background(), addOptions())
	if err == nil || !strings.Contains(err.Error(), "public.c") || !strings.Contains(err.Error(), "--append-only") {
		t.Fatalf("keyless table without --append-only: %v, want a refusal naming public.c and --append-only", err)
	}
	if w.has("target.sync") || w.has("source.publication") {
		t.Errorf("refused add-tables changed something:\n%s", strings.Join(w.calls, "\n"))
	}
	o := addOptions()
	o.AppendOnly, _ = source.ParseTableFilter("public.c,public.nothing")
	res, err := w.env().addTables(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.publishedAppendOnly, []source.TableName{tableC}) || slices.Contains(w.publishedWhole, tableC) || len(res.Added) != 2 {
		t.Errorf("published whole %v, append-only %v, added %v; want c append-only, b and c added", w.publishedWhole, w.publishedAppendOnly, res.Added)
	}
}
