package integration

import (
	"strings"
	"testing"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source/gauss"
)

// TestOpenGaussLifecycle: init, status, run and drop against the openGauss
// flavour, whose pg_replication_slots has no confirmed_csn (the slot query
// decant sent to every server used to fail there with "column does not
// exist"), and the options openGauss's parsers refuse, refused by decant
// with the server named.
func TestOpenGaussLifecycle(t *testing.T) {
	p := newPair(t)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	srv := startFlavour(t, "opengauss", "7300000000000000011")
	g := gaussPair(t, p, srv, nil)

	for _, c := range []struct{ option, want string }{
		{"output-order=1", "no CSN-ordered slots"},
		{"enable-heartbeat=true", "openGauss 7.0.0-RC2 does not take this option in serial decoding"},
		{"parallel-decode-num=2,max-txn-in-memory=200", "from 0 to 100 on openGauss"},
	} {
		_, errOut, code := g.decant("init", "--source-option", c.option)
		if code == 0 {
			t.Errorf("init with %s on openGauss succeeded", c.option)
		}
		oneLineError(t, c.option, errOut, c.want)
	}
	if _, _, _, ok := srv.Slot(g.name); ok {
		t.Fatal("a refused init created the slot")
	}

	g.mustDecant("init")
	if _, _, _, ok := srv.Slot(g.name); !ok {
		t.Fatal("init created no slot")
	}
	if out := g.mustDecant("status"); !strings.Contains(out, g.name) {
		t.Errorf("status does not name the slot:\n%s", out)
	}
	srv.Append(gaussstub.Txn{Xid: 7, CSN: 3, FirstLSN: 0x1000100, CommitStart: 0x1000200, CommitEnd: 0x1000230, Records: []gauss.Record{
		{Kind: gauss.KindBegin, LSN: 0x1000100, FirstLSN: 0x1000100, CSN: 3},
		{Kind: gauss.KindInsert, LSN: 0x1000150, Schema: "public", Table: "t", New: []gauss.Column{{Name: "id", Type: 23, Value: []byte("1")}}},
		{Kind: gauss.KindCommit, LSN: 0x1000230, Xid: 7, HasXid: true},
	}})
	g.mustDecant("run", "--catch-up")
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM t`); n != "1" {
		t.Errorf("run applied %s rows, want 1", n)
	}
	if confirmed, _, _, _ := srv.Slot(g.name); confirmed != 0x1000230 {
		t.Errorf("slot confirmed %s after run, want 0/1000230", confirmed)
	}
	g.mustDecant("drop", "--yes")
	if _, _, _, ok := srv.Slot(g.name); ok {
		t.Error("drop left the slot")
	}
}
