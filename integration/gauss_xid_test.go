package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// xidTable is the stand-in's table t (id integer primary key, v text).
func xidTable() gaussstub.Table {
	cols := []source.ColumnDef{
		{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true},
		{Attnum: 2, Name: "v", Type: 25, TypeMod: -1, SQLType: "text"},
	}
	return gaussstub.Table{Def: &source.TableDef{OID: 16501, Name: source.TableName{Schema: "public", Name: "t"}, Columns: cols, PrimaryKey: []string{"id"}}}
}

// xidTxn is one transaction of inserts into t at lsn; a nil row is one
// the server sends without its columns (a compressed heap tuple).
func xidTxn(xid uint64, lsn source.LSN, rows ...[]string) gaussstub.Txn {
	recs := []gauss.Record{{Kind: gauss.KindBegin, LSN: lsn, FirstLSN: lsn, CSN: xid % 1000, Xid: xid, HasXid: true}}
	for i, row := range rows {
		r := gauss.Record{Kind: gauss.KindInsert, LSN: lsn + source.LSN(0x10*(i+1)), Schema: "public", Table: "t", New: []gauss.Column{}}
		if row != nil {
			r.New = []gauss.Column{{Name: "id", Type: 23, Value: []byte(row[0])}, {Name: "v", Type: 25, Value: []byte(row[1])}}
		}
		recs = append(recs, r)
	}
	recs = append(recs, gauss.Record{Kind: gauss.KindCommit, LSN: lsn + 0x100, Xid: xid, HasXid: true, CSN: xid % 1000})
	return gaussstub.Txn{Xid: xid, CSN: xid % 1000, FirstLSN: lsn, CommitStart: lsn + 0x80, CommitEnd: lsn + 0x100, Records: recs}
}

// appendTxn appends a transaction and, on GaussDB, a decode position
// after it so that a catch-up ends there (openGauss's log end is the
// last commit).
func appendTxn(srv *gaussstub.Server, flavour string, txn gaussstub.Txn) {
	srv.Append(txn)
	if flavour == "gaussdb" {
		srv.AddPosition(txn.CSN, uint64(txn.CommitEnd))
	}
}

// TestGaussWideXid: transaction ids above 2^32 (GaussDB/openGauss xids are
// 64-bit) reach both targets whole: the checkpoint row holds the xid,
// status shows it, an apply error names it, and decant decode prints it.
func TestGaussWideXid(t *testing.T) {
	const xid1, xid2 = 1<<32 + 7, 1<<33 + 1 // 4294967303, 8589934593
	for _, tc := range []struct {
		name, flavour string
		mysql         bool
		options       []string
	}{
		{"opengauss/binary-batch/postgres", "opengauss", false, flavourFormat("opengauss", "binary-batch")},
		{"gaussdb/mppdb-serial/mariadb", "gaussdb", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTargetPair(t, tc.mysql)
			srv := startFlavour(t, tc.flavour, "7300000000000000021")
			srv.SetTables(xidTable())
			g := gaussPair(t, p, srv, tc.options)
			g.mustDecant("init", "--create-tables")

			appendTxn(srv, tc.flavour, xidTxn(xid1, 0x1000100, []string{"1", "a"}))
			g.mustDecant("run", "--catch-up")
			if got := p.checkpointXid(); got != fmt.Sprint(xid1) {
				t.Errorf("checkpoint holds xid %s, want %d", got, xid1)
			}
			if out := g.mustDecant("status"); !strings.Contains(out, fmt.Sprintf("xid %d", xid1)) {
				t.Errorf("status does not show xid %d:\n%s", xid1, out)
			}

			// The same key again: the target refuses it for good.
			appendTxn(srv, tc.flavour, xidTxn(xid2, 0x1001000, []string{"1", "b"}))
			_, errOut, code := g.decant("run", "--catch-up")
			if code != 3 {
				t.Errorf("duplicate key: exit %d, want 3", code)
			}
			oneLineError(t, "duplicate key", errOut, fmt.Sprintf("xid %d", xid2))
			if got := p.checkpointXid(); got != fmt.Sprint(xid1) {
				t.Errorf("after the error the checkpoint holds xid %s, want %d", got, xid1)
			}
		})
	}

	fixture := filepath.Join("..", "source", "gauss", "testdata", "bin_begin_xid64.hex")
	out, errOut, code := runDecant(t, "decode", "--hex", "--format", "gauss-b", fixture)
	if code != 0 || !strings.Contains(out, `"xid":4294967396`) {
		t.Errorf("decant decode of %s: exit %d, %s%s", fixture, code, out, errOut)
	}
}

// TestGaussCompressedRow: a row change the server sends without its
// columns (openGauss does so for a compressed heap tuple, in every
// format) stops the pipeline with one line naming table, LSN, xid and what
// to do, exit code 3 (it needs a person); the transaction before it is
// applied and acknowledged, nothing from it on.
func TestGaussCompressedRow(t *testing.T) {
	const bad = 1<<32 + 50 // 4294967346
	for _, f := range []string{"binary-batch", "text-batch", "json-batch", "mppdb-serial"} {
		t.Run(f, func(t *testing.T) {
			p := newPair(t)
			srv := startFlavour(t, "opengauss", "7300000000000000022")
			srv.SetTables(xidTable())
			g := gaussPair(t, p, srv, flavourFormat("opengauss", f))
			g.mustDecant("init", "--create-tables")
			srv.Append(
				xidTxn(101, 0x1000100, []string{"1", "a"}),
				xidTxn(bad, 0x1001000, []string{"2", "b"}, nil),
				xidTxn(103, 0x1002000, []string{"3", "c"}),
			)
			_, errOut, code := g.decant("run", "--catch-up")
			if code != 3 {
				t.Errorf("exit %d, want 3", code)
			}
			oneLineError(t, f, errOut, "INSERT of public.t at 0/", fmt.Sprintf("in xid %d", bad),
				"without its columns", "ALTER TABLE public.t SET NOCOMPRESS", "decant drop --pipeline "+g.name+" --yes")
			if rows := queryValue(t, p.tgt, `SELECT string_agg(id::text, ',' ORDER BY id) FROM t`); rows != "1" {
				t.Errorf("target holds rows %s, want 1 (the transaction before the compressed row)", rows)
			}
			if got := p.checkpointXid(); got != "101" {
				t.Errorf("checkpoint holds xid %s, want 101", got)
			}
			if confirmed, _, _, _ := srv.Slot(g.name); confirmed > 0x1000100+0x100 {
				t.Errorf("slot confirmed %s, past the transaction before the compressed row (0/1000200)", confirmed)
			}
		})
	}
}
