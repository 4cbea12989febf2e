package pg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// The tests in this file put a recording proxy between a Target and a real
// PostgreSQL and check both what the Target said on the wire (the protocol
// messages it sent, in order) and what ended up in the target tables.
//
// Trace entries, one per frontend message:
//
//	Query <sql>          simple query (COPY, COMMIT, ROLLBACK)
//	Parse <sql>          unnamed statement (what a batch's ExecParams sends)
//	Parse <name>: <sql>  named statement (decant_N, pgx's stmtcache_...)
//	Bind [<name>]        name omitted for the unnamed statement
//	Describe P|S [<name>], Execute, Sync, CopyData, CopyDone, ...
//
// SQL is recorded with runs of white space collapsed to one space.

// recorder is the trace of the messages clients sent through a proxy.
type recorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.msgs = append(r.msgs, s)
	r.mu.Unlock()
}

// trace returns a copy of the entries recorded since the last reset.
func (r *recorder) trace() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.msgs = nil
	r.mu.Unlock()
}

// recSQL collapses white space, so multi-line SQL fits one trace entry.
func recSQL(sql string) string { return strings.Join(strings.Fields(sql), " ") }

// recEntry describes one frontend message. Receive reuses its message
// structs, so everything is copied into the returned string.
func recEntry(msg pgproto3.FrontendMessage) string {
	switch m := msg.(type) {
	case *pgproto3.Query:
		return "Query " + recSQL(m.String)
	case *pgproto3.Parse:
		if m.Name == "" {
			return "Parse " + recSQL(m.Query)
		}
		return "Parse " + m.Name + ": " + recSQL(m.Query)
	case *pgproto3.Bind:
		if m.PreparedStatement == "" {
			return "Bind"
		}
		return "Bind " + m.PreparedStatement
	case *pgproto3.Describe:
		return strings.TrimSpace(fmt.Sprintf("Describe %c %s", m.ObjectType, m.Name))
	case *pgproto3.Close:
		return strings.TrimSpace(fmt.Sprintf("Close %c %s", m.ObjectType, m.Name))
	case *pgproto3.Execute:
		return "Execute"
	case *pgproto3.Sync:
		return "Sync"
	case *pgproto3.Flush:
		return "Flush"
	case *pgproto3.CopyData:
		return "CopyData"
	case *pgproto3.CopyDone:
		return "CopyDone"
	case *pgproto3.CopyFail:
		return "CopyFail"
	case *pgproto3.Terminate:
		return "Terminate"
	}
	return fmt.Sprintf("%T", msg)
}

// startRecProxy listens on a loopback port and forwards every connection to
// server, recording what the client sends. Server replies pass unchanged.
// A client's message is recorded before it is forwarded, so once the client
// has the server's answer, the trace holds everything it sent for it.
func startRecProxy(t *testing.T, server string) (*recorder, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Go(func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return // listener closed
			}
			track(client)
			wg.Go(func() {
				if err := recForward(client, server, rec, track); err != nil {
					rec.add("proxy error: " + err.Error())
				}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return rec, ln.Addr().(*net.TCPAddr).Port
}

// recForward relays one client connection to server.
func recForward(client net.Conn, server string, rec *recorder, track func(net.Conn)) error {
	defer client.Close()
	be := pgproto3.NewBackend(client, client)
	startup, err := be.ReceiveStartupMessage()
	if err != nil {
		return fmt.Errorf("startup: %w", err)
	}
	switch startup.(type) {
	case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
		// Refuse encryption; the client then sends its StartupMessage.
		rec.add(fmt.Sprintf("%T", startup))
		if _, err := client.Write([]byte{'N'}); err != nil {
			return err
		}
		if startup, err = be.ReceiveStartupMessage(); err != nil {
			return fmt.Errorf("startup: %w", err)
		}
	}
	rec.add(strings.TrimPrefix(fmt.Sprintf("%T", startup), "*pgproto3."))
	srv, err := net.Dial("tcp", server)
	if err != nil {
		return err
	}
	track(srv)
	defer srv.Close()
	buf, err := startup.Encode(nil)
	if err != nil {
		return err
	}
	if _, err := srv.Write(buf); err != nil {
		return err
	}
	go func() {
		io.Copy(client, srv)
		client.Close()
	}()
	if _, ok := startup.(*pgproto3.CancelRequest); ok {
		io.Copy(io.Discard, client) // the server closes after a cancel request
		return nil
	}
	for {
		msg, err := be.Receive()
		if err != nil {
			return nil // client gone (Terminate, Close, or test cleanup)
		}
		rec.add(recEntry(msg))
		if buf, err = msg.Encode(buf[:0]); err != nil {
			return err
		}
		if _, err := srv.Write(buf); err != nil {
			return nil
		}
	}
}

// recFixture is one target database with tables t (keyed) and k (keyless),
// a checkpoint row at End 100 for pipeline "p", a direct connection for
// checking, and a Target connected through a recording proxy.
type recFixture struct {
	ctx    context.Context
	db     *pgx.Conn // straight to the server, not recorded
	target *Target
	rec    *recorder
	open   checkpoint.Row // what Open returned
}

// Source relations for the fixture's tables, built as pgoutput would
// announce them.
var (
	recT = &source.Relation{ID: 16401, Schema: "public", Name: "t", Identity: source.IdentityDefault,
		Columns: []source.Column{
			{Name: "id", Type: 23, TypeMod: -1, Key: true},
			{Name: "v", Type: 25, TypeMod: -1},
		}}
	// REPLICA IDENTITY FULL: pgoutput flags every column as identity.
	recK = &source.Relation{ID: 16402, Schema: "public", Name: "k", Identity: source.IdentityFull,
		Columns: []source.Column{
			{Name: "a", Type: 23, TypeMod: -1, Key: true},
			{Name: "b", Type: 25, TypeMod: -1, Key: true},
		}}
)

func newRecFixture(t *testing.T, pg *harness.Postgres) *recFixture {
	t.Helper()
	return newRecFixtureWith(t, pg, Config{})
}

// newPlainRecFixture is a fixture whose Target applies every change on
// its own (Config.Plain), for tests of that statement sequence.
func newPlainRecFixture(t *testing.T, pg *harness.Postgres) *recFixture {
	t.Helper()
	return newRecFixtureWith(t, pg, Config{Plain: true})
}

func newRecFixtureWith(t *testing.T, pg *harness.Postgres, cfg Config) *recFixture {
	t.Helper()
	ctx := t.Context()
	name := "rec_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	name = name[:min(len(name), 63)]
	if err := pg.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, pg.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, `CREATE TABLE t (id int PRIMARY KEY, v text);
		CREATE TABLE k (a int, b text)`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := checkpoint.PGEnsure(ctx, db, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100}); err != nil {
		t.Fatal(err)
	}

	rec, port := startRecProxy(t, fmt.Sprintf("127.0.0.1:%d", pg.Port))
	cfg.DSN, cfg.Pipeline = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, name), "p"
	target, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close(context.Background()) }) // runs before the proxy's cleanup
	open, err := target.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if open.End != 100 || open.Commit != 100 {
		t.Fatalf("Open returned checkpoint commit %s end %s, want 0/64 0/64", open.Commit, open.End)
	}
	if tr := rec.trace(); !slices.Contains(tr, "StartupMessage") {
		t.Fatalf("the Target did not connect through the proxy; trace: %q", tr)
	}
	rec.reset()
	return &recFixture{ctx: ctx, db: db, target: target, rec: rec, open: open}
}

// rows returns the query's rows, each as its values joined by "|".
func (f *recFixture) rows(t *testing.T, sql string) []string {
	t.Helper()
	rows, err := f.db.Query(f.ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkpointRow is the stored checkpoint as "commit|end|xid|commit_time".
func (f *recFixture) checkpointRow(t *testing.T) string {
	t.Helper()
	r := f.rows(t, `SELECT commit_lsn::text, end_lsn::text, xid,
		to_char(commit_time AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')
		FROM decant.checkpoint WHERE pipeline = 'p'`)
	if len(r) != 1 {
		t.Fatalf("checkpoint rows = %q, want one", r)
	}
	return r[0]
}

func (f *recFixture) wantRows(t *testing.T, sql string, want ...string) {
	t.Helper()
	if got := f.rows(t, sql); !slices.Equal(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", sql, got, want)
	}
}

func recText(vals ...string) []source.Value {
	row := make([]source.Value, len(vals))
	for i, v := range vals {
		row[i] = source.Value{Kind: source.ValueText, Data: []byte(v)}
	}
	return row
}

var recNull = source.Value{Kind: source.ValueNull}

func recInsert(rel *source.Relation, vals ...string) source.Change {
	return source.Change{Op: source.OpInsert, Rel: rel, New: recText(vals...)}
}

// recUpdate is an UPDATE; old is nil when the source sent no old image
// (identity DEFAULT, key unchanged).
func recUpdate(rel *source.Relation, old, new []source.Value) source.Change {
	return source.Change{Op: source.OpUpdate, Rel: rel, Old: old, New: new}
}

func recDelete(rel *source.Relation, old []source.Value) source.Change {
	return source.Change{Op: source.OpDelete, Rel: rel, Old: old}
}

// Trace helpers.

func recCount(trace []string, entry string) int {
	n := 0
	for _, e := range trace {
		if e == entry {
			n++
		}
	}
	return n
}

func recCountPrefix(trace []string, prefix string) int {
	n := 0
	for _, e := range trace {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// recSplit cuts the trace at the first occurrence of entry.
func recSplit(t *testing.T, trace []string, entry string) (before, from []string) {
	t.Helper()
	i := slices.Index(trace, entry)
	if i < 0 {
		t.Fatalf("trace lacks %q:\n%s", entry, recShow(trace))
	}
	return trace[:i], trace[i:]
}

func recShow(trace []string) string { return "\t" + strings.Join(trace, "\n\t") }

// recNoWrites checks that a part of the trace executes nothing of the
// Target's own: only catalog lookups (pgx's cached statements) and
// preparing decant_N statements, which Parse but do not run them.
func recNoWrites(t *testing.T, part []string) {
	t.Helper()
	for _, e := range part {
		switch {
		case strings.HasPrefix(e, "Query "),
			strings.HasPrefix(e, "Bind decant_"),
			e == "Bind",
			strings.HasPrefix(e, "Parse ") && !strings.Contains(e, ": "), // unnamed: executed by a batch
			strings.HasPrefix(e, "Copy"):
			t.Errorf("%q is sent before the transaction's BEGIN", e)
		}
	}
}

var (
	recBegin      = "Parse BEGIN"
	recCheckpoint = "Parse " + recSQL(checkpoint.PGAdvance)
	recCommit     = "Query COMMIT"
	recRollback   = "Query ROLLBACK"
	// One statement of a batch after its Parse (or for a prepared one,
	// instead of it): bind, ask for the row description, execute.
	recExec     = []string{"Bind", "Describe P", "Execute"}
	recInsertT  = `INSERT INTO "public"."t" ("id", "v") VALUES ($1, $2)`
	recUpdateT  = `UPDATE ONLY "public"."t" SET "id" = $1, "v" = $2 WHERE "id" = $3`
	recDeleteT  = `DELETE FROM ONLY "public"."t" WHERE "id" = $1`
	recCopyT    = `Query COPY "public"."t" ("id", "v") FROM STDIN`
	recCommitAt = time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
)

// recPrepared is a prepared statement's entries in a batch.
func recPrepared(name string) []string { return []string{"Bind " + name, "Describe P", "Execute"} }

// recSeq concatenates trace parts.
func recSeq(parts ...[]string) []string { return slices.Concat(parts...) }

func TestRecordingTarget(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})

	t.Run("commit writes rows and checkpoint in one transaction", func(t *testing.T) {
		f := newPlainRecFixture(t, pg)
		txn := &source.Txn{Xid: 7, Commit: 200, CommitTime: recCommitAt}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recInsert(recT, "1", "a"),
			recInsert(recT, "2", "b"),
			recInsert(recT, "3", "c"),
			recUpdate(recT, nil, recText("2", "B")),
			recDelete(recT, []source.Value{{Kind: source.ValueText, Data: []byte("3")}, recNull}),
		})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		// Apply only queues short runs and row statements: nothing of the
		// transaction has reached the server yet.
		if tr := f.rec.trace(); slices.Contains(tr, recBegin) {
			t.Errorf("BEGIN was sent before Commit:\n%s", recShow(tr))
		}
		cp := checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 200, End: 210, Xid: 7, CommitTime: recCommitAt}
		if err := f.target.Commit(f.ctx, cp); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))

		lookups, txTrace := recSplit(t, tr, recBegin)
		// Before the transaction: catalog lookups of the target table and
		// one Prepare round trip per statement shape, in first-use order.
		recNoWrites(t, lookups)
		for _, p := range []string{"decant_1: " + recInsertT, "decant_2: " + recUpdateT, "decant_3: " + recDeleteT} {
			_, prep := recSplit(t, lookups, "Parse "+p)
			if want := []string{"Parse " + p, "Describe S " + p[:8], "Sync"}; !slices.Equal(prep[:min(3, len(prep))], want) {
				t.Errorf("prepare of %s: got %q, want %q", p[:8], prep[:min(3, len(prep))], want)
			}
		}
		// The transaction: one batch (BEGIN, the rows in source order, the
		// checkpoint, one Sync), then COMMIT as a simple query.
		want := recSeq(
			[]string{recBegin}, recExec,
			recPrepared("decant_1"), recPrepared("decant_1"), recPrepared("decant_1"),
			recPrepared("decant_2"),
			recPrepared("decant_3"),
			[]string{recCheckpoint}, recExec,
			[]string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}
		if n := recCount(tr, recCommit); n != 1 {
			t.Errorf("COMMIT sent %d times, want 1", n)
		}
		if i, j := slices.Index(tr, recCheckpoint), slices.Index(tr, recCommit); i < 0 || j < i {
			t.Errorf("checkpoint at %d, COMMIT at %d: the checkpoint must be written before COMMIT", i, j)
		}
		// Sync ends each extended-protocol round trip. 14 of them:
		//   10 catalog lookups of public.t (Inspect: 5 queries, each a
		//      Prepare and an Execute round trip with pgx's statement cache)
		//   3  Prepare of the INSERT, UPDATE and DELETE (once per session)
		//   1  the batch: BEGIN, 5 row statements, checkpoint
		// COMMIT is a simple Query (its own round trip, no Sync). A second
		// transaction of the same shapes needs only the batch and COMMIT
		// (see "group commit").
		if n := recCount(tr, "Sync"); n != 14 {
			t.Errorf("%d Syncs, want 14", n)
		}
		if n := recCount(txTrace, "Sync"); n != 1 {
			t.Errorf("the transaction took %d round trips before COMMIT, want 1", n)
		}

		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|a", "2|B")
		if got, want := f.checkpointRow(t), "0/C8|0/D2|7|2024-05-06 07:08:09.123456"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
		if stored, err := checkpoint.PGRead(f.ctx, f.db, "p"); err != nil || stored.End != 210 || stored.Commit != 200 || stored.Xid != 7 || !stored.CommitTime.Equal(recCommitAt) {
			t.Errorf("PGRead = %+v, %v", stored, err)
		}
	})

	t.Run("a long insert run goes as one COPY", func(t *testing.T) {
		f := newRecFixture(t, pg)
		txn := &source.Txn{Xid: 8, Commit: 300}
		var changes []source.Change
		for i := 1; i <= 50; i++ {
			changes = append(changes, recInsert(recT, fmt.Sprint(i), fmt.Sprintf("v%d", i)))
		}
		// COPY's text format needs these escaped.
		changes[48].New[1] = recNull
		changes[49].New[1] = source.Value{Kind: source.ValueText, Data: []byte("tab\there\\back\nline\r\\N")}
		if err := f.target.Apply(f.ctx, txn, changes); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 300, End: 310, Xid: 8}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		lookups, txTrace := recSplit(t, tr, recBegin)
		recNoWrites(t, lookups)
		if n := recCountPrefix(tr, "Parse decant_"); n != 0 {
			t.Errorf("%d statements prepared, want none: the run must not become INSERTs", n)
		}
		if n := recCountPrefix(tr, "Bind decant_"); n != 0 {
			t.Errorf("%d prepared statements executed, want 0", n)
		}
		// BEGIN goes in its own round trip first, so the COPY runs inside
		// the transaction; the checkpoint and COMMIT follow the COPY.
		copyData := recCount(txTrace, "CopyData")
		if copyData < 1 {
			t.Errorf("no CopyData")
		}
		want := recSeq(
			[]string{recBegin}, recExec, []string{"Sync"},
			[]string{recCopyT}, slices.Repeat([]string{"CopyData"}, copyData), []string{"CopyDone"},
			[]string{recCheckpoint}, recExec, []string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}

		f.wantRows(t, `SELECT count(*), count(v), min(id), max(id) FROM t`, "50|49|1|50")
		f.wantRows(t, `SELECT v FROM t WHERE id IN (1, 48, 49, 50) ORDER BY id`,
			"v1", "v48", "<nil>", "tab\there\\back\nline\r\\N")
		if got, want := f.checkpointRow(t), "0/12C|0/136|8|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("group commit", func(t *testing.T) {
		f := newPlainRecFixture(t, pg)
		txn1 := &source.Txn{Xid: 8, Commit: 300}
		txn2 := &source.Txn{Xid: 9, Commit: 400, CommitTime: recCommitAt}
		if err := f.target.Apply(f.ctx, txn1, []source.Change{recInsert(recT, "1", "one")}); err != nil {
			t.Fatalf("Apply txn1: %v", err)
		}
		if err := f.target.Apply(f.ctx, txn2, []source.Change{
			recInsert(recT, "2", "two"),
			recUpdate(recT, nil, recText("1", "uno")),
		}); err != nil {
			t.Fatalf("Apply txn2: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 400, End: 410, Xid: 9, CommitTime: recCommitAt}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		if n := recCount(tr, recBegin); n != 1 {
			t.Errorf("%d BEGINs, want 1", n)
		}
		if n := recCount(tr, recCommit); n != 1 {
			t.Errorf("%d COMMITs, want 1", n)
		}
		if n := recCount(tr, recCheckpoint); n != 1 {
			t.Errorf("%d checkpoint writes, want 1", n)
		}
		_, txTrace := recSplit(t, tr, recBegin)
		want := recSeq(
			[]string{recBegin}, recExec,
			recPrepared("decant_1"), // txn1's insert
			recPrepared("decant_1"), // txn2's insert
			recPrepared("decant_2"), // txn2's update
			[]string{recCheckpoint}, recExec,
			[]string{"Sync", recCommit},
		)
		if !slices.Equal(txTrace, want) {
			t.Errorf("transaction trace:\n%s\nwant:\n%s", recShow(txTrace), recShow(want))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|uno", "2|two")
		if got, want := f.checkpointRow(t), "0/190|0/19A|9|2024-05-06 07:08:09.123456"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}

		// The next transaction of known shapes: no lookups, no prepares,
		// just the batch and COMMIT.
		f.rec.reset()
		txn3 := &source.Txn{Xid: 10, Commit: 500}
		if err := f.target.Apply(f.ctx, txn3, []source.Change{recInsert(recT, "3", "three")}); err != nil {
			t.Fatalf("Apply txn3: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 500, End: 510, Xid: 10}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		want = recSeq([]string{recBegin}, recExec, recPrepared("decant_1"), []string{recCheckpoint}, recExec, []string{"Sync", recCommit})
		if tr := f.rec.trace(); !slices.Equal(tr, want) {
			t.Errorf("warm transaction trace:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
	})

	t.Run("rollback", func(t *testing.T) {
		f := newPlainRecFixture(t, pg)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO t VALUES (1, 'keep')`); err != nil {
			t.Fatal(err)
		}
		// Ten inserts go as COPY, which sends BEGIN and the rows to the
		// server inside Apply; the UPDATE after them stays queued.
		var changes []source.Change
		for i := 2; i <= 11; i++ {
			changes = append(changes, recInsert(recT, fmt.Sprint(i), "new"))
		}
		changes = append(changes, recUpdate(recT, nil, recText("1", "changed")))
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 11, Commit: 600}, changes); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if !slices.Contains(f.rec.trace(), "CopyDone") {
			t.Fatalf("the rows were not sent before Rollback:\n%s", recShow(f.rec.trace()))
		}
		// Sent, but not visible: they are inside the open transaction.
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|keep")
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", recShow(tr))
		if len(tr) == 0 || tr[len(tr)-1] != recRollback {
			t.Errorf("trace does not end with ROLLBACK:\n%s", recShow(tr))
		}
		for _, e := range []string{recCommit, recCheckpoint, "Bind decant_2"} {
			if slices.Contains(tr, e) {
				t.Errorf("trace has %q:\n%s", e, recShow(tr))
			}
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|keep")
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}

		// The Target is usable after a rollback, nothing of the abandoned
		// transaction (its queued UPDATE) comes back, and the UPDATE
		// prepared inside the rolled-back transaction is still prepared
		// (protocol-level prepared statements are not transactional), so
		// the Target's statement cache is still right.
		f.rec.reset()
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 12, Commit: 700}, []source.Change{
			recInsert(recT, "20", "after"),
			recUpdate(recT, nil, recText("1", "kept")),
		}); err != nil {
			t.Fatalf("Apply after rollback: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 700, End: 710, Xid: 12}); err != nil {
			t.Fatalf("Commit after rollback: %v", err)
		}
		tr = f.rec.trace()
		want := recSeq(
			[]string{"Parse decant_2: " + recInsertT, "Describe S decant_2", "Sync"}, // the UPDATE is decant_1 already
			[]string{recBegin}, recExec, recPrepared("decant_2"), recPrepared("decant_1"),
			[]string{recCheckpoint}, recExec, []string{"Sync", recCommit})
		if !slices.Equal(tr, want) {
			t.Errorf("trace after rollback:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|kept", "20|after")
	})

	t.Run("idle checkpoint advance", func(t *testing.T) {
		f := newRecFixture(t, pg)
		cp := f.open
		cp.End = 300
		if err := f.target.Commit(f.ctx, cp); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		// The UPDATE alone, committed by the implicit transaction of its
		// batch: no BEGIN, no COMMIT.
		want := recSeq([]string{recCheckpoint}, recExec, []string{"Sync"})
		if tr := f.rec.trace(); !slices.Equal(tr, want) {
			t.Errorf("trace:\n%s\nwant:\n%s", recShow(tr), recShow(want))
		}
		if got, want := f.checkpointRow(t), "0/64|0/12C|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("checkpoint regression", func(t *testing.T) {
		f := newRecFixture(t, pg)
		// Another agent has moved the checkpoint to 0/3E8.
		if _, err := f.db.Exec(f.ctx, `UPDATE decant.checkpoint SET end_lsn = '0/3E8', commit_lsn = '0/3E0'`); err != nil {
			t.Fatal(err)
		}
		if err := f.target.Apply(f.ctx, &source.Txn{Xid: 13, Commit: 800}, []source.Change{recInsert(recT, "1", "late")}); err != nil {
			t.Fatalf("Apply: %v", err)
		}
		err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 800, End: 810, Xid: 13})
		if !errors.Is(err, checkpoint.ErrRegressed) {
			t.Fatalf("Commit = %v, want ErrRegressed", err)
		}
		var ae *apply.Error
		if !errors.As(err, &ae) || ae.Op != "checkpoint" || ae.Xid != 13 || ae.Commit != 800 {
			t.Errorf("Commit error = %#v, want *apply.Error for the checkpoint of xid 13", err)
		}
		if slices.Contains(f.rec.trace(), recCommit) {
			t.Errorf("COMMIT sent after a failed checkpoint:\n%s", recShow(f.rec.trace()))
		}
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		if tr := f.rec.trace(); len(tr) == 0 || tr[len(tr)-1] != recRollback {
			t.Errorf("trace does not end with ROLLBACK:\n%s", recShow(tr))
		}
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`)
		if got, want := f.checkpointRow(t), "0/3E0|0/3E8|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("update of a missing row", func(t *testing.T) {
		f := newRecFixture(t, pg)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO t VALUES (1, 'present')`); err != nil {
			t.Fatal(err)
		}
		txn := &source.Txn{Xid: 14, Commit: 900}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recUpdate(recT, nil, recText("1", "updated")),
			recUpdate(recT, nil, recText("987654", "SECRET")),
		})
		// Row statements are pipelined: the miss shows when the batch is
		// sent, here at Commit.
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		err = f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 900, End: 910, Xid: 14})
		var ae *apply.Error
		if !errors.As(err, &ae) {
			t.Fatalf("Commit = %v, want *apply.Error", err)
		}
		if ae.Op != "update" || ae.Table != recT.Table() || ae.Xid != 14 || ae.Commit != 900 {
			t.Errorf("error names op %q table %s xid %d commit %s, want update public.t 14 0/384", ae.Op, ae.Table, ae.Xid, ae.Commit)
		}
		msg := err.Error()
		t.Logf("error: %s", msg)
		for _, want := range []string{"update", "public.t", "xid 14", "no target row matches"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		for _, secret := range []string{"SECRET", "987654", "updated"} {
			if strings.Contains(msg, secret) {
				t.Errorf("error %q contains row value %q", msg, secret)
			}
		}
		if slices.Contains(f.rec.trace(), recCommit) {
			t.Errorf("COMMIT sent after a failed update:\n%s", recShow(f.rec.trace()))
		}
		if err := f.target.Rollback(f.ctx); err != nil {
			t.Fatalf("Rollback: %v", err)
		}
		// The first update ran in the batch too; it is rolled back with
		// the transaction.
		f.wantRows(t, `SELECT id, v FROM t ORDER BY id`, "1|present")
		if got, want := f.checkpointRow(t), "0/64|0/64|<nil>|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	t.Run("keyless table changes one duplicate at a time", func(t *testing.T) {
		f := newRecFixture(t, pg)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO k VALUES (1, 'dup'), (1, 'dup'), (1, 'dup'), (2, NULL)`); err != nil {
			t.Fatal(err)
		}
		dup := recText("1", "dup")
		err := f.target.Apply(f.ctx, &source.Txn{Xid: 15, Commit: 1000}, []source.Change{
			recUpdate(recK, dup, recText("1", "changed")),
			recDelete(recK, dup),
			recDelete(recK, []source.Value{{Kind: source.ValueText, Data: []byte("2")}, recNull}),
		})
		if err != nil {
			t.Fatalf("Apply: %v", err)
		}
		if err := f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 1000, End: 1010, Xid: 15}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
		f.wantRows(t, `SELECT a, b, count(*) FROM k GROUP BY a, b ORDER BY b`, "1|changed|1", "1|dup|1")
		if got, want := f.checkpointRow(t), "0/3E8|0/3F2|15|<nil>"; got != want {
			t.Errorf("checkpoint = %q, want %q", got, want)
		}
	})

	// A whole-row match takes a statement per pattern of NULL old values;
	// once the session holds maxPrepared statements, new shapes are sent
	// unprepared and still find their row.
	t.Run("shapes past maxPrepared go unprepared", func(t *testing.T) {
		f := newRecFixture(t, pg)
		if _, err := f.db.Exec(f.ctx, `INSERT INTO k VALUES (1, NULL), (NULL, 'x')`); err != nil {
			t.Fatal(err)
		}
		for i := range maxPrepared {
			f.target.stmts[fmt.Sprintf("-- filler %d", i)] = fmt.Sprintf("filler_%d", i)
		}
		txn := &source.Txn{Xid: 16, Commit: 1100, CommitTime: recCommitAt}
		err := f.target.Apply(f.ctx, txn, []source.Change{
			recDelete(recK, []source.Value{{Kind: source.ValueText, Data: []byte("1")}, recNull}),
			recUpdate(recK, []source.Value{recNull, {Kind: source.ValueText, Data: []byte("x")}}, recText("2", "y")),
		})
		if err == nil {
			err = f.target.Commit(f.ctx, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 1100, End: 1110, Xid: 16})
		}
		if err != nil {
			t.Fatal(err)
		}
		if n := len(f.target.stmts); n != maxPrepared {
			t.Errorf("the session prepared %d statements, want %d", n, maxPrepared)
		}
		if tr := f.rec.trace(); recCountPrefix(tr, "Parse decant_") != 0 {
			t.Errorf("statements were prepared past the bound:\n%s", recShow(tr))
		}
		f.wantRows(t, `SELECT a, b FROM k`, "2|y")
	})
}
