package integration

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// The tests in this file put a recording proxy between apply/mysql's
// Target and MariaDB, drive the Target with apply.Pipeline from a
// scripted source, and check the statements the Target sent, in order and
// by round trip, and then the rows: the MySQL counterpart of
// apply/pg/target_test.go.
//
// The proxy reads the MySQL client/server protocol: every packet is a
// 3-byte little-endian payload length, a sequence id and the payload (a
// payload of 0xFFFFFF bytes continues in the next packet); a command is a
// client packet with sequence id 0, whose first byte says which. It
// records COM_QUERY's statements one by one (a batch is one COM_QUERY),
// and COM_STMT_PREPARE / EXECUTE / CLOSE by the SQL prepared, which it
// learns from the id in the server's answer to the prepare. It forwards
// every packet unchanged, in reads of a few bytes, so that packets and
// their headers arrive split.

// myPacket is one logical packet: what crossed the wire (raw, forwarded
// unchanged), its sequence id and its payload.
type myPacket struct {
	raw     []byte
	seq     byte
	payload []byte
}

// myMaxPayload is the largest payload of one packet; a packet that long
// is followed by the rest of the payload.
const myMaxPayload = 0xFFFFFF

// readMyPacket reads one logical packet. io.EOF means the peer closed
// between packets; a packet cut short is io.ErrUnexpectedEOF.
func readMyPacket(r io.Reader) (myPacket, error) {
	var p myPacket
	for {
		var h [4]byte
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if err == io.EOF && len(p.raw) > 0 {
				err = io.ErrUnexpectedEOF
			}
			return p, err
		}
		n := int(h[0]) | int(h[1])<<8 | int(h[2])<<16
		if len(p.raw) == 0 {
			p.seq = h[3]
		}
		p.raw = append(p.raw, h[:]...)
		at := len(p.raw)
		p.raw = append(p.raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, p.raw[at:]); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return p, err
		}
		p.payload = append(p.payload, p.raw[at:]...)
		if n < myMaxPayload {
			return p, nil
		}
	}
}

// Commands and capability flags the proxy knows (MySQL's
// include/my_command.h and mysql_com.h; MariaDB's are the same).
const (
	comQuit        = 0x01
	comQuery       = 0x03
	comPing        = 0x0e
	comStmtPrepare = 0x16
	comStmtExecute = 0x17
	comStmtClose   = 0x19

	capCompress        = 1 << 5
	capProtocol41      = 1 << 9
	capSSL             = 1 << 11
	capQueryAttributes = 1 << 27
)

// myStmt is one recorded statement: on which proxied connection, in which
// of its commands (a round trip), and what.
type myStmt struct {
	conn, cmd int
	sql       string
}

// myRecorder is what the clients of a proxy sent.
type myRecorder struct {
	mu     sync.Mutex
	stmts  []myStmt
	errs   []string
	notify chan struct{} // closed and replaced on every statement
}

func newMyRecorder() *myRecorder { return &myRecorder{notify: make(chan struct{})} }

func (r *myRecorder) add(s myStmt) {
	r.mu.Lock()
	r.stmts = append(r.stmts, s)
	close(r.notify)
	r.notify = make(chan struct{})
	r.mu.Unlock()
}

func (r *myRecorder) fail(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err.Error())
	r.mu.Unlock()
}

// trace returns the statements recorded since the last reset.
func (r *myRecorder) trace() []myStmt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.stmts)
}

func (r *myRecorder) reset() {
	r.mu.Lock()
	r.stmts = nil
	r.mu.Unlock()
}

// errors returns what the proxy could not read or forward.
func (r *myRecorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// waitFor waits until a statement starting with prefix is recorded.
func (r *myRecorder) waitFor(ctx context.Context, prefix string) error {
	for {
		r.mu.Lock()
		seen := slices.ContainsFunc(r.stmts, func(s myStmt) bool { return strings.HasPrefix(s.sql, prefix) })
		ch := r.notify
		r.mu.Unlock()
		if seen {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %q: %w", prefix, ctx.Err())
		}
	}
}

// myConnState is what the proxy tracks of one client connection.
type myConnState struct {
	rec  *myRecorder
	conn int
	cmds int // commands so far

	mu      sync.Mutex
	pending []string          // SQL of prepares the server has not answered yet
	stmts   map[uint32]string // prepared statements by id
}

// handshake checks the client's first packet (HandshakeResponse41, or an
// SSLRequest): the proxy reads plain 4.1 packets only.
func (c *myConnState) handshake(p myPacket) error {
	if len(p.payload) < 4 {
		return fmt.Errorf("connection %d: a handshake response of %d bytes", c.conn, len(p.payload))
	}
	caps := binary.LittleEndian.Uint32(p.payload)
	switch {
	case caps&capProtocol41 == 0:
		return fmt.Errorf("connection %d: the client speaks the protocol before 4.1", c.conn)
	case caps&(capSSL|capCompress|capQueryAttributes) != 0:
		return fmt.Errorf("connection %d: the client asks for TLS, compression or query attributes (capabilities %#x), which the proxy cannot read", c.conn, caps)
	}
	return nil
}

// command records a client command (a packet with sequence id 0).
func (c *myConnState) command(p myPacket) error {
	if len(p.payload) == 0 {
		return fmt.Errorf("connection %d: an empty command packet", c.conn)
	}
	c.cmds++
	add := func(sql string) { c.rec.add(myStmt{conn: c.conn, cmd: c.cmds, sql: sql}) }
	arg := p.payload[1:]
	switch p.payload[0] {
	case comQuery:
		for _, s := range splitSQL(string(arg)) {
			add(s)
		}
	case comStmtPrepare:
		sql := collapseSQL(string(arg))
		c.mu.Lock()
		c.pending = append(c.pending, sql)
		c.mu.Unlock()
		add("PREPARE " + sql)
	case comStmtExecute, comStmtClose:
		if len(arg) < 4 {
			return fmt.Errorf("connection %d: command %#x of %d bytes", c.conn, p.payload[0], len(p.payload))
		}
		id := binary.LittleEndian.Uint32(arg)
		c.mu.Lock()
		sql, ok := c.stmts[id]
		if p.payload[0] == comStmtClose {
			delete(c.stmts, id)
		}
		c.mu.Unlock()
		if !ok {
			return fmt.Errorf("connection %d: statement id %d was never prepared", c.conn, id)
		}
		add(map[byte]string{comStmtExecute: "EXECUTE ", comStmtClose: "CLOSE "}[p.payload[0]] + sql)
	case comQuit:
		add("QUIT")
	case comPing:
		add("PING")
	default:
		add(fmt.Sprintf("COMMAND %#x", p.payload[0]))
	}
	return nil
}

// answer looks at a server packet: the first of the answer to a prepare
// (sequence id 1) carries the statement's id (COM_STMT_PREPARE_OK: 0x00,
// then the id), or is an error (0xFF). The client sends nothing before it
// has the whole answer to its previous command, so the first packet with
// sequence id 1 after a prepare is its answer.
func (c *myConnState) answer(p myPacket) {
	if p.seq != 1 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return
	}
	sql := c.pending[0]
	c.pending = c.pending[1:]
	if len(p.payload) >= 5 && p.payload[0] == 0x00 {
		c.stmts[binary.LittleEndian.Uint32(p.payload[1:])] = sql
	}
}

// collapseSQL turns runs of white space outside quotes into one space.
func collapseSQL(q string) string {
	out := splitSQLWith(q, false)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

// splitSQL splits a multi-statement query at the semicolons outside
// quotes ('...', "..." with backslash escapes; `...`), collapsing white
// space outside quotes. decant's statements carry no comments.
func splitSQL(q string) []string { return splitSQLWith(q, true) }

func splitSQLWith(q string, split bool) []string {
	var out []string
	var b strings.Builder
	space := false
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
		}
		b.Reset()
		space = false
	}
	write := func(s string) {
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteString(s)
	}
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`':
			end := quotedEnd(q, i)
			write(q[i:end])
			i = end - 1
		case c == ';' && split:
			flush()
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			space = true
		default:
			write(q[i : i+1])
		}
	}
	flush()
	return out
}

// quotedEnd is the index after the quote that closes the one at q[i] (a
// doubled quote reads as two quoted parts back to back, the same text).
func quotedEnd(q string, i int) int {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		switch {
		case q[j] == '\\' && quote != '`':
			j++
		case q[j] == quote:
			return j + 1
		}
	}
	return len(q)
}

// chopReader returns at most n bytes per Read, so that packets and their
// headers arrive in pieces.
type chopReader struct {
	r io.Reader
	n int
}

func (c chopReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// startMyProxy listens on a loopback port and forwards every connection to
// server, recording what the clients send.
func startMyProxy(t *testing.T, server string) (*myRecorder, int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := newMyRecorder()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
		n     int
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
			n++
			st := &myConnState{rec: rec, conn: n, stmts: map[uint32]string{}}
			wg.Go(func() {
				if err := myForward(client, server, st, track); err != nil {
					rec.fail(err)
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
		if errs := rec.errors(); len(errs) > 0 {
			t.Errorf("proxy errors: %q", errs)
		}
	})
	return rec, ln.Addr().(*net.TCPAddr).Port
}

// myForward relays one client connection to server, packet by packet in
// both directions.
func myForward(client net.Conn, server string, st *myConnState, track func(net.Conn)) error {
	defer client.Close()
	srv, err := net.Dial("tcp", server)
	if err != nil {
		return err
	}
	track(srv)
	defer srv.Close()
	done := make(chan error, 1)
	go func() {
		done <- relay(chopReader{srv, 5}, client, st.answer)
		client.Close()
	}()
	first := true
	err = relay(chopReader{client, 7}, srv, func(p myPacket) {
		var err error
		switch {
		case first:
			first, err = false, st.handshake(p)
		case p.seq == 0:
			err = st.command(p)
		}
		if err != nil {
			st.rec.fail(err)
		}
	})
	srv.Close()
	if serr := <-done; err == nil {
		err = serr
	}
	return err
}

// relay reads packets from r, shows each to see, and writes it to w, until
// either side closes; a close between packets is no error.
func relay(r io.Reader, w io.Writer, see func(myPacket)) error {
	for {
		p, err := readMyPacket(r)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		see(p)
		if _, err := w.Write(p.raw); err != nil {
			return nil // the other side is gone
		}
	}
}

// scriptSource is an apply.Source that streams chunks, then ends the
// session with what end returns (nil end: waits for the context, like a
// source with nothing more to send).
type scriptSource struct {
	server source.Server
	chunks []source.Chunk
	end    func(context.Context) error
}

func (s *scriptSource) Identify(context.Context) (source.Server, error) { return s.server, nil }

func (s *scriptSource) Stream(ctx context.Context, _ source.StreamRequest, out chan<- source.Chunk) error {
	for _, c := range s.chunks {
		select {
		case out <- c:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.end != nil {
		return s.end(ctx)
	}
	<-ctx.Done()
	return ctx.Err()
}

// myFixture is a database with table t and decant's tables, the
// checkpoint at 0/64 and t's definition stored, and a proxy in front of
// the server.
type myFixture struct {
	ctx   context.Context
	name  string  // the database
	db    *sql.DB // straight to the server
	proxy string  // the proxy's address
	dsn   string  // decant's DSN, through the proxy
	rec   *myRecorder
}

const myStmtsOID = 16390

var (
	myStmtsDef = &source.TableDef{OID: myStmtsOID, Name: source.TableName{Schema: "public", Name: "t"},
		Columns: []source.ColumnDef{
			{Attnum: 1, Name: "id", Type: 23, TypeMod: -1, SQLType: "integer", NotNull: true},
			{Attnum: 2, Name: "v", Type: 25, TypeMod: -1, SQLType: "text"},
		}, PrimaryKey: []string{"id"}}
	myStmtsRel = &source.Relation{ID: myStmtsOID, Schema: "public", Name: "t", Identity: source.IdentityDefault, Columns: []source.Column{
		{Name: "id", Type: 23, TypeMod: -1, Key: true},
		{Name: "v", Type: 25, TypeMod: -1},
	}}
	// After ALTER TABLE public.t ADD COLUMN w text.
	myStmtsDefW = &source.TableDef{OID: myStmtsOID, Name: myStmtsDef.Name,
		Columns:    append(slices.Clone(myStmtsDef.Columns), source.ColumnDef{Attnum: 3, Name: "w", Type: 25, TypeMod: -1, SQLType: "text"}),
		PrimaryKey: []string{"id"}}
	myStmtsRelW = &source.Relation{ID: myStmtsOID, Schema: "public", Name: "t", Identity: source.IdentityDefault,
		Columns: append(slices.Clone(myStmtsRel.Columns), source.Column{Name: "w", Type: 25, TypeMod: -1})}
	myCommitAt = time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
)

func newMyFixture(t *testing.T) *myFixture {
	t.Helper()
	ctx := t.Context()
	name := fmt.Sprintf("st%d_%s", pairSeq.Add(1), dbNameRe.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	name = name[:min(len(name), 60)]
	if err := targetMy.CreateDatabase(ctx, name); err != nil {
		t.Fatal(err)
	}
	cfg, err := mysql.ParseDSN(targetMy.DSN(name))
	if err != nil {
		t.Fatal(err)
	}
	connector, err := gomysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id int PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := checkpoint.MySQLEnsure(ctx, db, checkpoint.Row{Pipeline: "p", SystemID: "1", Commit: 100, End: 100, DDL: true}); err != nil {
		t.Fatal(err)
	}
	def, err := checkpoint.EncodeDef(myStmtsDef)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, checkpoint.MySQLSchemaSave, "p", uint64(myStmtsOID), string(def)); err != nil {
		t.Fatal(err)
	}
	rec, port := startMyProxy(t, fmt.Sprintf("127.0.0.1:%d", targetMy.Port))
	proxy := fmt.Sprintf("127.0.0.1:%d", port)
	return &myFixture{ctx: ctx, name: name, db: db, proxy: proxy, dsn: "mysql://decant:decant@" + proxy + "/" + name, rec: rec}
}

// run applies chunks with a fresh Target and Pipeline until the source's
// end (caught up at walEnd), or until end ends the session.
func (f *myFixture) run(t *testing.T, walEnd source.LSN, end func(context.Context) error, chunks ...source.Chunk) error {
	t.Helper()
	target, err := mysql.New(mysql.Config{DSN: f.dsn, Pipeline: "p", Plain: true})
	if err != nil {
		t.Fatal(err)
	}
	src := &scriptSource{server: source.Server{SystemID: "1", WALEnd: walEnd}, chunks: chunks, end: end}
	ctx, cancel := context.WithTimeout(f.ctx, time.Minute)
	defer cancel()
	return apply.New(apply.Config{CatchUp: true, GroupTxns: 1}, src, target).Run(ctx)
}

func (f *myFixture) rows(t *testing.T, query string) []string {
	t.Helper()
	rows, err := f.db.QueryContext(f.ctx, query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
			if !v.Valid {
				parts[i] = "NULL"
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *myFixture) wantRows(t *testing.T, query string, want ...string) {
	t.Helper()
	if got := f.rows(t, query); !slices.Equal(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", query, got, want)
	}
}

// checkpointRow is the stored checkpoint as
// "commit|end|xid|commit_time|partial_commit|partial_seq".
func (f *myFixture) checkpointRow(t *testing.T) string {
	t.Helper()
	r := f.rows(t, `SELECT commit_lsn, end_lsn, xid, DATE_FORMAT(commit_time, '%Y-%m-%d %H:%i:%s.%f'), partial_commit_lsn, partial_seq
		FROM decant_checkpoint WHERE pipeline = 'p'`)
	if len(r) != 1 {
		t.Fatalf("checkpoint rows %q, want one", r)
	}
	return r[0]
}

func myText(vals ...string) []source.Value {
	row := make([]source.Value, len(vals))
	for i, v := range vals {
		row[i] = source.Value{Kind: source.ValueText, Data: []byte(v)}
	}
	return row
}

func myInsert(rel *source.Relation, vals ...string) source.Change {
	return source.Change{Op: source.OpInsert, Rel: rel, New: myText(vals...)}
}

// Transactions of the scripts: A writes rows, B adds column w between
// rows. Each is one chunk, with its commit.
var (
	myTxnA = &source.Txn{Xid: 7, Commit: 200, CommitTime: myCommitAt}
	myTxnB = &source.Txn{Xid: 8, Commit: 300, CommitTime: myCommitAt.Add(time.Second)}
	myDDLW = source.Change{Op: source.OpDDL, DDL: &source.DDL{Tag: "ALTER TABLE", Statement: "ALTER TABLE public.t ADD COLUMN w text",
		Tables: []*source.TableDef{myStmtsDefW}}}
)

func myChunkA() source.Chunk {
	return source.Chunk{Txn: myTxnA, Commit: true, End: 210, Changes: []source.Change{
		myInsert(myStmtsRel, "1", "a"),
		myInsert(myStmtsRel, "2", "b"),
		myInsert(myStmtsRel, "3", "c"),
		{Op: source.OpUpdate, Rel: myStmtsRel, New: myText("2", "B")},
		{Op: source.OpDelete, Rel: myStmtsRel, Old: []source.Value{myText("3")[0], {Kind: source.ValueNull}}},
	}}
}

func myChangesB() []source.Change {
	return []source.Change{
		myInsert(myStmtsRel, "4", "d"),
		myInsert(myStmtsRel, "5", "e"),
		myDDLW,
		myInsert(myStmtsRelW, "6", "f", "w6"),
	}
}

// Statements as the proxy records them.
const (
	myBegin     = "START TRANSACTION"
	mySavepoint = "SAVEPOINT decant_batch"
	myCommit    = "COMMIT"
)

// myCheckpoint is the checkpoint update for the given values, as the
// driver interpolates it (the arguments are the ones the Target passes,
// so a new checkpoint column needs no change here).
func myCheckpoint(commit, end source.LSN, xid uint64, at time.Time, partialCommit source.LSN, partialSeq int) string {
	row := checkpoint.Row{Pipeline: "p", Commit: commit, End: end, Xid: xid, CommitTime: at, PartialCommit: partialCommit, PartialSeq: partialSeq}
	var lits []any
	for _, a := range row.MySQLAdvanceArgs() {
		switch a := a.(type) {
		case nil:
			lits = append(lits, "NULL")
		case string:
			lits = append(lits, "'"+a+"'")
		default:
			lits = append(lits, fmt.Sprint(a))
		}
	}
	return collapseSQL(fmt.Sprintf(strings.ReplaceAll(checkpoint.MySQLAdvance, "?", "%s"), lits...))
}

// myWrites is a trace from its first write (the first START TRANSACTION,
// or a checkpoint written alone): before it, the Target only reads the
// checkpoint and the table. QUIT, which has no answer, is left out: it
// may be recorded after the Target is gone.
func myWrites(t *testing.T, trace []myStmt) []myStmt {
	t.Helper()
	for i, s := range trace {
		if s.sql == myBegin || strings.HasPrefix(s.sql, "UPDATE decant_checkpoint ") {
			myNoWrites(t, trace[:i])
			return slices.DeleteFunc(slices.Clone(trace[i:]), func(s myStmt) bool { return s.sql == "QUIT" })
		}
	}
	t.Fatalf("nothing written:\n%s", myShow(trace))
	return nil
}

// myNoWrites checks that a part of a trace only reads and sets up the
// session.
func myNoWrites(t *testing.T, part []myStmt) {
	t.Helper()
	for _, s := range part {
		if !strings.HasPrefix(s.sql, "SELECT ") && !strings.HasPrefix(s.sql, "SET ") && s.sql != "PING" {
			t.Errorf("%q is sent before the first transaction", s.sql)
		}
	}
}

// myLookup is a Target's reads of a table's shape in information_schema
// (after a schema change it forgets them), which myShape shows as one
// entry: their text is the Target's business, not this test's.
const myLookup = "(look up table t)"

// myShape is a trace's SQL, a run of lookups of t's shape as myLookup
// and the stored definition as its head.
func myShape(trace []myStmt) []string {
	var out []string
	for _, s := range trace {
		sql := s.sql
		switch {
		case strings.HasPrefix(sql, "SELECT ") && strings.Contains(sql, "information_schema.") && !strings.Contains(sql, "COLUMN_NAME = "):
			if len(out) > 0 && out[len(out)-1] == myLookup {
				continue
			}
			sql = myLookup
		case strings.HasPrefix(sql, mySchemaSave):
			sql = mySchemaSave + "..."
		}
		out = append(out, sql)
	}
	return out
}

// mySchemaSave is how the statement storing t's definition begins.
const mySchemaSave = "INSERT INTO decant_schema (pipeline, table_oid, definition, updated) VALUES ('p', 16390, "

// myTrips is a trace's round trips (commands), each its statements as
// myShape shows them joined by "; ", and the Target's lookups of t's
// shape (several round trips in a row) as one myLookup.
func myTrips(trace []myStmt) []string {
	var out []string
	for start := 0; start < len(trace); {
		end := start + 1
		for end < len(trace) && trace[end].conn == trace[start].conn && trace[end].cmd == trace[start].cmd {
			end++
		}
		trip := strings.Join(myShape(trace[start:end]), "; ")
		if trip != myLookup || len(out) == 0 || out[len(out)-1] != myLookup {
			out = append(out, trip)
		}
		start = end
	}
	return out
}

func mySQL(trace []myStmt) []string {
	out := make([]string, len(trace))
	for i, s := range trace {
		out[i] = s.sql
	}
	return out
}

func myShow(trace []myStmt) string {
	var b strings.Builder
	for _, s := range trace {
		fmt.Fprintf(&b, "\t%d.%d %s\n", s.conn, s.cmd, s.sql)
	}
	return b.String()
}

func myWant(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n got\n\t%s\n want\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// TestMySQLStatements: what apply/mysql's Target sends MariaDB when the
// pipeline applies transactions, statement by statement and round trip by
// round trip, and what the tables hold after.
func TestMySQLStatements(t *testing.T) {
	insertA := "INSERT INTO `t` (`id`, `v`) VALUES (1, 'a'), (2, 'b'), (3, 'c')"
	updateA := "UPDATE `t` SET `id` = 2, `v` = 'B' WHERE `id` = 2"
	deleteA := "DELETE FROM `t` WHERE (`id`) IN ((3))"
	checkpointA := myCheckpoint(200, 210, 7, myTxnA.CommitTime, 0, 0)
	partialB := myCheckpoint(200, 210, 7, myTxnA.CommitTime, 300, 2) // A's, and B's first 2 changes
	checkpointB := myCheckpoint(300, 310, 8, myTxnB.CommitTime, 0, 0)
	columnW := "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF('', ''), DATABASE()) AND TABLE_NAME = 't' AND COLUMN_NAME = 'w'"
	addW := "ALTER TABLE `t` ADD COLUMN `w` LONGTEXT"
	rowsB := []string{"1|a|NULL", "2|B|NULL", "4|d|NULL", "5|e|NULL", "6|f|w6"}

	t.Run("rows and checkpoint in one transaction", func(t *testing.T) {
		f := newMyFixture(t)
		if err := f.run(t, 210, nil, myChunkA()); err != nil {
			t.Fatal(err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", myShow(tr))
		writes := myWrites(t, tr)
		// One round trip: the transaction begins, sets the savepoint a
		// failing batch is diagnosed with, writes the rows in source
		// order (inserts as one multi-row statement) and the checkpoint;
		// COMMIT is the next.
		myWant(t, "round trips", myTrips(writes), []string{
			strings.Join([]string{myBegin, mySavepoint, insertA, updateA, deleteA, checkpointA}, "; "),
			myCommit,
		})
		for _, s := range tr {
			if s.conn != 1 {
				t.Errorf("statement on connection %d: %s", s.conn, s.sql)
			}
		}
		f.wantRows(t, "SELECT id, v FROM t ORDER BY id", "1|a", "2|B")
		if got, want := f.checkpointRow(t), "200|210|7|2024-05-06 07:08:09.123456|0|0"; got != want {
			t.Errorf("checkpoint %s, want %s", got, want)
		}
	})

	t.Run("a schema change commits the rows before it with a partial checkpoint", func(t *testing.T) {
		f := newMyFixture(t)
		b := source.Chunk{Txn: myTxnB, Commit: true, End: 310, Changes: myChangesB()}
		if err := f.run(t, 310, nil, myChunkA(), b); err != nil {
			t.Fatal(err)
		}
		tr := f.rec.trace()
		t.Logf("trace:\n%s", myShow(tr))
		writes := myWrites(t, tr)
		i := slices.IndexFunc(writes, func(s myStmt) bool { return s.sql == myCommit })
		if i < 0 {
			t.Fatalf("no COMMIT:\n%s", myShow(writes))
		}
		writes = writes[i+1:] // B's
		// MySQL commits DDL by itself: the rows before it go first, with
		// the checkpoint of the last whole transaction (A) and the mark
		// that B's first two changes are applied; then the column, unless
		// the table has it already; then the rest of B with B's
		// checkpoint and t's new definition.
		myWant(t, "round trips of B", myTrips(writes), []string{
			strings.Join([]string{myBegin, mySavepoint, "INSERT INTO `t` (`id`, `v`) VALUES (4, 'd'), (5, 'e')", partialB}, "; "),
			myCommit,
			columnW,
			addW,
			myLookup,
			strings.Join([]string{myBegin, mySavepoint, mySchemaSave + "...", "INSERT INTO `t` (`id`, `v`, `w`) VALUES (6, 'f', 'w6')", checkpointB}, "; "),
			myCommit,
		})
		f.wantRows(t, "SELECT id, v, w FROM t ORDER BY id", rowsB...)
		if got, want := f.checkpointRow(t), "300|310|8|2024-05-06 07:08:10.123456|0|0"; got != want {
			t.Errorf("checkpoint %s, want %s", got, want)
		}
		defs, err := checkpoint.MySQLSchemaLoad(f.ctx, f.db, "p")
		if d := defs[myStmtsOID]; err != nil || d == nil || len(d.Columns) != 3 || d.Columns[2].Name != "w" {
			t.Errorf("stored definition %+v, %v", d, err)
		}
	})

	t.Run("a restart after the schema change applies only what follows it", func(t *testing.T) {
		f := newMyFixture(t)
		// The first run stops once the column is added, before B's
		// commit: the source goes away (the agent could as well have been
		// killed; the target has what it committed).
		firstPart := source.Chunk{Txn: myTxnB, Changes: myChangesB()[:3]}
		gone := errors.New("the source went away")
		err := f.run(t, 310, func(ctx context.Context) error {
			if err := f.rec.waitFor(ctx, addW); err != nil {
				return err
			}
			return gone
		}, myChunkA(), firstPart)
		if !errors.Is(err, gone) {
			t.Fatalf("first run: %v, want %v", err, gone)
		}
		f.wantRows(t, "SELECT id, v, w FROM t ORDER BY id", "1|a|NULL", "2|B|NULL", "4|d|NULL", "5|e|NULL")
		if got, want := f.checkpointRow(t), "200|210|7|2024-05-06 07:08:09.123456|300|2"; got != want {
			t.Errorf("checkpoint after the first run %s, want %s", got, want)
		}

		// The source sends A again (its commit is below the checkpoint)
		// and all of B: nothing of A, nor B's first two changes, nor the
		// column, is sent again.
		f.rec.reset()
		b := source.Chunk{Txn: myTxnB, Commit: true, End: 310, Changes: myChangesB()}
		if err := f.run(t, 310, nil, myChunkA(), b); err != nil {
			t.Fatal(err)
		}
		tr := f.rec.trace()
		t.Logf("trace of the second run:\n%s", myShow(tr))
		writes := myWrites(t, tr)
		myWant(t, "round trips of the second run", myTrips(writes), []string{
			partialB, // written again before the schema change, alone
			columnW,  // the column is there: no ALTER
			myLookup,
			strings.Join([]string{myBegin, mySavepoint, mySchemaSave + "...", "INSERT INTO `t` (`id`, `v`, `w`) VALUES (6, 'f', 'w6')", checkpointB}, "; "),
			myCommit,
		})
		for _, s := range tr {
			if strings.HasPrefix(s.sql, "ALTER ") || strings.HasPrefix(s.sql, "UPDATE `t`") || strings.HasPrefix(s.sql, "DELETE FROM `t`") ||
				strings.HasPrefix(s.sql, "INSERT INTO `t`") && !strings.Contains(s.sql, "(6, 'f', 'w6')") {
				t.Errorf("the second run sent %s again", s.sql)
			}
		}
		f.wantRows(t, "SELECT id, v, w FROM t ORDER BY id", rowsB...)
		if got, want := f.checkpointRow(t), "300|310|8|2024-05-06 07:08:10.123456|0|0"; got != want {
			t.Errorf("checkpoint %s, want %s", got, want)
		}
	})

	t.Run("prepared statements are recorded by their SQL", func(t *testing.T) {
		// decant's sessions interpolate parameters (one COM_QUERY per
		// batch); a client that prepares goes through the proxy's
		// COM_STMT_* path, ids learned from the server's answers.
		f := newMyFixture(t)
		if _, err := f.db.ExecContext(f.ctx, "INSERT INTO t VALUES (1, 'a'), (2, 'b;c'), (3, 'it''s')"); err != nil {
			t.Fatal(err)
		}
		cfg := gomysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.DBName = "decant", "decant", "tcp", f.proxy, f.name
		connector, err := gomysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		db.SetMaxOpenConns(1)
		const q = "SELECT v FROM t WHERE id >= ? ORDER BY id"
		for _, from := range []int{2, 3} {
			rows, err := db.QueryContext(f.ctx, q, from)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for rows.Next() {
				var v string
				if err := rows.Scan(&v); err != nil {
					t.Fatal(err)
				}
				got = append(got, v)
			}
			rows.Close()
			if want := []string{"b;c", "it's"}[from-2:]; !slices.Equal(got, want) {
				t.Errorf("from %d: %q, want %q", from, got, want)
			}
		}
		// COM_STMT_CLOSE has no answer: a ping, which has, on the same
		// connection makes sure the proxy has seen it.
		if err := db.PingContext(f.ctx); err != nil {
			t.Fatal(err)
		}
		tr := f.rec.trace()
		i := slices.IndexFunc(tr, func(s myStmt) bool { return strings.HasPrefix(s.sql, "PREPARE ") })
		if i < 0 {
			t.Fatalf("nothing prepared:\n%s", myShow(tr))
		}
		myWant(t, "prepared statements", mySQL(tr[i:]), []string{"PREPARE " + q, "EXECUTE " + q, "CLOSE " + q, "PREPARE " + q, "EXECUTE " + q, "CLOSE " + q, "PING"})
	})
}

// TestMySQLStatementsProtocol: the proxy's reading of the protocol, without
// a server: packets split anywhere across reads, a payload longer than one
// packet, streams cut short, the commands and the prepared statements'
// ids, and the splitting of a batch into statements.
func TestMySQLStatementsProtocol(t *testing.T) {
	packet := func(seq byte, payload []byte) []byte {
		n := len(payload)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
	}
	query := append([]byte{comQuery}, "START TRANSACTION;\nINSERT INTO `t` VALUES (1, 'a;b'), (2, 'it''s'), (3, 'x\\';y', \"q;\");\nCOMMIT"...)
	long := bytes.Repeat([]byte("0123456789abcdef"), myMaxPayload/16+2) // 0xFFFFFF+17 bytes: two packets
	var stream []byte
	stream = append(stream, packet(0, query)...)
	stream = append(stream, packet(0, []byte{comPing})...)
	stream = append(stream, packet(3, nil)...) // an empty payload
	stream = append(stream, packet(0, long[:myMaxPayload])...)
	stream = append(stream, packet(1, long[myMaxPayload:])...)
	stream = append(stream, packet(0, long[:myMaxPayload])...) // exactly 0xFFFFFF: an empty packet follows
	stream = append(stream, packet(1, nil)...)

	for _, chop := range []int{1, 3, 4, 5, 1 << 20} {
		r := chopReader{bytes.NewReader(stream), chop}
		var raw []byte
		var got []myPacket
		for {
			p, err := readMyPacket(r)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("reads of %d bytes: packet %d: %v", chop, len(got), err)
			}
			raw = append(raw, p.raw...)
			got = append(got, p)
		}
		if !bytes.Equal(raw, stream) {
			t.Errorf("reads of %d bytes: the packets' bytes are not the stream's", chop)
		}
		want := []struct {
			seq     byte
			payload []byte
		}{{0, query}, {0, []byte{comPing}}, {3, nil}, {0, long}, {0, long[:myMaxPayload]}}
		if len(got) != len(want) {
			t.Fatalf("reads of %d bytes: %d packets, want %d", chop, len(got), len(want))
		}
		for i, w := range want {
			if got[i].seq != w.seq || !bytes.Equal(got[i].payload, w.payload) {
				t.Errorf("reads of %d bytes: packet %d has sequence id %d and %d bytes, want %d and %d", chop, i, got[i].seq, len(got[i].payload), w.seq, len(w.payload))
			}
		}
	}
	for _, cut := range []int{2, 4, 10, 4 + myMaxPayload + 2} {
		b := stream[len(packet(0, query))+len(packet(0, []byte{comPing}))+len(packet(3, nil)):][:cut]
		if _, err := readMyPacket(bytes.NewReader(b)); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("a packet cut after %d bytes: %v, want %v", cut, err, io.ErrUnexpectedEOF)
		}
	}

	// Commands, and ids from the server's answers to prepares.
	rec := newMyRecorder()
	st := &myConnState{rec: rec, conn: 1, stmts: map[uint32]string{}}
	id := func(cmd byte, n uint32) []byte { return binary.LittleEndian.AppendUint32([]byte{cmd}, n) }
	steps := []struct {
		client []byte // a command (sequence id 0)
		server []byte // the first packet of its answer (sequence id 1)
	}{
		{query, []byte{0x00, 0, 0, 2, 0}},                                      // OK
		{append([]byte{comStmtPrepare}, "SELECT  ?,\n?"...), id(0x00, 7)},      // PREPARE_OK, id 7
		{append([]byte{comStmtPrepare}, "SELECT nope"...), []byte{0xff, 1, 2}}, // an error: no id
		{append(id(comStmtExecute, 7), 0, 1, 0, 0, 0), []byte{0x01}},
		{id(comStmtClose, 7), nil},
		{[]byte{comQuit}, nil},
	}
	for i, s := range steps {
		if err := st.command(myPacket{seq: 0, payload: s.client}); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.server != nil {
			st.answer(myPacket{seq: 1, payload: s.server})
		}
	}
	if err := st.command(myPacket{seq: 0, payload: id(comStmtExecute, 7)}); err == nil {
		t.Error("an execute of a closed statement is no error")
	}
	if err := st.command(myPacket{seq: 0, payload: []byte{comStmtExecute, 7}}); err == nil {
		t.Error("a short execute is no error")
	}
	var got []string
	for _, s := range rec.trace() {
		got = append(got, fmt.Sprintf("%d %s", s.cmd, s.sql))
	}
	myWant(t, "commands", got, []string{
		"1 START TRANSACTION",
		"1 INSERT INTO `t` VALUES (1, 'a;b'), (2, 'it''s'), (3, 'x\\';y', \"q;\")",
		"1 COMMIT",
		"2 PREPARE SELECT ?, ?",
		"3 PREPARE SELECT nope",
		"4 EXECUTE SELECT ?, ?",
		"5 CLOSE SELECT ?, ?",
		"6 QUIT",
	})

	// The first client packet says what the client speaks.
	caps := func(c uint32) myPacket { return myPacket{seq: 1, payload: binary.LittleEndian.AppendUint32(nil, c)} }
	if err := st.handshake(caps(capProtocol41 | 1<<3)); err != nil {
		t.Errorf("plain 4.1 client: %v", err)
	}
	for _, c := range []uint32{0, capProtocol41 | capSSL, capProtocol41 | capCompress, capProtocol41 | capQueryAttributes} {
		if err := st.handshake(caps(c)); err == nil {
			t.Errorf("capabilities %#x: no error", c)
		}
	}
}
