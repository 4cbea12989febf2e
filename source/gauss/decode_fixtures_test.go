package gauss_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

// The running example of docs/gaussdb-decoding.md §2: table public.t1(id
// integer, name text, note varchar(10)), xid 78108, CSN 2357.

const exTime = "2025-11-22 16:09:34.531976+08"

var (
	binB = mustFormat("gauss-b", false)
	binP = mustFormat("gauss-b", true)
	txtB = mustFormat("gauss-t", false)
	txtP = mustFormat("gauss-t", true)
	jsnB = mustFormat("gauss-j", false)
	jsnP = mustFormat("gauss-j", true)
	mpp  = mustFormat("mppdb", false)
)

func mustFormat(name string, batch bool) gauss.Format {
	f, err := gauss.ParseFormat(name, batch)
	if err != nil {
		panic(err)
	}
	return f
}

func val(name string, oid uint32, v string) gauss.Column {
	return gauss.Column{Name: name, Type: oid, Value: []byte(v)}
}

func null(name string, oid uint32) gauss.Column {
	return gauss.Column{Name: name, Type: oid, Null: true}
}

// named gives columns the type names the text and JSON formats print.
func named(cols []gauss.Column) []gauss.Column {
	if cols == nil {
		return nil
	}
	out := make([]gauss.Column, len(cols))
	for i, c := range cols {
		c.TypeName, _ = gauss.TypeName(c.Type)
		out[i] = c
	}
	return out
}

// textual converts a binary-form DML record to its text/JSON form.
func textual(r gauss.Record) gauss.Record {
	r.New, r.Old = named(r.New), named(r.Old)
	return r
}

var (
	exBeginGauss = gauss.Record{Kind: gauss.KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80, Time: exTime, User: "alice"}
	exBeginMin   = gauss.Record{Kind: gauss.KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80}
	exBeginOG    = gauss.Record{Kind: gauss.KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80, Xid: 78108, HasXid: true, Time: exTime}
	exInsert1    = gauss.Record{Kind: gauss.KindInsert, LSN: 0xCFE5D40, Schema: "public", Table: "t1",
		New: []gauss.Column{val("id", 23, "1"), val("name", 25, "abc"), null("note", 1043)}}
	exInsert2 = gauss.Record{Kind: gauss.KindInsert, LSN: 0xCFE5D98, Schema: "public", Table: "t1",
		New: []gauss.Column{val("id", 23, "2"), val("name", 25, ""), val("note", 1043, "x")}}
	exUpdate = gauss.Record{Kind: gauss.KindUpdate, LSN: 0xCFE5DF0, Schema: "public", Table: "t1",
		New: []gauss.Column{val("id", 23, "3"), val("name", 25, ""), val("note", 1043, "x")},
		Old: []gauss.Column{val("id", 23, "2")}}
	exDelete = gauss.Record{Kind: gauss.KindDelete, LSN: 0xCFE5E20, Schema: "public", Table: "t1",
		Old: []gauss.Column{val("id", 23, "1")}}
	exCommitXT   = gauss.Record{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 78108, HasXid: true, Time: exTime}
	exCommitX    = gauss.Record{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 78108, HasXid: true}
	exCommitBare = gauss.Record{Kind: gauss.KindCommit, LSN: 0xCFE5E68}
	exRowno      = gauss.Record{Kind: gauss.KindInsert, LSN: 0xD000100, Schema: "public", Table: "t2",
		New: []gauss.Column{val("c1", 23, "7"), {Name: "rowno", Type: 20, Rowno: true, RowNo: 42}}}

	// A 64-bit xid (2^32 + 100) and compressed heap tuples (no column).
	exBeginXid64  = gauss.Record{Kind: gauss.KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80, Xid: 1<<32 + 100, HasXid: true}
	exCommitXid64 = gauss.Record{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 1<<32 + 100, HasXid: true}
	exInsertCmpr  = gauss.Record{Kind: gauss.KindInsert, LSN: 0xCFE5D40, Schema: "public", Table: "t1", New: []gauss.Column{}}
	exDeleteCmpr  = gauss.Record{Kind: gauss.KindDelete, LSN: 0xCFE5E20, Schema: "public", Table: "t1", Old: []gauss.Column{}}
)

// readHex reads a testdata hex file: hexdump -C style lines (an offset,
// byte pairs, an ASCII column in |...|) or bare byte pairs with '|'
// separators; '#' starts a comment and a "--" line separates payloads.
// Offsets are checked, so a mistyped dump fails loudly.
func readHex(t *testing.T, name string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	var cur []byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line == "--" {
			out, cur = append(out, cur), nil
			continue
		}
		fields := strings.Fields(line)
		if len(fields[0]) >= 4 { // hexdump -C: drop the ASCII column after "  |"
			if i := strings.Index(line, "  |"); i >= 0 {
				fields = strings.Fields(line[:i])
			}
			off, err := strconv.ParseUint(fields[0], 16, 32)
			if err != nil || int(off) != len(cur) {
				t.Fatalf("%s: line %q: offset %s, want %04x", name, line, fields[0], len(cur))
			}
			fields = fields[1:]
		}
		for _, f := range fields {
			if f == "|" {
				continue
			}
			b, err := hex.DecodeString(f)
			if err != nil || len(b) != 1 {
				t.Fatalf("%s: line %q: bad byte %q", name, line, f)
			}
			cur = append(cur, b[0])
		}
	}
	return append(out, cur)
}

func readHex1(t *testing.T, name string) []byte {
	t.Helper()
	p := readHex(t, name)
	if len(p) != 1 {
		t.Fatalf("%s: %d payloads, want 1", name, len(p))
	}
	return p[0]
}

// readLines reads a testdata text file: one payload per line, '#' comments.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func decode(t *testing.T, f gauss.Format, p []byte, dataStart source.LSN) []gauss.Record {
	t.Helper()
	recs, err := gauss.Decode(f, p, dataStart)
	if err != nil {
		t.Fatalf("Decode(%s): %v", f, err)
	}
	return recs
}

func sameRecords(t *testing.T, what string, got, want []gauss.Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		for i := range max(len(got), len(want)) {
			var g, w gauss.Record
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s: record %d:\n got  %+v\n want %+v", what, i, g, w)
			}
		}
	}
}

// TestBinaryFixtures decodes every binary hex dump of the spec to the
// records it was built from and encodes those records back byte for byte.
func TestBinaryFixtures(t *testing.T) {
	for _, fx := range []struct {
		file string
		f    gauss.Format
		recs []gauss.Record
	}{
		{"bin_begin_gaussdb", binB, []gauss.Record{exBeginGauss}},
		{"bin_begin_minimal", binB, []gauss.Record{exBeginMin}},
		{"bin_begin_opengauss", binB, []gauss.Record{exBeginOG}},
		{"bin_insert_null", binB, []gauss.Record{exInsert1}},
		{"bin_insert_empty", binB, []gauss.Record{exInsert2}},
		{"bin_update_oldkey", binB, []gauss.Record{exUpdate}},
		{"bin_delete", binB, []gauss.Record{exDelete}},
		{"bin_commit_xid_time", binB, []gauss.Record{exCommitXT}},
		{"bin_commit_xid", binB, []gauss.Record{exCommitX}},
		{"bin_commit_bare", binB, []gauss.Record{exCommitBare}},
		{"bin_rowno", binB, []gauss.Record{exRowno}},
		{"bin_begin_xid64", binB, []gauss.Record{exBeginXid64}},
		{"bin_commit_xid64", binB, []gauss.Record{exCommitXid64}},
		{"bin_insert_compressed", binB, []gauss.Record{exInsertCmpr}},
		{"bin_delete_compressed", binB, []gauss.Record{exDeleteCmpr}},
		{"bin_batch", binP, []gauss.Record{exBeginGauss, exInsert1, exInsert2, exUpdate, exDelete, exCommitXT}},
	} {
		t.Run(fx.file, func(t *testing.T) {
			p := readHex1(t, fx.file)
			sameRecords(t, "decode", decode(t, fx.f, p, 0), fx.recs)
			enc := gaussenc.Transaction(fx.f, fx.recs, 0xCFE5E48)
			if len(enc) != 1 || !bytes.Equal(enc[0].Data, p) {
				t.Errorf("encode:\n got  %x\n want %x", enc[0].Data, p)
			}
		})
	}
}

// TestCopyDataFixture checks the complete CopyData frame of §1.4: its
// XLogData payload is the INSERT of §2.3.3.
func TestCopyDataFixture(t *testing.T) {
	frame := readHex1(t, "copydata_insert")
	if frame[0] != 'd' || int(binary.BigEndian.Uint32(frame[1:])) != len(frame)-1 || frame[5] != 'w' {
		t.Fatalf("not a CopyData frame holding XLogData: % x", frame[:6])
	}
	header := readHex1(t, "xlogdata_header")
	if !bytes.Equal(frame[5:5+25], header) {
		t.Errorf("XLogData header differs from the §1.4 example")
	}
	if ds := binary.BigEndian.Uint64(header[1:]); ds != 0xCFE5D40 {
		t.Errorf("dataStart %X", ds)
	}
	payload := frame[5+25:]
	sameRecords(t, "decode", decode(t, binB, payload, 0xCFE5D40), []gauss.Record{exInsert1})
	if !bytes.Equal(payload, readHex1(t, "bin_insert_null")) {
		t.Error("CopyData payload differs from the INSERT fixture")
	}
}

func TestControlFixtures(t *testing.T) {
	hb := readHex1(t, "heartbeat")
	want := gauss.Record{Kind: gauss.KindHeartbeat, HeartbeatRead: 0xCFE6000, HeartbeatFlush: 0xCFE6100, HeartbeatTime: 1763798974600000}
	sameRecords(t, "heartbeat", decode(t, binB, hb, 0), []gauss.Record{want})
	if enc := gaussenc.Heartbeat(binB, 0xCFE6000, 0xCFE6100, 1763798974600000); !bytes.Equal(enc, hb) {
		t.Errorf("encode heartbeat: %x", enc)
	}
	pos := readHex1(t, "position")
	wantPos := gauss.Record{Kind: gauss.KindPosition, PositionCSN: 2360, PositionLSN: 0xCFE7000, PositionTime: 1763798974}
	sameRecords(t, "position", decode(t, binB, pos, 0), []gauss.Record{wantPos})
	if enc := gaussenc.Position(binB, 2360, 0xCFE7000, 1763798974); !bytes.Equal(enc, pos) {
		t.Errorf("encode position: %x", enc)
	}
	// Every format recognises them, with its own terminator.
	for _, f := range []gauss.Format{binP, txtB, txtP, jsnB, jsnP, mpp} {
		sameRecords(t, f.String(), decode(t, f, gaussenc.Heartbeat(f, 0xCFE6000, 0xCFE6100, 1763798974600000), 7), []gauss.Record{want})
		sameRecords(t, f.String(), decode(t, f, gaussenc.Position(f, 2360, 0xCFE7000, 1763798974), 7), []gauss.Record{wantPos})
	}
}

// TestFramedControl accepts heartbeats wrapped like a record (§2.6, the
// tapdata reading), in the binary stream and in bare-text formats.
func TestFramedControl(t *testing.T) {
	body := readHex1(t, "heartbeat")[:25]
	framed := binary.BigEndian.AppendUint32(nil, uint32(8+len(body)))
	framed = binary.BigEndian.AppendUint64(framed, 0xCFE6200)
	framed = append(framed, body...)
	want := []gauss.Record{{Kind: gauss.KindHeartbeat, LSN: 0xCFE6200, HeartbeatRead: 0xCFE6000, HeartbeatFlush: 0xCFE6100, HeartbeatTime: 1763798974600000}}
	sameRecords(t, "binary", decode(t, binB, append(bytes.Clone(framed), 'F'), 0), want)
	sameRecords(t, "binary batch", decode(t, binP, append(bytes.Clone(framed), 'P', 0, 0, 0, 0), 0), want)
	sameRecords(t, "text", decode(t, txtB, framed, 0), want)
	sameRecords(t, "mppdb", decode(t, mpp, append(bytes.Clone(framed), 'F'), 0), want)
	sameRecords(t, "text batch", decode(t, txtP, append(bytes.Clone(framed), 0, 0, 0, 0), 0), want)
}

// TestSeedBinary decodes the seed's decode-style b example.
func TestSeedBinary(t *testing.T) {
	payloads := readHex(t, "seed_b")
	want := []gauss.Record{
		{Kind: gauss.KindBegin, LSN: 0xCFE5C80, CSN: 2357, FirstLSN: 0xCFE5C80},
		{Kind: gauss.KindInsert, LSN: 0xCFE5D40, Schema: "public", Table: "test1", New: []gauss.Column{val("a", 23, "1"), val("b", 23, "2")}},
		{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 78108, HasXid: true},
	}
	var got []gauss.Record
	for _, p := range payloads {
		got = append(got, decode(t, binB, p, 0xCFE5E48)...)
	}
	sameRecords(t, "decode", got, want)
	for i, p := range gaussenc.Transaction(binB, want, 0xCFE5E48) {
		if !bytes.Equal(p.Data, payloads[i]) {
			t.Errorf("encode %d: %x", i, p.Data)
		}
	}
}

// TestSeedTextJSON decodes the seed's decode-style t and j examples and
// encodes them back line for line (GaussDB flavour: COMMIT XID).
func TestSeedTextJSON(t *testing.T) {
	for _, tc := range []struct {
		file string
		f    gauss.Format
		want []gauss.Record
	}{
		{"seed_t.txt", txtB, []gauss.Record{
			{Kind: gauss.KindBegin, CSN: 2359, FirstLSN: 0xCFE64D0},
			textual(gauss.Record{Kind: gauss.KindInsert, Schema: "public", Table: "test1", New: []gauss.Column{val("a", 23, "3"), val("b", 23, "4")}}),
			{Kind: gauss.KindCommit, LSN: 0xCFE6600, Xid: 78110, HasXid: true},
		}},
		{"seed_j.txt", jsnB, []gauss.Record{
			{Kind: gauss.KindBegin, CSN: 2358, FirstLSN: 0xCFE6220},
			textual(gauss.Record{Kind: gauss.KindInsert, Schema: "public", Table: "test1", New: []gauss.Column{val("a", 23, "3"), val("b", 23, "3")}}),
			{Kind: gauss.KindCommit, LSN: 0xCFE6600, Xid: 78109, HasXid: true},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			lines := readLines(t, tc.file)
			var got []gauss.Record
			for _, l := range lines {
				got = append(got, decode(t, tc.f, []byte(l), 0xCFE6600)...)
			}
			sameRecords(t, "decode", got, tc.want)
			for i, p := range gaussenc.Transaction(tc.f, tc.want, 0xCFE6600) {
				if string(p.Data) != lines[i] || p.DataStart != 0xCFE6600 {
					t.Errorf("encode %d: %q at %s", i, p.Data, p.DataStart)
				}
			}
		})
	}
}

// TestTextExample is the §2.4 worked example, one payload per record.
func TestTextExample(t *testing.T) {
	const commitStart = 0xCFE5E48
	lines := readLines(t, "text_example.txt")
	begin := exBeginOG
	begin.LSN, begin.Time = 0, ""
	want := []gauss.Record{begin}
	for _, r := range []gauss.Record{exInsert1, exInsert2, exUpdate, exDelete} {
		r.LSN = 0
		want = append(want, textual(r))
	}
	want = append(want, gauss.Record{Kind: gauss.KindCommit, LSN: commitStart, Xid: 78108, HasXid: true})
	var got []gauss.Record
	for _, l := range lines {
		got = append(got, decode(t, txtB, []byte(l), commitStart)...)
	}
	sameRecords(t, "decode", got, want)
	for i, p := range gaussenc.Transaction(txtB, want, commitStart) {
		if string(p.Data) != lines[i] {
			t.Errorf("encode %d: %q", i, p.Data)
		}
	}
}

// TestTextBatch is the §2.4 batch dump: BEGIN, the first INSERT, COMMIT.
func TestTextBatch(t *testing.T) {
	p := readHex1(t, "text_batch")
	begin := exBeginOG
	begin.Time = ""
	want := []gauss.Record{begin, textual(exInsert1), exCommitX}
	sameRecords(t, "decode", decode(t, txtP, p, 0), want)
	enc := gaussenc.Transaction(txtP, want, 0xCFE5E48)
	if len(enc) != 1 || !bytes.Equal(enc[0].Data, p) {
		t.Errorf("encode:\n got  %x\n want %x", enc[0].Data, p)
	}
}

// TestJSONBatch checks the one JSON batch frame the spec gives (§2.5):
// the first INSERT is 00 00 00 ea | 0/CFE5D40 | 226 JSON bytes.
func TestJSONBatch(t *testing.T) {
	begin := exBeginOG
	begin.Time = ""
	want := []gauss.Record{begin, textual(exInsert1), textual(exInsert2), textual(exUpdate), textual(exDelete), exCommitX}
	enc := gaussenc.Transaction(jsnP, want, 0xCFE5E48)
	if len(enc) != 1 {
		t.Fatalf("%d payloads", len(enc))
	}
	p := enc[0].Data
	beginLen := 4 + int(binary.BigEndian.Uint32(p))
	frame := p[beginLen : beginLen+12]
	if !bytes.Equal(frame, []byte{0, 0, 0, 0xea, 0, 0, 0, 0, 0x0c, 0xfe, 0x5d, 0x40}) {
		t.Errorf("first INSERT frame % x", frame)
	}
	mppdbLines := readLines(t, "mppdb_example.txt")
	_, insertJSON, _ := strings.Cut(mppdbLines[1], "\t")
	if got := string(p[beginLen+12 : beginLen+12+226]); got != insertJSON {
		t.Errorf("first INSERT JSON %q", got)
	}
	if !bytes.HasSuffix(p, []byte("commit xid: 78108\x00\x00\x00\x00")) {
		t.Errorf("batch end %q", p[len(p)-24:])
	}
	sameRecords(t, "decode", decode(t, jsnP, p, 0), want)

	fixture := readHex1(t, "json_batch")
	short := []gauss.Record{begin, textual(exInsert1), exCommitX}
	sameRecords(t, "fixture", decode(t, jsnP, fixture, 0), short)
	if enc := gaussenc.Transaction(jsnP, short, 0xCFE5E48); !bytes.Equal(enc[0].Data, fixture) {
		t.Errorf("encode fixture:\n got  %x\n want %x", enc[0].Data, fixture)
	}
}

// TestMppdbExample is the §2.1 worked example: serial payloads, the
// location column being the XLogData dataStart.
func TestMppdbExample(t *testing.T) {
	var starts []source.LSN
	var lines []string
	for _, l := range readLines(t, "mppdb_example.txt") {
		loc, data, _ := strings.Cut(l, "\t")
		lsn, err := source.ParseLSN(loc)
		if err != nil {
			t.Fatal(err)
		}
		starts, lines = append(starts, lsn), append(lines, data)
	}
	full := []gauss.Record{{Kind: gauss.KindBegin, FirstLSN: 0xCFE5C80, Xid: 78108, HasXid: true}}
	for _, r := range []gauss.Record{exInsert1, exInsert2, exUpdate, exDelete} {
		full = append(full, textual(r))
	}
	full = append(full, gauss.Record{Kind: gauss.KindCommit, LSN: 0xCFE5E68, Xid: 78108, HasXid: true, Time: exTime, CSN: 2357})

	var got []gauss.Record
	for i, l := range lines {
		got = append(got, decode(t, mpp, []byte(l), starts[i])...)
	}
	want := make([]gauss.Record, len(full))
	for i, r := range full {
		if r.Kind != gauss.KindCommit {
			r.LSN, r.FirstLSN = 0, 0 // serial records carry no LSN; only COMMIT takes dataStart
		}
		want[i] = r
	}
	sameRecords(t, "decode", got, want)
	for i, p := range gaussenc.Transaction(mpp, full, 0) {
		if string(p.Data) != lines[i] || p.DataStart != starts[i] {
			t.Errorf("encode %d: %q at %s, want %q at %s", i, p.Data, p.DataStart, lines[i], starts[i])
		}
	}
}

// TestMppdbVariants covers the other BEGIN/COMMIT spellings of §2.1 and
// TRUNCATE.
func TestMppdbVariants(t *testing.T) {
	for _, tc := range []struct {
		line string
		want gauss.Record
	}{
		{"BEGIN", gauss.Record{Kind: gauss.KindBegin}},
		{"BEGIN 15432 ORIGIN_ID 3", gauss.Record{Kind: gauss.KindBegin, Xid: 15432, HasXid: true, Origin: 3, HasOrigin: true}},
		{"BEGIN ORIGIN_ID 0", gauss.Record{Kind: gauss.KindBegin, HasOrigin: true}},
		{"COMMIT (at 2025-11-22 16:09:34.531976+08) CSN 2357", gauss.Record{Kind: gauss.KindCommit, LSN: 9, Time: exTime, CSN: 2357}},
		{"COMMIT 78108 CSN 2357", gauss.Record{Kind: gauss.KindCommit, LSN: 9, Xid: 78108, HasXid: true, CSN: 2357}},
		{"COMMIT 1010023 CSN 1010022", gauss.Record{Kind: gauss.KindCommit, LSN: 9, Xid: 1010023, HasXid: true, CSN: 1010022}},
		{"table public.a, \"S\".\"T,x\": TRUNCATE: restart_seqs cascade", gauss.Record{Kind: gauss.KindTruncate,
			Truncated: []source.TableName{{Schema: "public", Name: "a"}, {Schema: "S", Name: "T,x"}}, RestartSeqs: true, Cascade: true}},
		{"table public.a: TRUNCATE: (no-flags)", gauss.Record{Kind: gauss.KindTruncate, Truncated: []source.TableName{{Schema: "public", Name: "a"}}}},
		{"table public.a: TRUNCATE: cascade", gauss.Record{Kind: gauss.KindTruncate, Truncated: []source.TableName{{Schema: "public", Name: "a"}}, Cascade: true}},
	} {
		got := decode(t, mpp, []byte(tc.line), 9)
		sameRecords(t, tc.line, got, []gauss.Record{tc.want})
		rec := tc.want
		if rec.Kind == gauss.KindCommit {
			rec.LSN = 9
		}
		if enc := gaussenc.Transaction(mpp, []gauss.Record{rec}, 0); string(enc[0].Data) != tc.line {
			t.Errorf("encode: %q, want %q", enc[0].Data, tc.line)
		}
	}
}

// TestTextVariants covers BEGIN/COMMIT spellings of both products and the
// tokenising traps of text DML.
func TestTextVariants(t *testing.T) {
	for _, tc := range []struct {
		line string
		want gauss.Record
	}{
		{"BEGIN CSN: 2357 first_lsn: 0/CFE5C80 xid: 78108 commit_time: 2025-11-22 16:09:34.531976+08 origin_id: 4",
			gauss.Record{Kind: gauss.KindBegin, CSN: 2357, FirstLSN: 0xCFE5C80, Xid: 78108, HasXid: true, Time: exTime, Origin: 4, HasOrigin: true}},
		{"begin csn: 1 FIRST_LSN: 1/0 future_field: a b c", gauss.Record{Kind: gauss.KindBegin, CSN: 1, FirstLSN: 1 << 32}},
		{"commit xid: 78108 (at 2025-11-22 16:09:34.531976+08)", gauss.Record{Kind: gauss.KindCommit, LSN: 5, Xid: 78108, HasXid: true, Time: exTime}},
		{"COMMIT XID: 78110", gauss.Record{Kind: gauss.KindCommit, LSN: 5, Xid: 78110, HasXid: true}},
		{"commit", gauss.Record{Kind: gauss.KindCommit, LSN: 5}},
		{"COMMIT (at " + exTime + ")", gauss.Record{Kind: gauss.KindCommit, LSN: 5, Time: exTime}},
		{"COMMIT XID: 7 commit_time: " + exTime, gauss.Record{Kind: gauss.KindCommit, LSN: 5, Xid: 7, HasXid: true, Time: exTime}},
		{`table s t UPDATE: "a b"[character varying]:'x]: y''z' arr[integer[]]:'{1,2}' b[boolean]:true v[bit varying]:B'01' n[numeric]:NaN u[text]:unchanged-toast-datum`,
			gauss.Record{Kind: gauss.KindUpdate, Schema: "s", Table: "t", New: []gauss.Column{
				{Name: "a b", Type: 1043, TypeName: "character varying", Value: []byte("x]: y'z")},
				{Name: "arr", Type: 1007, TypeName: "integer[]", Value: []byte("{1,2}")},
				{Name: "b", Type: 16, TypeName: "boolean", Value: []byte("t")},
				{Name: "v", Type: 1562, TypeName: "bit varying", Value: []byte("01")},
				{Name: "n", Type: 1700, TypeName: "numeric", Value: []byte("NaN")},
				{Name: "u", Type: 25, TypeName: "text", Unchanged: true},
			}}},
		{`table s t UPDATE: old-key: "new-tuple:"[text]:' new-tuple: ' new-tuple: (no-tuple-data)`,
			gauss.Record{Kind: gauss.KindUpdate, Schema: "s", Table: "t", Old: []gauss.Column{{Name: "new-tuple:", Type: 25, TypeName: "text", Value: []byte(" new-tuple: ")}}}},
		{"table s t DELETE: (no-tuple-data)", gauss.Record{Kind: gauss.KindDelete, Schema: "s", Table: "t"}},
		{"table s t INSERT:", gauss.Record{Kind: gauss.KindInsert, Schema: "s", Table: "t", New: []gauss.Column{}}},
		{"table s t INSERT: x[mood]:'sad'", gauss.Record{Kind: gauss.KindInsert, Schema: "s", Table: "t", New: []gauss.Column{{Name: "x", TypeName: "mood", Value: []byte("sad")}}}},
	} {
		sameRecords(t, tc.line, decode(t, txtB, []byte(tc.line), 5), []gauss.Record{tc.want})
	}
}

// TestJSONVariants covers quoting in JSON DML.
func TestJSONVariants(t *testing.T) {
	line := `{"table_name":"\"My Schema\".\"T\"","op_type":"UPDATE","columns_name":["\"Id\"","note"],"columns_type":["integer","text"],` +
		`"columns_val":["null","'it''s \"q\" \\ \u00e9\t'"],"old_keys_name":["\"Id\""],"old_keys_type":["integer"],"old_keys_val":["5"]}`
	want := gauss.Record{Kind: gauss.KindUpdate, Schema: "My Schema", Table: "T",
		New: []gauss.Column{{Name: "Id", Type: 23, TypeName: "integer", Null: true}, {Name: "note", Type: 25, TypeName: "text", Value: []byte("it's \"q\" \\ é\t")}},
		Old: []gauss.Column{{Name: "Id", Type: 23, TypeName: "integer", Value: []byte("5")}}}
	for _, f := range []gauss.Format{jsnB, mpp} {
		sameRecords(t, f.String(), decode(t, f, []byte(line), 0), []gauss.Record{want})
	}
	enc := gaussenc.Transaction(jsnB, []gauss.Record{want}, 0)
	if string(enc[0].Data) != strings.Replace(line, `\u00e9`, "é", 1) {
		t.Errorf("encode: %s", enc[0].Data)
	}
	// Bytes that are not UTF-8 (a GBK database) survive untouched.
	gbk := []byte(`{"table_name":"public.t","op_type":"INSERT","columns_name":["c"],"columns_type":["text"],"columns_val":["'` + "\xc4\xe3\xba\xc3" + `'"],"old_keys_name":[],"old_keys_type":[],"old_keys_val":[]}`)
	got := decode(t, jsnB, gbk, 0)
	if !bytes.Equal(got[0].New[0].Value, []byte("\xc4\xe3\xba\xc3")) {
		t.Errorf("GBK value %q", got[0].New[0].Value)
	}
	if enc := gaussenc.Transaction(jsnB, got, 0); !bytes.Equal(enc[0].Data, gbk) {
		t.Errorf("GBK encode %q", enc[0].Data)
	}
}
