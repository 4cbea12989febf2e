package gaussstub_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

const startLSN = source.LSN(0x1000000) // the stand-in's default StartLSN

func start(t *testing.T, cfg gaussstub.Config) *gaussstub.Server {
	t.Helper()
	if cfg.User == "" {
		cfg.User, cfg.Password, cfg.AuthMethod = "repl", "Gauss@123", "sha256"
	}
	if cfg.KeepaliveInterval == 0 {
		cfg.KeepaliveInterval = 20 * time.Millisecond
	}
	srv, err := gaussstub.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func connect(t *testing.T, srv *gaussstub.Server, replication bool) *pgconn.PgConn {
	t.Helper()
	cfg, err := gauss.ParseDSN(srv.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Replication = replication
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := gauss.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// query runs sql and returns its rows as text.
func query(t *testing.T, conn *pgconn.PgConn, sql string) ([][]string, error) {
	t.Helper()
	res, err := conn.Exec(testCtx(t), sql).ReadAll()
	if err != nil {
		return nil, err
	}
	var rows [][]string
	for _, r := range res {
		for _, row := range r.Rows {
			var out []string
			for _, v := range row {
				out = append(out, string(v))
			}
			rows = append(rows, out)
		}
	}
	return rows, nil
}

func mustQuery(t *testing.T, conn *pgconn.PgConn, sql string) [][]string {
	t.Helper()
	rows, err := query(t, conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return rows
}

// startReplication sends START_REPLICATION and waits for CopyBothResponse
// or an error, as pglogrepl.StartReplication does.
func startReplication(t *testing.T, conn *pgconn.PgConn, sql string) error {
	t.Helper()
	conn.Frontend().Send(&pgproto3.Query{String: sql})
	if err := conn.Frontend().Flush(); err != nil {
		return err
	}
	for {
		msg, err := conn.ReceiveMessage(testCtx(t))
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyBothResponse:
			return nil
		case *pgproto3.ErrorResponse:
			pgErr := pgconn.ErrorResponseToPgError(m)
			// ReadyForQuery follows an error before the stream starts.
			if msg, err := conn.ReceiveMessage(testCtx(t)); err != nil {
				return err
			} else if _, ok := msg.(*pgproto3.ReadyForQuery); !ok {
				return fmt.Errorf("after %v: got %T, want ReadyForQuery", pgErr, msg)
			}
			return pgErr
		}
	}
}

// receive returns the next CopyData payload (copied), or the error or
// non-CopyData message that ends the stream.
func receive(t *testing.T, conn *pgconn.PgConn) ([]byte, pgproto3.BackendMessage, error) {
	t.Helper()
	msg, err := conn.ReceiveMessage(testCtx(t))
	if err != nil {
		return nil, nil, err
	}
	if cd, ok := msg.(*pgproto3.CopyData); ok {
		return append([]byte(nil), cd.Data...), nil, nil
	}
	return nil, msg, nil
}

type xlog struct {
	dataStart, walEnd source.LSN
	payload           []byte
}

// nextXLog returns the next 'w', passing the keepalives it skips to seen.
func nextXLog(t *testing.T, conn *pgconn.PgConn, seen func(walEnd source.LSN)) xlog {
	t.Helper()
	for {
		data, msg, err := receive(t, conn)
		if err != nil || msg != nil {
			t.Fatalf("waiting for XLogData: msg %T, err %v", msg, err)
		}
		switch data[0] {
		case 'k':
			if len(data) != 33 {
				t.Fatalf("keepalive has %d bytes, want 33", len(data))
			}
			if seen != nil {
				seen(source.LSN(binary.LittleEndian.Uint64(data[1:])))
			}
		case 'w':
			if len(data) < 25 {
				t.Fatalf("XLogData has %d bytes", len(data))
			}
			return xlog{source.LSN(binary.BigEndian.Uint64(data[1:])), source.LSN(binary.BigEndian.Uint64(data[9:])), data[25:]}
		default:
			t.Fatalf("unexpected copy message %q", data[0])
		}
	}
}

// nextKeepalive returns the next 'k' (walEnd, replyRequested), skipping 'w'.
func nextKeepalive(t *testing.T, conn *pgconn.PgConn) (source.LSN, bool) {
	t.Helper()
	for {
		data, msg, err := receive(t, conn)
		if err != nil || msg != nil {
			t.Fatalf("waiting for a keepalive: msg %T, err %v", msg, err)
		}
		if data[0] == 'k' {
			if len(data) != 33 {
				t.Fatalf("keepalive has %d bytes, want 33", len(data))
			}
			if role, state := binary.LittleEndian.Uint32(data[9:]), binary.LittleEndian.Uint32(data[13:]); role != 2 || state != 1 {
				t.Errorf("keepalive peer role %d state %d, want 2 (primary) and 1 (normal)", role, state)
			}
			return source.LSN(binary.LittleEndian.Uint64(data[1:])), data[25] == 1
		}
	}
}

// statusUpdate is the 65-byte little-endian 'r' of spec §1.6, built here
// from the table rather than with decant's encoder.
func statusUpdate(flush uint64, replyRequested bool) []byte {
	b := make([]byte, 65)
	b[0] = 'r'
	for _, off := range []int{1, 9, 17, 25, 33} {
		binary.LittleEndian.PutUint64(b[off:], flush)
	}
	binary.LittleEndian.PutUint64(b[49:], 817114174600000)
	if replyRequested {
		b[57] = 1
	}
	return b
}

func sendCopyData(t *testing.T, conn *pgconn.PgConn, data []byte) {
	t.Helper()
	conn.Frontend().Send(&pgproto3.CopyData{Data: data})
	if err := conn.Frontend().Flush(); err != nil {
		t.Fatal(err)
	}
}

// expectClosed reads what is still buffered and then needs the connection
// to be gone.
func expectClosed(t *testing.T, conn *pgconn.PgConn) {
	t.Helper()
	for range 1000 {
		data, msg, err := receive(t, conn)
		if err != nil {
			return
		}
		if msg != nil || data[0] != 'k' && data[0] != 'w' {
			t.Fatalf("got %T %q while waiting for the connection to close", msg, data)
		}
	}
	t.Fatal("the connection stayed open")
}

// waitFor polls cond for up to 5 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// txn scripts a one-row INSERT transaction starting at first.
func txn(xid, csn uint64, first source.LSN) gaussstub.Txn {
	commitStart, commitEnd := first+0x100, first+0x120
	return gaussstub.Txn{
		Xid: xid, CSN: csn, FirstLSN: first, CommitStart: commitStart, CommitEnd: commitEnd,
		Records: []gauss.Record{
			{Kind: gauss.KindBegin, LSN: first, FirstLSN: first, CSN: csn, Xid: xid, HasXid: true},
			{Kind: gauss.KindInsert, LSN: first + 0x40, Schema: "public", Table: "t1",
				New: []gauss.Column{{Name: "id", Type: 23, TypeName: "integer", Value: []byte(fmt.Sprint(xid))}}},
			{Kind: gauss.KindCommit, LSN: commitEnd, CSN: csn, Xid: xid, HasXid: true, Time: "2025-11-22 16:09:34.531976+08"},
		},
	}
}

// expected is what the stand-in should send for tx: gaussenc's payloads,
// with the commit time dropped when include-timestamp is off.
func expected(f gauss.Format, tx gaussstub.Txn, withTime bool) []gaussenc.Payload {
	recs := append([]gauss.Record(nil), tx.Records...)
	for i := range recs {
		if !withTime {
			recs[i].Time = ""
		}
	}
	return gaussenc.Transaction(f, recs, tx.CommitStart)
}

func expectTxn(t *testing.T, conn *pgconn.PgConn, f gauss.Format, tx gaussstub.Txn, withTime bool) {
	t.Helper()
	for i, want := range expected(f, tx, withTime) {
		got := nextXLog(t, conn, nil)
		if got.dataStart != want.DataStart || got.walEnd != want.DataStart || !bytes.Equal(got.payload, want.Data) {
			t.Fatalf("xid %d payload %d: got dataStart %s walEnd %s %q, want %s %q",
				tx.Xid, i, got.dataStart, got.walEnd, got.payload, want.DataStart, want.Data)
		}
	}
}

func TestIdentifyAndSlotFunctions(t *testing.T) {
	srv := start(t, gaussstub.Config{SystemID: "6666"})
	conn := connect(t, srv, true)

	if got := mustQuery(t, conn, "identify_system"); fmt.Sprint(got) != "[[6666 1 0/1000000 postgres]]" {
		t.Errorf("IDENTIFY_SYSTEM = %v", got)
	}
	srv.Append(txn(10, 100, 0x2000000))
	if got := mustQuery(t, conn, " SELECT  pg_current_xlog_location( ) ;"); fmt.Sprint(got) != "[[0/2000120]]" {
		t.Errorf("pg_current_xlog_location = %v", got)
	}

	if got := mustQuery(t, conn, "SELECT * FROM pg_create_logical_replication_slot('s1', 'mppdb_decoding')"); fmt.Sprint(got) != "[[s1 0/2000120]]" {
		t.Errorf("create LSN slot = %v", got)
	}
	if got := mustQuery(t, conn, "select * from pg_create_logical_replication_slot('it''s', 'mppdb_decoding', 1)"); fmt.Sprint(got) != "[[it's 100]]" {
		t.Errorf("create CSN slot = %v", got)
	}
	if _, err := query(t, conn, "SELECT * FROM pg_create_logical_replication_slot('s1', 'mppdb_decoding')"); err == nil ||
		!strings.Contains(err.Error(), `replication slot "s1" already exists`) {
		t.Errorf("duplicate slot: err = %v", err)
	}
	slotQuery := "SELECT plugin, confirmed_flush, confirmed_csn, active FROM pg_replication_slots WHERE slot_name = '%s'"
	if got := mustQuery(t, conn, fmt.Sprintf(slotQuery, "s1")); fmt.Sprint(got) != "[[mppdb_decoding 0/2000120 0 f]]" {
		t.Errorf("slot s1 = %v", got)
	}
	if got := mustQuery(t, conn, fmt.Sprintf(slotQuery, "it''s")); fmt.Sprint(got) != "[[mppdb_decoding 0/2000120 100 f]]" {
		t.Errorf("slot it's = %v", got)
	}
	if got := mustQuery(t, conn, fmt.Sprintf(slotQuery, "nope")); len(got) != 0 {
		t.Errorf("missing slot = %v, want no row", got)
	}
	mustQuery(t, conn, "SELECT pg_drop_replication_slot('s1')")
	if _, _, _, ok := srv.Slot("s1"); ok {
		t.Error("s1 still exists after pg_drop_replication_slot")
	}
	if _, err := query(t, conn, "SELECT pg_drop_replication_slot('s1')"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("dropping a missing slot: err = %v", err)
	}
	if _, err := query(t, conn, "SELECT 1"); err == nil || !strings.Contains(err.Error(), "stand-in does not support: SELECT 1") {
		t.Errorf("unsupported query: err = %v", err)
	}

	// A plain session runs the SQL functions but not replication commands.
	plain := connect(t, srv, false)
	if _, err := query(t, plain, "IDENTIFY_SYSTEM"); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("IDENTIFY_SYSTEM on a plain session: err = %v", err)
	}
	if got := mustQuery(t, plain, fmt.Sprintf(slotQuery, "it''s")); len(got) != 1 {
		t.Errorf("slot query on a plain session = %v", got)
	}
}

func TestSerialStream(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	t1, t2 := txn(10, 100, 0x2000000), txn(11, 101, 0x2001000)
	srv.Append(t1, t2)
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 ("include-xids" 'true', "skip-empty-xacts")`); err != nil {
		t.Fatal(err)
	}
	serial := gauss.Format{Style: 'm'}
	expectTxn(t, conn, serial, t1, true)
	expectTxn(t, conn, serial, t2, true)

	// The payloads are what the decoder reads.
	p := expected(serial, t1, true)[2]
	if recs, err := gauss.Decode(serial, p.Data, p.DataStart); err != nil || len(recs) != 1 || recs[0].Kind != gauss.KindCommit {
		t.Errorf("decoding the COMMIT payload: %v %v", recs, err)
	}

	if end, _ := nextKeepalive(t, conn); end != t2.CommitEnd {
		t.Errorf("serial keepalive walEnd = %s, want the script end %s", end, t2.CommitEnd)
	}

	// Transactions appended while streaming follow.
	t3 := txn(12, 102, 0x2002000)
	srv.Append(t3)
	expectTxn(t, conn, serial, t3, true)

	// 'r' moves confirmed_flush.
	sendCopyData(t, conn, statusUpdate(uint64(t1.CommitEnd), false))
	waitFor(t, "confirmed_flush to reach t1's commit end", func() bool {
		flush, _, active, _ := srv.Slot("s1")
		return flush == t1.CommitEnd && active
	})
	if got := srv.Received(); len(got) != 1 || len(got[0]) != 65 || got[0][0] != 'r' {
		t.Errorf("Received() = %d messages", len(got))
	}
}

func TestKeepaliveReplyRequested(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		end, reply := nextKeepalive(t, conn)
		if end != startLSN || reply != (i == 5) {
			t.Fatalf("keepalive %d: walEnd %s replyRequested %v, want %s %v", i, end, reply, startLSN, i == 5)
		}
	}
	// A status update asking for a reply gets a keepalive at once.
	sendCopyData(t, conn, statusUpdate(uint64(startLSN), true))
	if _, reply := nextKeepalive(t, conn); reply {
		t.Error("the answer to a reply request asks for a reply itself")
	}
}

func TestParallelStream(t *testing.T) {
	for _, tc := range []struct {
		opts string
		f    gauss.Format
	}{
		{`"parallel-decode-num" '4'`, gauss.Format{Style: 'b'}},
		{`"parallel-decode-num" '4', "decode-style" 'b', "sending-batch" '1'`, gauss.Format{Style: 'b', Batch: true}},
		{`"parallel-decode-num" '2', "decode-style" 't'`, gauss.Format{Style: 't'}},
		{`"parallel-decode-num" '2', "decode-style" 'j', "sending-batch" '1', "include-timestamp" 'on'`, gauss.Format{Style: 'j', Batch: true}},
	} {
		t.Run(tc.f.String(), func(t *testing.T) {
			srv := start(t, gaussstub.Config{KeepaliveInterval: time.Hour})
			srv.CreateSlot("s1", "mppdb_decoding", false)
			t1 := txn(10, 100, 0x2000000)
			srv.Append(t1)
			conn := connect(t, srv, true)
			if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 (`+tc.opts+`)`); err != nil {
				t.Fatal(err)
			}
			withTime := strings.Contains(tc.opts, "include-timestamp")
			expectTxn(t, conn, tc.f, t1, withTime)

			// The reader runs ahead: a keepalive announces the new end
			// before the transaction itself arrives (spec §5.4).
			t2 := txn(11, 101, 0x2001000)
			srv.Append(t2)
			var ends []source.LSN
			first := nextXLog(t, conn, func(e source.LSN) { ends = append(ends, e) })
			if len(ends) == 0 || ends[len(ends)-1] != t2.CommitEnd {
				t.Errorf("keepalives before t2's data: %v, want one with walEnd %s", ends, t2.CommitEnd)
			}
			want := expected(tc.f, t2, withTime)
			if !bytes.Equal(first.payload, want[0].Data) || first.dataStart != t2.CommitStart {
				t.Errorf("t2 first payload at %s = %q, want %s %q", first.dataStart, first.payload, t2.CommitStart, want[0].Data)
			}
		})
	}
}

func TestRestartSkipsConfirmed(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	t1, t2, t3 := txn(10, 100, 0x2000000), txn(11, 101, 0x2001000), txn(12, 102, 0x2002000)
	srv.Append(t1, t2, t3)
	serial := gauss.Format{Style: 'm'}

	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	expectTxn(t, conn, serial, t1, true)
	sendCopyData(t, conn, statusUpdate(uint64(t1.CommitEnd), false))
	waitFor(t, "the confirmation", func() bool { f, _, _, _ := srv.Slot("s1"); return f == t1.CommitEnd })

	srv.DropConnections()
	expectClosed(t, conn)
	if _, _, active, _ := srv.Slot("s1"); active {
		t.Error("slot still active after DropConnections")
	}

	// From the slot's confirmed position: t1 is skipped.
	conn = connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	expectTxn(t, conn, serial, t2, true)
	srv.DropConnections()

	// A requested start beyond the slot's position wins: t2 is skipped too.
	conn = connect(t, srv, true)
	if err := startReplication(t, conn, fmt.Sprintf(`START_REPLICATION SLOT "s1" LOGICAL %s`, t2.CommitEnd)); err != nil {
		t.Fatal(err)
	}
	expectTxn(t, conn, serial, t3, true)
}

func TestCSNSlot(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("c1", "mppdb_decoding", true)
	t1, t2 := txn(10, 5, 0x2000000), txn(11, 6, 0x2001000)
	srv.Append(t1, t2)
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "c1" LOGICAL 0/0 ("output-order" '1')`); err != nil {
		t.Fatal(err)
	}
	for _, tx := range []gaussstub.Txn{t1, t2} {
		for _, want := range expected(gauss.Format{Style: 'm'}, tx, true) {
			got := nextXLog(t, conn, nil)
			if got.dataStart != source.LSN(tx.CSN) || !bytes.Equal(got.payload, want.Data) {
				t.Fatalf("CSN %d: dataStart %d payload %q, want the CSN and %q", tx.CSN, got.dataStart, got.payload, want.Data)
			}
		}
	}
	sendCopyData(t, conn, statusUpdate(5, false))
	waitFor(t, "confirmed_csn 5", func() bool { _, csn, _, _ := srv.Slot("c1"); return csn == 5 })
	srv.DropConnections()

	conn = connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "c1" LOGICAL 0/0 ("output-order" '1')`); err != nil {
		t.Fatal(err)
	}
	if got := nextXLog(t, conn, nil); got.dataStart != 6 {
		t.Errorf("after confirming CSN 5 the stream starts at CSN %d, want 6", got.dataStart)
	}
}

func TestAutoAdvance(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	t1 := txn(10, 100, 0x2000000)
	srv.Append(t1)
	srv.AddPosition(100, 0x3000000) // not sent (no enable-decode-position), but the script end moves
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 ("auto-advance" 'true')`); err != nil {
		t.Fatal(err)
	}
	expectTxn(t, conn, gauss.Format{Style: 'm'}, t1, true)
	time.Sleep(50 * time.Millisecond)
	if f, _, _, _ := srv.Slot("s1"); f != startLSN {
		t.Fatalf("slot moved to %s before anything was confirmed", f)
	}
	sendCopyData(t, conn, statusUpdate(uint64(t1.CommitEnd), false))
	waitFor(t, "auto-advance to the script end", func() bool { f, _, _, _ := srv.Slot("s1"); return f == 0x3000000 })
}

func TestHeartbeatAndPosition(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	conn := connect(t, srv, true)
	f := gauss.Format{Style: 'b'}
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 `+
		`("parallel-decode-num" '2', "enable-heartbeat" 'true', "enable-decode-position" 'true')`); err != nil {
		t.Fatal(err)
	}
	if got := nextXLog(t, conn, nil); len(got.payload) < 1 || got.payload[0] != 'h' {
		t.Fatalf("first XLogData = %q, want a heartbeat", got.payload)
	}
	srv.AddPosition(7, 0x2000000)
	for {
		got := nextXLog(t, conn, nil)
		if got.payload[0] == 'h' {
			continue
		}
		want := gaussenc.Position(f, 7, 0x2000000, 0)
		// Everything but the 4-byte timestamp at offset 17.
		if len(got.payload) != len(want) || !bytes.Equal(got.payload[:17], want[:17]) || !bytes.Equal(got.payload[21:], want[21:]) ||
			got.dataStart != 0x2000000 {
			t.Fatalf("position message at %s = %x, want %x at 0/2000000", got.dataStart, got.payload, want)
		}
		break
	}
}

// TestOptionErrors checks where option errors arrive: before the
// CopyBothResponse on the parallel path, after it on the serial path
// (spec §1.3).
func TestOptionErrors(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	before := []struct{ opts, want string }{
		{`("parallel-decode-num" '21')`, `could not parse value "21" for parameter "parallel-decode-num"`},
		{`("parallel-decode-num" 'x')`, `could not parse value "x" for parameter "parallel-decode-num"`},
		{`("parallel-decode-num" '4', "decode-style" 'x')`, `could not parse value "x" for parameter "decode-style"`},
		{`("parallel-decode-num" '4', "sending-batch" '2')`, `could not parse value "2" for parameter "sending-batch"`},
		{`("parallel-decode-num" '4', "bogus")`, `option "bogus" = "(null)" is unknown`},
		{`("parallel-decode-num" '4', "output-order" '1')`, `option "output-order" = "1" does not match an LSN-ordered slot "s1"`},
		{`("parallel-decode-num" '4', "enable-heartbeat" 'maybe')`, `could not parse value "maybe" for parameter "enable-heartbeat"`},
	}
	conn := connect(t, srv, true)
	for _, tc := range before {
		err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 `+tc.opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one containing %q before CopyBothResponse", tc.opts, err, tc.want)
		}
	}
	// The session is still usable, and the slot is free.
	mustQuery(t, conn, "IDENTIFY_SYSTEM")
	if err := startReplication(t, conn, `START_REPLICATION SLOT "nope" LOGICAL 0/0 ("parallel-decode-num" '4')`); err == nil ||
		!strings.Contains(err.Error(), "Invalid logical replication slot nope.") {
		t.Errorf("parallel, missing slot: err = %v", err)
	}
	if err := startReplication(t, conn, `START_REPLICATION SLOT "nope" LOGICAL 0/0`); err == nil ||
		!strings.Contains(err.Error(), `replication slot "nope" does not exist`) {
		t.Errorf("serial, missing slot: err = %v", err)
	}
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL nonsense`); err == nil ||
		!strings.Contains(err.Error(), "syntax error") {
		t.Errorf("bad LSN: err = %v", err)
	}

	after := []struct{ opts, want string }{
		{`("bogus" 'it''s')`, `option "bogus" = "it's" is unknown`},
		{`("decode-style" 'b')`, `option "decode-style" = "b" is unknown`},
		{`("sending-batch" '1')`, `option "sending-batch" = "1" is unknown`},
		{`("output-order" '1')`, `option "output-order" = "1" does not match an LSN-ordered slot "s1"`},
	}
	for _, tc := range after {
		conn := connect(t, srv, true)
		if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0 `+tc.opts); err != nil {
			t.Fatalf("%s: %v, want CopyBothResponse first", tc.opts, err)
		}
		_, msg, err := receive(t, conn)
		er, ok := msg.(*pgproto3.ErrorResponse)
		if err != nil || !ok || !strings.Contains(er.Message, tc.want) {
			t.Fatalf("%s: after CopyBothResponse got %T %v, want an ErrorResponse containing %q", tc.opts, msg, err, tc.want)
		}
		if _, msg, err := receive(t, conn); err == nil {
			t.Errorf("%s: connection still open after the error (got %T)", tc.opts, msg)
		}
		waitFor(t, "the slot to be released", func() bool { _, _, active, _ := srv.Slot("s1"); return !active })
	}
}

func TestSlotAlreadyActive(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	a := connect(t, srv, true)
	if err := startReplication(t, a, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	b := connect(t, srv, true)
	if err := startReplication(t, b, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err == nil || !strings.Contains(err.Error(), "is already active") {
		t.Errorf("second session on an active slot: err = %v", err)
	}
	if _, err := query(t, b, "SELECT pg_drop_replication_slot('s1')"); err == nil || !strings.Contains(err.Error(), "is already active") {
		t.Errorf("dropping an active slot: err = %v", err)
	}
}

// TestPostgresStatusUpdateRefused: a 34-byte PostgreSQL-style 'r' is too
// short for the server's struct; it answers FATAL and hangs up (spec §1.6).
func TestPostgresStatusUpdateRefused(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	pg := make([]byte, 34)
	pg[0] = 'r'
	for _, off := range []int{1, 9, 17} {
		binary.BigEndian.PutUint64(pg[off:], 0x5000000)
	}
	sendCopyData(t, conn, pg)
	var pgErr *pgconn.PgError
	for {
		_, msg, err := receive(t, conn)
		if err != nil {
			if !errors.As(err, &pgErr) {
				t.Fatalf("err = %v, want the server's FATAL", err)
			}
			break
		}
		if msg != nil {
			t.Fatalf("got %T", msg)
		}
	}
	if pgErr.Severity != "FATAL" || pgErr.Message != "insufficient data left in message" {
		t.Errorf("error = %v", pgErr)
	}
	if f, _, _, _ := srv.Slot("s1"); f != startLSN {
		t.Errorf("the short message moved the slot to %s", f)
	}
	if got := srv.Received(); len(got) != 1 || len(got[0]) != 34 {
		t.Errorf("Received() = %v", got)
	}
}

// TestCopyDoneCloses: CopyDone ends the session without a CopyDone echo.
func TestCopyDoneCloses(t *testing.T) {
	srv := start(t, gaussstub.Config{KeepaliveInterval: time.Hour})
	srv.CreateSlot("s1", "mppdb_decoding", false)
	conn := connect(t, srv, true)
	if err := startReplication(t, conn, `START_REPLICATION SLOT "s1" LOGICAL 0/0`); err != nil {
		t.Fatal(err)
	}
	conn.Frontend().Send(&pgproto3.CopyDone{})
	if err := conn.Frontend().Flush(); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, conn)
	waitFor(t, "the slot to be released", func() bool { _, _, active, _ := srv.Slot("s1"); return !active })
}

func TestStartReplicationGrammar(t *testing.T) {
	srv := start(t, gaussstub.Config{})
	srv.CreateSlot(`odd"name`, "mppdb_decoding", false)
	srv.CreateSlot("lower", "mppdb_decoding", false)
	conn := connect(t, srv, true)
	for _, sql := range []string{
		`START_REPLICATION SLOT "odd""name" LOGICAL 0/0 ( "include-xids" , "white-table-list" 'public.t1,s.*' )`,
		"start_replication slot LOWER logical 0/0;",
	} {
		if err := startReplication(t, conn, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		srv.DropConnections()
		conn = connect(t, srv, true)
	}
	for _, sql := range []string{
		`START_REPLICATION SLOT "lower" LOGICAL 0/0 ("a" 'x'`,
		`START_REPLICATION SLOT "lower" LOGICAL 0/0 ("a" 'x) `,
		`START_REPLICATION SLOT "lower" 0/0`,
	} {
		if err := startReplication(t, conn, sql); err == nil || !strings.Contains(err.Error(), "syntax error") {
			t.Errorf("%s: err = %v, want a syntax error", sql, err)
		}
	}
}
