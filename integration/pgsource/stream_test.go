package pgsource

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// TestDecodeStreamingServer decodes what a PostgreSQL 15 walsender sends
// with proto_version 3, streaming and two_phase on, and
// logical_decoding_work_mem at its 64kB minimum so that large transactions
// are streamed while in progress: one with a rolled-back and a released
// savepoint and a DDL message, then prepared transactions committed and
// rolled back, one of them large enough to be streamed.
func TestDecodeStreamingServer(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := pg.CreateDatabase(ctx, "stream"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pg.DSN("stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec(t, conn, `CREATE TABLE big (id int PRIMARY KEY, pad text); CREATE PUBLICATION pub FOR TABLE big`)
	// two_phase on the slot from its creation: every PREPARE after it is
	// decoded at PREPARE.
	exec(t, conn, `SELECT pg_create_logical_replication_slot('s', 'pgoutput', false, true)`)
	ddl := strings.ReplaceAll(itemsMessage, "'", "''")
	exec(t, conn, `BEGIN;
		INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(1, 2500) g;
		SAVEPOINT gone;
		INSERT INTO big SELECT g, repeat('y', 40) FROM generate_series(100001, 101000) g;
		ROLLBACK TO SAVEPOINT gone;
		RELEASE SAVEPOINT gone;
		SAVEPOINT kept;
		INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(2501, 2600) g;
		SELECT pg_logical_emit_message(true, '`+pgoutput.DDLMessagePrefix+`', '`+ddl+`');
		RELEASE SAVEPOINT kept;
		INSERT INTO big SELECT g, repeat('x', 40) FROM generate_series(2601, 5000) g;
		COMMIT`)
	exec(t, conn, `BEGIN; INSERT INTO big VALUES (-1, 'p'), (-2, 'p'), (-3, 'p'); PREPARE TRANSACTION 'small'`)
	exec(t, conn, `COMMIT PREPARED 'small'`)
	exec(t, conn, `BEGIN; INSERT INTO big VALUES (-4, 'p'), (-5, 'p'); PREPARE TRANSACTION 'gone'`)
	exec(t, conn, `ROLLBACK PREPARED 'gone'`)
	exec(t, conn, `BEGIN; INSERT INTO big SELECT -g, repeat('z', 40) FROM generate_series(10, 3009) g; PREPARE TRANSACTION 'large'`)
	exec(t, conn, `COMMIT PREPARED 'large'`)
	exec(t, conn, `INSERT INTO big VALUES (0, 'end')`)

	repl, err := pgconn.Connect(ctx, pg.DSN("stream")+"&replication=database&options=-c%20logical_decoding_work_mem%3D64kB")
	if err != nil {
		t.Fatal(err)
	}
	defer repl.Close(context.Background())
	err = pglogrepl.StartReplication(ctx, repl, "s", 0, pglogrepl.StartReplicationOptions{PluginArgs: []string{
		"proto_version '3'", "publication_names 'pub'", "messages 'true'", "streaming 'on'", "two_phase 'on'"}})
	if err != nil {
		t.Fatal(err)
	}
	d := pgoutput.NewDecoder()
	d.SetProtocol(3)
	events := receiveUntilCommit(t, ctx, repl, d)

	trace := traceEvents(events)
	t.Logf("events:\n%s", strings.Join(trace, "\n"))
	checkServerEvents(t, events, trace)
}

// receiveUntilCommit decodes the replication stream up to the first
// ordinary COMMIT.
func receiveUntilCommit(t *testing.T, ctx context.Context, repl *pgconn.PgConn, d *pgoutput.Decoder) []pgoutput.Event {
	t.Helper()
	var events []pgoutput.Event
	for {
		m, err := repl.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("receive after %d events: %v", len(events), err)
		}
		cd, ok := m.(*pgproto3.CopyData)
		if !ok {
			t.Fatalf("unexpected %T %+v", m, m)
		}
		if cd.Data[0] != pglogrepl.XLogDataByteID {
			continue // keepalives; the test ends well within wal_sender_timeout
		}
		x, err := pglogrepl.ParseXLogData(cd.Data[1:])
		if err != nil {
			t.Fatal(err)
		}
		ev, err := d.Decode(x.WALData)
		if err != nil {
			t.Fatalf("decode message %d at %s: %v", len(events), source.LSN(x.WALStart), err)
		}
		events = append(events, ev)
		if ev.Kind == pgoutput.EventCommit {
			return events
		}
	}
}

// traceEvents names the events, runs of equal names collapsed: a stream
// block of xid X is "block X" whatever it holds, a change "insert" or "ddl"
// with its subtransaction when it has one.
func traceEvents(events []pgoutput.Event) []string {
	var trace []string
	var last string
	n := 0
	flush := func() {
		if n > 1 && !strings.HasPrefix(last, "block") {
			last = fmt.Sprintf("%s ×%d", last, n)
		}
		if n > 0 {
			trace = append(trace, last)
		}
	}
	add := func(s string) {
		if s == last {
			n++
			return
		}
		flush()
		last, n = s, 1
	}
	inBlock := false
	for _, ev := range events {
		switch ev.Kind {
		case pgoutput.EventStreamStart:
			inBlock = true
			add(fmt.Sprint("block ", ev.Xid))
		case pgoutput.EventStreamStop:
			inBlock = false
		case pgoutput.EventStreamAbort:
			add(fmt.Sprintf("stream abort %d sub %d", ev.Xid, ev.Sub))
		case pgoutput.EventStreamCommit:
			add(fmt.Sprint("stream commit ", ev.Txn.Xid))
		case pgoutput.EventBegin:
			add("begin")
		case pgoutput.EventCommit:
			add("commit")
		case pgoutput.EventBeginPrepare:
			add("begin prepare " + ev.GID)
		case pgoutput.EventPrepare:
			add("prepare " + ev.GID)
		case pgoutput.EventStreamPrepare:
			add(fmt.Sprintf("stream prepare %d %s", ev.Xid, ev.GID))
		case pgoutput.EventCommitPrepared:
			add("commit prepared " + ev.GID)
		case pgoutput.EventRollbackPrepared:
			add("rollback prepared " + ev.GID)
		case pgoutput.EventChange:
			if !inBlock {
				add(ev.Change.Op.String())
			}
		}
	}
	flush()
	return trace
}

// checkServerEvents checks the shape of TestDecodeStreamingServer's
// stream: the trace, and the changes each streamed block carried.
func checkServerEvents(t *testing.T, events []pgoutput.Event, trace []string) {
	t.Helper()
	var big, large, gone, kept uint64   // the streamed xids, the subtransactions
	subs := map[uint64]map[uint64]int{} // streamed xid → sub → inserts
	var ddls []pgoutput.Event
	var firsts, blocks int
	prepared := map[string]*source.Txn{} // GID → Begin Prepare's or Stream Prepare's Txn
	for _, ev := range events {
		switch ev.Kind {
		case pgoutput.EventBeginPrepare, pgoutput.EventStreamPrepare:
			prepared[ev.GID] = ev.Txn
		case pgoutput.EventPrepare:
			if ev.Txn != prepared[ev.GID] {
				t.Errorf("Prepare %s: Txn %+v is not its Begin Prepare's", ev.GID, ev.Txn)
			}
		case pgoutput.EventCommitPrepared, pgoutput.EventRollbackPrepared:
			if p := prepared[ev.GID]; p == nil || p.Xid != ev.Xid || (ev.Txn != nil && (ev.Txn == p || ev.Txn.Xid != ev.Xid || ev.Txn.Commit <= p.Commit)) {
				t.Errorf("%s of %s xid %d, Txn %+v; prepared as %+v", map[pgoutput.EventKind]string{pgoutput.EventCommitPrepared: "Commit Prepared", pgoutput.EventRollbackPrepared: "Rollback Prepared"}[ev.Kind], ev.GID, ev.Xid, ev.Txn, p)
			}
		}
		switch {
		case ev.Kind == pgoutput.EventStreamStart:
			blocks++
			if ev.First {
				firsts++
			}
			if big == 0 {
				big = ev.Xid
			} else if ev.Xid != big && large == 0 {
				large = ev.Xid
			}
		case ev.Kind == pgoutput.EventStreamAbort:
			gone = ev.Sub
		case ev.Kind == pgoutput.EventChange && ev.Xid != 0 && ev.Change.Op == source.OpDDL:
			ddls = append(ddls, ev)
		case ev.Kind == pgoutput.EventChange && ev.Xid != 0:
			if subs[ev.Xid] == nil {
				subs[ev.Xid] = map[uint64]int{}
			}
			subs[ev.Xid][ev.Change.Sub]++
			if id := string(ev.Change.New[0].Data); id == "2501" && ev.Change.Op == source.OpInsert {
				kept = ev.Change.Sub
			}
		}
	}
	if big == 0 || large == 0 || gone == 0 || kept == 0 {
		t.Fatalf("streamed xids %d and %d, subtransactions %d and %d: the large transactions were not streamed", big, large, gone, kept)
	}
	want := []string{
		fmt.Sprint("block ", big),
		fmt.Sprintf("stream abort %d sub %d", big, gone),
		fmt.Sprint("block ", big),
		fmt.Sprint("stream commit ", big),
		"begin prepare small", "insert ×3", "prepare small", "commit prepared small",
		"begin prepare gone", "insert ×2", "prepare gone", "rollback prepared gone",
		fmt.Sprint("block ", large),
		fmt.Sprintf("stream prepare %d large", large),
		"commit prepared large",
		"begin", "insert", "commit",
	}
	if !reflect.DeepEqual(trace, want) {
		t.Errorf("trace:\n got %s\nwant %s", strings.Join(trace, "\n     "), strings.Join(want, "\n     "))
	}
	if firsts != 2 || blocks < 4 {
		t.Errorf("%d blocks, %d of them first; want at least 4 (the 64kB limit makes several per transaction) and 2", blocks, firsts)
	}
	if gone == big || kept == big || kept == gone {
		t.Errorf("xid %d, rolled-back subtransaction %d, released %d: not distinct", big, gone, kept)
	}
	wantBig := map[uint64]int{big: 4900, kept: 100, gone: subs[big][gone]}
	if !reflect.DeepEqual(subs[big], wantBig) || subs[big][gone] == 0 || subs[big][gone] > 1000 {
		t.Errorf("inserts of xid %d by subtransaction: %v, want %v with 1 to 1000 of the rolled-back %d", big, subs[big], wantBig, gone)
	}
	if want := map[uint64]int{large: 3000}; !reflect.DeepEqual(subs[large], want) {
		t.Errorf("inserts of xid %d by subtransaction: %v, want %v", large, subs[large], want)
	}
	// pgoutput labels a streamed logical decoding message with the
	// top-level xid (pgoutput_message takes the callback's transaction,
	// not the change's), though it was emitted in subtransaction kept.
	// Any role may emit it, so it is delivered as an untrusted schema
	// change, with nothing of its content.
	if len(ddls) != 1 || ddls[0].Xid != big || ddls[0].Change.Sub != big || ddls[0].Change.DDL.Untrusted == "" || ddls[0].Change.DDL.Tag != "" {
		t.Errorf("DDL changes in streams: %+v", ddls)
	}
	t.Logf("%d blocks; %d of the 1000 rolled-back rows were streamed before the rollback", blocks, subs[big][gone])
}
