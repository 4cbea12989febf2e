package gauss_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/decant/decant/source/gauss"
)

// TestDecodeErrors covers the negative cases of §6 and the other ways a
// payload can be malformed: each is a *DecodeError at the offset of the
// field that is wrong.
func TestDecodeErrors(t *testing.T) {
	insert := readHex1(t, "bin_insert_null") // len | lsn | 'I' | schema | table | 'N' natt@26 ...
	batch := readHex1(t, "bin_batch")
	textBatch := readHex1(t, "text_batch")
	set := func(b []byte, at int, v ...byte) []byte { b = bytes.Clone(b); copy(b[at:], v); return b }

	for _, tc := range []struct {
		name    string
		f       gauss.Format
		payload []byte
		offset  int
		want    string
	}{
		{"separator X", binB, set(insert, len(insert)-1, 'X'), len(insert) - 1, "terminator 'F'"},
		{"batch separator X", binP, set(batch, 0x49, 'X'), 0x49, "separator 'P' or 'F'"},
		{"P without batching", binB, set(insert, len(insert)-1, 'P'), len(insert) - 1, "terminator 'F'"},
		{"missing terminator", binB, insert[:len(insert)-1], len(insert) - 1, "terminator 'F'"},
		{"bytes after F", binB, append(bytes.Clone(insert), 0), len(insert), "end of payload"},
		{"length past buffer", binB, insert[:40], 0, "a record of 68 bytes (36 left)"},
		{"batch length past buffer", binP, batch[:0x60], 0x4a, "a record of 68 bytes"},
		{"natt past record", binB, set(insert, 26, 0x01, 0x00), 26, "at most 4 columns in the 44 bytes left, not 256"},
		{"zero length without batching", binB, []byte{0, 0, 0, 0}, 0, "non-zero record length"},
		{"empty binary payload", binB, nil, 0, "record length"},
		{"batch without end", binP, batch[:len(batch)-4], len(batch) - 4, "record length"},
		{"unknown record type", binB, set(insert, 12, 'Z'), 12, "unknown record type 0x5a"},
		{"record too short for LSN", binB, []byte{0, 0, 0, 4, 1, 2, 3, 4, 'F'}, 4, "record LSN"},
		{"schema past record", binB, set(insert, 13, 0x00, 0x60), 15, "schema name"},
		{"value length past record", binB, set(insert, 0x24, 0x00, 0x00, 0x10, 0x00), 0x24, "a column value of 4096 bytes"},
		{"bad tuple marker", binB, set(insert, 25, 'Q'), 25, "tuple marker"},
		{"trailing bytes in record", binB, append(set(insert, 3, 0x45), 0, 'F')[:len(insert)+1], len(insert) - 1, "tuple marker"},
		{"begin without first_lsn", binB, []byte{0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0, 'B', 0, 0, 0, 0, 0, 0, 0, 1, 'F'}, 21, "BEGIN first_lsn"},
		{"begin tag past record", binB, set(readHex1(t, "bin_begin_gaussdb"), 0x1f, 0x40), 0x22, "BEGIN commit timestamp"},
		{"short heartbeat", binB, []byte("h\x00\x00"), 1, "heartbeat fields"},
		{"text starting with h is a heartbeat", txtB, []byte("hello"), 1, "heartbeat fields"},
		{"heartbeat trailer", binB, append(bytes.Clone(readHex1(t, "heartbeat")), 'F'), 25, "the end of the message"},

		{"truncated text batch", txtP, textBatch[:100], 0x3b, "a record length between 8 and 37, not 91"},
		{"text batch short length", txtP, []byte{0, 0, 0, 3, 'a', 'b', 'c'}, 0, "a record length between 8"},
		{"text batch without end", txtP, textBatch[:len(textBatch)-4], len(textBatch) - 4, "record length"},
		{"truncated text literal", txtB, []byte("table public t1 INSERT: id[integer]:1 name[text]:'ab"), 49, "a value"},
		{"truncated text type", txtB, []byte("table public t1 INSERT: id[integer"), 27, "type name followed by ']:'"},
		{"text without op", txtB, []byte("table public t1"), 6, "INSERT:, UPDATE: or DELETE:"},
		{"text old key without new-tuple", txtB, []byte("table s t UPDATE: old-key: a[integer]:1"), 39, "' new-tuple:'"},
		{"text begin without first_lsn", txtB, []byte("BEGIN CSN: 2357"), 0, "CSN: and first_lsn:"},
		{"text begin bad csn", txtB, []byte("BEGIN CSN: x first_lsn: 0/1"), 11, "unsigned 64-bit number"},
		{"text begin bad lsn", txtB, []byte("BEGIN CSN: 1 first_lsn: 01"), 24, "LSN X/X"},
		{"text commit bad xid", txtB, []byte("commit xid: -1"), 12, "unsigned 64-bit number"},
		{"text commit open at", txtB, []byte("commit xid: 1 (at 2025"), 22, "')'"},
		{"text garbage", txtB, []byte("xyz"), 0, "BEGIN, COMMIT, table"},
		{"json DML in text style", txtB, []byte(`{"table_name":"a.b"}`), 0, "DDL object"},
		{"text DML in json style", jsnB, []byte("table s t INSERT:"), 0, "BEGIN, COMMIT or JSON record"},

		{"bad JSON", jsnB, []byte(`{"table_name":"public.t1","op_type":`), 36, "a JSON value"},
		{"bad JSON in batch", jsnP, frame(0xCFE5D40, `{"table_name":}`), 26, "a JSON value"},
		{"JSON trailing", jsnB, []byte(`{} x`), 3, "end of the JSON document"},
		{"JSON bad escape", jsnB, []byte(`{"a\q":1}`), 3, "JSON escape"},
		{"JSON deep", jsnB, []byte(`{"JDDL":` + strings.Repeat("[", 300)), 8 + 255, "nested at most 256"},
		{"JSON not object", jsnB, []byte(`{"JDDL":[1]}`), 8, "an object after"},
		{"JSON missing op", jsnB, []byte(`{"table_name":"public.t"}`), 0, `"op_type"`},
		{"JSON bad op", jsnB, []byte(`{"table_name":"public.t","op_type":"MERGE"}`), 35, "op_type INSERT"},
		{"JSON unqualified", jsnB, []byte(`{"table_name":"t","op_type":"INSERT"}`), 14, "schema-qualified"},
		{"JSON missing arrays", jsnB, []byte(`{"table_name":"public.t","op_type":"INSERT"}`), 0, `"columns_name"`},
		{"JSON array lengths", jsnB, []byte(`{"table_name":"s.t","op_type":"INSERT","columns_name":["a"],"columns_type":[],"columns_val":[],"old_keys_name":[],"old_keys_type":[],"old_keys_val":[]}`), 75, "1 elements"},
		{"JSON bad literal", jsnB, []byte(`{"table_name":"s.t","op_type":"INSERT","columns_name":["a"],"columns_type":["text"],"columns_val":["'x"],"old_keys_name":[],"old_keys_type":[],"old_keys_val":[]}`), 99, "a value"},
		{"JSON number value", jsnB, []byte(`{"table_name":"s.t","op_type":"INSERT","columns_name":["a"],"columns_type":["text"],"columns_val":[1],"old_keys_name":[],"old_keys_type":[],"old_keys_val":[]}`), 99, "a string"},

		{"mppdb abort", mpp, []byte("ABORT 1"), 0, "area decoding"},
		{"mppdb garbage begin", mpp, []byte("BEGIN x"), 6, "transaction id"},
		{"mppdb begin trailing", mpp, []byte("BEGIN 1 2"), 8, "end of BEGIN"},
		{"mppdb commit bad csn", mpp, []byte("COMMIT 1 CSN x"), 13, "a CSN"},
		{"mppdb commit open at", mpp, []byte("COMMIT 1 (at 2025 CSN 5"), 23, "')'"},
		{"mppdb truncate no flags", mpp, []byte("table public.a: TRUNCATE:"), 25, "restart_seqs, cascade"},
		{"mppdb truncate bad name", mpp, []byte("table a: TRUNCATE: cascade"), 6, "schema-qualified"},
		{"mppdb ddl without content", mpp, []byte("prefix: deparse, lsn: 1"), 0, "content"},
		{"mppdb ddl bad JSON", mpp, []byte("prefix: deparse, lsn: 1, relid 1, cmdtype: Simple, size: 3, content: {x}"), 70, "JSON object key"},
		{"mppdb ddl bad owner", mpp, []byte("prefix: deparse, lsn: 1, relid 1, cmdtype: Simple, size: 3, content: {}\ndecode to: X"), 84, "[owner"},
		{"mppdb ddl bad lsn", mpp, []byte("prefix: deparse, lsn: x, content: {}"), 22, "decimal LSN"},
		{"mppdb ddl of another prefix", mpp, []byte("prefix: decant, lsn: 1, relid 1, cmdtype: Simple, size: 3, content: {}"), 0, `prefix "deparse"`},
		{"mppdb text garbage", mpp, []byte("xyz"), 0, "BEGIN, COMMIT, JSON DML"},
		{"mppdb batch", gauss.Format{Style: 'm', Batch: true}, []byte("BEGIN"), 0, "non-batch"},
		{"unknown style", gauss.Format{Style: 'x'}, []byte("BEGIN"), 0, "known format style"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := gauss.Decode(tc.f, tc.payload, 0)
			var de *gauss.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, %v; want a *DecodeError", recs, err)
			}
			if de.Offset != tc.offset || !strings.Contains(de.Expected, tc.want) || de.Format != tc.f {
				t.Errorf("got %q (offset %d), want offset %d and %q", err, de.Offset, tc.offset, tc.want)
			}
		})
	}
}

func frame(lsn uint64, text string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(text)))
	b = binary.BigEndian.AppendUint64(b, lsn)
	return binary.BigEndian.AppendUint32(append(b, text...), 0)
}

func TestDecodeErrorText(t *testing.T) {
	_, err := gauss.Decode(binB, []byte{0, 0, 0, 0}, 0)
	if got := err.Error(); got != "gauss-b payload: at byte 0: expected a non-zero record length (a zero length only ends a batch)" {
		t.Errorf("%q", got)
	}
	_, err = gauss.Decode(jsnP, []byte{0, 0, 0}, 0)
	if got := err.Error(); got != "gauss-j+batch payload: at byte 0: expected record length (4 bytes, 3 left)" {
		t.Errorf("%q", got)
	}
}
