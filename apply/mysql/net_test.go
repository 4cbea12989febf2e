package mysql

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// netCol is a column of a test table: its source type and the MySQL type
// of its target column.
type netCol struct {
	name string
	oid  uint32 // source type
	my   string // target DATA_TYPE
	key  bool
}

const (
	oidBytea = 17
	oidInt4  = 23
	oidText  = 25
)

// netTestPlan compiles a plan for table t with the given columns; the key
// columns are the target's primary key and only unique index.
func netTestPlan(t *testing.T, cols ...netCol) *plan {
	t.Helper()
	rel := &source.Relation{Schema: "public", Name: "t", Identity: source.IdentityDefault}
	tt := &Table{TargetTable: mapping.TargetTable{Name: source.TableName{Name: "t"}}, MySQL: map[string]mapping.MySQLColumn{}}
	var key []string
	for _, c := range cols {
		rel.Columns = append(rel.Columns, source.Column{Name: c.name, Type: c.oid, TypeMod: -1, Key: c.key})
		tc := mapping.TargetColumn{Name: c.name}
		if identityEqual(c.my, "") {
			tc.Compare = mapping.CompareEqual
		}
		tt.Columns = append(tt.Columns, tc)
		tt.MySQL[c.name] = mapping.MySQLColumn{Name: c.name, DataType: c.my, ColumnType: c.my, MaxLength: 100, Nullable: !c.key}
		if c.key {
			key = append(key, c.name)
		}
	}
	tt.PrimaryKey, tt.Unique = key, [][]string{key}
	p, err := newPlan(rel, tt, mapping.ColumnRules{}, mapping.PolicyError, true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Net != mapping.NetCompact {
		t.Fatalf("test table is %v, want NetCompact", p.Net)
	}
	return p
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

func ins(p *plan, vals ...string) source.Change {
	return source.Change{Op: source.OpInsert, Rel: p.Rel, New: row(vals...)}
}

func upd(p *plan, vals ...string) source.Change {
	return source.Change{Op: source.OpUpdate, Rel: p.Rel, New: row(vals...)}
}

// move is an UPDATE that changes the key from old's to new's.
func move(p *plan, old, new []string) source.Change {
	return source.Change{Op: source.OpUpdate, Rel: p.Rel, Old: row(old...), New: row(new...)}
}

func del(p *plan, vals ...string) source.Change {
	return source.Change{Op: source.OpDelete, Rel: p.Rel, Old: row(vals...)}
}

// netRender folds the changes (one transaction each) into a window and
// renders the table's statements.
func netRender(t *testing.T, p *plan, limit netLimit, changes ...source.Change) ([]stmt, error) {
	t.Helper()
	var n apply.Net[*plan]
	for i := range changes {
		txn := &source.Txn{Xid: uint64(100 + i), Commit: source.LSN(1000 + i)}
		if !n.Add(p, p.Plan, txn, &changes[i]) {
			t.Fatalf("change %d was not folded", i)
		}
	}
	var out []stmt
	for _, nt := range n.Tables() {
		err := nt.Plan.netStmts(nt.Rows, limit, func(s stmt) error {
			out = append(out, s)
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// show is a statement as "SQL | args | expect rows, xid of the last
// change".
func show(s stmt) string {
	args := make([]string, len(s.args))
	for i, a := range s.args {
		args[i] = fmt.Sprintf("%#v", a)
	}
	return fmt.Sprintf("%s | %s | %d xid %d net %v", s.sql, strings.Join(args, " "), s.info.Expect, s.info.Txn.Xid, s.info.Net)
}

func TestNetStatements(t *testing.T) {
	one := netTestPlan(t, netCol{"id", oidInt4, "int", true}, netCol{"v", oidText, "varchar", false}, netCol{"w", oidText, "longtext", false})
	two := netTestPlan(t, netCol{"a", oidInt4, "int", true}, netCol{"b", oidBytea, "varbinary", true}, netCol{"v", oidText, "varchar", false})
	big := netLimit{rows: 1000, bytes: 1 << 20}
	for _, c := range []struct {
		name    string
		p       *plan
		limit   netLimit
		changes []source.Change
		want    []string
	}{{
		name: "one of each, one-column key",
		p:    one, limit: big,
		changes: []source.Change{ins(one, "1", "a", "x"), upd(one, "2", "b", "y"), del(one, "3", "NULL", "NULL"), upd(one, "4", "NULL", "z")},
		want: []string{
			"DELETE FROM `t` WHERE `id` IN (?) | 3 | 1 xid 102 net true",
			"UPDATE (SELECT ? AS k1, ? AS c1, ? AS c2 UNION ALL VALUES (?, ?, ?)) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`v` = v.c1, x.`w` = v.c2 | 2 \"b\" \"y\" 4 <nil> \"z\" | 2 xid 103 net true",
			"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?) | 1 \"a\" \"x\" | 1 xid 100 net true",
		},
	}, {
		name: "a hot row: insert, updates, one insert of the final row",
		p:    one, limit: big,
		changes: []source.Change{ins(one, "1", "a", "x"), upd(one, "1", "b", "~"), upd(one, "1", "NULL", "~"), upd(one, "1", "c", "y")},
		want:    []string{"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?) | 1 \"c\" \"y\" | 1 xid 103 net true"},
	}, {
		name: "updates merge; a TOAST value no update set stays out of SET",
		p:    one, limit: big,
		changes: []source.Change{upd(one, "1", "a", "~"), upd(one, "2", "b", "~"), upd(one, "1", "c", "~"), upd(one, "3", "d", "x")},
		want: []string{
			"UPDATE (SELECT ? AS k1, ? AS c1 UNION ALL VALUES (?, ?)) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`v` = v.c1 | 1 \"c\" 2 \"b\" | 2 xid 101 net true",
			"UPDATE (SELECT ? AS k1, ? AS c1, ? AS c2) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`v` = v.c1, x.`w` = v.c2 | 3 \"d\" \"x\" | 1 xid 103 net true",
		},
	}, {
		name: "nothing to set: the key is set to itself, to count the row",
		p:    one, limit: big,
		changes: []source.Change{upd(one, "5", "~", "~")},
		want:    []string{"UPDATE (SELECT ? AS k1) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`id` = x.`id` | 5 | 1 xid 100 net true"},
	}, {
		name: "delete then insert of a key is a replace; insert then delete nothing",
		p:    one, limit: big,
		changes: []source.Change{del(one, "1", "a", "x"), ins(one, "1", "b", "y"), ins(one, "2", "c", "z"), del(one, "2", "c", "z")},
		want: []string{
			"DELETE FROM `t` WHERE `id` IN (?) | 1 | 1 xid 101 net true",
			"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?) | 1 \"b\" \"y\" | 1 xid 101 net true",
		},
	}, {
		name: "a key change is a delete and an insert",
		p:    one, limit: big,
		changes: []source.Change{move(one, []string{"1", "a", "x"}, []string{"7", "a", "x"})},
		want: []string{
			"DELETE FROM `t` WHERE `id` IN (?) | 1 | 1 xid 100 net true",
			"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?) | 7 \"a\" \"x\" | 1 xid 100 net true",
		},
	}, {
		name: "composite key",
		p:    two, limit: big,
		changes: []source.Change{del(two, "1", "\\x00ff", "NULL"), del(two, "2", "\\x61", "NULL"), upd(two, "3", "\\x62", "v")},
		want: []string{
			"DELETE FROM `t` WHERE (`a`, `b`) IN ((?, ?), (?, ?)) | 1 []byte{0x0, 0xff} 2 []byte{0x61} | 2 xid 101 net true",
			"UPDATE (SELECT ? AS k1, ? AS k2, ? AS c1) AS v STRAIGHT_JOIN `t` AS x ON x.`a` = v.k1 AND x.`b` = v.k2 SET x.`v` = v.c1 | 3 []byte{0x62} \"v\" | 1 xid 102 net true",
		},
	}, {
		name: "statements split at the row limit, each naming its last change",
		p:    one, limit: netLimit{rows: 2, bytes: 1 << 20},
		changes: []source.Change{del(one, "1", "~", "~"), del(one, "2", "~", "~"), del(one, "3", "~", "~"), ins(one, "4", "a", "b"), ins(one, "5", "c", "d"), ins(one, "6", "e", "f")},
		want: []string{
			"DELETE FROM `t` WHERE `id` IN (?, ?) | 1 2 | 2 xid 101 net true",
			"DELETE FROM `t` WHERE `id` IN (?) | 3 | 1 xid 102 net true",
			"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?), (?, ?, ?) | 4 \"a\" \"b\" 5 \"c\" \"d\" | 2 xid 104 net true",
			"INSERT INTO `t` (`id`, `v`, `w`) VALUES (?, ?, ?) | 6 \"e\" \"f\" | 1 xid 105 net true",
		},
	}, {
		name: "statements split at the byte limit",
		p:    one, limit: netLimit{rows: 1000, bytes: 90},
		changes: []source.Change{upd(one, "1", strings.Repeat("a", 20), "~"), upd(one, "2", "b", "~"), upd(one, "3", "c", "~")},
		want: []string{
			"UPDATE (SELECT ? AS k1, ? AS c1 UNION ALL VALUES (?, ?)) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`v` = v.c1 | 1 \"aaaaaaaaaaaaaaaaaaaa\" 2 \"b\" | 2 xid 101 net true",
			"UPDATE (SELECT ? AS k1, ? AS c1) AS v STRAIGHT_JOIN `t` AS x ON x.`id` = v.k1 SET x.`v` = v.c1 | 3 \"c\" | 1 xid 102 net true",
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			stmts, err := netRender(t, c.p, c.limit, c.changes...)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range stmts {
				got = append(got, show(s))
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("statements:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
			}
		})
	}
}

// TestRenderNetUpdate: MySQL takes the rows of the derived table as
// SELECTs (a table value constructor needs 8.0.19), MariaDB as VALUES.
func TestRenderNetUpdate(t *testing.T) {
	p := netTestPlan(t, netCol{"a", oidInt4, "int", true}, netCol{"b", oidInt4, "int", true}, netCol{"v", oidText, "varchar", false})
	for _, c := range []struct {
		maria bool
		n     int
		want  string
	}{
		{false, 3, "UPDATE (SELECT ? AS k1, ? AS k2, ? AS c1 UNION ALL SELECT ?, ?, ? UNION ALL SELECT ?, ?, ?) AS v STRAIGHT_JOIN `t` AS x ON x.`a` = v.k1 AND x.`b` = v.k2 SET x.`v` = v.c1"},
		{true, 3, "UPDATE (SELECT ? AS k1, ? AS k2, ? AS c1 UNION ALL VALUES (?, ?, ?), (?, ?, ?)) AS v STRAIGHT_JOIN `t` AS x ON x.`a` = v.k1 AND x.`b` = v.k2 SET x.`v` = v.c1"},
		{true, 1, "UPDATE (SELECT ? AS k1, ? AS k2, ? AS c1) AS v STRAIGHT_JOIN `t` AS x ON x.`a` = v.k1 AND x.`b` = v.k2 SET x.`v` = v.c1"},
	} {
		if got := renderNetUpdate(p.Plan, []int{2}, c.n, c.maria); got != c.want {
			t.Errorf("maria %v, %d rows:\n got %s\nwant %s", c.maria, c.n, got, c.want)
		}
	}
}

// TestNetStatementValueError: a value the column cannot hold names the
// transaction of its key's last change, as an *apply.Error.
func TestNetStatementValueError(t *testing.T) {
	p := netTestPlan(t, netCol{"id", oidInt4, "int", true}, netCol{"n", oidInt4, "tinyint", false})
	_, err := netRender(t, p, netLimit{rows: 10, bytes: 1 << 20}, upd(p, "1", "5"), upd(p, "2", "300"))
	var ae *apply.Error
	if !errors.As(err, &ae) || ae.Xid != 101 || ae.Op != "update" || ae.Table.Name != "t" || !strings.Contains(err.Error(), "column n") {
		t.Errorf("error %v, want an update error of xid 101 naming column n", err)
	}
}

func TestIdentityEqual(t *testing.T) {
	for _, c := range []struct {
		typ, collation string
		want           bool
	}{
		{"int", "", true}, {"bigint", "", true}, {"datetime", "", true}, {"year", "", true}, {"varbinary", "", true}, {"longblob", "", true},
		{"varchar", "utf8mb4_nopad_bin", true}, {"longtext", "latin1_nopad_bin", true}, {"varchar", "utf8mb4_0900_bin", true},
		{"varchar", "utf8mb4_bin", false}, {"varchar", "utf8mb4_general_ci", false}, {"varchar", "utf8mb4_nopad_general_ci", false},
		{"char", "utf8mb4_nopad_bin", false}, {"decimal", "", false}, {"double", "", false}, {"float", "", false},
		{"json", "", false}, {"enum", "utf8mb4_nopad_bin", false}, {"bit", "", false},
	} {
		if got := identityEqual(c.typ, c.collation); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.typ, c.collation, got, c.want)
		}
	}
}
