package pgoutput

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// TestDecodeRowsKeepTheirValues decodes many rows into one decoder, as a
// stream does, keeping every change (as a chunk, an insert run or a spool
// does) while the input buffer is reused: each must keep its own values,
// across slab boundaries and next to values too large for a slab, and
// growing one row or value must not reach into the next.
func TestDecodeRowsKeepTheirValues(t *testing.T) {
	d := inTxn(t)
	const n = 5000
	want := make([][]source.Value, n)
	got := make([]source.Change, n)
	buf := make([]byte, 0, 1<<20)
	for i := range n {
		name := fmt.Sprintf("name-%d-%s", i, strings.Repeat("x", i%50))
		note := ""
		if i%997 == 0 {
			note = strings.Repeat("n", byteSlab/2+i) // its own allocation
		}
		vals := []val{text(fmt.Sprint(i)), text(name), text(note)}
		want[i] = []source.Value{vText(fmt.Sprint(i)), vText(name), vText(note)}
		if i%3 == 0 {
			vals[2], want[i][2] = null, vNull
		}
		// The stream's receive buffer: one slice, overwritten by the
		// next message.
		buf = append(buf[:0], insertMsg(ordersID, vals...)...)
		got[i] = mustDecode(t, d, buf).Change
		clear(buf)
	}
	for i := range n {
		checkRow(t, fmt.Sprintf("row %d New", i), got[i].New, want[i])
	}

	// Rows and values are capped: appending reallocates.
	for i := range n - 1 {
		_ = append(got[i].New, vText("extra"))
		_ = append(got[i].New[1].Data, "garbage"...)
	}
	for i := range n {
		checkRow(t, fmt.Sprintf("row %d New after appends", i), got[i].New, want[i])
	}
}

// TestDecodeRowMarkers checks the markers between an update's tuples and
// the end of a row change message.
func TestDecodeRowMarkers(t *testing.T) {
	row := []val{text("1"), text("a"), null}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"update old tuple not followed by N", msg('U').i32(ordersID).u8('K').tuple(row...).u8('O').tuple(row...),
			"message type 'U' has tuple marker 'O', want 'N'"},
		{"update with an unknown first marker", msg('U').i32(ordersID).u8('X').tuple(row...),
			"message type 'U' has tuple marker 'X', want 'K', 'O' or 'N'"},
		{"update old tuple then nothing", msg('U').i32(ordersID).u8('O').tuple(row...),
			"message type 'U': tuple header runs past the end"},
		{"insert with a byte after its tuple", append(insertMsg(ordersID, row...), 0),
			"message type 'I' has 1 bytes past its last field"},
		{"update with a second new tuple", append(updateMsg(ordersID, 0, nil, row...), insertMsg(ordersID, row...)[5:]...),
			"message type 'U' has 16 bytes past its last field"},
		{"delete with a new tuple", append(deleteMsg(ordersID, 'K', row...), insertMsg(ordersID, row...)[5:]...),
			"message type 'D' has 16 bytes past its last field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := inTxn(t).Decode(tt.data)
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrMalformed with %q", err, tt.want)
			}
		})
	}
}

// BenchmarkDecodeInsert decodes the insert of a row like make bench's and
// the CPU workload's: int, bigint, 40 bytes of text, numeric, timestamptz,
// jsonb. A row costs no allocation of its own (the slabs it shares with
// others are counted, in fractions, in allocs/op).
func BenchmarkDecodeInsert(b *testing.B) {
	d := NewDecoder()
	mustDecode(b, d, relationMsg(1, "public", "t", 'd',
		relCol{flags: 1, name: "id", oid: 23, typmod: -1}, relCol{name: "b", oid: 20, typmod: -1},
		relCol{name: "t", oid: 25, typmod: -1}, relCol{name: "n", oid: 1700, typmod: 917512},
		relCol{name: "ts", oid: 1184, typmod: -1}, relCol{name: "j", oid: 3802, typmod: -1}))
	mustDecode(b, d, beginTxn())
	data := insertMsg(1, text("123456"), text("123456370368"), text("e10adc3949ba59abbe56e057f20f883eabcdefgh"),
		text("17636.5714"), text("2026-01-02 10:17:36+00"), text(`{"k": 123456, "v": "x123456"}`))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeUpdateFull decodes an update with a whole old row
// (REPLICA IDENTITY FULL), pgbench_history's shape.
func BenchmarkDecodeUpdateFull(b *testing.B) {
	d := NewDecoder()
	mustDecode(b, d, relationMsg(1, "public", "h", 'f',
		relCol{flags: 1, name: "tid", oid: 23, typmod: -1}, relCol{flags: 1, name: "bid", oid: 23, typmod: -1},
		relCol{flags: 1, name: "aid", oid: 23, typmod: -1}, relCol{flags: 1, name: "delta", oid: 23, typmod: -1},
		relCol{flags: 1, name: "mtime", oid: 1114, typmod: -1}, relCol{flags: 1, name: "filler", oid: 1042, typmod: 26}))
	mustDecode(b, d, beginTxn())
	row := []val{text("7"), text("1"), text("52341"), text("-1234"), text("2026-12-02 00:41:14.123456"), null}
	data := updateMsg(1, 'O', row, row...)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
