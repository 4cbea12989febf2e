package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/pgoutput"
)

// GaussDB cannot run here. These tests take a workload's changes from a
// real PostgreSQL 15 source, re-encode them in each GaussDB/openGauss
// decoding format (gaussenc, test support), serve them through a
// protocol-level stand-in server over a real socket (gaussstub), and run
// decant from it into real targets: the targets must equal the
// PostgreSQL source.

// gaussFormats are the formats every differential test runs in, as
// decoding options.
var gaussFormats = []struct {
	name    string
	options []string
}{
	{"mppdb-serial", nil},
	{"binary", []string{"parallel-decode-num=2", "decode-style=b", "enable-decode-position=true"}},
	{"binary-batch", []string{"parallel-decode-num=2", "decode-style=b", "sending-batch=1", "enable-decode-position=true"}},
	{"text", []string{"parallel-decode-num=2", "decode-style=t", "enable-decode-position=true"}},
	{"text-batch", []string{"parallel-decode-num=2", "decode-style=t", "sending-batch=1", "enable-decode-position=true"}},
	{"json", []string{"parallel-decode-num=2", "decode-style=j", "enable-decode-position=true"}},
	{"json-batch", []string{"parallel-decode-num=2", "decode-style=j", "sending-batch=1", "enable-decode-position=true"}},
}

// openGaussFormats are the formats the differential tests run in against
// the openGauss flavour: its parsers do not know enable-decode-position
// (GaussDB's), so the catch-up ends at the last commit, which the
// stand-in then reports as its log end. Unbatched text and JSON are left
// out: their COMMIT carries no commit end, so without a decode position
// a catch-up cannot tell it has reached the log end.
var openGaussFormats = []struct {
	name    string
	options []string
}{
	{"mppdb-serial", nil},
	{"binary-batch", []string{"parallel-decode-num=2", "decode-style=b", "sending-batch=1"}},
	{"binary", []string{"parallel-decode-num=2", "decode-style=b"}},
	{"text-batch", []string{"parallel-decode-num=2", "decode-style=t", "sending-batch=1"}},
	{"json-batch", []string{"parallel-decode-num=2", "decode-style=j", "sending-batch=1"}},
}

// captured is a source workload decoded from PostgreSQL, as GaussDB
// transactions.
type captured struct {
	txns []gaussstub.Txn
	end  source.LSN
}

// captureWorkload runs fn on the source and returns what it committed, in
// commit order, decoded through a pgoutput slot of its own.
func captureWorkload(t *testing.T, p *pair, tables string, fn func()) captured {
	t.Helper()
	return capture(t, p, tables, fn, nil)
}

// capture is captureWorkload with schema changes: when ddl is set, the
// source's DDL capture is installed and each DDL change becomes the
// records ddl returns for it.
func capture(t *testing.T, p *pair, tables string, fn func(), ddl func(*source.Change) []gauss.Record) captured {
	t.Helper()
	name := "cap_" + p.name
	psql(t, p.src, fmt.Sprintf(`CREATE PUBLICATION %s FOR TABLE %s; SELECT pg_create_logical_replication_slot('%s', 'pgoutput');`, name, tables, name))
	cfg := pgoutput.Config{DSN: p.src, Slot: name, Publication: name}
	if ddl != nil {
		conn := connect(t, p.src)
		if err := pgoutput.InstallDDLCapture(t.Context(), conn, name, name, source.TableFilter{}); err != nil {
			t.Fatal(err)
		}
		cfg.Pipeline = name
	}
	start, err := source.ParseLSN(queryValue(t, p.src, fmt.Sprintf(`SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '%s'`, name)))
	if err != nil {
		t.Fatal(err)
	}
	fn()
	end, err := source.ParseLSN(queryValue(t, p.src, `SELECT pg_current_wal_lsn()::text`))
	if err != nil {
		t.Fatal(err)
	}
	r, err := pgoutput.NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	ch := make(chan source.Chunk, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Stream(ctx, source.StreamRequest{Start: start, Acked: func() source.LSN { return start }}, ch)
	}()
	var c captured
	var cur *gaussstub.Txn
	csn := uint64(1000)
	for c.end == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("capturing the workload did not reach %s", end)
		case chunk := <-ch:
			if chunk.Txn == nil {
				if chunk.End >= end {
					c.end = chunk.End
				}
				continue
			}
			if cur == nil {
				csn++
				cur = &gaussstub.Txn{Xid: uint64(chunk.Txn.Xid), CSN: csn, FirstLSN: chunk.Txn.Commit, CommitStart: chunk.Txn.Commit}
				cur.Records = append(cur.Records, gauss.Record{Kind: gauss.KindBegin, LSN: chunk.Txn.Commit, FirstLSN: chunk.Txn.Commit, CSN: csn})
			}
			for i := range chunk.Changes {
				if c := &chunk.Changes[i]; ddl != nil && (c.Op == source.OpDDL || c.Op == source.OpTruncate) {
					cur.Records = append(cur.Records, ddl(c)...)
					continue
				}
				cur.Records = append(cur.Records, gaussRecord(t, &chunk.Changes[i], chunk.Txn.Commit))
			}
			if chunk.Commit {
				cur.CommitEnd = chunk.End
				cur.Records = append(cur.Records, gauss.Record{Kind: gauss.KindCommit, LSN: chunk.End, Xid: uint64(chunk.Txn.Xid), HasXid: true, CSN: csn})
				c.txns = append(c.txns, *cur)
				cur = nil
				if chunk.End >= end {
					c.end = chunk.End
				}
			}
		}
	}
	cancel()
	<-done
	psql(t, p.src, fmt.Sprintf(`SELECT pg_drop_replication_slot('%s')`, name))
	if len(c.txns) == 0 {
		t.Fatal("the workload committed nothing")
	}
	return c
}

// gaussRecord turns a pgoutput change into the record GaussDB would send:
// the old tuple holds only the replica identity's columns.
func gaussRecord(t *testing.T, c *source.Change, lsn source.LSN) gauss.Record {
	t.Helper()
	r := gauss.Record{LSN: lsn, Schema: c.Rel.Schema, Table: c.Rel.Name}
	switch c.Op {
	case source.OpInsert:
		r.Kind = gauss.KindInsert
	case source.OpUpdate:
		r.Kind = gauss.KindUpdate
	case source.OpDelete:
		r.Kind = gauss.KindDelete
	default:
		t.Fatalf("the differential workload must not %s", c.Op)
	}
	cols := func(row []source.Value, keyOnly bool) []gauss.Column {
		if row == nil {
			return nil
		}
		var out []gauss.Column
		for i, v := range row {
			col := c.Rel.Columns[i]
			if keyOnly && !col.Key {
				continue
			}
			if v.Kind == source.ValueUnchanged {
				t.Fatalf("column %s: unchanged TOAST values have no GaussDB form; keep values small", col.Name)
			}
			out = append(out, gauss.Column{Name: col.Name, Type: col.Type, Null: v.Kind == source.ValueNull, Value: v.Data})
		}
		return out
	}
	r.New = cols(c.New, false)
	r.Old = cols(c.Old, c.Rel.Identity != source.IdentityFull)
	return r
}

// gaussPair is a pair whose source is the stand-in server.
func gaussPair(t *testing.T, p *pair, srv *gaussstub.Server, options []string) *pair {
	g := *p
	g.src = srv.DSN("gauss")
	for _, o := range options {
		g.extra = append(g.extra, "--source-option", o)
	}
	return &g
}

// TestGaussDifferential is the differential test: one PostgreSQL workload,
// every GaussDB format, into PostgreSQL and MariaDB targets.
func TestGaussDifferential(t *testing.T) {
	p := newPair(t)
	p.both(mixedSchema)
	work := captureWorkload(t, p, "accounts, events, batches, marker", func() {
		if _, err := workload(t, p.src, 3, 150); err != nil {
			t.Fatal(err)
		}
		finalMarker(t, p.src)
	})
	t.Logf("%d transactions captured", len(work.txns))
	for _, f := range gaussFormats {
		t.Run("gaussdb/"+f.name+"/postgres", func(t *testing.T) {
			q := newPair(t)
			psql(t, q.tgt, mixedSchema)
			q.src = p.src // compare against the PostgreSQL source
			runGauss(t, q, work, "gaussdb", f.options, nil)
		})
	}
	for _, f := range openGaussFormats {
		t.Run("opengauss/"+f.name+"/postgres", func(t *testing.T) {
			q := newPair(t)
			psql(t, q.tgt, mixedSchema)
			q.src = p.src
			runGauss(t, q, work, "opengauss", f.options, nil)
		})
	}
	for _, fl := range []struct{ flavour, format string }{{"gaussdb", gaussFormats[2].name}, {"opengauss", openGaussFormats[1].name}} {
		t.Run(fl.flavour+"/"+fl.format+"/mariadb", func(t *testing.T) {
			q := newMySQLPair(t)
			q.src = p.src
			// The stand-in's catalog describes the PostgreSQL source's tables,
			// from which init --create-tables makes the MariaDB tables.
			tables := standInTables(t, p.src, "accounts", "events", "batches", "marker")
			runGauss(t, q, work, fl.flavour, flavourFormat(fl.flavour, fl.format), func(srv *gaussstub.Server) { srv.SetTables(tables...) }, "--create-tables")
		})
	}
}

// flavourFormat returns the options of a named format of a flavour.
func flavourFormat(flavour, name string) []string {
	formats := gaussFormats
	if flavour == "opengauss" {
		formats = openGaussFormats
	}
	for _, f := range formats {
		if f.name == name {
			return f.options
		}
	}
	panic("no format " + name + " for " + flavour)
}

// startStandIn starts a GaussDB stand-in with SHA-256 authentication,
// closed when the test ends.
func startStandIn(t *testing.T, systemID string) *gaussstub.Server {
	t.Helper()
	return startFlavour(t, "gaussdb", systemID)
}

// startFlavour is startStandIn for either flavour.
func startFlavour(t *testing.T, flavour, systemID string) *gaussstub.Server {
	t.Helper()
	srv, err := gaussstub.Start(gaussstub.Config{User: "decant", Password: "Gauss@123", AuthMethod: "sha256", SystemID: systemID, Flavour: flavour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// standInTables describes tables of a PostgreSQL database for the
// stand-in's catalog.
func standInTables(t *testing.T, dsn string, names ...string) []gaussstub.Table {
	t.Helper()
	conn := connect(t, dsn)
	var tables []gaussstub.Table
	for _, name := range names {
		def, err := pgoutput.DescribeTable(t.Context(), conn, source.TableName{Schema: "public", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, gaussstub.Table{Def: def})
	}
	return tables
}

// runGauss serves the captured workload from a fresh stand-in of the
// flavour in the given format, applies it with decant and compares with
// the source. setup, if set, prepares the stand-in before decant init
// runs with initArgs.
func runGauss(t *testing.T, p *pair, work captured, flavour string, options []string, setup func(*gaussstub.Server), initArgs ...string) {
	t.Helper()
	srv := startFlavour(t, flavour, "7300000000000000001")
	if setup != nil {
		setup(srv)
	}
	g := gaussPair(t, p, srv, options)
	g.mustDecant(append([]string{"init"}, initArgs...)...)
	srv.Append(work.txns...)
	markEnd(srv, flavour, work)
	out := g.mustDecant("run", "--catch-up")
	if strings.Contains(out, "level=ERROR") {
		t.Errorf("decant logged errors:\n%s", out)
	}
	p.assertEqual()
	last := work.txns[len(work.txns)-1]
	if got := p.checkpointXid(); got != fmt.Sprint(last.Xid) {
		t.Errorf("checkpoint names xid %s, want the last transaction's %d", got, last.Xid)
	}
}

// markEnd lets a catch-up reach the workload's end: GaussDB sends a
// decode position there; openGauss has none, and its log end is the last
// commit.
func markEnd(srv *gaussstub.Server, flavour string, work captured) {
	if flavour == "gaussdb" {
		srv.AddPosition(work.txns[len(work.txns)-1].CSN, uint64(work.end))
	}
}

// TestGaussCrashRecovery SIGKILLs decant at random moments while the
// stand-in serves a workload in binary batch format, with the stream cut
// from the server side too; after a final catch-up the target equals the
// source.
func TestGaussCrashRecovery(t *testing.T) {
	p := newPair(t)
	p.both(mixedSchema)
	work := captureWorkload(t, p, "accounts, events, batches, marker", func() {
		if _, err := workload(t, p.src, 4, 400); err != nil {
			t.Fatal(err)
		}
		finalMarker(t, p.src)
	})
	for _, flavour := range []string{"gaussdb", "opengauss"} {
		t.Run(flavour, func(t *testing.T) { crashGauss(t, p, work, flavour) })
	}
}

// crashGauss is one flavour's crash test.
func crashGauss(t *testing.T, p *pair, work captured, flavour string) {
	q := newPair(t)
	psql(t, q.tgt, mixedSchema)
	q.src = p.src
	srv := startFlavour(t, flavour, "7300000000000000002")
	g := gaussPair(t, q, srv, flavourFormat(flavour, "binary-batch"))
	g.mustDecant("init")
	rng := rand.New(rand.NewPCG(3, 3))
	fed, kills, advanced := 0, 0, 0
	last := q.checkpointEnd()
	for fed < len(work.txns) || kills < 10 {
		n := min(len(work.txns)-fed, 1+rng.IntN(len(work.txns)/8+1))
		srv.Append(work.txns[fed : fed+n]...)
		fed += n
		a := g.start()
		time.Sleep(time.Duration(100+rng.IntN(700)) * time.Millisecond)
		if rng.IntN(3) == 0 {
			srv.DropConnections()
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		}
		a.kill()
		kills++
		if end := q.checkpointEnd(); end != last {
			advanced, last = advanced+1, end
		}
	}
	if advanced < 5 {
		t.Fatalf("the checkpoint moved during only %d of %d runs: the kills did not interrupt real work", advanced, kills)
	}
	markEnd(srv, flavour, work)
	g.mustDecant("run", "--catch-up")
	q.assertEqual()
	t.Logf("%d transactions served in %d runs, %d of which applied work", len(work.txns), kills, advanced)
}

// TestGaussCSNOrder runs the differential workload from a CSN-ordered slot
// (output-order 1): the checkpoint keeps the CSN, and replays are skipped
// by it.
func TestGaussCSNOrder(t *testing.T) {
	p, work := mixedWork(t, 2, 100)
	q := targetOf(t, p)
	runGauss(t, q, work, "gaussdb", []string{"parallel-decode-num=2", "decode-style=b", "output-order=1", "enable-decode-position=true"}, nil)
	last := work.txns[len(work.txns)-1]
	if got := queryValue(t, q.tgt, `SELECT commit_csn::text FROM decant.checkpoint WHERE pipeline = '`+q.name+`'`); got != fmt.Sprint(last.CSN) {
		t.Errorf("checkpoint CSN %s, want the last transaction's %d", got, last.CSN)
	}
}

// TestGaussErrors: options refused before connecting, an option the
// server refuses after the stream began, a wrong password, and an
// authentication method decant cannot speak.
func TestGaussErrors(t *testing.T) {
	p := newPair(t)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	srv := startStandIn(t, "7300000000000000003")
	g := gaussPair(t, p, srv, nil)
	for _, c := range []struct {
		option, want string
	}{
		{"parallel-decode-num=25", "parallel-decode-num"},
		{"decode-style=b", "decode-style"},
		{"parallel-decode-num=2,parallel-queue-size=100", "power of two"},
		{"max-queue-cache-num=9000", "logical_decode_options_default"},
		{"decode-sequence=true", "decode-sequence"},
		{"no-such-option=1", "no-such-option"},
	} {
		_, errOut, code := g.decant("run", "--source-option", c.option)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("option %s: exit %d, %q", c.option, code, errOut)
		}
	}

	g.mustDecant("init")
	srv.Append(gaussstub.Txn{Xid: 9, CSN: 2, FirstLSN: 0x1000100, CommitStart: 0x1000200, CommitEnd: 0x1000230, Records: []gauss.Record{
		{Kind: gauss.KindBegin, LSN: 0x1000100, FirstLSN: 0x1000100, CSN: 2},
		{Kind: gauss.KindInsert, LSN: 0x1000150, Schema: "public", Table: "t", New: []gauss.Column{{Name: "id", Type: 23, Value: []byte("1")}}},
		{Kind: gauss.KindCommit, LSN: 0x1000230, Xid: 9, HasXid: true},
	}})
	// Accepted by decant in serial mode (with a warning), refused by the
	// server's serial plugin after CopyBothResponse.
	_, errOut, code := g.decant("run", "--catch-up", "--source-option", "change-log-max-len=100")
	if code != 1 {
		t.Errorf("server-side option error: exit %d", code)
	}
	oneLineError(t, "server option error", errOut, `option "change-log-max-len"`)

	wrong := *g
	wrong.src = strings.Replace(strings.Replace(g.src, "Gauss%40123", "wrong-"+secret, 1), "Gauss@123", "wrong-"+secret, 1)
	_, errOut, code = wrong.decant("run", "--catch-up")
	if code != 1 {
		t.Errorf("wrong password: exit %d", code)
	}
	oneLineError(t, "wrong password", errOut, "Invalid username/password")

	g.mustDecant("run", "--catch-up")
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM t`); n != "1" {
		t.Errorf("after the errors, a clean run applied %s rows, want 1", n)
	}

	gss, err := gaussstub.Start(gaussstub.Config{User: "decant", Password: "x", AuthMethod: "gss", SystemID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gss.Close)
	other := gaussPair(t, p, gss, nil)
	_, errOut, code = other.decant("init")
	if code != 1 {
		t.Errorf("GSSAPI: exit %d", code)
	}
	oneLineError(t, "gss", errOut, "GSSAPI", "pg_hba.conf")
}

// TestGaussLargeTransaction: a GaussDB transaction larger than
// --max-txn-memory is spooled to a file until its COMMIT arrives, applied
// whole, and the file removed.
func TestGaussLargeTransaction(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE big (id integer PRIMARY KEY, v text, n integer); CREATE TABLE marker (id integer PRIMARY KEY, xid text);`)
	work := captureWorkload(t, p, "big, marker", func() {
		psql(t, p.src, `INSERT INTO big SELECT g, repeat('x', 40), g FROM generate_series(1, 30000) g`)
		finalMarker(t, p.src)
	})
	q := newPair(t)
	psql(t, q.tgt, `CREATE TABLE big (id integer PRIMARY KEY, v text, n integer); CREATE TABLE marker (id integer PRIMARY KEY, xid text);`)
	q.src = p.src
	srv := startStandIn(t, "7300000000000000004")
	g := gaussPair(t, q, srv, gaussFormats[2].options)
	g.mustDecant("init")
	srv.Append(work.txns...)
	srv.AddPosition(work.txns[len(work.txns)-1].CSN, uint64(work.end))
	spill := t.TempDir()
	out := g.mustDecant("run", "--catch-up", "--max-txn-memory", "1MiB", "--spill-dir", spill)
	if !strings.Contains(out, "spilled to disk") {
		t.Errorf("a 30,000-row transaction did not spill under a 1 MiB limit:\n%s", out)
	}
	q.assertEqual()
	if left, _ := filepath.Glob(filepath.Join(spill, "*")); len(left) > 0 {
		t.Errorf("spill files left: %v", left)
	}
}
