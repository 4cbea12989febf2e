package pgtarget

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// netRel is a table with a two-column key, for the compaction tests:
// (k1 int, k2 text, a text, b text, n int[]), key (k1, k2).
var netRel = &source.Relation{ID: 16501, Schema: "public", Name: "n", Identity: source.IdentityDefault,
	Columns: []source.Column{{Name: "k1", Key: true}, {Name: "k2", Key: true}, {Name: "a"}, {Name: "b"}, {Name: "arr"}}}

const netSchema = `CREATE TABLE n (k1 int, k2 text, a text, b text, arr int[], PRIMARY KEY (k1, k2))`

// netModel is what the source holds, to draw valid changes from.
type netModel struct {
	rng  *rand.Rand
	rows map[string][]source.Value // by key text
	next int
}

func (m *netModel) value() source.Value {
	switch m.rng.IntN(6) {
	case 0:
		return recNull
	case 1:
		return source.Value{Kind: source.ValueText, Data: []byte(`quote " back \ brace { comma , tab` + "\t")}
	}
	return source.Value{Kind: source.ValueText, Data: fmt.Appendf(nil, "v%d", m.rng.IntN(1000))}
}

func (m *netModel) newKey() (string, []source.Value) {
	m.next++
	k1, k2 := m.rng.IntN(40), fmt.Sprintf("k%d", m.next%7)
	key := fmt.Sprintf("%d|%s", k1, k2)
	if _, ok := m.rows[key]; ok {
		return "", nil
	}
	row := []source.Value{
		{Kind: source.ValueText, Data: fmt.Appendf(nil, "%d", k1)}, {Kind: source.ValueText, Data: []byte(k2)},
		m.value(), m.value(), {Kind: source.ValueText, Data: fmt.Appendf(nil, "{%d,%d}", m.rng.IntN(9), m.rng.IntN(9))},
	}
	return key, row
}

func (m *netModel) anyKey() string {
	keys := make([]string, 0, len(m.rows))
	for k := range m.rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) == 0 {
		return ""
	}
	return keys[m.rng.IntN(len(keys))]
}

func keyOnly(row []source.Value) []source.Value {
	return []source.Value{row[0], row[1], recNull, recNull, recNull}
}

// change draws one valid change and applies it to the model.
func (m *netModel) change() (source.Change, bool) {
	k := m.anyKey()
	switch op := m.rng.IntN(10); {
	case op < 3 || k == "":
		key, row := m.newKey()
		if row == nil {
			return source.Change{}, false
		}
		m.rows[key] = row
		return source.Change{Op: source.OpInsert, Rel: netRel, New: slices.Clone(row)}, true
	case op < 7: // update some columns; b may stay an unchanged TOAST value
		row := slices.Clone(m.rows[k])
		sent := slices.Clone(row)
		row[2] = m.value()
		sent[2] = row[2]
		if m.rng.IntN(2) == 0 {
			sent[3] = source.Value{Kind: source.ValueUnchanged}
		} else {
			row[3] = m.value()
			sent[3] = row[3]
		}
		m.rows[k] = row
		return source.Change{Op: source.OpUpdate, Rel: netRel, New: sent}, true
	case op < 8: // change the key
		key, row := m.newKey()
		if row == nil {
			return source.Change{}, false
		}
		old := m.rows[k]
		delete(m.rows, k)
		m.rows[key] = row
		return source.Change{Op: source.OpUpdate, Rel: netRel, Old: keyOnly(old), New: slices.Clone(row)}, true
	default:
		old := m.rows[k]
		delete(m.rows, k)
		return source.Change{Op: source.OpDelete, Rel: netRel, Old: keyOnly(old)}, true
	}
}

// TestNetMatchesPlain applies random change sequences twice, gathered
// into net changes and change by change, to real PostgreSQL tables that
// start equal, and compares them with each other and with the source's
// model after every commit.
func TestNetMatchesPlain(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})
	ctx := t.Context()
	net, netDB := netTarget(t, srv, "net_net", false)
	plain, plainDB := netTarget(t, srv, "net_plain", true)

	m := &netModel{rng: rand.New(rand.NewPCG(1, 2)), rows: map[string][]source.Value{}}
	// Rows the target has before the first window: a window's first change
	// of a key then meets a row it did not insert.
	var seed []source.Change
	for len(m.rows) < 60 {
		if key, row := m.newKey(); row != nil {
			m.rows[key] = row
			seed = append(seed, source.Change{Op: source.OpInsert, Rel: netRel, New: slices.Clone(row)})
		}
	}
	lsn := source.LSN(1000)
	commit := func(changes [][]source.Change) {
		t.Helper()
		for _, tg := range []*pg.Target{net, plain} {
			for i, ch := range changes {
				txn := &source.Txn{Xid: uint64(lsn) + uint64(i), Commit: lsn + source.LSN(i)}
				if err := tg.Apply(ctx, txn, slices.Clone(ch)); err != nil {
					t.Fatalf("Apply: %v", err)
				}
			}
			end := lsn + source.LSN(len(changes))
			if err := tg.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: end - 1, End: end, Xid: uint64(end - 1)}); err != nil {
				t.Fatalf("Commit: %v", err)
			}
		}
		lsn += source.LSN(len(changes)) + 10
	}
	commit([][]source.Change{seed})
	for round := 0; round < 60; round++ {
		var txns [][]source.Change
		for range 1 + m.rng.IntN(8) {
			var txn []source.Change
			for range 1 + m.rng.IntN(25) {
				if c, ok := m.change(); ok {
					txn = append(txn, c)
				}
			}
			txns = append(txns, txn)
		}
		commit(txns)
		got, want := netRows(t, netDB), netRows(t, plainDB)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: gathered and plain apply differ:\n gathered %q\n    plain %q", round, got, want)
		}
		if model := m.dump(); !slices.Equal(got, model) {
			t.Fatalf("round %d: target differs from the source:\n target %q\n source %q", round, got, model)
		}
	}
}

func (m *netModel) dump() []string {
	var out []string
	for _, row := range m.rows {
		f := make([]string, len(row))
		for i, v := range row {
			f[i] = "∅"
			if v.Kind == source.ValueText {
				f[i] = string(v.Data)
			}
		}
		out = append(out, strings.Join(f, "|"))
	}
	slices.Sort(out)
	return out
}

func netRows(t *testing.T, db *pgx.Conn) []string {
	t.Helper()
	rows, err := db.Query(t.Context(), `SELECT concat_ws('|', k1, k2, coalesce(a, '∅'), coalesce(b, '∅'), coalesce(arr::text, '∅')) FROM n`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// netTarget is a Target into a new database holding netSchema.
func netTarget(t *testing.T, srv *harness.Postgres, name string, plain bool) (*pg.Target, *pgx.Conn) {
	t.Helper()
	ctx := t.Context()
	if err := srv.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, srv.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, netSchema); err != nil {
		t.Fatal(err)
	}
	if _, _, err := checkpoint.PGEnsure(ctx, db, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100}); err != nil {
		t.Fatal(err)
	}
	tg, err := pg.New(pg.Config{DSN: srv.DSN(name), Pipeline: "p", Plain: plain})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tg.Close(context.Background()) })
	if _, err := tg.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return tg, db
}

// TestNetStatements: a window becomes one DELETE, one UPDATE per set of
// changed columns and one run of inserts, and a target that lacks a row
// fails the UPDATE with a ReplayError; applied again change by change,
// the failure names the change's own transaction.
func TestNetStatements(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})
	f := newRecFixture(t, srv)
	ctx := f.ctx
	if _, err := f.db.Exec(ctx, `INSERT INTO t SELECT g, 'old' FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}
	var changes []source.Change
	for k := 1; k <= 5; k++ { // hot rows: each updated three times
		for n := range 3 {
			changes = append(changes, recUpdate(recT, nil, recText(fmt.Sprint(k), fmt.Sprintf("u%d", n))))
		}
	}
	changes = append(changes,
		recDelete(recT, []source.Value{{Kind: source.ValueText, Data: []byte("6")}, recNull}),
		recDelete(recT, []source.Value{{Kind: source.ValueText, Data: []byte("7")}, recNull}),
		recInsert(recT, "11", "new"), recUpdate(recT, nil, recText("11", "newer")),
		recInsert(recT, "12", "gone"), recDelete(recT, []source.Value{{Kind: source.ValueText, Data: []byte("12")}, recNull}),
	)
	txn := &source.Txn{Xid: 20, Commit: 500}
	if err := f.target.Apply(ctx, txn, changes); err != nil {
		t.Fatal(err)
	}
	if err := f.target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 500, End: 510, Xid: 20}); err != nil {
		t.Fatal(err)
	}
	tr := f.rec.trace()
	_, txTrace := recSplit(t, tr, recBegin)
	for _, want := range []string{
		`Parse decant_1: DELETE FROM ONLY "public"."t" WHERE "id" = ANY($1::integer[])`,
		`Parse decant_2: UPDATE ONLY "public"."t" AS x SET "v" = v.c2::text FROM unnest($1::text[], $2::text[]) AS v(c1, c2) WHERE x."id" = v.c1::integer`,
	} {
		if recCount(tr, want) != 1 {
			t.Errorf("trace lacks %s:\n%s", want, recShow(tr))
		}
	}
	if n := recCountPrefix(txTrace, "Bind decant_"); n != 3 {
		t.Errorf("%d row statements in the transaction, want 3 (delete, update, insert):\n%s", n, recShow(txTrace))
	}
	f.wantRows(t, `SELECT id, v FROM t ORDER BY id`,
		"1|u2", "2|u2", "3|u2", "4|u2", "5|u2", "8|old", "9|old", "10|old", "11|newer")

	// Behind decant's back, row 3 goes: the next window's UPDATE finds 4
	// of 5 rows.
	if _, err := f.db.Exec(ctx, `DELETE FROM t WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	txns := []*source.Txn{{Xid: 30, Commit: 600}, {Xid: 31, Commit: 610}}
	apply2 := func() error {
		for i, txn := range txns {
			var ch []source.Change
			for k := 1; k <= 5; k++ {
				if (k%2 == 0 || k == 3) == (i == 0) { // 2, 3, 4 in the first
					ch = append(ch, recUpdate(recT, nil, recText(fmt.Sprint(k), "again")))
				}
			}
			if err := f.target.Apply(ctx, txn, ch); err != nil {
				return err
			}
		}
		return f.target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 610, End: 620, Xid: 31})
	}
	err := apply2()
	var replay *apply.ReplayError
	if !errors.As(err, &replay) || !apply.Transient(err) {
		t.Fatalf("gathered apply over a missing row: %v, want a retryable ReplayError", err)
	}
	f.target.Rollback(ctx)
	// The pipeline's next session sends the same transactions again.
	err = apply2()
	if errors.As(err, &replay) || apply.Transient(err) {
		t.Fatalf("replay: %v, want a permanent error", err)
	}
	for _, want := range []string{"xid 30 ", "commit 0/258 ", "public.t", "no target row matches"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("replay error %q lacks %q", err, want)
		}
	}
}

// TestNetWindowSent: a window that fills in the middle of a group goes to
// the server at once, so the server works through it while the writer
// gathers the next one; its results are read before the session is used
// for anything else. A window that fails is reported by the next call
// that needs the session, naming the window's own transaction, and
// nothing of the group commits.
func TestNetWindowSent(t *testing.T) {
	srv := harness.PostgresT(t, harness.PostgresOptions{})
	f := newRecFixture(t, srv)
	ctx := f.ctx
	if _, err := f.db.Exec(ctx, `INSERT INTO t SELECT g, 'old' FROM generate_series(1, $1::int) g`, 2*apply.NetRows); err != nil {
		t.Fatal(err)
	}
	updates := func(from, n int, v string) []source.Change {
		ch := make([]source.Change, n)
		for i := range ch {
			ch[i] = recUpdate(recT, nil, recText(fmt.Sprint(from+i), v))
		}
		return ch
	}
	group := func(xid uint64, commit source.LSN, v string) error {
		sent := recCountPrefix(f.rec.trace(), "Bind decant_") // the window's UPDATE is the only prepared statement
		if err := f.target.Apply(ctx, &source.Txn{Xid: xid, Commit: commit}, updates(1, apply.NetRows, v)); err != nil {
			return err
		}
		// The full window is on its way before the group's next change.
		recWaitPrefix(t, f.rec, "Bind decant_", sent+1)
		if err := f.target.Apply(ctx, &source.Txn{Xid: xid + 1, Commit: commit + 10}, updates(apply.NetRows+1, 5, v)); err != nil {
			return err
		}
		return f.target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: commit + 10, End: commit + 20, Xid: xid + 1})
	}
	if err := group(40, 700, "w1"); err != nil {
		t.Fatal(err)
	}
	f.wantRows(t, `SELECT v, count(*) FROM t GROUP BY v ORDER BY v`, "old|9995", "w1|10005")

	// Behind decant's back, row 5 goes: the first window's UPDATE finds
	// one row too few.
	if _, err := f.db.Exec(ctx, `DELETE FROM t WHERE id = 5`); err != nil {
		t.Fatal(err)
	}
	err := group(50, 800, "w2")
	var replay *apply.ReplayError
	if !errors.As(err, &replay) {
		t.Fatalf("group over a missing row: %v, want a ReplayError", err)
	}
	for _, want := range []string{"xid 50 ", "public.t", "no target row matches"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if err := f.target.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	f.wantRows(t, `SELECT v, count(*) FROM t GROUP BY v ORDER BY v`, "old|9995", "w1|10004")
	if got := f.checkpointRow(t); !strings.HasPrefix(got, "0/2C6|0/2D0|41|") {
		t.Errorf("checkpoint %s, want the first group's", got)
	}
}

// recWaitPrefix waits until the trace holds n entries that start with
// prefix.
func recWaitPrefix(t *testing.T, rec *recorder, prefix string, n int) {
	t.Helper()
	recWaitUntil(t, rec, func(tr []string) bool { return recCountPrefix(tr, prefix) >= n },
		func(tr []string) string {
			return fmt.Sprintf("%d entries start with %q, want %d", recCountPrefix(tr, prefix), prefix, n)
		})
}

// BenchmarkNetUpdates is the writer alone, with no source to share the
// machine with: groups of 100 source transactions of 1,000 updates of
// distinct rows, gathered into windows of apply.NetRows.
//
//	go test -run '^$' -bench NetUpdates -benchtime 300000x ./integration/pgtarget
func BenchmarkNetUpdates(b *testing.B) {
	srv := harness.PostgresT(b, harness.PostgresOptions{})
	f := newRecFixture(b, srv)
	ctx := f.ctx
	const rows, txnRows, groupTxns = 300000, 1000, 100
	if _, err := f.db.Exec(ctx, `INSERT INTO t SELECT g, 'old' FROM generate_series(1, $1::int) g`, rows); err != nil {
		b.Fatal(err)
	}
	if _, err := f.db.Exec(ctx, `CHECKPOINT`); err != nil {
		b.Fatal(err)
	}
	xid := uint64(1000)
	ch := make([]source.Change, 0, txnRows)
	b.ResetTimer()
	for n := 0; n < b.N; {
		for txn := 0; txn < groupTxns && n < b.N; txn++ {
			ch = ch[:0]
			for i := 0; i < txnRows && n < b.N; i, n = i+1, n+1 {
				ch = append(ch, recUpdate(recT, nil, recText(fmt.Sprint(n%rows+1), fmt.Sprintf("v%d", n))))
			}
			xid++
			if err := f.target.Apply(ctx, &source.Txn{Xid: xid, Commit: source.LSN(xid * 10)}, ch); err != nil {
				b.Fatal(err)
			}
		}
		if err := f.target.Commit(ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: source.LSN(xid * 10), End: source.LSN(xid*10 + 5), Xid: xid}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
