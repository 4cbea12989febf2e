package pgoutput

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

// This file builds the messages protocol versions 2 to 4 add (streamed
// and two-phase transactions) byte by byte, as "Logical Replication Message
// Formats" in the PostgreSQL manual describes them, with the wire helpers
// of decode_test.go.

// Stream Start: Int32 xid, Int8 1 for the first block of the xid, else 0.
func streamStartMsg(xid uint32, first bool) []byte {
	var f byte
	if first {
		f = 1
	}
	return msg('S').i32(xid).u8(f)
}

// Stream Stop: no fields.
func streamStopMsg() []byte { return msg('E') }

// Stream Commit: Int32 xid, Int8 flags, Int64 commit LSN, Int64 end LSN,
// Int64 commit timestamp.
func streamCommitMsg(xid uint32, commit, end source.LSN, at time.Time) []byte {
	return msg('c').i32(xid).u8(0).lsn(commit).lsn(end).ts(at)
}

// Stream Abort: Int32 xid, Int32 subtransaction xid.
func streamAbortMsg(xid, sub uint32) []byte { return msg('A').i32(xid).i32(sub) }

// Stream Abort with protocol 4 and streaming = parallel: also Int64 abort
// LSN and Int64 abort timestamp.
func streamAbortParallelMsg(xid, sub uint32, lsn source.LSN, at time.Time) []byte {
	return msg('A').i32(xid).i32(sub).lsn(lsn).ts(at)
}

// Begin Prepare: Int64 prepare LSN, Int64 end LSN, Int64 prepare
// timestamp, Int32 xid, String GID.
func beginPrepareMsg(prepare, end source.LSN, at time.Time, xid uint32, gid string) []byte {
	return msg('b').lsn(prepare).lsn(end).ts(at).i32(xid).str(gid)
}

// Prepare: Int8 flags, Int64 prepare LSN, Int64 end LSN, Int64 prepare
// timestamp, Int32 xid, String GID.
func prepareMsg(prepare, end source.LSN, at time.Time, xid uint32, gid string) []byte {
	return msg('P').u8(0).lsn(prepare).lsn(end).ts(at).i32(xid).str(gid)
}

// Commit Prepared: Int8 flags, Int64 commit LSN, Int64 end LSN, Int64
// commit timestamp, Int32 xid, String GID.
func commitPreparedMsg(commit, end source.LSN, at time.Time, xid uint32, gid string) []byte {
	return msg('K').u8(0).lsn(commit).lsn(end).ts(at).i32(xid).str(gid)
}

// Rollback Prepared: Int8 flags, Int64 end LSN of the prepare, Int64 end
// LSN of the rollback, Int64 prepare timestamp, Int64 rollback timestamp,
// Int32 xid, String GID.
func rollbackPreparedMsg(prepareEnd, end source.LSN, prepared, at time.Time, xid uint32, gid string) []byte {
	return msg('r').u8(0).lsn(prepareEnd).lsn(end).ts(prepared).ts(at).i32(xid).str(gid)
}

// Stream Prepare: the fields of Prepare.
func streamPrepareMsg(prepare, end source.LSN, at time.Time, xid uint32, gid string) []byte {
	return msg('p').u8(0).lsn(prepare).lsn(end).ts(at).i32(xid).str(gid)
}

// streamed returns a data message (Relation, Type, Insert, Update, Delete,
// Truncate, Message) as it is sent inside a stream block: the Int32 xid of
// its (sub)transaction follows the type byte.
func streamed(xid uint32, m []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{m[0]}, xid), m[1:]...)
}

// The streamed and prepared transactions most tests use.
const (
	xid2 = 5001 // streamed
	sub2 = 5003 // a subtransaction of xid2
	xid3 = 6001 // streamed, interleaved with xid2
	gid1 = "order-77/pay"
)

var (
	commit2  = source.LSN(0x17_00002000)
	end2     = commit2 + 0x30
	prepare1 = source.LSN(0x18_00000100)
	prepEnd1 = prepare1 + 0x40
	commitP1 = source.LSN(0x18_00009000)
	endP1    = commitP1 + 0x28
	time2    = time.Date(2025, 2, 3, 4, 5, 6, 789012000, time.UTC)
	time3    = time.Date(2025, 2, 3, 4, 6, 0, 0, time.UTC)
)

func beginPrepare1() []byte { return beginPrepareMsg(prepare1, prepEnd1, time2, xid1, gid1) }
func prepare1Msg() []byte   { return prepareMsg(prepare1, prepEnd1, time2, xid1, gid1) }

// decoderAt returns a decoder reading protocol v that knows the orders,
// items and audit relations and has decoded msgs.
func decoderAt(t testing.TB, v int, msgs ...[]byte) *Decoder {
	t.Helper()
	d := idle(t)
	d.SetProtocol(v)
	for _, m := range msgs {
		mustDecode(t, d, m)
	}
	return d
}

// Decoder states for the tests, all at protocol 3 unless named.
func idle3(t testing.TB) *Decoder     { return decoderAt(t, 3) }
func idle4(t testing.TB) *Decoder     { return decoderAt(t, 4) }
func inBlock(t testing.TB) *Decoder   { return decoderAt(t, 3, streamStartMsg(xid2, true)) }
func inPrepare(t testing.TB) *Decoder { return decoderAt(t, 3, beginPrepare1()) }

// checkEvent compares the fields of events; Txn by value, times with Equal,
// and of Change only Op and Sub.
func checkEvent(t *testing.T, got, want Event) {
	t.Helper()
	if got.Kind != want.Kind || got.Xid != want.Xid || got.Sub != want.Sub || got.First != want.First || got.GID != want.GID || got.End != want.End {
		t.Errorf("event {Kind %d Xid %d Sub %d First %v GID %q End %s}, want {Kind %d Xid %d Sub %d First %v GID %q End %s}",
			got.Kind, got.Xid, got.Sub, got.First, got.GID, got.End, want.Kind, want.Xid, want.Sub, want.First, want.GID, want.End)
	}
	if got.Change.Op != want.Change.Op || got.Change.Sub != want.Change.Sub {
		t.Errorf("change op %s sub %d, want op %s sub %d", got.Change.Op, got.Change.Sub, want.Change.Op, want.Change.Sub)
	}
	switch {
	case (got.Txn == nil) != (want.Txn == nil):
		t.Errorf("Txn = %+v, want %+v", got.Txn, want.Txn)
	case got.Txn != nil:
		g, w := *got.Txn, *want.Txn
		if !g.CommitTime.Equal(w.CommitTime) {
			t.Errorf("Txn.CommitTime = %s, want %s", g.CommitTime.UTC(), w.CommitTime)
		}
		g.CommitTime, w.CommitTime = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("Txn = %+v, want %+v", g, w)
		}
	}
}

// TestDecodeStreamMessages decodes each message protocols 2 to 4 add, and
// each data message in its stream block form, in a state that accepts it.
func TestDecodeStreamMessages(t *testing.T) {
	row := []val{text("1"), text("a"), null}
	tests := []struct {
		name              string
		setup             func(testing.TB) *Decoder
		data              []byte
		want              Event
		inTxn, inStream   bool // after
		wantRel, wantType bool
	}{
		{"stream start, first block", idle3, streamStartMsg(xid2, true),
			Event{Kind: EventStreamStart, Xid: xid2, First: true}, false, true, false, false},
		{"stream start, later block", idle3, streamStartMsg(0xFFFFFFFF, false),
			Event{Kind: EventStreamStart, Xid: 0xFFFFFFFF}, false, true, false, false},
		{"stream stop", inBlock, streamStopMsg(),
			Event{Kind: EventStreamStop, Xid: xid2}, false, false, false, false},
		{"stream commit", idle3, streamCommitMsg(xid2, commit2, end2, time2),
			Event{Kind: EventStreamCommit, Xid: xid2, End: end2, Txn: &source.Txn{Xid: xid2, Commit: commit2, CommitTime: time2}},
			false, false, false, false},
		{"stream commit before the timestamp epoch", idle3, streamCommitMsg(xid2, 0x10, 0x11, time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)),
			Event{Kind: EventStreamCommit, Xid: xid2, End: 0x11, Txn: &source.Txn{Xid: xid2, Commit: 0x10, CommitTime: time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC)}},
			false, false, false, false},
		{"stream abort of the transaction", idle3, streamAbortMsg(xid2, xid2),
			Event{Kind: EventStreamAbort, Xid: xid2, Sub: xid2}, false, false, false, false},
		{"stream abort of a subtransaction", idle3, streamAbortMsg(xid2, sub2),
			Event{Kind: EventStreamAbort, Xid: xid2, Sub: sub2}, false, false, false, false},
		{"stream abort with its position (protocol 4)", idle4, streamAbortParallelMsg(xid2, sub2, 0x99_00000000, time3),
			Event{Kind: EventStreamAbort, Xid: xid2, Sub: sub2}, false, false, false, false},
		{"stream abort without its position (protocol 4, streaming on)", idle4, streamAbortMsg(xid2, sub2),
			Event{Kind: EventStreamAbort, Xid: xid2, Sub: sub2}, false, false, false, false},
		{"insert of the top-level transaction", inBlock, streamed(xid2, insertMsg(ordersID, row...)),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpInsert, Sub: xid2}}, false, true, false, false},
		{"insert of a subtransaction", inBlock, streamed(sub2, insertMsg(ordersID, row...)),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpInsert, Sub: sub2}}, false, true, false, false},
		{"update with old key", inBlock, streamed(sub2, updateMsg(ordersID, 'K', row, row...)),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpUpdate, Sub: sub2}}, false, true, false, false},
		{"update without old tuple", inBlock, streamed(xid2, updateMsg(ordersID, 0, nil, row...)),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpUpdate, Sub: xid2}}, false, true, false, false},
		{"delete", inBlock, streamed(sub2, deleteMsg(itemsID, 'O', text("s"), text("1"))),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpDelete, Sub: sub2}}, false, true, false, false},
		{"truncate", inBlock, streamed(sub2, truncateMsg(1, ordersID, itemsID)),
			Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpTruncate, Sub: sub2}}, false, true, false, false},
		{"relation", inBlock, streamed(sub2, relationMsg(777, "s", "new", 'd', relCol{flags: 1, name: "k", oid: 23, typmod: -1})),
			Event{Kind: EventRelation}, false, true, true, false},
		{"type", inBlock, streamed(sub2, typeMsg(90009, "s", "mood")),
			Event{Kind: EventNone}, false, true, false, true},
		{"origin", inBlock, originMsg(0, "pg_9"),
			Event{Kind: EventNone}, false, true, false, false},
		{"non-transactional logical message", inBlock, streamed(xid2, logicalMsg(false, 0x10, "other", "x")),
			Event{Kind: EventNone}, false, true, false, false},
		{"begin prepare", idle3, beginPrepare1(),
			Event{Kind: EventBeginPrepare, Xid: xid1, GID: gid1, Txn: &source.Txn{Xid: xid1, Commit: prepare1, CommitTime: time2}},
			true, false, false, false},
		{"begin prepare with an empty GID", idle3, beginPrepareMsg(prepare1, prepEnd1, time2, xid1, ""),
			Event{Kind: EventBeginPrepare, Xid: xid1, Txn: &source.Txn{Xid: xid1, Commit: prepare1, CommitTime: time2}},
			true, false, false, false},
		{"insert in a prepared transaction", inPrepare, insertMsg(ordersID, row...),
			Event{Kind: EventChange, Change: source.Change{Op: source.OpInsert}}, true, false, false, false},
		{"prepare", inPrepare, prepare1Msg(),
			Event{Kind: EventPrepare, Xid: xid1, GID: gid1, End: prepEnd1, Txn: &source.Txn{Xid: xid1, Commit: prepare1, CommitTime: time2}},
			false, false, false, false},
		{"commit prepared", idle3, commitPreparedMsg(commitP1, endP1, time3, xid1, gid1),
			Event{Kind: EventCommitPrepared, Xid: xid1, GID: gid1, End: endP1, Txn: &source.Txn{Xid: xid1, Commit: commitP1, CommitTime: time3}},
			false, false, false, false},
		{"commit prepared, utf-8 GID", idle3, commitPreparedMsg(commitP1, endP1, time3, xid1, "paiement-東京"),
			Event{Kind: EventCommitPrepared, Xid: xid1, GID: "paiement-東京", End: endP1, Txn: &source.Txn{Xid: xid1, Commit: commitP1, CommitTime: time3}},
			false, false, false, false},
		{"rollback prepared", idle3, rollbackPreparedMsg(prepEnd1, endP1, time2, time3, xid1, gid1),
			Event{Kind: EventRollbackPrepared, Xid: xid1, GID: gid1, End: endP1}, false, false, false, false},
		{"stream prepare", idle3, streamPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1),
			Event{Kind: EventStreamPrepare, Xid: xid2, GID: gid1, End: prepEnd1, Txn: &source.Txn{Xid: xid2, Commit: prepare1, CommitTime: time2}},
			false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.setup(t)
			ev := mustDecode(t, d, tt.data)
			checkEvent(t, ev, tt.want)
			if d.InTxn() != tt.inTxn || d.InStream() != tt.inStream {
				t.Errorf("InTxn() %v InStream() %v, want %v %v", d.InTxn(), d.InStream(), tt.inTxn, tt.inStream)
			}
			if tt.wantRel && (ev.Rel == nil || ev.Rel.ID != 777 || d.rels[777] != ev.Rel) {
				t.Errorf("relation %+v not announced", ev.Rel)
			}
			if name, _ := d.TypeName(90009); tt.wantType && name != "s.mood" {
				t.Errorf("TypeName(90009) = %q", name)
			}
			if ev.Kind == EventChange && ev.Change.Op != source.OpTruncate && ev.Change.Rel == nil {
				t.Error("change without a relation")
			}
		})
	}
}

// TestDecodeStreamedTransactions decodes two streamed transactions whose
// blocks interleave with each other and with an ordinary transaction, one
// losing a subtransaction, and checks every event.
func TestDecodeStreamedTransactions(t *testing.T) {
	d := NewDecoder()
	d.SetProtocol(2)
	d.Pipeline, d.Queue = queuePipeline, queueID
	r1 := []val{text("1"), text("a"), null}
	steps := []struct {
		data     []byte
		want     Event
		inStream bool
	}{
		{streamStartMsg(xid2, true), Event{Kind: EventStreamStart, Xid: xid2, First: true}, true},
		{streamed(xid2, announceOrders()), Event{Kind: EventRelation}, true},
		{streamed(xid2, insertMsg(ordersID, r1...)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpInsert, Sub: xid2}}, true},
		{streamed(sub2, insertMsg(ordersID, r1...)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpInsert, Sub: sub2}}, true},
		{streamed(xid2, announceQueue(queueID, queuePipeline)), Event{Kind: EventRelation}, true},
		{streamed(sub2, queueInsert(queueID, itemsMessage)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpDDL, Sub: sub2}}, true},
		{streamStopMsg(), Event{Kind: EventStreamStop, Xid: xid2}, false},

		// An ordinary transaction between the blocks.
		{beginTxn(), Event{Kind: EventBegin, Txn: &source.Txn{Xid: xid1, Commit: final1, CommitTime: commit1}}, false},
		{insertMsg(ordersID, r1...), Event{Kind: EventChange, Change: source.Change{Op: source.OpInsert}}, false},
		{commitTxn(), Event{Kind: EventCommit, End: end1, Txn: &source.Txn{Xid: xid1, Commit: final1, CommitTime: commit1}}, false},

		{streamStartMsg(xid3, true), Event{Kind: EventStreamStart, Xid: xid3, First: true}, true},
		{originMsg(0, "upstream"), Event{}, true},
		{streamed(xid3, announceItems()), Event{Kind: EventRelation}, true},
		{streamed(xid3, deleteMsg(itemsID, 'O', text("s"), text("1"))), Event{Kind: EventChange, Xid: xid3, Change: source.Change{Op: source.OpDelete, Sub: xid3}}, true},
		{streamStopMsg(), Event{Kind: EventStreamStop, Xid: xid3}, false},

		{streamAbortMsg(xid2, sub2), Event{Kind: EventStreamAbort, Xid: xid2, Sub: sub2}, false},
		// A subtransaction's abort leaves xid3 its origin.
		{streamAbortMsg(xid3, xid3+2), Event{Kind: EventStreamAbort, Xid: xid3, Sub: xid3 + 2}, false},
		{streamStartMsg(xid2, false), Event{Kind: EventStreamStart, Xid: xid2}, true},
		{streamed(xid2, updateMsg(ordersID, 0, nil, r1...)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpUpdate, Sub: xid2}}, true},
		{streamed(xid2, truncateMsg(0, ordersID, itemsID)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpTruncate, Sub: xid2}}, true},
		{streamStopMsg(), Event{Kind: EventStreamStop, Xid: xid2}, false},

		{streamCommitMsg(xid2, commit2, end2, time2), Event{Kind: EventStreamCommit, Xid: xid2, End: end2, Txn: &source.Txn{Xid: xid2, Commit: commit2, CommitTime: time2}}, false},
		{streamCommitMsg(xid3, commit2+0x100, end2+0x100, time3),
			Event{Kind: EventStreamCommit, Xid: xid3, End: end2 + 0x100, Txn: &source.Txn{Xid: xid3, Commit: commit2 + 0x100, CommitTime: time3, Origin: "upstream"}}, false},
		// The origin went with xid3: a later transaction of the same xid
		// (after wraparound) starts without one.
		{streamStartMsg(xid3, true), Event{Kind: EventStreamStart, Xid: xid3, First: true}, true},
		{streamStopMsg(), Event{Kind: EventStreamStop, Xid: xid3}, false},
		{streamCommitMsg(xid3, commit2+0x200, end2+0x200, time3),
			Event{Kind: EventStreamCommit, Xid: xid3, End: end2 + 0x200, Txn: &source.Txn{Xid: xid3, Commit: commit2 + 0x200, CommitTime: time3}}, false},
	}
	for i, s := range steps {
		ev, err := d.Decode(s.data)
		if err != nil {
			t.Fatalf("step %d (%c): %v", i, s.data[0], err)
		}
		t.Run(fmt.Sprintf("step %d %c", i, s.data[0]), func(t *testing.T) {
			checkEvent(t, ev, s.want)
			// Only the ordinary transaction's BEGIN and change leave one open.
			wantTxn := s.want.Kind == EventBegin || (s.want.Kind == EventChange && s.want.Xid == 0)
			if d.InStream() != s.inStream || d.InTxn() != wantTxn {
				t.Errorf("InStream() %v InTxn() %v, want %v %v", d.InStream(), d.InTxn(), s.inStream, wantTxn)
			}
			// Only xid3's changes come with its origin, which skipping
			// decant's own transactions goes by.
			want := ""
			if ev.Xid == xid3 {
				want = "upstream"
			}
			if ev.Kind == EventChange && d.Origin() != want {
				t.Errorf("Origin() = %q at a change of xid %d, want %q", d.Origin(), ev.Xid, want)
			}
			if ev.Kind == EventChange && ev.Change.Op == source.OpDDL && !reflect.DeepEqual(ev.Change.DDL, itemsDDL) {
				t.Errorf("DDL %s", renderDDL(ev.Change.DDL))
			}
		})
	}
}

// TestDecodeStreamDDL checks decant's DDL inside stream blocks: a row of
// the pipeline's queue becomes a change of the streamed transaction
// exactly as inside BEGIN and COMMIT, a DDL message an untrusted one, and
// neither leaves a transaction open behind it.
func TestDecodeStreamDDL(t *testing.T) {
	tests := []struct {
		name      string
		data      []byte
		kind      EventKind
		err       string // in the error, if any
		capture   bool   // a *CaptureError
		untrusted bool
	}{
		{"a queue row becomes a change", streamed(sub2, queueInsert(queueID, itemsMessage)), EventChange, "", false, false},
		{"in the top transaction", streamed(xid2, queueInsert(queueID, itemsMessage)), EventChange, "", false, false},
		{"another pipeline's queue", streamed(xid2, queueInsert(queueID+1, itemsMessage)), EventNone, "", false, false},
		{"the capture's delete", streamed(xid2, deleteMsg(queueID, 'K', text("1"), null)), EventNone, "", false, false},
		{"malformed", streamed(sub2, queueInsert(queueID, `{"tag": `)), EventNone, fmt.Sprint("xid ", xid2), false, false},
		{"capture failed", streamed(sub2, queueInsert(queueID, `{"tag": "ALTER TABLE", "error": "boom"}`)), EventNone, "boom", true, false},
		{"a message is untrusted", streamed(sub2, logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage)), EventChange, "", false, true},
		{"another pipeline's message", streamed(xid2, logicalMsg(true, 0x100, DDLMessagePrefix, `{"pipeline": "billing"}`)), EventNone, "", false, false},
		{"non-transactional", streamed(xid2, logicalMsg(false, 0x100, DDLMessagePrefix, itemsMessage)), EventNone, "", false, false},
		{"another prefix", streamed(xid2, logicalMsg(true, 0x100, "decant.ddl.v2", "not json")), EventNone, "", false, false},
		{"content cut short", streamed(xid2, logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage))[:60], EventNone, "message type 'M'", false, false},
		{"content runs on", append(streamed(xid2, logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage)), ' '), EventNone, "message type 'M'", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inBlock(t)
			d.Pipeline, d.Queue = queuePipeline, queueID
			mustDecode(t, d, streamed(xid2, announceQueue(queueID, queuePipeline)))
			mustDecode(t, d, streamed(xid2, announceQueue(queueID+1, "billing")))
			data := append([]byte(nil), tt.data...)
			ev, err := d.Decode(data)
			switch {
			case tt.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Fatalf("error %v, want one containing %q", err, tt.err)
			case tt.capture:
				var ce *CaptureError
				if !errors.As(err, &ce) {
					t.Errorf("error %v is not a *CaptureError", err)
				}
			case err != nil && !errors.Is(err, ErrMalformed):
				t.Errorf("error %v does not wrap ErrMalformed", err)
			}
			if ev.Kind != tt.kind {
				t.Errorf("event kind %d, want %d", ev.Kind, tt.kind)
			}
			if ev.Kind == EventChange {
				if ev.Change.Op != source.OpDDL || ev.Xid != xid2 || ev.Change.Sub != uint64(binary.BigEndian.Uint32(tt.data[1:])) {
					t.Errorf("change op %s xid %d sub %d", ev.Change.Op, ev.Xid, ev.Change.Sub)
				}
				if tt.untrusted {
					if !reflect.DeepEqual(*ev.Change.DDL, source.DDL{Untrusted: untrustedMessage}) {
						t.Errorf("DDL %+v, want only why it is untrusted", ev.Change.DDL)
					}
					return
				}
				if !reflect.DeepEqual(ev.Change.DDL, itemsDDL) {
					t.Errorf("DDL %s", renderDDL(ev.Change.DDL))
				}
				for i := range data {
					data[i] = 'x'
				}
				if string(ev.Change.DDL.JSON) != itemsMessage {
					t.Error("the change aliases the message buffer")
				}
			}
			if d.InTxn() || !d.InStream() {
				t.Errorf("InTxn() %v InStream() %v, want false true", d.InTxn(), d.InStream())
			}
		})
	}
}

// TestDecodeTwoPhase decodes prepared transactions: decoded at PREPARE,
// then committed or rolled back, and one streamed before its PREPARE.
func TestDecodeTwoPhase(t *testing.T) {
	d := NewDecoder()
	d.SetProtocol(3)
	r1 := []val{text("1"), text("a"), null}
	var begun *source.Txn
	steps := []struct {
		data []byte
		want Event
	}{
		{beginPrepare1(), Event{Kind: EventBeginPrepare, Xid: xid1, GID: gid1, Txn: &source.Txn{Xid: xid1, Commit: prepare1, CommitTime: time2}}},
		{originMsg(0x77, "upstream"), Event{}},
		{announceOrders(), Event{Kind: EventRelation}},
		{insertMsg(ordersID, r1...), Event{Kind: EventChange, Change: source.Change{Op: source.OpInsert}}},
		{logicalMsg(true, 0x60, DDLMessagePrefix, itemsMessage), Event{Kind: EventChange, Change: source.Change{Op: source.OpDDL}}},
		{prepare1Msg(), Event{Kind: EventPrepare, Xid: xid1, GID: gid1, End: prepEnd1, Txn: &source.Txn{Xid: xid1, Commit: prepare1, CommitTime: time2, Origin: "upstream"}}},
		// Other transactions run before the prepared one is finished.
		{beginMsg(final1+0x1000, commit1, xid1+1), Event{Kind: EventBegin, Txn: &source.Txn{Xid: xid1 + 1, Commit: final1 + 0x1000, CommitTime: commit1}}},
		{commitMsg(final1+0x1000, final1+0x1010, commit1), Event{Kind: EventCommit, End: final1 + 0x1010, Txn: &source.Txn{Xid: xid1 + 1, Commit: final1 + 0x1000, CommitTime: commit1}}},
		{commitPreparedMsg(commitP1, endP1, time3, xid1, gid1), Event{Kind: EventCommitPrepared, Xid: xid1, GID: gid1, End: endP1, Txn: &source.Txn{Xid: xid1, Commit: commitP1, CommitTime: time3}}},

		{beginPrepareMsg(prepare1+0x1000, prepEnd1+0x1000, time2, xid1+2, "gone"), Event{Kind: EventBeginPrepare, Xid: xid1 + 2, GID: "gone", Txn: &source.Txn{Xid: xid1 + 2, Commit: prepare1 + 0x1000, CommitTime: time2}}},
		{deleteMsg(ordersID, 'K', r1...), Event{Kind: EventChange, Change: source.Change{Op: source.OpDelete}}},
		{prepareMsg(prepare1+0x1000, prepEnd1+0x1000, time2, xid1+2, "gone"), Event{Kind: EventPrepare, Xid: xid1 + 2, GID: "gone", End: prepEnd1 + 0x1000, Txn: &source.Txn{Xid: xid1 + 2, Commit: prepare1 + 0x1000, CommitTime: time2}}},
		{rollbackPreparedMsg(prepEnd1+0x1000, endP1+0x1000, time2, time3, xid1+2, "gone"), Event{Kind: EventRollbackPrepared, Xid: xid1 + 2, GID: "gone", End: endP1 + 0x1000}},

		{streamStartMsg(xid2, true), Event{Kind: EventStreamStart, Xid: xid2, First: true}},
		{originMsg(0, "far"), Event{}},
		{streamed(sub2, insertMsg(ordersID, r1...)), Event{Kind: EventChange, Xid: xid2, Change: source.Change{Op: source.OpInsert, Sub: sub2}}},
		{streamStopMsg(), Event{Kind: EventStreamStop, Xid: xid2}},
		{streamPrepareMsg(prepare1+0x2000, prepEnd1+0x2000, time2, xid2, "big"), Event{Kind: EventStreamPrepare, Xid: xid2, GID: "big", End: prepEnd1 + 0x2000, Txn: &source.Txn{Xid: xid2, Commit: prepare1 + 0x2000, CommitTime: time2, Origin: "far"}}},
		{commitPreparedMsg(commitP1+0x2000, endP1+0x2000, time3, xid2, "big"), Event{Kind: EventCommitPrepared, Xid: xid2, GID: "big", End: endP1 + 0x2000, Txn: &source.Txn{Xid: xid2, Commit: commitP1 + 0x2000, CommitTime: time3}}},
	}
	for i, s := range steps {
		ev, err := d.Decode(s.data)
		if err != nil {
			t.Fatalf("step %d (%c): %v", i, s.data[0], err)
		}
		t.Run(fmt.Sprintf("step %d %c", i, s.data[0]), func(t *testing.T) {
			checkEvent(t, ev, s.want)
		})
		switch ev.Kind {
		case EventBeginPrepare:
			begun = ev.Txn
			if !d.InTxn() {
				t.Errorf("step %d: InTxn() false after Begin Prepare", i)
			}
		case EventPrepare:
			if ev.Txn != begun {
				t.Errorf("step %d: Prepare's Txn %p is not Begin Prepare's %p", i, ev.Txn, begun)
			}
			if d.InTxn() {
				t.Errorf("step %d: InTxn() true after Prepare", i)
			}
		case EventCommitPrepared:
			if ev.Txn == begun {
				t.Errorf("step %d: Commit Prepared reuses Begin Prepare's Txn", i)
			}
		}
	}
}

// TestDecodeProtocolVersions sends every message protocols 2 to 4 add
// under every protocol: a version that does not define a message refuses
// it, whatever the decoder's state.
func TestDecodeProtocolVersions(t *testing.T) {
	tests := []struct {
		name  string
		since int
		setup func(testing.TB) *Decoder
		data  []byte
	}{
		{"stream start", 2, idle3, streamStartMsg(xid2, true)},
		{"stream stop", 2, inBlock, streamStopMsg()},
		{"stream commit", 2, idle3, streamCommitMsg(xid2, commit2, end2, time2)},
		{"stream abort", 2, idle3, streamAbortMsg(xid2, sub2)},
		{"stream abort with its position", 4, idle3, streamAbortParallelMsg(xid2, sub2, commit2, time2)},
		{"begin prepare", 3, idle3, beginPrepare1()},
		{"prepare", 3, inPrepare, prepare1Msg()},
		{"commit prepared", 3, idle3, commitPreparedMsg(commitP1, endP1, time3, xid1, gid1)},
		{"rollback prepared", 3, idle3, rollbackPreparedMsg(prepEnd1, endP1, time2, time3, xid1, gid1)},
		{"stream prepare", 3, idle3, streamPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1)},
	}
	for _, tt := range tests {
		for _, v := range []int{0, 1, 2, 3, 4} {
			t.Run(fmt.Sprintf("%s in version %d", tt.name, v), func(t *testing.T) {
				d := tt.setup(t)
				d.SetProtocol(v)
				wasTxn, wasStream := d.InTxn(), d.InStream()
				_, err := d.Decode(tt.data)
				if max(v, 1) >= tt.since {
					if err != nil {
						t.Errorf("refused: %v", err)
					}
					return
				}
				if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("message type %q", tt.data[0])) {
					t.Errorf("error %v, want ErrMalformed naming the message type", err)
				}
				if d.InTxn() != wasTxn || d.InStream() != wasStream {
					t.Error("the refused message changed the state")
				}
			})
		}
	}

	t.Run("NewDecoder reads version 1", func(t *testing.T) {
		if _, err := NewDecoder().Decode(streamStartMsg(xid2, true)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Stream Start accepted: %v", err)
		}
	})
	for _, v := range []int{-1, 5, 1000} {
		t.Run(fmt.Sprintf("unknown version %d", v), func(t *testing.T) {
			d := NewDecoder()
			d.SetProtocol(v)
			_, err := d.Decode(beginTxn())
			if err == nil || errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), fmt.Sprintf("protocol version %d is not supported", v)) {
				t.Errorf("error %v, want one naming the unsupported version, not ErrMalformed", err)
			}
			if d.InTxn() {
				t.Error("BEGIN opened a transaction")
			}
		})
	}
}

// TestDecodeStreamOrderErrors feeds protocol 3 sequences whose last message
// is out of order or does not fit; every earlier message must be accepted.
func TestDecodeStreamOrderErrors(t *testing.T) {
	row := []val{text("1"), text("a"), null}
	start := streamStartMsg(xid2, true)
	stop := streamStopMsg()
	bp := beginPrepare1()
	tests := []struct {
		name            string
		msgs            [][]byte
		want            string // in the error
		inTxn, inStream bool   // decoder state after the error
	}{
		{"stream start inside a block", [][]byte{start, streamStartMsg(xid3, true)},
			fmt.Sprintf("Stream Start of xid %d inside a stream block of xid %d", xid3, xid2), false, true},
		{"same stream start twice", [][]byte{start, start}, "inside a stream block", false, true},
		{"stream start inside a transaction", [][]byte{beginTxn(), start},
			fmt.Sprintf("Stream Start of xid %d inside open xid %d", xid2, xid1), true, false},
		{"stream start inside a prepared transaction", [][]byte{bp, start}, "inside open xid", true, false},
		{"stream stop outside a block", [][]byte{stop}, "Stream Stop outside a stream block", false, false},
		{"second stream stop", [][]byte{start, stop, stop}, "Stream Stop outside a stream block", false, false},
		{"stream stop inside a transaction", [][]byte{beginTxn(), stop}, "Stream Stop outside a stream block", true, false},
		{"stream commit inside a block", [][]byte{start, streamCommitMsg(xid2, commit2, end2, time2)},
			"Stream Commit of xid 5001 inside a stream block of xid 5001", false, true},
		{"stream commit inside a transaction", [][]byte{beginTxn(), streamCommitMsg(xid2, commit2, end2, time2)}, "inside open xid", true, false},
		{"stream commit inside a prepared transaction", [][]byte{bp, streamCommitMsg(xid2, commit2, end2, time2)}, "inside open xid", true, false},
		{"stream commit end equals commit", [][]byte{streamCommitMsg(xid2, commit2, commit2, time2)}, "not after its commit", false, false},
		{"stream commit end before commit", [][]byte{streamCommitMsg(xid2, commit2, 0, time2)}, "not after its commit", false, false},
		{"stream abort inside a block", [][]byte{start, streamAbortMsg(xid2, sub2)}, "Stream Abort of xid 5001 inside a stream block", false, true},
		{"stream abort inside a transaction", [][]byte{beginTxn(), streamAbortMsg(xid2, sub2)}, "inside open xid", true, false},
		{"stream prepare inside a block", [][]byte{start, streamPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1)}, "Stream Prepare of xid 5001 inside a stream block", false, true},
		{"stream prepare inside a transaction", [][]byte{beginTxn(), streamPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1)}, "inside open xid", true, false},
		{"stream prepare end equals prepare", [][]byte{streamPrepareMsg(prepare1, prepare1, time2, xid2, gid1)}, "not after its commit", false, false},
		{"BEGIN inside a block", [][]byte{start, beginTxn()}, fmt.Sprintf("BEGIN of xid %d inside a stream block of xid %d", xid1, xid2), false, true},
		{"COMMIT inside a block", [][]byte{start, commitTxn()}, "without BEGIN", false, true},
		{"BEGIN inside a prepared transaction", [][]byte{bp, beginTxn()}, "BEGIN of xid 4242 inside open xid 4242", true, false},
		{"begin prepare inside a transaction", [][]byte{beginTxn(), bp}, "Begin Prepare of xid 4242 inside open xid 4242", true, false},
		{"begin prepare inside a prepared transaction", [][]byte{bp, bp}, "inside open xid", true, false},
		{"begin prepare inside a block", [][]byte{start, bp}, "Begin Prepare of xid 4242 inside a stream block", false, true},
		{"begin prepare end equals prepare", [][]byte{beginPrepareMsg(prepare1, prepare1, time2, xid1, gid1)}, "not after its commit", false, false},
		{"prepare without begin prepare", [][]byte{prepare1Msg()}, "Prepare of xid 4242 at 18/100 without Begin Prepare", false, false},
		{"prepare of a BEGIN'd transaction", [][]byte{beginTxn(), prepare1Msg()}, "without Begin Prepare", true, false},
		{"prepare inside a block", [][]byte{start, prepare1Msg()}, "without Begin Prepare", false, true},
		{"second prepare", [][]byte{bp, prepare1Msg(), prepare1Msg()}, "without Begin Prepare", false, false},
		{"prepare of another xid", [][]byte{bp, prepareMsg(prepare1, prepEnd1, time2, xid1+1, gid1)},
			"Prepare of xid 4243 at 18/100, Begin Prepare announced xid 4242 at 18/100", true, false},
		{"prepare at another LSN", [][]byte{bp, prepareMsg(prepare1+1, prepEnd1, time2, xid1, gid1)}, "Begin Prepare announced xid 4242 at 18/100", true, false},
		{"prepare of another GID", [][]byte{bp, prepareMsg(prepare1, prepEnd1, time2, xid1, "other")},
			`Prepare of xid 4242 names GID "other", Begin Prepare "order-77/pay"`, true, false},
		{"prepare end equals prepare", [][]byte{bp, prepareMsg(prepare1, prepare1, time2, xid1, gid1)}, "not after its commit", true, false},
		{"COMMIT of a prepared transaction", [][]byte{bp, commitMsg(prepare1, prepEnd1, time2)}, "COMMIT at 18/100 inside prepared xid 4242", true, false},
		{"commit prepared inside a transaction", [][]byte{beginTxn(), commitPreparedMsg(commitP1, endP1, time3, xid1, gid1)}, "Commit Prepared of xid 4242 inside open xid 4242", true, false},
		{"commit prepared inside its own prepare", [][]byte{bp, commitPreparedMsg(commitP1, endP1, time3, xid1, gid1)}, "inside open xid", true, false},
		{"commit prepared inside a block", [][]byte{start, commitPreparedMsg(commitP1, endP1, time3, xid1, gid1)}, "inside a stream block", false, true},
		{"commit prepared end equals commit", [][]byte{commitPreparedMsg(commitP1, commitP1, time3, xid1, gid1)}, "not after its commit", false, false},
		{"rollback prepared inside a transaction", [][]byte{beginTxn(), rollbackPreparedMsg(prepEnd1, endP1, time2, time3, xid1, gid1)}, "Rollback Prepared of xid 4242 inside open xid", true, false},
		{"rollback prepared inside a block", [][]byte{start, rollbackPreparedMsg(prepEnd1, endP1, time2, time3, xid1, gid1)}, "inside a stream block", false, true},
		{"insert after stream stop", [][]byte{announceOrders(), start, stop, insertMsg(ordersID, row...)}, "insert outside a transaction", false, false},
		{"insert in a block of an unknown relation", [][]byte{start, streamed(sub2, insertMsg(99, row...))},
			"insert in xid 5001 for relation 99 that was never announced", false, true},
		{"truncate in a block of an unknown relation", [][]byte{start, streamed(sub2, truncateMsg(0, 99))},
			"truncate in xid 5001 of relation 99", false, true},
		{"row that does not fit in a block", [][]byte{announceOrders(), start, streamed(sub2, insertMsg(ordersID, text("1")))},
			"insert new row of public.orders in xid 5001", false, true},
		{"first-block flag neither 0 nor 1", [][]byte{msg('S').i32(xid2).u8(2)}, "Stream Start of xid 5001 has first-block flag 2", false, false},
		{"stream stop with a field", [][]byte{start, msg('E').u8(0)}, "message type 'E' has 1 bytes past its last field", false, true},
		{"stream abort with its position before protocol 4", [][]byte{streamAbortParallelMsg(xid2, sub2, commit2, time2)}, "message type 'A' has 16 bytes past", false, false},
		{"begin prepare running on past its GID", [][]byte{append(beginPrepare1(), 'x')}, "message type 'b' has 1 bytes past", false, false},
		{"GID without its terminator", [][]byte{msg('K').u8(0).lsn(commitP1).lsn(endP1).ts(time3).i32(xid1).raw('a', 'b')}, "message type 'K' truncated", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			d.SetProtocol(3)
			last := len(tt.msgs) - 1
			for _, m := range tt.msgs[:last] {
				mustDecode(t, d, m)
			}
			ev, err := d.Decode(tt.msgs[last])
			if err == nil {
				t.Fatalf("Decode(%q) = %+v, want an error", tt.msgs[last], ev)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("error %q does not wrap ErrMalformed", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			if !reflect.DeepEqual(ev, Event{}) {
				t.Errorf("error came with event %+v", ev)
			}
			if d.InTxn() != tt.inTxn || d.InStream() != tt.inStream {
				t.Errorf("InTxn() %v InStream() %v after the error, want %v %v", d.InTxn(), d.InStream(), tt.inTxn, tt.inStream)
			}
		})
	}
}

// TestDecodeStreamLengths sends data messages in stream block form whose
// lengths point past their end: refused before anything is allocated.
func TestDecodeStreamLengths(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"text length past the end", streamed(sub2, msg('I').i32(ordersID).u8('N').i16(3).u8('t').i32(0xFFFFFFFF).raw('a')), "column value runs past the end"},
		{"binary length past the end", streamed(sub2, msg('I').i32(ordersID).u8('N').i16(1).u8('b').i32(1<<30)), "column value runs past the end"},
		{"column count past the end", streamed(sub2, msg('I').i32(ordersID).u8('N').i16(0xFFFF).u8('n')), "column kind runs past the end"},
		{"insert cut after the xid", msg('I').i32(sub2), "tuple header runs past the end"},
		{"insert cut inside the xid", msg('I').raw(0, 0), "tuple header runs past the end"},
		{"old tuple length past the end", streamed(sub2, msg('U').i32(ordersID).u8('O').i16(1).u8('t').i32(0x7FFFFFFF)), "column value runs past the end"},
		{"new tuple missing after old", streamed(sub2, msg('U').i32(ordersID).u8('K').tuple(text("1"), null, null)), "tuple header runs past the end"},
		{"delete length past the end", streamed(sub2, msg('D').i32(ordersID).u8('K').i16(1).u8('t').i32(100).raw('x')), "column value runs past the end"},
		{"truncate relation count past the end", streamed(sub2, msg('T').i32(0xFFFFFFFF).u8(0).i32(ordersID)), "truncate relation list runs past the end"},
		{"truncate header cut", streamed(sub2, msg('T').i32(1)), "truncate header runs past the end"},
		{"relation column count past the end", streamed(sub2, msg('R').i32(1).str("s").str("t").u8('d').i16(0xFFFF).u8(0).str("c").i32(25).i32(0)), "truncated"},
		{"message content past the end", streamed(sub2, msg('M').u8(1).lsn(1).str(DDLMessagePrefix).i32(1<<30).raw('{')), "message type 'M'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inBlock(t)
			_, err := decodeNoPanic(d, tt.data)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrMalformed with %q", err, tt.want)
			}
			if !d.InStream() || d.InTxn() {
				t.Errorf("InStream() %v InTxn() %v", d.InStream(), d.InTxn())
			}
		})
	}
}

// TestDecodeStreamAbortForms cuts the protocol 4 Stream Abort that carries
// the abort position: only the cut that leaves the form without it (xid
// and subtransaction xid) is accepted. (TestDecodeTruncatedInput, which
// wants every cut refused, cannot take this message.)
func TestDecodeStreamAbortForms(t *testing.T) {
	data := streamAbortParallelMsg(xid2, sub2, commit2, time2)
	for n := 0; n <= len(data); n++ {
		ev, err := decodeNoPanic(idle4(t), data[:n])
		switch n {
		case 1 + 4 + 4, len(data):
			if err != nil || ev.Kind != EventStreamAbort || ev.Xid != xid2 || ev.Sub != sub2 {
				t.Errorf("%d bytes: event %+v, error %v", n, ev, err)
			}
		default:
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%d bytes: error %v, want ErrMalformed", n, err)
			}
		}
	}
}

// validMessagesV2 are well-formed messages of protocols 2 to 4 and the
// decoder state each needs; TestDecodeTruncatedInput and TestDecodeGarbage
// cut and overwrite them, FuzzDecode starts from them.
func validMessagesV2() []validMessage {
	return []validMessage{
		{"stream start", idle3, streamStartMsg(xid2, true)},
		{"stream stop", inBlock, streamStopMsg()},
		{"stream commit", idle3, streamCommitMsg(xid2, commit2, end2, time2)},
		{"stream abort", idle3, streamAbortMsg(xid2, sub2)},
		{"stream insert", inBlock, streamed(sub2, insertMsg(ordersID, text("1"), null, text("")))},
		{"stream update K", inBlock, streamed(sub2, updateMsg(ordersID, 'K', []val{text("1"), null, null}, text("2"), text("b"), toast))},
		{"stream update O", inBlock, streamed(xid2, updateMsg(itemsID, 'O', []val{text("s"), text("")}, text("s"), bin("9")))},
		{"stream delete", inBlock, streamed(sub2, deleteMsg(itemsID, 'O', text("s"), bin("\xff")))},
		{"stream truncate", inBlock, streamed(sub2, truncateMsg(3, ordersID, itemsID, auditID))},
		{"stream relation", inBlock, streamed(sub2, relationMsg(5, "My Schema", `Tab"le`, 'i', relCol{flags: 1, name: "k", oid: 20, typmod: -1}))},
		{"stream type", inBlock, streamed(sub2, typeMsg(90001, "public", "mood"))},
		{"stream origin", inBlock, originMsg(0, "upstream")},
		{"stream DDL message", inBlock, streamed(sub2, logicalMsg(true, 0x100, DDLMessagePrefix, itemsMessage))},
		{"begin prepare", idle3, beginPrepare1()},
		{"prepare", inPrepare, prepare1Msg()},
		{"commit prepared", idle3, commitPreparedMsg(commitP1, endP1, time3, xid1, gid1)},
		{"rollback prepared", idle3, rollbackPreparedMsg(prepEnd1, endP1, time2, time3, xid1, gid1)},
		{"stream prepare", idle3, streamPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1)},
	}
}
