package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// Stand-in tables for rowno and generated columns: a keyless Ustore
// table (u1), a keyed table with a generated column (g1) and a keyless
// REPLICA IDENTITY FULL table with one (g2).
func rownoTables() []gaussstub.Table {
	col := func(n int16, name string, typ uint32, sqlType string) source.ColumnDef {
		return source.ColumnDef{Attnum: n, Name: name, Type: typ, TypeMod: -1, SQLType: sqlType}
	}
	g1 := []source.ColumnDef{col(1, "id", 23, "integer"), col(2, "price", 23, "integer"), col(3, "qty", 23, "integer"), col(4, "total", 23, "integer")}
	g1[0].NotNull = true
	g1[3].Generated = "(price * qty)"
	g2 := []source.ColumnDef{col(1, "a", 23, "integer"), col(2, "b", 25, "text"), col(3, "blen", 23, "integer")}
	g2[2].Generated = "length(b)"
	return []gaussstub.Table{
		{Def: &source.TableDef{OID: 16401, Name: source.TableName{Schema: "public", Name: "u1"},
			Columns: []source.ColumnDef{col(1, "a", 23, "integer"), col(2, "b", 25, "text")}}, Ustore: true},
		{Def: &source.TableDef{OID: 16402, Name: source.TableName{Schema: "public", Name: "g1"}, Columns: g1, PrimaryKey: []string{"id"}}},
		{Def: &source.TableDef{OID: 16403, Name: source.TableName{Schema: "public", Name: "g2"}, Columns: g2}},
	}
}

// rownoTxns is the scripted stream. Rows are "a,b" values plus the
// rowno; u1 holds two rows that differ only by rowno.
func rownoTxns(skipGenerated bool) []gaussstub.Txn {
	v := func(name string, typ uint32, val string) gauss.Column {
		if val == "null" {
			return gauss.Column{Name: name, Type: typ, Null: true}
		}
		return gauss.Column{Name: name, Type: typ, Value: []byte(val)}
	}
	rowno := func(n uint64) gauss.Column {
		return gauss.Column{Name: gauss.RownoColumn, Type: 20, Rowno: true, RowNo: n}
	}
	u1 := func(a, b string, n uint64) []gauss.Column {
		return []gauss.Column{v("a", 23, a), v("b", 25, b), rowno(n)}
	}
	g1 := func(id, price, qty, total string, old bool) []gauss.Column {
		if old {
			return []gauss.Column{v("id", 23, id)}
		}
		cols := []gauss.Column{v("id", 23, id), v("price", 23, price), v("qty", 23, qty)}
		if !skipGenerated {
			cols = append(cols, v("total", 23, total))
		}
		return cols
	}
	g2 := func(a, b, blen string, old bool) []gauss.Column {
		cols := []gauss.Column{v("a", 23, a), v("b", 25, b)}
		if old || !skipGenerated { // old tuples always carry generated columns
			cols = append(cols, v("blen", 23, blen))
		}
		return cols
	}
	rec := func(kind gauss.Kind, table string, newCols, oldCols []gauss.Column) gauss.Record {
		return gauss.Record{Kind: kind, Schema: "public", Table: table, New: newCols, Old: oldCols}
	}
	txn := func(xid uint64, lsn source.LSN, changes ...gauss.Record) gaussstub.Txn {
		recs := append([]gauss.Record{{Kind: gauss.KindBegin, LSN: lsn, FirstLSN: lsn, CSN: xid + 100}}, changes...)
		recs = append(recs, gauss.Record{Kind: gauss.KindCommit, LSN: lsn + 0x100, Xid: xid, HasXid: true, CSN: xid + 100})
		return gaussstub.Txn{Xid: xid, CSN: xid + 100, FirstLSN: lsn, CommitStart: lsn + 0x80, CommitEnd: lsn + 0x100, Records: recs}
	}
	return []gaussstub.Txn{
		txn(801, 0x2000000,
			rec(gauss.KindInsert, "u1", u1("1", "x", 1), nil),
			rec(gauss.KindInsert, "u1", u1("1", "x", 2), nil),
			rec(gauss.KindInsert, "u1", u1("2", "y", 3), nil),
			rec(gauss.KindInsert, "g1", g1("1", "2", "3", "6", false), nil),
			rec(gauss.KindInsert, "g1", g1("2", "5", "5", "25", false), nil),
			rec(gauss.KindInsert, "g2", g2("1", "abc", "3", false), nil),
			rec(gauss.KindInsert, "g2", g2("2", "hello", "5", false), nil)),
		txn(802, 0x2001000,
			rec(gauss.KindUpdate, "u1", u1("1", "z", 2), u1("1", "x", 2)),
			rec(gauss.KindDelete, "u1", nil, u1("2", "y", 3)),
			rec(gauss.KindUpdate, "g1", g1("1", "2", "4", "8", false), g1("1", "", "", "", true)),
			rec(gauss.KindDelete, "g2", nil, g2("2", "hello", "5", true)),
			rec(gauss.KindUpdate, "g2", g2("1", "abcd", "4", false), g2("1", "abc", "3", true))),
	}
}

// TestGaussRownoAndGenerated runs a Ustore table without a primary key
// (enable-rowno) and tables with stored generated columns, with
// skip-generated-columns off and on, through the stand-in into both
// targets created by --create-tables: the target gets a rowno column with
// a unique index and finds rows by it; generated columns are generated on
// PostgreSQL (decant never writes them) and plain columns on MariaDB,
// filled from the source's values when the stream carries them.
func TestGaussRownoAndGenerated(t *testing.T) {
	for _, tc := range []struct {
		name          string
		mysql         bool
		skipGenerated bool
	}{
		{"postgres", false, false},
		{"postgres/skip-generated", false, true},
		{"mariadb", true, false},
		{"mariadb/skip-generated", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTargetPair(t, tc.mysql)
			srv := startStandIn(t, "")
			srv.SetTables(rownoTables()...)
			options := []string{"parallel-decode-num=2", "decode-style=b", "enable-rowno=true", "enable-decode-position=true",
				fmt.Sprintf("skip-generated-columns=%t", tc.skipGenerated)}
			g := gaussPair(t, p, srv, options)
			g.mustDecant("init", "--create-tables")

			// rowno identifies u1's rows: change a column behind decant's
			// back on the row the stream updates next; matching on every
			// column would not find it.
			txns := rownoTxns(tc.skipGenerated)
			srv.Append(txns[0])
			srv.AddPosition(txns[0].CSN, uint64(txns[0].CommitEnd))
			g.mustDecant("run", "--catch-up")
			if tc.mysql {
				p.myExec(`UPDATE u1 SET b = 'drifted' WHERE rowno = 2`)
			} else {
				psql(t, p.tgt, `UPDATE u1 SET b = 'drifted' WHERE rowno = 2`)
			}
			srv.Append(txns[1])
			srv.AddPosition(txns[1].CSN, uint64(txns[1].CommitEnd))
			g.mustDecant("run", "--catch-up")

			want := map[string]string{
				"u1": "1,x,1;1,z,2",
				"g1": "1,2,4,8;2,5,5,25",
				"g2": "1,abcd,4",
			}
			if tc.mysql && tc.skipGenerated {
				// Plain columns on MariaDB; the stream never carried
				// their values.
				want["g1"], want["g2"] = "1,2,4,NULL;2,5,5,NULL", "1,abcd,NULL"
			}
			for table, rows := range want {
				cols, order := rownoColumns[table][0], rownoColumns[table][1]
				var got string
				if tc.mysql {
					cols = strings.ReplaceAll(cols, "::text", "")
					got = p.myValue(`SELECT GROUP_CONCAT(CONCAT_WS(',', ` + cols + `) ORDER BY ` + order + ` SEPARATOR ';') FROM ` + table)
				} else {
					got = queryValue(t, p.tgt, `SELECT string_agg(concat_ws(',', `+cols+`), ';' ORDER BY `+order+`) FROM `+table)
				}
				if got != rows {
					t.Errorf("table %s holds %q, want %q", table, got, rows)
				}
			}
			if tc.mysql {
				if n := p.myValue(`SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'u1' AND COLUMN_NAME = 'rowno' AND NON_UNIQUE = 0`); n != "1" {
					t.Errorf("u1.rowno has %s unique indexes on the target, want 1", n)
				}
			} else {
				if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM pg_index WHERE indrelid = 'u1'::regclass AND indisunique AND indkey::text = (SELECT attnum::text FROM pg_attribute WHERE attrelid = 'u1'::regclass AND attname = 'rowno')`); n != "1" {
					t.Errorf("u1.rowno has %s unique indexes on the target, want 1", n)
				}
				if got := queryValue(t, p.tgt, `SELECT count(*)::text FROM pg_attribute WHERE attrelid IN ('g1'::regclass, 'g2'::regclass) AND attgenerated = 's'`); got != "2" {
					t.Errorf("%s generated columns on the target, want 2", got)
				}
			}
		})
	}
}

// rownoColumns gives each table's columns for the checks, NULLs spelled
// out ("::text" is dropped on MariaDB), and their order.
var rownoColumns = map[string][2]string{
	"u1": {"a, b, rowno", "rowno"},
	"g1": {"id, price, qty, COALESCE(total::text, 'NULL')", "id"},
	"g2": {"a, b, COALESCE(blen::text, 'NULL')", "a"},
}
