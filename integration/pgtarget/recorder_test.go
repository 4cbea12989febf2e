// Package pgtarget tests the PostgreSQL writer (apply/pg) against real
// PostgreSQL 15 servers that the harness starts, most of them through a
// recording proxy that shows what the writer said on the wire. The
// writer's server-free tests stay beside it in apply/pg.
package pgtarget

import (
	"context"
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

	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
)

// The tests of this package put a recording proxy between a Target and a real
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
	next chan struct{} // closed by the next add: waitCount waits on it
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.msgs = append(r.msgs, s)
	if r.next != nil {
		close(r.next)
		r.next = nil
	}
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

// count returns how often the trace holds entry, and a channel closed
// when the next entry comes.
func (r *recorder) count(entry string) (int, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.next == nil {
		r.next = make(chan struct{})
	}
	return recCount(r.msgs, entry), r.next
}

// recWaitCount waits until the trace holds entry n times: a client's
// Terminate reaches the proxy after the client has moved on.
func recWaitCount(t testing.TB, rec *recorder, entry string, n int) {
	t.Helper()
	recWaitUntil(t, rec, func(tr []string) bool { return recCount(tr, entry) == n },
		func(tr []string) string {
			return fmt.Sprintf("%q sent %d times, want %d", entry, recCount(tr, entry), n)
		})
}

// recWaitUntil waits until ok holds for the trace; after 5 s the test
// fails with what fail says of it, and the trace.
func recWaitUntil(t testing.TB, rec *recorder, ok func(trace []string) bool, fail func(trace []string) string) {
	t.Helper()
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for {
		_, next := rec.count("") // closed by the next entry
		if ok(rec.trace()) {
			return
		}
		select {
		case <-next:
		case <-timeout.C:
			tr := rec.trace()
			t.Errorf("%s:\n%s", fail(tr), recShow(tr))
			return
		}
	}
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
func startRecProxy(t testing.TB, server string) (*recorder, int) {
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
	target *pg.Target
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

func newRecFixture(t testing.TB, srv *harness.Postgres) *recFixture {
	t.Helper()
	return newRecFixtureWith(t, srv, pg.Config{})
}

// newPlainRecFixture is a fixture whose Target applies every change on
// its own (Config.Plain), for tests of that statement sequence.
func newPlainRecFixture(t *testing.T, srv *harness.Postgres) *recFixture {
	t.Helper()
	return newRecFixtureWith(t, srv, pg.Config{Plain: true})
}

func newRecFixtureWith(t testing.TB, srv *harness.Postgres, cfg pg.Config) *recFixture {
	t.Helper()
	ctx := t.Context()
	name := "rec_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	name = name[:min(len(name), 63)]
	if err := srv.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, srv.DSN(name))
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

	rec, port := startRecProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))
	cfg.DSN, cfg.Pipeline = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, name), "p"
	target, err := pg.New(cfg)
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
