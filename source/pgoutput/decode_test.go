package pgoutput

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

// This file builds pgoutput protocol version 1 messages byte by byte, as
// "Logical Replication Message Formats" in the PostgreSQL manual describes
// them, independently of the parser under test.

// wire appends the protocol's integer and string encodings.
type wire []byte

func msg(kind byte) wire             { return wire{kind} }
func (w wire) u8(v byte) wire        { return append(w, v) }
func (w wire) i16(v uint16) wire     { return binary.BigEndian.AppendUint16(w, v) }
func (w wire) i32(v uint32) wire     { return binary.BigEndian.AppendUint32(w, v) }
func (w wire) i64(v uint64) wire     { return binary.BigEndian.AppendUint64(w, v) }
func (w wire) str(s string) wire     { return append(append(w, s...), 0) }
func (w wire) raw(b ...byte) wire    { return append(w, b...) }
func (w wire) lsn(l source.LSN) wire { return w.i64(uint64(l)) }

// pgEpoch is where PostgreSQL timestamps count microseconds from.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

func (w wire) ts(t time.Time) wire { return w.i64(uint64(t.Sub(pgEpoch).Microseconds())) }

// Begin: Int64 final LSN, Int64 commit timestamp, Int32 xid.
func beginMsg(final source.LSN, at time.Time, xid uint32) []byte {
	return msg('B').lsn(final).ts(at).i32(xid)
}

// Commit: Int8 flags, Int64 commit LSN, Int64 end LSN, Int64 timestamp.
func commitMsg(commit, end source.LSN, at time.Time) []byte {
	return msg('C').u8(0).lsn(commit).lsn(end).ts(at)
}

// Origin: Int64 commit LSN on the origin, String name.
func originMsg(lsn source.LSN, name string) []byte {
	return msg('O').lsn(lsn).str(name)
}

// relCol is one column of a Relation message.
type relCol struct {
	flags  byte // 1: part of the key
	name   string
	oid    uint32
	typmod int32
}

// Relation: Int32 id, String namespace, String name, Int8 replica identity,
// Int16 column count, then per column Int8 flags, String name, Int32 type
// OID, Int32 type modifier.
func relationMsg(id uint32, ns, name string, identity byte, cols ...relCol) []byte {
	w := msg('R').i32(id).str(ns).str(name).u8(identity).i16(uint16(len(cols)))
	for _, c := range cols {
		w = w.u8(c.flags).str(c.name).i32(c.oid).i32(uint32(c.typmod))
	}
	return w
}

// Type: Int32 OID, String namespace, String name.
func typeMsg(oid uint32, ns, name string) []byte {
	return msg('Y').i32(oid).str(ns).str(name)
}

// val is one column of a TupleData: 'n' NULL, 'u' unchanged TOAST, 't'
// text or 'b' binary with Int32 length and bytes.
type val struct {
	kind byte
	data string
}

var (
	null  = val{kind: 'n'}
	toast = val{kind: 'u'}
)

func text(s string) val { return val{kind: 't', data: s} }
func bin(s string) val  { return val{kind: 'b', data: s} }

// TupleData: Int16 column count, then per column its kind and data.
func (w wire) tuple(vals ...val) wire {
	w = w.i16(uint16(len(vals)))
	for _, v := range vals {
		w = w.u8(v.kind)
		if v.kind == 't' || v.kind == 'b' {
			w = w.i32(uint32(len(v.data))).raw([]byte(v.data)...)
		}
	}
	return w
}

// Insert: Int32 relation id, 'N', TupleData.
func insertMsg(rel uint32, vals ...val) []byte {
	return msg('I').i32(rel).u8('N').tuple(vals...)
}

// Update: Int32 relation id, optionally 'K' or 'O' and the old TupleData,
// then 'N' and the new TupleData. oldKind 0 sends no old tuple.
func updateMsg(rel uint32, oldKind byte, old []val, new ...val) []byte {
	w := msg('U').i32(rel)
	if oldKind != 0 {
		w = w.u8(oldKind).tuple(old...)
	}
	return w.u8('N').tuple(new...)
}

// Delete: Int32 relation id, 'K' or 'O', TupleData.
func deleteMsg(rel uint32, kind byte, old ...val) []byte {
	return msg('D').i32(rel).u8(kind).tuple(old...)
}

// Truncate: Int32 relation count, Int8 options (1 CASCADE, 2 RESTART
// IDENTITY), Int32 relation ids.
func truncateMsg(options byte, rels ...uint32) []byte {
	w := msg('T').i32(uint32(len(rels))).u8(options)
	for _, r := range rels {
		w = w.i32(r)
	}
	return w
}

// Message (only sent with the "messages" option): Int8 flags (1
// transactional), Int64 LSN, String prefix, Int32 length, content.
func logicalMsg(transactional bool, lsn source.LSN, prefix, content string) []byte {
	var flags byte
	if transactional {
		flags = 1
	}
	return msg('M').u8(flags).lsn(lsn).str(prefix).i32(uint32(len(content))).raw([]byte(content)...)
}

// The transaction and relations most tests use.
const (
	xid1     = 4242
	ordersID = 16384
	itemsID  = 16390
	auditID  = 16400
)

var (
	final1  = source.LSN(0x16_B374D848)
	end1    = final1 + 0x30
	commit1 = time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)

	ordersCols = []relCol{
		{flags: 1, name: "id", oid: 23, typmod: -1},
		{flags: 0, name: "name", oid: 25, typmod: -1},
		{flags: 0, name: "note", oid: 1043, typmod: 54}, // varchar(50)
	}
	ordersRel = &source.Relation{ID: ordersID, Schema: "public", Name: "orders", Identity: source.IdentityDefault,
		Columns: []source.Column{
			{Name: "id", Type: 23, TypeMod: -1, Key: true},
			{Name: "name", Type: 25, TypeMod: -1},
			{Name: "note", Type: 1043, TypeMod: 54},
		}}
)

func beginTxn() []byte  { return beginMsg(final1, commit1, xid1) }
func commitTxn() []byte { return commitMsg(final1, end1, commit1) }
func announceOrders() []byte {
	return relationMsg(ordersID, "public", "orders", 'd', ordersCols...)
}
func announceItems() []byte {
	return relationMsg(itemsID, "sales", "items", 'f',
		relCol{flags: 1, name: "sku", oid: 25, typmod: -1}, relCol{flags: 1, name: "qty", oid: 21, typmod: -1})
}
func announceAudit() []byte {
	return relationMsg(auditID, "public", "audit", 'n', relCol{name: "entry", oid: 3802, typmod: -1})
}

// mustDecode decodes a message that must be accepted.
func mustDecode(t testing.TB, d *Decoder, data []byte) Event {
	t.Helper()
	ev, err := d.Decode(data)
	if err != nil {
		t.Fatalf("Decode(%q): %v", data, err)
	}
	return ev
}

// inTxn returns a decoder inside transaction xid1 that knows the orders,
// items and audit relations.
func inTxn(t testing.TB) *Decoder {
	t.Helper()
	d := NewDecoder()
	for _, m := range [][]byte{announceOrders(), announceItems(), announceAudit(), beginTxn()} {
		mustDecode(t, d, m)
	}
	return d
}

// idle returns a decoder between transactions that knows the relations.
func idle(t testing.TB) *Decoder {
	t.Helper()
	d := NewDecoder()
	for _, m := range [][]byte{announceOrders(), announceItems(), announceAudit()} {
		mustDecode(t, d, m)
	}
	return d
}

func TestDecodeBeginCommit(t *testing.T) {
	tests := []struct {
		name        string
		final, end  source.LSN
		at          time.Time
		xid         uint32
		commitFlags byte
	}{
		{"typical", final1, end1, commit1, xid1, 0},
		{"at the timestamp epoch", 0x1_00000000, 0x1_00000028, pgEpoch, 1, 0},
		{"before the timestamp epoch", 0x20, 0x21, time.Date(1999, 12, 31, 23, 59, 59, 999999000, time.UTC), 3, 0},
		{"high positions and xid", 0xFFFFFFFF_FFFFFF00, 0xFFFFFFFF_FFFFFFFF, time.Date(2262, 1, 1, 0, 0, 0, 1000, time.UTC), 0xFFFFFFFF, 0},
		{"commit flags ignored", 0x100, 0x200, commit1, 7, 0xFF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			if d.InTxn() {
				t.Fatal("new decoder is inside a transaction")
			}
			ev := mustDecode(t, d, beginMsg(tt.final, tt.at, tt.xid))
			if ev.Kind != EventBegin {
				t.Fatalf("BEGIN gave event kind %d, want EventBegin", ev.Kind)
			}
			if ev.Txn == nil {
				t.Fatal("BEGIN gave no Txn")
			}
			if ev.Txn.Xid != uint64(tt.xid) || ev.Txn.Commit != tt.final || ev.Txn.Origin != "" {
				t.Errorf("Txn = %+v, want xid %d commit %s and no origin", *ev.Txn, tt.xid, tt.final)
			}
			if !ev.Txn.CommitTime.Equal(tt.at) {
				t.Errorf("CommitTime = %s, want %s", ev.Txn.CommitTime.UTC(), tt.at)
			}
			if !d.InTxn() {
				t.Error("InTxn() = false after BEGIN")
			}
			txn := ev.Txn

			c := msg('C').u8(tt.commitFlags).lsn(tt.final).lsn(tt.end).ts(tt.at.Add(time.Second))
			ev = mustDecode(t, d, c)
			if ev.Kind != EventCommit {
				t.Fatalf("COMMIT gave event kind %d, want EventCommit", ev.Kind)
			}
			if ev.Txn != txn {
				t.Errorf("COMMIT's Txn %p is not BEGIN's %p", ev.Txn, txn)
			}
			if ev.End != tt.end {
				t.Errorf("End = %s, want %s", ev.End, tt.end)
			}
			if !txn.CommitTime.Equal(tt.at) {
				t.Errorf("COMMIT changed CommitTime to %s", txn.CommitTime)
			}
			if d.InTxn() {
				t.Error("InTxn() = true after COMMIT")
			}
			// The next transaction may begin.
			ev = mustDecode(t, d, beginMsg(tt.end+8, tt.at, tt.xid+1))
			if ev.Kind != EventBegin || ev.Txn == txn || ev.Txn.Xid != uint64(tt.xid+1) {
				t.Errorf("second BEGIN gave %+v", ev)
			}
		})
	}
}

func TestDecodeOrigin(t *testing.T) {
	tests := []struct{ name, origin string }{
		{"named", "pg_16385"},
		{"empty name", ""},
		{"utf-8 name", "nœud-東京"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			txn := mustDecode(t, d, beginTxn()).Txn
			ev := mustDecode(t, d, originMsg(0xABCDEF, tt.origin))
			if ev.Kind != EventNone || ev.Txn != nil {
				t.Errorf("ORIGIN gave %+v, want an empty event", ev)
			}
			if txn.Origin != tt.origin {
				t.Errorf("Txn.Origin = %q, want %q", txn.Origin, tt.origin)
			}
			if got := d.Origin(); got != tt.origin {
				t.Errorf("Decoder.Origin() inside the transaction = %q, want %q", got, tt.origin)
			}
			ev = mustDecode(t, d, commitTxn())
			if got := d.Origin(); got != "" {
				t.Errorf("Decoder.Origin() after COMMIT = %q, want none", got)
			}
			if ev.Txn.Origin != tt.origin {
				t.Errorf("committed Txn.Origin = %q, want %q", ev.Txn.Origin, tt.origin)
			}
			// The next transaction starts without an origin.
			if next := mustDecode(t, d, beginMsg(end1+0x100, commit1, xid1+1)).Txn; next.Origin != "" {
				t.Errorf("next Txn.Origin = %q", next.Origin)
			}
		})
	}
}

func TestDecodeType(t *testing.T) {
	d := NewDecoder()
	for _, m := range [][]byte{typeMsg(90001, "public", "mood"), typeMsg(90002, "My Schema", "Point 3D")} {
		if ev := mustDecode(t, d, m); ev.Kind != EventNone {
			t.Errorf("TYPE gave event kind %d", ev.Kind)
		}
	}
	mustDecode(t, d, beginTxn())
	mustDecode(t, d, typeMsg(90001, "other", "mood2")) // announced again inside a transaction
	tests := []struct {
		oid  uint32
		name string
		ok   bool
	}{
		{90001, "other.mood2", true},
		{90002, "My Schema.Point 3D", true},
		{90003, "", false},
		{25, "", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.oid), func(t *testing.T) {
			name, ok := d.TypeName(tt.oid)
			if name != tt.name || ok != tt.ok {
				t.Errorf("TypeName(%d) = %q, %v, want %q, %v", tt.oid, name, ok, tt.name, tt.ok)
			}
		})
	}
}

func TestDecodeRelation(t *testing.T) {
	tests := []struct {
		name string
		msg  []byte
		want *source.Relation
	}{
		{"default identity", announceOrders(), ordersRel},
		{"full identity", announceItems(),
			&source.Relation{ID: itemsID, Schema: "sales", Name: "items", Identity: source.IdentityFull,
				Columns: []source.Column{{Name: "sku", Type: 25, TypeMod: -1, Key: true}, {Name: "qty", Type: 21, TypeMod: -1, Key: true}}}},
		{"nothing identity", announceAudit(),
			&source.Relation{ID: auditID, Schema: "public", Name: "audit", Identity: source.IdentityNothing,
				Columns: []source.Column{{Name: "entry", Type: 3802, TypeMod: -1}}}},
		{"index identity, quoted names, other flag bits", relationMsg(0xFFFFFFFE, "My Schema", `Tab"le`, 'i',
			relCol{flags: 0, name: "Mixed Case", oid: 1700, typmod: 655366},
			relCol{flags: 3, name: "k", oid: 20, typmod: -1},
			relCol{flags: 2, name: "x", oid: 16, typmod: 0}),
			&source.Relation{ID: 0xFFFFFFFE, Schema: "My Schema", Name: `Tab"le`, Identity: source.IdentityIndex,
				Columns: []source.Column{
					{Name: "Mixed Case", Type: 1700, TypeMod: 655366},
					{Name: "k", Type: 20, TypeMod: -1, Key: true},
					{Name: "x", Type: 16, TypeMod: 0},
				}}},
		{"no columns", relationMsg(7, "s", "empty", 'd'),
			&source.Relation{ID: 7, Schema: "s", Name: "empty", Identity: source.IdentityDefault, Columns: []source.Column{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
			ev := mustDecode(t, d, tt.msg)
			if ev.Kind != EventRelation || !reflect.DeepEqual(ev.Rel, tt.want) {
				t.Errorf("RELATION gave event kind %d, Rel %+v", ev.Kind, ev.Rel)
			}
			mustDecode(t, d, beginTxn())
			// TRUNCATE shows the cached relation whatever its columns.
			ev = mustDecode(t, d, truncateMsg(0, tt.want.ID))
			if !reflect.DeepEqual(ev.Change.Rel, tt.want) {
				t.Errorf("Rel = %+v, want %+v", ev.Change.Rel, tt.want)
			}
		})
	}
}

// value builders for expected rows.
var vNull = source.Value{Kind: source.ValueNull}
var vToast = source.Value{Kind: source.ValueUnchanged}

func vText(s string) source.Value { return source.Value{Kind: source.ValueText, Data: []byte(s)} }
func vBin(s string) source.Value  { return source.Value{Kind: source.ValueBinary, Data: []byte(s)} }

// checkRow compares rows exactly: kinds, bytes, and nil Data only for
// values without data.
func checkRow(t *testing.T, what string, got, want []source.Value) {
	t.Helper()
	if (got == nil) != (want == nil) || len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind != w.Kind || !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s[%d] = {%d %q}, want {%d %q}", what, i, g.Kind, g.Data, w.Kind, w.Data)
		}
		hasData := w.Kind == source.ValueText || w.Kind == source.ValueBinary
		if hasData && g.Data == nil {
			t.Errorf("%s[%d]: %s value has nil Data; an empty value must be a non-nil empty slice", what, i, kindName(w.Kind))
		}
		if !hasData && g.Data != nil {
			t.Errorf("%s[%d]: %s value has Data %q", what, i, kindName(w.Kind), g.Data)
		}
	}
}

func kindName(k source.ValueKind) string {
	return [...]string{"null", "text", "binary", "unchanged"}[k]
}

func TestDecodeInsert(t *testing.T) {
	tests := []struct {
		name string
		vals []val
		want []source.Value
	}{
		{"text", []val{text("1"), text("alice"), text("hello")},
			[]source.Value{vText("1"), vText("alice"), vText("hello")}},
		{"null", []val{text("2"), null, null},
			[]source.Value{vText("2"), vNull, vNull}},
		{"empty string is not null", []val{text("3"), text(""), null},
			[]source.Value{vText("3"), vText(""), vNull}},
		{"unchanged toast", []val{text("4"), toast, text("x")},
			[]source.Value{vText("4"), vToast, vText("x")}},
		{"binary", []val{bin("\x00\x00\x00\x05"), bin(""), bin("\xff\x00\xfe")},
			[]source.Value{vBin("\x00\x00\x00\x05"), vBin(""), vBin("\xff\x00\xfe")}},
		{"text with special bytes", []val{text("5"), text("tab\there\nnew\\line\x00nul"), text("日本語 😀")},
			[]source.Value{vText("5"), vText("tab\there\nnew\\line\x00nul"), vText("日本語 😀")}},
		{"large value", []val{text("6"), text(strings.Repeat("x", 1<<16)), null},
			[]source.Value{vText("6"), vText(strings.Repeat("x", 1<<16)), vNull}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inTxn(t)
			ev := mustDecode(t, d, insertMsg(ordersID, tt.vals...))
			if ev.Kind != EventChange || ev.Txn != nil {
				t.Fatalf("INSERT gave kind %d txn %v, want EventChange without Txn", ev.Kind, ev.Txn)
			}
			c := ev.Change
			if c.Op != source.OpInsert || !reflect.DeepEqual(c.Rel, ordersRel) {
				t.Errorf("Op %s Rel %+v", c.Op, c.Rel)
			}
			if c.Old != nil {
				t.Errorf("Old = %v, want none", c.Old)
			}
			checkRow(t, "New", c.New, tt.want)
			if c.Truncated != nil || c.Cascade || c.RestartIdentity {
				t.Errorf("truncate fields set on an insert: %+v", c)
			}
			if !d.InTxn() {
				t.Error("insert ended the transaction")
			}
		})
	}
}

func TestDecodeUpdate(t *testing.T) {
	tests := []struct {
		name     string
		rel      uint32
		oldKind  byte
		old, new []val
		wantOld  []source.Value
		wantNew  []source.Value
	}{
		{"key kept: no old tuple", ordersID, 0, nil,
			[]val{text("1"), text("bob"), toast},
			nil,
			[]source.Value{vText("1"), vText("bob"), vToast}},
		{"key changed: K tuple", ordersID, 'K', []val{text("1"), null, null},
			[]val{text("10"), text("bob"), toast},
			[]source.Value{vText("1"), vNull, vNull},
			[]source.Value{vText("10"), vText("bob"), vToast}},
		{"full identity: O tuple", itemsID, 'O', []val{text("sku-1"), text("")},
			[]val{text("sku-1"), text("7")},
			[]source.Value{vText("sku-1"), vText("")},
			[]source.Value{vText("sku-1"), vText("7")}},
		{"O tuple with nulls and binary", itemsID, 'O', []val{null, bin("\x00")},
			[]val{null, bin("\x01")},
			[]source.Value{vNull, vBin("\x00")},
			[]source.Value{vNull, vBin("\x01")}},
		{"nothing identity", auditID, 0, nil,
			[]val{text(`{"a": 1}`)},
			nil,
			[]source.Value{vText(`{"a": 1}`)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inTxn(t)
			ev := mustDecode(t, d, updateMsg(tt.rel, tt.oldKind, tt.old, tt.new...))
			c := ev.Change
			if ev.Kind != EventChange || c.Op != source.OpUpdate || c.Rel == nil || c.Rel.ID != tt.rel {
				t.Fatalf("UPDATE gave kind %d op %s rel %+v", ev.Kind, c.Op, c.Rel)
			}
			checkRow(t, "Old", c.Old, tt.wantOld)
			checkRow(t, "New", c.New, tt.wantNew)
		})
	}
}

func TestDecodeDelete(t *testing.T) {
	tests := []struct {
		name string
		rel  uint32
		kind byte
		old  []val
		want []source.Value
	}{
		{"K tuple", ordersID, 'K', []val{text("1"), null, null}, []source.Value{vText("1"), vNull, vNull}},
		{"O tuple", itemsID, 'O', []val{text("sku"), text("")}, []source.Value{vText("sku"), vText("")}},
		{"O tuple all null", itemsID, 'O', []val{null, null}, []source.Value{vNull, vNull}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inTxn(t)
			ev := mustDecode(t, d, deleteMsg(tt.rel, tt.kind, tt.old...))
			c := ev.Change
			if ev.Kind != EventChange || c.Op != source.OpDelete || c.Rel == nil || c.Rel.ID != tt.rel {
				t.Fatalf("DELETE gave kind %d op %s rel %+v", ev.Kind, c.Op, c.Rel)
			}
			checkRow(t, "Old", c.Old, tt.want)
			if c.New != nil {
				t.Errorf("New = %v, want none", c.New)
			}
		})
	}
}

func TestDecodeTruncate(t *testing.T) {
	tests := []struct {
		name             string
		options          byte
		rels             []uint32
		cascade, restart bool
	}{
		{"one relation", 0, []uint32{ordersID}, false, false},
		{"several relations", 0, []uint32{itemsID, ordersID, auditID}, false, false},
		{"cascade", 1, []uint32{ordersID, itemsID}, true, false},
		{"restart identity", 2, []uint32{auditID}, false, true},
		{"both options", 3, []uint32{auditID, ordersID, itemsID}, true, true},
		{"unknown option bits ignored", 0xFC, []uint32{ordersID}, false, false},
		{"same relation twice", 0, []uint32{ordersID, ordersID}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inTxn(t)
			// Capture the cached relations to compare pointers.
			known := map[uint32]*source.Relation{}
			for _, id := range []uint32{ordersID, itemsID, auditID} {
				ev := mustDecode(t, d, truncateMsg(0, id))
				known[id] = ev.Change.Rel
			}
			ev := mustDecode(t, d, truncateMsg(tt.options, tt.rels...))
			c := ev.Change
			if ev.Kind != EventChange || c.Op != source.OpTruncate {
				t.Fatalf("TRUNCATE gave kind %d op %s", ev.Kind, c.Op)
			}
			if len(c.Truncated) != len(tt.rels) {
				t.Fatalf("Truncated has %d relations, want %d", len(c.Truncated), len(tt.rels))
			}
			for i, id := range tt.rels {
				if c.Truncated[i] != known[id] || c.Truncated[i].ID != id {
					t.Errorf("Truncated[%d] = %+v, want relation %d", i, c.Truncated[i], id)
				}
			}
			if c.Rel != c.Truncated[0] {
				t.Errorf("Rel = %+v, want the first truncated relation", c.Rel)
			}
			if c.Cascade != tt.cascade || c.RestartIdentity != tt.restart {
				t.Errorf("Cascade %v RestartIdentity %v, want %v %v", c.Cascade, c.RestartIdentity, tt.cascade, tt.restart)
			}
			if c.Old != nil || c.New != nil {
				t.Errorf("TRUNCATE carries rows: %+v", c)
			}
		})
	}
}

func TestDecodeLogicalMessage(t *testing.T) {
	tests := []struct {
		name          string
		inTxn         bool
		transactional bool
	}{
		{"transactional inside a transaction", true, true},
		{"non-transactional between transactions", false, false},
		{"non-transactional inside a transaction", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := idle(t)
			if tt.inTxn {
				mustDecode(t, d, beginTxn())
			}
			ev := mustDecode(t, d, logicalMsg(tt.transactional, 0x100, "app", "payload"))
			if ev.Kind != EventNone {
				t.Errorf("MESSAGE gave event kind %d, want EventNone", ev.Kind)
			}
			if d.InTxn() != tt.inTxn {
				t.Errorf("InTxn() = %v, want %v", d.InTxn(), tt.inTxn)
			}
		})
	}
}

// TestDecodeRelationCache checks that a new Relation message replaces the
// cached shape without changing the Relation earlier changes point to.
func TestDecodeRelationCache(t *testing.T) {
	d := inTxn(t)
	before := mustDecode(t, d, insertMsg(ordersID, text("1"), text("a"), null)).Change
	oldRel := before.Rel

	// ALTER TABLE orders ADD COLUMN qty, RENAME note TO comment, REPLICA IDENTITY FULL.
	ev := mustDecode(t, d, relationMsg(ordersID, "public", "orders", 'f',
		relCol{flags: 1, name: "id", oid: 23, typmod: -1},
		relCol{flags: 1, name: "name", oid: 25, typmod: -1},
		relCol{flags: 1, name: "comment", oid: 1043, typmod: 54},
		relCol{flags: 1, name: "qty", oid: 21, typmod: -1}))
	if ev.Kind != EventRelation {
		t.Fatalf("RELATION gave event kind %d", ev.Kind)
	}
	after := mustDecode(t, d, insertMsg(ordersID, text("2"), text("b"), null, text("5"))).Change

	if after.Rel == oldRel {
		t.Fatal("the new shape reuses the old *Relation")
	}
	if !reflect.DeepEqual(oldRel, ordersRel) {
		t.Errorf("old Relation changed to %+v", oldRel)
	}
	if before.Rel != oldRel {
		t.Errorf("earlier change lost its Relation")
	}
	want := &source.Relation{ID: ordersID, Schema: "public", Name: "orders", Identity: source.IdentityFull,
		Columns: []source.Column{
			{Name: "id", Type: 23, TypeMod: -1, Key: true},
			{Name: "name", Type: 25, TypeMod: -1, Key: true},
			{Name: "comment", Type: 1043, TypeMod: 54, Key: true},
			{Name: "qty", Type: 21, TypeMod: -1, Key: true},
		}}
	if !reflect.DeepEqual(after.Rel, want) {
		t.Errorf("new Relation = %+v, want %+v", after.Rel, want)
	}
	checkRow(t, "New", after.New, []source.Value{vText("2"), vText("b"), vNull, vText("5")})

	// Rows of the old shape no longer fit.
	_, err := d.Decode(insertMsg(ordersID, text("3"), text("c"), null))
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "3 values for 4 columns") {
		t.Errorf("old-shape row: err = %v, want ErrMalformed with \"3 values for 4 columns\"", err)
	}
	// TRUNCATE resolves to the current shape too.
	if tr := mustDecode(t, d, truncateMsg(0, ordersID)).Change; tr.Rel != after.Rel {
		t.Errorf("TRUNCATE got %p, want the current Relation %p", tr.Rel, after.Rel)
	}
	// Other relations are untouched.
	if it := mustDecode(t, d, insertMsg(itemsID, text("x"), text("1"))).Change; it.Rel.Name != "items" {
		t.Errorf("items relation became %+v", it.Rel)
	}
}

// TestDecodeRelationRepeated: pgoutput announces a table again after any
// invalidation of its cache entry (an autovacuum ANALYZE is one). The
// same shape keeps its *Relation, which targets key their plans by, and
// announces nothing; another shape, or a table with a user-defined type
// (whose definition may have changed), gets a new one.
func TestDecodeRelationRepeated(t *testing.T) {
	d := inTxn(t)
	first := mustDecode(t, d, insertMsg(ordersID, text("1"), text("a"), null)).Change.Rel
	if ev := mustDecode(t, d, announceOrders()); ev.Kind != EventNone {
		t.Errorf("the same shape again gave event kind %d, want EventNone", ev.Kind)
	}
	if rel := mustDecode(t, d, insertMsg(ordersID, text("2"), text("b"), null)).Change.Rel; rel != first {
		t.Errorf("the same shape again gave a new Relation %+v", rel)
	}
	changes := map[string][]byte{
		"identity": relationMsg(ordersID, "public", "orders", 'f', ordersCols...),
		"name":     relationMsg(ordersID, "public", "orders2", 'd', ordersCols...),
		"schema":   relationMsg(ordersID, "other", "orders", 'd', ordersCols...),
		"typmod": relationMsg(ordersID, "public", "orders", 'd', ordersCols[0], ordersCols[1],
			relCol{name: "note", oid: 1043, typmod: 80}),
		"key": relationMsg(ordersID, "public", "orders", 'd', ordersCols[0],
			relCol{flags: 1, name: "name", oid: 25, typmod: -1}, ordersCols[2]),
		"column name": relationMsg(ordersID, "public", "orders", 'd', ordersCols[0], ordersCols[1],
			relCol{name: "comment", oid: 1043, typmod: 54}),
		"column type": relationMsg(ordersID, "public", "orders", 'd', ordersCols[0],
			relCol{name: "name", oid: 1043, typmod: -1}, ordersCols[2]),
		"fewer columns": relationMsg(ordersID, "public", "orders", 'd', ordersCols[:2]...),
	}
	for name, msg := range changes {
		t.Run(name, func(t *testing.T) {
			d := inTxn(t)
			old := mustDecode(t, d, insertMsg(ordersID, text("1"), text("a"), null)).Change.Rel
			ev := mustDecode(t, d, msg)
			if ev.Kind != EventRelation || ev.Rel == old {
				t.Errorf("a new shape gave event kind %d, the old Relation: %v", ev.Kind, ev.Rel == old)
			}
		})
	}
	t.Run("user-defined type", func(t *testing.T) {
		d := NewDecoder()
		mood := relationMsg(9, "public", "feelings", 'd', relCol{flags: 1, name: "id", oid: 23, typmod: -1},
			relCol{name: "m", oid: 16390, typmod: -1})
		a := mustDecode(t, d, mood)
		b := mustDecode(t, d, mood)
		if a.Kind != EventRelation || b.Kind != EventRelation || a.Rel == b.Rel {
			t.Errorf("a table with a user-defined type announced again: kinds %d, %d, same Relation %v", a.Kind, b.Kind, a.Rel == b.Rel)
		}
	})
}

// TestDecodeOrderErrors feeds a sequence whose last message is out of
// order or does not fit; every earlier message must be accepted.
func TestDecodeOrderErrors(t *testing.T) {
	rel := announceOrders()
	row := []val{text("1"), text("a"), null}
	tests := []struct {
		name  string
		msgs  [][]byte
		want  string // in the error
		inTxn bool   // decoder state after the error
	}{
		{"insert outside a transaction", [][]byte{rel, insertMsg(ordersID, row...)}, "insert outside a transaction", false},
		{"update outside a transaction", [][]byte{rel, updateMsg(ordersID, 0, nil, row...)}, "update outside a transaction", false},
		{"delete outside a transaction", [][]byte{rel, deleteMsg(ordersID, 'K', row...)}, "delete outside a transaction", false},
		{"truncate outside a transaction", [][]byte{rel, truncateMsg(0, ordersID)}, "truncate outside a transaction", false},
		{"origin outside a transaction", [][]byte{originMsg(1, "x")}, "origin message outside a transaction", false},
		{"change after commit", [][]byte{rel, beginTxn(), commitTxn(), insertMsg(ordersID, row...)}, "insert outside a transaction", false},
		{"BEGIN inside a transaction", [][]byte{beginTxn(), beginMsg(final1+0x100, commit1, xid1+1)},
			fmt.Sprintf("BEGIN of xid %d inside open xid %d", xid1+1, xid1), true},
		{"same BEGIN twice", [][]byte{beginTxn(), beginTxn()}, "inside open xid", true},
		{"COMMIT without BEGIN", [][]byte{commitTxn()}, "COMMIT at 16/B374D848 without BEGIN", false},
		{"second COMMIT", [][]byte{beginTxn(), commitTxn(), commitTxn()}, "without BEGIN", false},
		{"COMMIT LSN differs from BEGIN's final LSN", [][]byte{beginTxn(), commitMsg(final1+1, end1, commit1)},
			"COMMIT of xid 4242 at 16/B374D849, BEGIN announced 16/B374D848", true},
		{"COMMIT LSN before BEGIN's final LSN", [][]byte{beginTxn(), commitMsg(final1-0x10, end1, commit1)}, "BEGIN announced", true},
		{"COMMIT end equals commit", [][]byte{beginTxn(), commitMsg(final1, final1, commit1)}, "not after its commit", true},
		{"COMMIT end before commit", [][]byte{beginTxn(), commitMsg(final1, final1-1, commit1)}, "not after its commit", true},
		{"insert into unknown relation", [][]byte{rel, beginTxn(), insertMsg(ordersID+1, row...)},
			"insert in xid 4242 for relation 16385 that was never announced", true},
		{"update of unknown relation", [][]byte{beginTxn(), updateMsg(ordersID, 'K', row, row...)}, "never announced", true},
		{"delete of unknown relation", [][]byte{beginTxn(), deleteMsg(ordersID, 'O', row...)}, "never announced", true},
		{"truncate of unknown relation", [][]byte{rel, beginTxn(), truncateMsg(0, ordersID, 99)},
			"truncate in xid 4242 of relation 99 that was never announced", true},
		// pglogrepl refuses a TRUNCATE without relations (PostgreSQL never
		// sends one) before the decoder's own check sees it.
		{"truncate of no relation", [][]byte{rel, beginTxn(), truncateMsg(3)}, "message type 'T'", true},
		{"insert with too few values", [][]byte{rel, beginTxn(), insertMsg(ordersID, text("1"), null)},
			"insert new row of public.orders in xid 4242: malformed pgoutput message: 2 values for 3 columns", true},
		{"insert with too many values", [][]byte{rel, beginTxn(), insertMsg(ordersID, text("1"), null, null, null)}, "4 values for 3 columns", true},
		{"insert with no values", [][]byte{rel, beginTxn(), insertMsg(ordersID)}, "insert new row of public.orders in xid 4242: malformed pgoutput message: 0 values for 3 columns", true},
		{"delete with no values", [][]byte{rel, beginTxn(), deleteMsg(ordersID, 'K')}, "0 values for 3 columns", true},
		{"update old tuple count", [][]byte{rel, beginTxn(), updateMsg(ordersID, 'K', []val{text("1")}, row...)},
			"update old row of public.orders in xid 4242: malformed pgoutput message: 1 values for 3 columns", true},
		{"update new tuple count", [][]byte{rel, beginTxn(), updateMsg(ordersID, 'O', row, text("1"))}, "update new row", true},
		{"delete tuple count", [][]byte{rel, beginTxn(), deleteMsg(ordersID, 'K', text("1"), null)}, "delete old row", true},
		{"unknown value kind", [][]byte{rel, beginTxn(), insertMsg(ordersID, text("1"), val{kind: 'x'}, null)},
			`column "name" has value kind 'x'`, true},
		{"insert without N marker", [][]byte{rel, beginTxn(), msg('I').i32(ordersID).u8('K').tuple(row...)}, "message type 'I'", true},
		{"update with unknown old marker", [][]byte{rel, beginTxn(), msg('U').i32(ordersID).u8('X').tuple(row...)}, "message type 'U'", true},
		{"delete with N marker", [][]byte{rel, beginTxn(), msg('D').i32(ordersID).u8('N').tuple(row...)}, "message type 'D'", true},
		{"empty message", [][]byte{{}}, "empty message", false},
		{"unknown message type", [][]byte{beginTxn(), msg('Z').i32(1)}, "message type 'Z'", true},
		{"stream start (protocol 2)", [][]byte{msg('S').i32(xid1).u8(1)}, "message type 'S'", false},
		{"stream commit (protocol 2)", [][]byte{msg('c').i32(xid1).u8(0).lsn(1).lsn(2).ts(commit1)}, "message type 'c'", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDecoder()
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
			if ev.Kind != EventNone || ev.Txn != nil || ev.Change.Rel != nil {
				t.Errorf("error came with event %+v", ev)
			}
			if d.InTxn() != tt.inTxn {
				t.Errorf("InTxn() = %v after the error, want %v", d.InTxn(), tt.inTxn)
			}
		})
	}
}

// validMessage is a well-formed message and the decoder state it needs.
type validMessage struct {
	name  string
	setup func(testing.TB) *Decoder
	data  []byte
}

func validMessages() []validMessage {
	fresh := func(testing.TB) *Decoder { return NewDecoder() }
	return []validMessage{
		{"begin", fresh, beginTxn()},
		{"commit", inTxn, commitTxn()},
		{"origin", inTxn, originMsg(0x1234, "upstream")},
		{"relation", fresh, announceOrders()},
		{"relation quoted names", fresh, relationMsg(5, "My Schema", `Tab"le`, 'i',
			relCol{name: "Mixed Case", oid: 1700, typmod: 655366}, relCol{flags: 1, name: "k", oid: 20, typmod: -1})},
		{"type", fresh, typeMsg(90001, "public", "mood")},
		{"insert", inTxn, insertMsg(ordersID, text("1"), null, text(""))},
		{"insert binary and toast", inTxn, insertMsg(ordersID, bin("\x00\x01"), toast, text("日本"))},
		{"update", inTxn, updateMsg(ordersID, 0, nil, text("1"), toast, null)},
		{"update K", inTxn, updateMsg(ordersID, 'K', []val{text("1"), null, null}, text("2"), text("b"), toast)},
		{"update O", inTxn, updateMsg(itemsID, 'O', []val{text("s"), text("")}, text("s"), text("9"))},
		{"delete K", inTxn, deleteMsg(ordersID, 'K', text("1"), null, null)},
		{"delete O", inTxn, deleteMsg(itemsID, 'O', text("s"), bin("\xff"))},
		{"truncate", inTxn, truncateMsg(3, ordersID, itemsID, auditID)},
	}
}

// TestDecodeTruncatedInput cuts every message at every length: each prefix
// must be refused with ErrMalformed, without a panic and without changing
// the decoder's state.
func TestDecodeTruncatedInput(t *testing.T) {
	for _, m := range append(validMessages(), validMessagesV2()...) {
		t.Run(m.name, func(t *testing.T) {
			if _, err := m.setup(t).Decode(m.data); err != nil {
				t.Fatalf("the whole message is refused: %v", err)
			}
			for n := 0; n < len(m.data); n++ {
				d := m.setup(t)
				wasTxn, wasStream := d.InTxn(), d.InStream()
				ev, err := decodeNoPanic(d, bytes.Clone(m.data[:n]))
				if err == nil {
					t.Errorf("cut at %d of %d bytes: accepted as %+v", n, len(m.data), ev)
					continue
				}
				if !errors.Is(err, ErrMalformed) {
					t.Errorf("cut at %d of %d bytes: error %q does not wrap ErrMalformed", n, len(m.data), err)
				}
				if d.InTxn() != wasTxn || d.InStream() != wasStream {
					t.Errorf("cut at %d of %d bytes: InTxn() changed to %v, InStream() to %v", n, len(m.data), d.InTxn(), d.InStream())
				}
			}
		})
	}
}

// decodeNoPanic turns a panic into an error that does not wrap ErrMalformed,
// so the callers report it as a failure.
func decodeNoPanic(d *Decoder, data []byte) (ev Event, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return d.Decode(data)
}

// TestDecodeGarbage overwrites every byte of every message with a few
// values: the decoder may accept the result or refuse it with
// ErrMalformed, but never panic. Lengths that point past the end are
// refused before anything is allocated for them.
func TestDecodeGarbage(t *testing.T) {
	for _, m := range append(validMessages(), validMessagesV2()...) {
		t.Run(m.name, func(t *testing.T) {
			for i := range m.data {
				for _, b := range []byte{0x00, 0x01, 0x7F, 0x80, 0xFF, 'n', 't', 'b', 'u', 'N', 'K', 'O'} {
					data := bytes.Clone(m.data)
					data[i] = b
					if _, err := decodeNoPanic(m.setup(t), data); err != nil && !errors.Is(err, ErrMalformed) {
						t.Errorf("byte %d set to %#x: %v", i, b, err)
					}
				}
				// Trailing garbage after a cut.
				data := append(bytes.Clone(m.data[:i]), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF)
				if _, err := decodeNoPanic(m.setup(t), data); err != nil && !errors.Is(err, ErrMalformed) {
					t.Errorf("cut at %d plus 0xFF bytes: %v", i, err)
				}
			}
		})
	}

	huge := []struct {
		name string
		data []byte
		want string
	}{
		{"text length past the end", msg('I').i32(ordersID).u8('N').i16(3).u8('t').i32(0xFFFFFFFF).raw('a'), "column value runs past the end"},
		{"binary length past the end", msg('I').i32(ordersID).u8('N').i16(1).u8('b').i32(1 << 30), "column value runs past the end"},
		{"length cut short", msg('I').i32(ordersID).u8('N').i16(1).u8('t').raw(0, 0), "column length runs past the end"},
		{"tuple column count past the end", msg('I').i32(ordersID).u8('N').i16(0xFFFF).u8('n'), "column kind runs past the end"},
		{"old tuple length past the end", msg('U').i32(ordersID).u8('O').i16(1).u8('t').i32(0x7FFFFFFF), "column value runs past the end"},
		{"new tuple missing after old", msg('U').i32(ordersID).u8('K').tuple(text("1"), null, null), "tuple header runs past the end"},
		{"delete length past the end", msg('D').i32(ordersID).u8('K').i16(1).u8('t').i32(100).raw('x'), "column value runs past the end"},
		{"truncate relation count past the end", msg('T').i32(0xFFFFFFFF).u8(0).i32(ordersID), "truncate relation list runs past the end"},
		{"truncate header cut", msg('T').i32(1), "truncate header runs past the end"},
		{"relation column count past the end", msg('R').i32(1).str("s").str("t").u8('d').i16(0xFFFF).u8(0).str("c").i32(25).i32(0), "truncated"},
		{"relation strings unterminated", msg('R').i32(1).raw([]byte("schema-without-nul-and-more")...), "message type 'R'"},
		{"origin name unterminated", msg('O').lsn(1).raw('a', 'b'), "message type 'O'"},
		{"type name unterminated", msg('Y').i32(1).str("s").raw('t'), "message type 'Y'"},
	}
	for _, tt := range huge {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeNoPanic(inTxn(t), tt.data)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrMalformed with %q", err, tt.want)
			}
		})
	}
}

// TestDecodeDoesNotAlias overwrites the input after decoding: the decoded
// values must not change, since the stream reuses its receive buffer.
func TestDecodeDoesNotAlias(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		old, new []source.Value
	}{
		{"insert", insertMsg(ordersID, text("42"), bin("\x01\x02"), text("")),
			nil, []source.Value{vText("42"), vBin("\x01\x02"), vText("")}},
		{"update", updateMsg(itemsID, 'O', []val{text("old-sku"), text("1")}, text("new-sku"), bin("\x02")),
			[]source.Value{vText("old-sku"), vText("1")}, []source.Value{vText("new-sku"), vBin("\x02")}},
		{"delete", deleteMsg(ordersID, 'K', text("7"), null, null),
			[]source.Value{vText("7"), vNull, vNull}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := inTxn(t)
			data := bytes.Clone(tt.data)
			ev := mustDecode(t, d, data)
			for i := range data {
				data[i] = 0xAA
			}
			checkRow(t, "Old", ev.Change.Old, tt.old)
			checkRow(t, "New", ev.Change.New, tt.new)
		})
	}

	t.Run("relation and origin names", func(t *testing.T) {
		d := NewDecoder()
		rel := relationMsg(1, "sch", "tab", 'd', relCol{flags: 1, name: "col", oid: 25, typmod: -1})
		mustDecode(t, d, rel)
		txn := mustDecode(t, d, beginTxn()).Txn
		org := originMsg(1, "node")
		mustDecode(t, d, org)
		for _, b := range [][]byte{rel, org} {
			for i := range b {
				b[i] = 'Z'
			}
		}
		c := mustDecode(t, d, insertMsg(1, text("v"))).Change
		if c.Rel.Schema != "sch" || c.Rel.Name != "tab" || c.Rel.Columns[0].Name != "col" || txn.Origin != "node" {
			t.Errorf("names changed: %+v, origin %q", c.Rel, txn.Origin)
		}
	})
}

// TestDecodeTransactionStream decodes one whole transaction and checks the
// sequence of events the stream sees.
func TestDecodeTransactionStream(t *testing.T) {
	d := NewDecoder()
	steps := []struct {
		data []byte
		kind EventKind
		op   source.Op
	}{
		{beginTxn(), EventBegin, 0},
		{originMsg(0x99, "origin_a"), EventNone, 0},
		{announceOrders(), EventRelation, 0},
		{typeMsg(90001, "public", "mood"), EventNone, 0},
		{insertMsg(ordersID, text("1"), text("a"), null), EventChange, source.OpInsert},
		{updateMsg(ordersID, 'K', []val{text("1"), null, null}, text("2"), text("a"), null), EventChange, source.OpUpdate},
		{announceItems(), EventRelation, 0},
		{deleteMsg(itemsID, 'O', text("s"), text("1")), EventChange, source.OpDelete},
		{truncateMsg(2, ordersID, itemsID), EventChange, source.OpTruncate},
		{commitTxn(), EventCommit, 0},
	}
	var txn *source.Txn
	for i, s := range steps {
		ev := mustDecode(t, d, s.data)
		if ev.Kind != s.kind || ev.Change.Op != s.op {
			t.Errorf("step %d (%c): kind %d op %s, want kind %d op %s", i, s.data[0], ev.Kind, ev.Change.Op, s.kind, s.op)
		}
		if i == 0 {
			txn = ev.Txn
		}
	}
	if txn == nil || txn.Origin != "origin_a" || txn.Xid != xid1 || txn.Commit != final1 {
		t.Errorf("Txn = %+v", txn)
	}
	if d.InTxn() {
		t.Error("still in a transaction after COMMIT")
	}
}

// fuzzRel is the relation FuzzDecode announces before the fuzzed message:
// one column of each identity flag, so that tuples of two values fit.
func fuzzRel() []byte {
	return relationMsg(ordersID, "public", "t", 'f',
		relCol{flags: 1, name: "id", oid: 23, typmod: -1}, relCol{flags: 0, name: "v", oid: 25, typmod: -1})
}

// FuzzDecode feeds arbitrary bytes to decoders that know one relation:
// one reading protocol 1 inside a transaction, and three reading protocol
// 4 between transactions, inside a stream block and inside a prepared
// transaction. Errors are fine; panics are not, nor errors that do not
// wrap ErrMalformed, nor values that alias the input. The checked-in
// corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(insertMsg(ordersID, text("1"), null))
	f.Add(updateMsg(ordersID, 'O', []val{text("1"), toast}, text("1"), bin("")))
	f.Add(truncateMsg(3, ordersID, ordersID))
	for _, m := range validMessagesV2() {
		f.Add(m.data)
	}
	f.Add(streamed(xid2, insertMsg(ordersID, text("1"), null)))
	f.Add(streamed(sub2, updateMsg(ordersID, 'K', []val{text("1"), null}, text("2"), toast)))
	f.Add(streamed(sub2, deleteMsg(ordersID, 'O', text("1"), bin("\x00"))))
	f.Add(streamed(sub2, truncateMsg(1, ordersID)))
	f.Add(prepareMsg(prepare1, prepEnd1, time2, xid2, gid1))
	f.Add(streamAbortParallelMsg(xid2, sub2, commit2, time2))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range fuzzStates() {
			d := NewDecoder()
			d.SetProtocol(s.protocol)
			mustDecode(t, d, fuzzRel())
			for _, m := range s.msgs {
				mustDecode(t, d, m)
			}
			checkFuzzed(t, d, data)
		}
	})
}

// fuzzStates are the decoder states FuzzDecode starts from.
func fuzzStates() []struct {
	protocol int
	msgs     [][]byte
} {
	return []struct {
		protocol int
		msgs     [][]byte
	}{
		{1, [][]byte{beginTxn()}},
		{4, nil},
		{4, [][]byte{streamStartMsg(xid2, true)}},
		{4, [][]byte{beginPrepareMsg(prepare1, prepEnd1, time2, xid2, gid1)}},
	}
}

// checkFuzzed decodes one fuzzed message and checks what came out.
func checkFuzzed(t *testing.T, d *Decoder, data []byte) {
	t.Helper()
	inStream := d.InStream()
	in := bytes.Clone(data)
	ev, err := d.Decode(in)
	if err != nil {
		var capture *CaptureError
		if !errors.Is(err, ErrMalformed) && !errors.As(err, &capture) {
			t.Fatalf("error does not wrap ErrMalformed: %v", err)
		}
		return
	}
	if d.InTxn() && d.InStream() {
		t.Fatal("inside a transaction and a stream block at once")
	}
	if ev.Kind != EventChange {
		return
	}
	if inStream && ev.Xid != xid2 {
		t.Fatalf("change in the block of xid %d names xid %d", xid2, ev.Xid)
	}
	if ev.Change.Op == source.OpDDL {
		return
	}
	c := ev.Change
	if c.Rel == nil {
		t.Fatal("change without a relation")
	}
	if c.Op == source.OpTruncate {
		if len(c.Truncated) == 0 || c.Rel != c.Truncated[0] {
			t.Fatalf("truncate relations %v, Rel %v", c.Truncated, c.Rel)
		}
		return
	}
	old, new := cloneRow(c.Old), cloneRow(c.New)
	for _, row := range [][]source.Value{c.Old, c.New} {
		if row != nil && len(row) != len(c.Rel.Columns) {
			t.Fatalf("%d values for %d columns", len(row), len(c.Rel.Columns))
		}
	}
	for i := range in {
		in[i] ^= 0xFF
	}
	if !reflect.DeepEqual(c.Old, old) || !reflect.DeepEqual(c.New, new) {
		t.Fatal("decoded values alias the input")
	}
}

func cloneRow(row []source.Value) []source.Value {
	if row == nil {
		return nil
	}
	out := make([]source.Value, len(row))
	for i, v := range row {
		out[i] = source.Value{Kind: v.Kind, Data: bytes.Clone(v.Data)}
	}
	return out
}
