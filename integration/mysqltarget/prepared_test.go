package mysqltarget

import (
	"bytes"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// textTypes is narrowTypes without the columns whose values the writer
// sends as bytes (BIT, VARBINARY, BLOB): a statement of 1,000 such rows
// is prepared.
func textTypes() []netType {
	return slices.DeleteFunc(narrowTypes(), func(c netType) bool {
		return c.name == "bits" || c.name == "bin" || c.name == "bl"
	})
}

// narrowTypes is netTypes with a shorter long text.
func narrowTypes() []netType {
	types := slices.Clone(netTypes)
	for i := range types {
		if types[i].name == "txt" {
			types[i].texts = []string{strings.Repeat("medium ", 20), "short", "NULL"}
		}
	}
	return types
}

// stmtStatus is the server's count of prepared statements made and run.
func stmtStatus(t *testing.T, f *netFixture) (prepared, executed int) {
	t.Helper()
	rows, err := f.db.QueryContext(t.Context(), "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_stmt_prepare', 'Com_stmt_execute')")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		if name == "Com_stmt_prepare" {
			prepared = n
		} else {
			executed = n
		}
	}
	return prepared, executed
}

// TestPreparedMatchesText: full multi-row INSERTs and DELETEs (1,000
// rows) go as prepared statements, between set-based UPDATEs that stay text, and
// store exactly what single-row statements with the values written in
// do, for every type they take; a table whose rows
// hold bytes stays with text. A prepared DELETE that finds fewer rows
// than it has keys fails as a set-based statement does.
func TestPreparedMatchesText(t *testing.T) {
	m := harness.MariaDBT(t)
	types := textTypes()
	text := newTypesFixture(t, m, "ptext", mysql.Config{Plain: true}, types)
	prep := newTypesFixture(t, m, "pprep", mysql.Config{}, types)
	bytesTable := newTypesFixture(t, m, "pbytes", mysql.Config{}, narrowTypes())

	// 2,500 rows in one transaction: two full INSERTs and a shorter one;
	// then 2,000 deleted: two full DELETEs.
	changes := func(types []netType, op source.Op, from, to int) []source.Change {
		rel := typesRelation(types)
		var out []source.Change
		for id := from; id <= to; id++ {
			c := source.Change{Op: op, Rel: rel}
			if op == source.OpDelete {
				c.Old = row(typesRow(types, id, 0, false)...)
			} else {
				c.New = row(typesRow(types, id, 0, false)...)
			}
			out = append(out, c)
		}
		return out
	}
	// This test owns the server: the global counts move only with what
	// the target sends. The single-row target commits every 50 changes,
	// so that none of its statements is long enough to prepare.
	for _, f := range []*netFixture{text, prep} {
		p0, e0 := stmtStatus(t, f)
		update := changes(types, source.OpUpdate, 1, 2500)
		for i := range update {
			update[i].New = row(typesRow(types, i+1, 1, i%2 == 0)...)
		}
		load := [][]source.Change{changes(types, source.OpInsert, 1, 2500), update, changes(types, source.OpDelete, 251, 2250)}
		for i, txn := range load {
			step := len(txn)
			if f == text {
				step = 50
			}
			for from := 0; from < len(txn); from += step {
				if err := f.apply(t, [][]source.Change{txn[from:min(len(txn), from+step)]}, source.LSN(200+10000*i+from)); err != nil {
					t.Fatal(err)
				}
			}
		}
		p1, e1 := stmtStatus(t, f)
		switch {
		case f == prep && (p1-p0 != 2 || e1-e0 != 4):
			// Two full INSERTs (the last 500 rows go as text) and two
			// full DELETEs; the UPDATEs between them go as text.
			t.Errorf("the compacting target prepared %d and ran %d statements, want 2 (an INSERT, a DELETE) and 4", p1-p0, e1-e0)
		case f == text && e1 != e0:
			t.Errorf("the single-row target ran %d prepared statements", e1-e0)
		}
	}
	if n := compareTypes(t, prep.db, "ptext", "pprep", types); n != 500 {
		t.Errorf("%d rows in both, want 500", n)
	}

	_, e0 := stmtStatus(t, bytesTable)
	if err := bytesTable.apply(t, [][]source.Change{changes(narrowTypes(), source.OpInsert, 1, 1000)}, 200); err != nil {
		t.Fatal(err)
	}
	if _, e1 := stmtStatus(t, bytesTable); e1 != e0 {
		t.Errorf("a table with bytes ran %d prepared statements, want none", e1-e0)
	}
	var n int
	if err := bytesTable.db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM pbytes.ty").Scan(&n); err != nil || n != 1000 {
		t.Errorf("pbytes.ty has %d rows (%v), want 1000", n, err)
	}

	// A row gone behind decant's back: the prepared DELETE of its key
	// finds 999 of 1,000, which replays the transaction change by change.
	if err := prep.apply(t, [][]source.Change{changes(types, source.OpInsert, 3001, 4000)}, 30000); err != nil {
		t.Fatal(err)
	}
	if _, err := prep.db.ExecContext(t.Context(), "DELETE FROM pprep.ty WHERE id = 3500"); err != nil {
		t.Fatal(err)
	}
	err := prep.apply(t, [][]source.Change{changes(types, source.OpDelete, 3001, 4000)}, 40000)
	var replay *apply.ReplayError
	if !errors.As(err, &replay) || !strings.Contains(err.Error(), "999 of 1000 changed rows found on the target: the target has diverged") {
		t.Fatalf("prepared delete over a missing row: %v, want a ReplayError saying 999 of 1000 rows were found", err)
	}
}

// TestPreparedRefused: a server that refuses to prepare a statement
// (max_prepared_stmt_count reached) gets the full statement as text, and
// the rest of the session too.
func TestPreparedRefused(t *testing.T) {
	m := harness.MariaDBT(t)
	types := textTypes()
	var logged bytes.Buffer
	f := newTypesFixture(t, m, "prefused", mysql.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))}, types)
	// This test owns the server: no other session prepares meanwhile.
	if _, err := f.db.ExecContext(t.Context(), "SET GLOBAL max_prepared_stmt_count = 0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.db.Exec("SET GLOBAL max_prepared_stmt_count = DEFAULT") })
	rel := typesRelation(types)
	for i, lsn := range []source.LSN{200, 300} {
		var load []source.Change
		for id := i*1000 + 1; id <= (i+1)*1000; id++ {
			load = append(load, source.Change{Op: source.OpInsert, Rel: rel, New: row(typesRow(types, id, 0, false)...)})
		}
		_, e0 := stmtStatus(t, f)
		if err := f.apply(t, [][]source.Change{load}, lsn); err != nil {
			t.Fatalf("a full INSERT the server cannot prepare: %v", err)
		}
		if _, e1 := stmtStatus(t, f); e1 != e0 {
			t.Errorf("batch %d: %d prepared statements run, want none", i+1, e1-e0)
		}
	}
	if n := strings.Count(logged.String(), "the target refused a prepared statement"); n != 1 {
		t.Errorf("the refusal was logged %d times, want once (no statement prepared after it)\n%s", n, logged.String())
	}
	var n int
	if err := f.db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM prefused.ty").Scan(&n); err != nil || n != 2000 {
		t.Errorf("prefused.ty has %d rows (%v), want 2000", n, err)
	}
}
