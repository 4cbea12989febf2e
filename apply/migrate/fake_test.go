package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// world is a fake source and target that record, in one list, every call
// a workflow makes on either, so that tests can assert their order.
type world struct {
	t     *testing.T
	calls []string

	tables     []source.Table
	slot       source.SlotStatus
	row        *checkpoint.Row // the target's checkpoint row; nil: none
	missing    []source.TableName
	problems   []string
	pendingAt  source.LSN // the copy state's AsOf; 0: none
	systemID   string
	consistent source.LSN // where a new slot becomes consistent
	fence      source.LSN
	sequences  map[source.TableName][]source.Sequence
	copyErrs   []error // what successive copies return
	copied     []bulk.Config
	published  []source.TableName
	// publishedWhole and publishedAppendOnly are the last sets asked for.
	publishedWhole, publishedAppendOnly []source.TableName
	// rowAt says where the checkpoint is on the n-th read (from 0);
	// nil: where row says.
	rowAt func(n int) source.LSN
	reads int
	syncs []checkpoint.TableSync // decant.table_sync
	// releaseAfter, when positive, is how many reads of an active slot
	// find it active before its session lets it go.
	releaseAfter, slotReads int
}

func newWorld(t *testing.T) *world {
	return &world{
		t: t, systemID: "7001", consistent: 0x1000, fence: 0x2000,
		tables: []source.Table{
			{Name: source.TableName{Schema: "public", Name: "a"}, Identity: source.IdentityDefault, HasPK: true},
			{Name: source.TableName{Schema: "public", Name: "b"}, Identity: source.IdentityFull},
		},
	}
}

func (w *world) call(format string, args ...any) {
	w.calls = append(w.calls, fmt.Sprintf(format, args...))
}

// env is a workflow environment over the fake, with no waiting.
func (w *world) env() *env {
	cfg := Config{Source: "postgres://src/db", Target: "postgres://tgt/db", Pipeline: "p"}
	if err := cfg.Validate(); err != nil {
		w.t.Fatal(err)
	}
	sessions := 0
	return &env{
		cfg:    cfg,
		source: func(context.Context) (PGSource, error) { w.call("source.connect"); return &fakeSource{w}, nil },
		target: func(context.Context) (target, error) {
			sessions++
			w.call("target.connect %d", sessions)
			return &fakeTarget{w: w, n: sessions}, nil
		},
		copy: func(_ context.Context, cfg bulk.Config) (bulk.Result, error) {
			w.call("copy %s as of %s", cfg.Snapshot, cfg.AsOf)
			w.copied = append(w.copied, cfg)
			var err error
			if len(w.copyErrs) > 0 {
				err, w.copyErrs = w.copyErrs[0], w.copyErrs[1:]
			}
			return bulk.Result{Tables: len(cfg.Tables), Rows: 7}, err
		},
		backoff: time.Millisecond,
		poll:    time.Millisecond,
	}
}

// index is where the first call starting with prefix is; it fails the
// test when there is none.
func (w *world) index(prefix string) int {
	w.t.Helper()
	i := slices.IndexFunc(w.calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
	if i < 0 {
		w.t.Fatalf("no call %q in:\n%s", prefix, strings.Join(w.calls, "\n"))
	}
	return i
}

// inOrder checks that the calls starting with these prefixes came in this
// order.
func (w *world) inOrder(prefixes ...string) {
	w.t.Helper()
	last := -1
	for _, p := range prefixes {
		i := w.index(p)
		if i <= last {
			w.t.Fatalf("call %q is not after %q in:\n%s", p, prefixes[max(0, slices.Index(prefixes, p)-1)], strings.Join(w.calls, "\n"))
		}
		last = i
	}
}

func (w *world) has(prefix string) bool {
	return slices.ContainsFunc(w.calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

type fakeSource struct{ w *world }

var _ PGSource = (*fakeSource)(nil)

func (s *fakeSource) CheckServer(context.Context) error { s.w.call("source.check"); return nil }

func (s *fakeSource) SelectTables(context.Context, source.TableFilter) ([]source.Table, error) {
	s.w.call("source.tables")
	return s.w.tables, nil
}

func (s *fakeSource) Relation(_ context.Context, t source.Table) (*source.Relation, error) {
	return &source.Relation{Schema: t.Name.Schema, Name: t.Name.Name}, nil
}

func (s *fakeSource) DescribeTable(_ context.Context, name source.TableName) (*source.TableDef, error) {
	return &source.TableDef{Name: name}, nil
}

func (s *fakeSource) SystemID(context.Context) (string, error) {
	s.w.call("source.identify")
	return s.w.systemID, nil
}

func (s *fakeSource) EnsurePublications(_ context.Context, want source.Publications) (source.PublicationChanges, error) {
	s.w.call("source.publication %d", len(want.Tables)+len(want.AppendOnly))
	s.w.publishedWhole, s.w.publishedAppendOnly = want.Tables, want.AppendOnly
	var added []source.TableName
	for _, t := range slices.Concat(want.Tables, want.AppendOnly) {
		if !slices.Contains(s.w.published, t) {
			added = append(added, t)
		}
	}
	s.w.published = append(s.w.published, added...)
	return source.PublicationChanges{Added: added}, nil
}

func (s *fakeSource) ReadPublications(context.Context) (source.Publications, error) {
	return source.Publications{Tables: s.w.published}, nil
}

func (s *fakeSource) DropPublications(context.Context) (bool, bool, error) {
	s.w.call("source.drop-publication")
	return true, false, nil
}

func (s *fakeSource) InstallDDLCapture(context.Context, source.TableFilter) error {
	s.w.call("source.ddl-capture")
	return nil
}

func (s *fakeSource) RemoveDDLCapture(context.Context) (bool, error) {
	s.w.call("source.remove-ddl-capture")
	return false, nil
}

func (s *fakeSource) ReadSlot(context.Context) (source.SlotStatus, error) {
	s.w.call("source.read-slot")
	s.w.slotReads++
	if s.w.releaseAfter > 0 && s.w.slotReads > s.w.releaseAfter {
		s.w.slot.Active = false
	}
	return s.w.slot, nil
}

func (s *fakeSource) EnsureSlot(context.Context) (source.LSN, bool, error) {
	s.w.call("source.slot")
	created := !s.w.slot.Exists
	s.w.slot.Exists = true
	return s.w.consistent, created, nil
}

func (s *fakeSource) ExportSlot(context.Context) (*source.ExportedSlot, error) {
	s.w.call("source.export")
	s.w.slot.Exists = true
	return source.NewExportedSlot(s.w.consistent, "snap-1", func(context.Context) { s.w.call("source.export-close") }), nil
}

func (s *fakeSource) ExportSyncSlot(context.Context) (*source.ExportedSlot, error) {
	s.w.call("source.export-sync")
	return source.NewExportedSlot(s.w.consistent, "snap-sync", func(context.Context) { s.w.call("source.export-sync-close") }), nil
}

func (s *fakeSource) DropSlot(context.Context) (bool, error) {
	s.w.call("source.drop-slot")
	existed := s.w.slot.Exists
	s.w.slot.Exists = false
	return existed, nil
}

func (s *fakeSource) WriteFence(context.Context) (source.LSN, error) {
	s.w.call("source.fence")
	return s.w.fence, nil
}

func (s *fakeSource) Sequences(_ context.Context, table source.TableName) ([]source.Sequence, error) {
	s.w.call("source.sequences %s", table)
	return s.w.sequences[table], nil
}

func (s *fakeSource) Close(context.Context) { s.w.call("source.close") }

// fakeTarget is the n-th target session.
type fakeTarget struct {
	w *world
	n int
}

var _ target = (*fakeTarget)(nil)

func (t *fakeTarget) Check(context.Context, []*source.Relation) ([]source.TableName, []string, []string, error) {
	t.w.call("target.check")
	return t.w.missing, t.w.problems, nil, nil
}

func (t *fakeTarget) CheckCreate([]*source.TableDef) []string { return nil }

func (t *fakeTarget) Create(_ context.Context, defs []*source.TableDef, indexes bool) ([]string, error) {
	t.w.call("target.create %d indexes=%v", len(defs), indexes)
	t.w.missing = nil
	return nil, nil
}

func (t *fakeTarget) CreateIndexes(_ context.Context, defs []*source.TableDef) error {
	t.w.call("target.indexes %s", defs[0].Name)
	return nil
}

func (t *fakeTarget) Empty(_ context.Context, tables []source.TableName) error {
	t.w.call("target.empty %d", len(tables))
	return nil
}

func (t *fakeTarget) DropUnfinished(context.Context, []source.TableName) ([]source.TableName, error) {
	t.w.call("target.drop-unfinished")
	return nil, nil
}

func (t *fakeTarget) EnsureCheckpoint(_ context.Context, row checkpoint.Row) (checkpoint.Row, bool, error) {
	t.w.call("target.checkpoint at %s on session %d", row.End, t.n)
	if t.w.row != nil {
		return *t.w.row, false, nil
	}
	t.w.row = &row
	return row, true, nil
}

func (t *fakeTarget) ReadCheckpoint(context.Context, string) (checkpoint.Row, error) {
	t.w.call("target.read-checkpoint")
	if t.w.row == nil {
		return checkpoint.Row{}, checkpoint.ErrNotFound
	}
	row := *t.w.row
	if t.w.rowAt != nil {
		row.End = t.w.rowAt(t.w.reads)
	}
	t.w.reads++
	return row, nil
}

func (t *fakeTarget) ResetCheckpoint(_ context.Context, row checkpoint.Row) error {
	t.w.call("target.reset-checkpoint %s", row.End)
	if t.w.row == nil {
		return checkpoint.ErrNotFound
	}
	t.w.row = &row
	return nil
}

func (t *fakeTarget) DeleteCheckpoint(context.Context, string) (bool, error) {
	t.w.call("target.delete-checkpoint")
	return t.w.row != nil, nil
}

func (t *fakeTarget) RecordSchema(context.Context, []*source.TableDef) error {
	t.w.call("target.record-schema")
	return nil
}

func (t *fakeTarget) ForgetSchema(context.Context) error {
	t.w.call("target.forget-schema")
	return nil
}

func (t *fakeTarget) ReadSkips(context.Context, int) ([]checkpoint.Skip, error) { return nil, nil }

func (t *fakeTarget) RequestSkip(context.Context, checkpoint.Skip) error { return nil }

func (t *fakeTarget) CancelSkip(context.Context) (bool, error) { return false, nil }

func (t *fakeTarget) LoadSchema(context.Context) (map[uint32]*source.TableDef, error) {
	return nil, nil
}

func (t *fakeTarget) SyncSequence(_ context.Context, s source.Sequence) (string, error) {
	t.w.call("target.sequence %s.%s", s.Table, s.Column)
	return fmt.Sprintf("%s.%s: next value %d", s.Table, mapping.ColumnRules{}.TargetColumn(s.Column), s.Next), nil
}

func (t *fakeTarget) CopyPending(context.Context) (source.LSN, []source.TableName, error) {
	t.w.call("target.copy-pending")
	return t.w.pendingAt, nil, nil
}

func (t *fakeTarget) ForgetCopy(context.Context) error { t.w.call("target.forget-copy"); return nil }

func (t *fakeTarget) ReadSyncs(context.Context) ([]checkpoint.TableSync, error) {
	return slices.Clone(t.w.syncs), nil
}

func (t *fakeTarget) SetSyncs(_ context.Context, syncs []checkpoint.TableSync) error {
	t.w.call("target.sync %s %d as of %s", syncs[0].State, len(syncs), syncs[0].AsOf)
	for _, s := range syncs {
		i := slices.IndexFunc(t.w.syncs, func(o checkpoint.TableSync) bool { return o.Table == s.Table })
		if i < 0 {
			t.w.syncs = append(t.w.syncs, s)
		} else {
			t.w.syncs[i] = s
		}
	}
	return nil
}

func (t *fakeTarget) ForgetAddCopy(context.Context) error {
	t.w.call("target.forget-add-copy")
	return nil
}

func (t *fakeTarget) Close(context.Context) { t.w.call("target.close %d", t.n) }
