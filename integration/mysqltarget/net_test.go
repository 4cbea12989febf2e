// Package mysqltarget tests the MySQL/MariaDB writer (apply/mysql)
// against real MariaDB servers that the harness starts. The writer's
// server-free tests stay beside it in apply/mysql.
package mysqltarget

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// netTypes is a table of many column types, with the source type each
// is replicated from and the texts the source sends for it (NULL, for
// the nullable ones, among them).
var netTypes = []netType{
	{"id", "INT PRIMARY KEY", 23, -1, nil},
	{"d", "DATE", 1082, -1, []string{"2024-02-29", "1000-01-01", "9999-12-31", "NULL"}},
	{"dt", "DATETIME(6)", 1114, -1, []string{"2024-01-01 10:00:00.123456", "1999-12-31 23:59:59", "NULL"}},
	{"ts", "TIMESTAMP(6) NULL", 1184, -1, []string{"2024-06-01 12:00:00.5+02", "2001-09-09 01:46:40+00", "NULL"}},
	{"tm", "TIME(6)", 1083, -1, []string{"23:59:59.999999", "00:00:00", "12:30:00.5", "NULL"}},
	{"n", "DECIMAL(12,3)", 1700, -1, []string{"1.5", "-0.001", "123456789.123", "0", "NULL"}},
	{"f", "FLOAT", 700, -1, []string{"0.1", "3.4028235e+38", "1.17549435e-38", "-0", "1e+10", "NULL"}},
	{"g", "DOUBLE", 701, -1, []string{"0.1", "1e+300", "2.2250738585072014e-308", "-0", "123456.789", "NULL"}},
	{"j", "JSON", 3802, -1, []string{`{"a": [1, 2.50, "x"]}`, `"x"`, `[]`, `null`, "NULL"}},
	{"bits", "BIT(8)", 1560, 8, []string{"10101010", "00000000", "11111111", "NULL"}},
	{"bin", "VARBINARY(20)", 17, -1, []string{`\x00ff`, `\x`, `\x20`, "NULL"}},
	{"bl", "BLOB", 17, -1, []string{`\x0001020304`, `\x`, "NULL"}},
	{"s", "VARCHAR(50)", 25, -1, []string{"héllo 😀", "a ", "", "'quote' \\ back", "NULL"}},
	{"lat", "VARCHAR(50) CHARACTER SET latin1", 25, -1, []string{"café", "plain", "NULL"}},
	{"e", "ENUM('a','b')", 25, -1, []string{"a", "b", "NULL"}},
	{"b", "TINYINT(1)", 16, -1, []string{"t", "f", "NULL"}},
	{"big", "BIGINT", 20, -1, []string{"-9223372036854775808", "9223372036854775807", "0", "NULL"}},
	{"txt", "LONGTEXT", 25, -1, []string{strings.Repeat("long ", 300), "short", "NULL"}},
}

type netType struct {
	name, my string
	oid      uint32
	typmod   int32
	texts    []string
}

// netFixture is a database on m with table ty, and a Target writing to it.
type netFixture struct {
	db     *sql.DB
	target *mysql.Target
}

func newNetFixture(t *testing.T, m *harness.MariaDB, name string, cfg mysql.Config) *netFixture {
	t.Helper()
	return newTypesFixture(t, m, name, cfg, netTypes)
}

// newTypesFixture is newNetFixture with table ty of the given columns.
func newTypesFixture(t *testing.T, m *harness.MariaDB, name string, cfg mysql.Config, types []netType) *netFixture {
	t.Helper()
	ctx := t.Context()
	if err := m.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range types {
		cols = append(cols, "`"+c.name+"` "+c.my)
	}
	if _, err := m.Exec(ctx, name, "CREATE TABLE ty ("+strings.Join(cols, ", ")+")"); err != nil {
		t.Fatal(err)
	}
	s, err := mysql.Connect(ctx, m.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, _, err := checkpoint.MySQLEnsure(ctx, s.Conn, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100}); err != nil {
		t.Fatal(err)
	}
	cfg.DSN, cfg.Pipeline = m.DSN(name), "p"
	target, err := mysql.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close(context.Background()) })
	if _, err := target.Open(ctx); err != nil {
		t.Fatal(err)
	}
	return &netFixture{db: s.DB, target: target}
}

func netTypesRelation() *source.Relation { return typesRelation(netTypes) }

func typesRelation(types []netType) *source.Relation {
	rel := &source.Relation{ID: 1, Schema: "public", Name: "ty", Identity: source.IdentityDefault}
	for i, c := range types {
		rel.Columns = append(rel.Columns, source.Column{Name: c.name, Type: c.oid, TypeMod: c.typmod, Key: i == 0})
	}
	return rel
}

// netTypesRow is row id's values in version v: each column cycles through
// its texts at its own pace, so that one statement mixes NULLs and values
// of every form; with toast, txt is an unchanged TOAST value.
func netTypesRow(id, v int, toast bool) []string { return typesRow(netTypes, id, v, toast) }

func typesRow(types []netType, id, v int, toast bool) []string {
	vals := []string{fmt.Sprint(id)}
	for i, c := range types[1:] {
		vals = append(vals, c.texts[(id*(i+2)+v)%len(c.texts)])
	}
	if toast {
		vals[len(vals)-1] = "~"
	}
	return vals
}

// updateMulti is the server's count of multi-table UPDATE statements.
func (f *netFixture) updateMulti(t *testing.T) int {
	t.Helper()
	var name string
	var n int
	if err := f.db.QueryRowContext(t.Context(), "SHOW GLOBAL STATUS LIKE 'Com_update_multi'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// apply runs each transaction of changes and commits them together.
func (f *netFixture) apply(t *testing.T, txns [][]source.Change, commit source.LSN) error {
	t.Helper()
	ctx := t.Context()
	var last *source.Txn
	for i, changes := range txns {
		last = &source.Txn{Xid: uint64(commit) + uint64(i), Commit: commit + source.LSN(i)}
		if err := f.target.Apply(ctx, last, changes); err != nil {
			f.target.Rollback(ctx)
			return err
		}
	}
	cp := checkpoint.Row{Pipeline: "p", SystemID: "1"}.After(last, last.Commit+1)
	if err := f.target.Commit(ctx, cp); err != nil {
		f.target.Rollback(ctx)
		return err
	}
	return nil
}

// TestNetMatchesPlain applies the same transactions to two databases, one
// change at a time and as a window of net changes, and compares every
// column of every row: the set-based statements must store exactly what
// the single-row ones do, for every type.
func TestNetMatchesPlain(t *testing.T) {
	m := harness.MariaDBT(t)
	plain := newNetFixture(t, m, "plain", mysql.Config{Plain: true})
	net := newNetFixture(t, m, "net", mysql.Config{})
	rel := netTypesRelation()
	mk := func(op source.Op, vals []string) source.Change {
		c := source.Change{Op: op, Rel: rel}
		if op == source.OpDelete {
			c.Old = row(vals...)
		} else {
			c.New = row(vals...)
		}
		return c
	}

	var load []source.Change
	for id := 1; id <= 60; id++ {
		load = append(load, mk(source.OpInsert, netTypesRow(id, 0, false)))
	}
	var txns [][]source.Change
	for v := 1; v <= 4; v++ {
		var changes []source.Change
		for id := 1; id <= 60; id++ {
			// Updates of every row, some twice in a transaction, some
			// with txt unchanged (TOAST), some setting the values the
			// row holds already (matched, not changed: still counted).
			switch {
			case id%7 == 0:
				changes = append(changes, mk(source.OpUpdate, netTypesRow(id, v-1, false)))
			case id%3 == 0:
				changes = append(changes, mk(source.OpUpdate, netTypesRow(id, v, true)), mk(source.OpUpdate, netTypesRow(id, v+1, id%2 == 0)))
			default:
				changes = append(changes, mk(source.OpUpdate, netTypesRow(id, v, id%2 == 0)))
			}
		}
		changes = append(changes, mk(source.OpDelete, netTypesRow(60+v, 0, false)))
		txns = append(txns, changes)
	}
	for id := 61; id <= 64; id++ {
		load = append(load, mk(source.OpInsert, netTypesRow(id, 0, false)))
	}
	// Then updates that set the values the rows hold already: found but
	// not changed, they must still count (clientFoundRows).
	var same []source.Change
	for id := 7; id <= 56; id += 7 {
		same = append(same, mk(source.OpUpdate, netTypesRow(id, 3, false)))
	}
	// This test owns the server: the global count of multi-table UPDATEs
	// moves only with what the compacting target sends.
	var multi int
	for _, f := range []*netFixture{plain, net} {
		if f == net {
			multi = f.updateMulti(t)
		}
		if err := f.apply(t, [][]source.Change{load}, 200); err != nil {
			t.Fatal(err)
		}
		if err := f.apply(t, txns, 300); err != nil {
			t.Fatal(err)
		}
		if err := f.apply(t, [][]source.Change{same}, 400); err != nil {
			t.Fatal(err)
		}
	}
	// The plan the target makes of the table, from the same catalog.
	tt, err := mysql.Inspect(t.Context(), net.db, mapping.NewRouter(nil, true).Route(rel.Table()))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := mapping.NewPlan(rel, tt.TargetTable, mapping.ColumnRules{}); err != nil || p.Net != mapping.NetCompact {
		t.Fatalf("the table is not compacted: plan %+v (%v)", p, err)
	}
	if n := net.updateMulti(t); n == multi {
		t.Fatalf("the compacting target sent no multi-table UPDATE (%d before, %d after)", multi, n)
	}

	if n := compareTypes(t, plain.db, "plain", "net", netTypes); n != 60 {
		t.Errorf("%d rows in both, want 60", n)
	}
	for _, db := range []string{"plain", "net"} {
		var n int
		if err := plain.db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+db+".ty").Scan(&n); err != nil || n != 60 {
			t.Errorf("%s.ty has %d rows (%v), want 60", db, n, err)
		}
	}
}

// compareTypes compares every column of table ty in databases a and b,
// joined by id, failing t for each column that differs in any row; it
// returns how many rows both have.
func compareTypes(t *testing.T, db *sql.DB, a, b string, types []netType) int64 {
	t.Helper()
	var equal []string
	for _, c := range types {
		equal = append(equal, fmt.Sprintf("SUM(NOT (a.`%s` <=> b.`%[1]s`)) AS `%[1]s`", c.name))
	}
	counts := make([]sql.NullInt64, len(types)+1)
	dest := make([]any, len(counts))
	for i := range counts {
		dest[i] = &counts[i]
	}
	q := "SELECT COUNT(*), " + strings.Join(equal, ", ") + " FROM " + a + ".ty a JOIN " + b + ".ty b ON a.id = b.id"
	if err := db.QueryRowContext(t.Context(), q).Scan(dest...); err != nil {
		t.Fatal(err)
	}
	for i, c := range types {
		if n := counts[i+1].Int64; n != 0 {
			t.Errorf("column %s (%s): %d rows differ between %s and %s", c.name, c.my, n, a, b)
		}
	}
	return counts[0].Int64
}

// TestNetDiverged: a row deleted behind decant's back makes the set-based
// UPDATE find fewer rows than it has keys. That fails as a retryable
// ReplayError; after the rollback the same transactions, applied again,
// go change by change and the error names the exact one.
func TestNetDiverged(t *testing.T) {
	m := harness.MariaDBT(t)
	f := newNetFixture(t, m, "diverged", mysql.Config{})
	rel := netTypesRelation()
	var load []source.Change
	for id := 1; id <= 10; id++ {
		load = append(load, source.Change{Op: source.OpInsert, Rel: rel, New: row(netTypesRow(id, 0, false)...)})
	}
	if err := f.apply(t, [][]source.Change{load}, 200); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.ExecContext(t.Context(), "DELETE FROM ty WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	var txns [][]source.Change
	for first := 1; first <= 9; first += 3 {
		var changes []source.Change
		for id := first; id < first+3; id++ {
			changes = append(changes, source.Change{Op: source.OpUpdate, Rel: rel, New: row(netTypesRow(id, 1, true)...)})
		}
		txns = append(txns, changes) // ids 7..9 are the third: xid 302
	}

	err := f.apply(t, txns, 300)
	var replay *apply.ReplayError
	if !errors.As(err, &replay) || !apply.Transient(err) || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("set-based update over a missing row: %v, want a retryable ReplayError saying the target diverged", err)
	}
	if _, err := f.target.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	err = f.apply(t, txns, 300)
	var ae *apply.Error
	if errors.As(err, &replay) || !errors.As(err, &ae) || ae.Xid != 302 || ae.Commit != 302 || ae.Op != "update" || ae.Table.Name != "ty" ||
		!strings.Contains(err.Error(), "0 of 1 changed rows found on the target: the target has diverged") || apply.Transient(err) {
		t.Fatalf("replayed change by change: %v, want the update of xid 302 saying the target diverged", err)
	}
}

// TestNetDuplicate: a row inserted on the target behind decant's back
// makes the multi-row INSERT of a window fail in its batch; the batch's
// diagnosis finds the set-based statement, so the failure replays the
// transactions change by change, and the error names the one insert.
func TestNetDuplicate(t *testing.T) {
	m := harness.MariaDBT(t)
	f := newNetFixture(t, m, "duplicate", mysql.Config{})
	rel := netTypesRelation()
	if _, err := f.db.ExecContext(t.Context(), "INSERT INTO ty (id) VALUES (5)"); err != nil {
		t.Fatal(err)
	}
	var txns [][]source.Change
	for first := 1; first <= 9; first += 3 {
		var changes []source.Change
		for id := first; id < first+3; id++ {
			changes = append(changes, source.Change{Op: source.OpInsert, Rel: rel, New: row(netTypesRow(id, 0, false)...)})
		}
		txns = append(txns, changes) // ids 4..6 are the second: xid 301
	}
	err := f.apply(t, txns, 300)
	var replay *apply.ReplayError
	if !errors.As(err, &replay) || !strings.Contains(err.Error(), "Duplicate entry") {
		t.Fatalf("set-based insert of a row the target has: %v, want a ReplayError", err)
	}
	if _, err := f.target.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	err = f.apply(t, txns, 300)
	var ae *apply.Error
	if errors.As(err, &replay) || !errors.As(err, &ae) || ae.Xid != 301 || ae.Op != "insert" || !strings.Contains(err.Error(), "Duplicate entry") {
		t.Fatalf("replayed change by change: %v, want the insert of xid 301", err)
	}
}

// TestNetValueError: a value the column cannot hold stops the window
// before anything is sent, and the replay change by change names the
// change that carries it.
func TestNetValueError(t *testing.T) {
	m := harness.MariaDBT(t)
	f := newNetFixture(t, m, "value", mysql.Config{})
	rel := netTypesRelation()
	var load []source.Change
	for id := 1; id <= 3; id++ {
		load = append(load, source.Change{Op: source.OpInsert, Rel: rel, New: row(netTypesRow(id, 0, false)...)})
	}
	if err := f.apply(t, [][]source.Change{load}, 200); err != nil {
		t.Fatal(err)
	}
	bad := netTypesRow(2, 1, true)
	bad[5] = "1234567890123" // n, DECIMAL(12,3)
	txns := [][]source.Change{
		{{Op: source.OpUpdate, Rel: rel, New: row(netTypesRow(1, 1, true)...)}},
		{{Op: source.OpUpdate, Rel: rel, New: row(netTypesRow(2, 2, true)...)}, {Op: source.OpUpdate, Rel: rel, New: row(bad...)}},
		{{Op: source.OpUpdate, Rel: rel, New: row(netTypesRow(3, 1, true)...)}},
	}
	err := f.apply(t, txns, 300)
	var replay *apply.ReplayError
	if !errors.As(err, &replay) {
		t.Fatalf("window with a value DECIMAL(12,3) cannot hold: %v, want a ReplayError", err)
	}
	if _, err := f.target.Open(t.Context()); err != nil {
		t.Fatal(err)
	}
	err = f.apply(t, txns, 300)
	var ae *apply.Error
	if errors.As(err, &replay) || !errors.As(err, &ae) || ae.Xid != 301 || ae.Op != "update" || !strings.Contains(err.Error(), "column n") {
		t.Fatalf("replayed change by change: %v, want the update of xid 301 naming column n", err)
	}
}

// row is a row image from texts: "NULL" is NULL, "~" an unchanged TOAST
// value.
func row(vals ...string) []source.Value {
	out := make([]source.Value, len(vals))
	for i, v := range vals {
		switch v {
		case "NULL":
			out[i] = source.Value{Kind: source.ValueNull}
		case "~":
			out[i] = source.Value{Kind: source.ValueUnchanged}
		default:
			out[i] = source.Value{Kind: source.ValueText, Data: []byte(v)}
		}
	}
	return out
}
