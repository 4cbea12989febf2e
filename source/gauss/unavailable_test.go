package gauss

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// The fixtures of compressed heap tuples follow the openGauss code that
// writes them (each file names it): a tuple present with no column.
func TestUnavailableRowFixtures(t *testing.T) {
	t1 := source.TableName{Schema: "public", Name: "t1"}
	binB := Format{Style: 'b'}
	for _, c := range []struct {
		fixture string
		f       Format
		line    int // payload line of a .txt fixture
		want    UnavailableRowError
	}{
		{"bin_insert_compressed.hex", binB, 0, UnavailableRowError{Table: t1, Kind: KindInsert, LSN: 0xCFE5D40}},
		{"bin_delete_compressed.hex", binB, 0, UnavailableRowError{Table: t1, Kind: KindDelete, Old: true, LSN: 0xCFE5E20}},
		{"text_compressed.txt", Format{Style: 't'}, 0, UnavailableRowError{Table: t1, Kind: KindInsert}},
		{"text_compressed.txt", Format{Style: 't'}, 1, UnavailableRowError{Table: t1, Kind: KindUpdate, Old: true}},
		{"text_compressed.txt", Format{Style: 't'}, 2, UnavailableRowError{Table: t1, Kind: KindDelete, Old: true}},
		{"json_compressed.txt", Format{Style: 'j'}, 0, UnavailableRowError{Table: t1, Kind: KindInsert}},
		{"json_compressed.txt", Format{Style: 'j'}, 1, UnavailableRowError{Table: t1, Kind: KindDelete, Old: true, NoKey: true}},
		{"json_compressed.txt", Format{Style: 'm'}, 0, UnavailableRowError{Table: t1, Kind: KindInsert}},
		{"json_compressed.txt", Format{Style: 'm'}, 1, UnavailableRowError{Table: t1, Kind: KindDelete, Old: true, NoKey: true}},
	} {
		t.Run(c.fixture+"/"+c.f.String(), func(t *testing.T) {
			recs, err := Decode(c.f, fixturePayload(t, c.fixture, c.line), 0)
			if err != nil || len(recs) != 1 {
				t.Fatalf("decode: %d records, %v", len(recs), err)
			}
			got := unavailableRow(c.f, &recs[0])
			if got == nil {
				t.Fatalf("record %+v not seen as a row without columns", recs[0])
			}
			if *got != c.want {
				t.Errorf("got %+v, want %+v", *got, c.want)
			}
		})
	}
}

// A row with columns, a DELETE without an old tuple (no-tuple-data) and
// an UPDATE that kept its key are not unavailable rows.
func TestUnavailableRowNotForRows(t *testing.T) {
	col := []Column{{Name: "id", Type: 23, Value: []byte("1")}}
	for _, r := range []Record{
		{Kind: KindInsert, Schema: "public", Table: "t1", New: col},
		{Kind: KindUpdate, Schema: "public", Table: "t1", New: col},
		{Kind: KindUpdate, Schema: "public", Table: "t1", New: col, Old: col},
		{Kind: KindDelete, Schema: "public", Table: "t1", Old: col},
		{Kind: KindDelete, Schema: "public", Table: "t1"},
	} {
		if u := unavailableRow(Format{Style: 'b'}, &r); u != nil {
			t.Errorf("%s %+v: %v", r.Kind, r, u)
		}
	}
}

// The error is one line naming table, position, xid and what to do.
func TestUnavailableRowErrorText(t *testing.T) {
	e := &UnavailableRowError{Table: source.TableName{Schema: "public", Name: "t1"}, Kind: KindInsert, LSN: 0xCFE5D40, Xid: 1<<32 + 100, Pipeline: "shop"}
	msg := e.Error()
	for _, want := range []string{"INSERT of public.t1 at 0/CFE5D40 in xid 4294967396", "new row without its columns",
		"ALTER TABLE public.t1 SET NOCOMPRESS", "decant drop --pipeline shop --yes"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "\n") || !source.NeedsPerson(e) {
		t.Errorf("not a one-line error that needs a person: %q", msg)
	}
	e.Xid, e.NoKey, e.Old, e.Kind = 0, true, true, KindDelete
	if msg := e.Error(); strings.Contains(msg, "xid") || !strings.Contains(msg, "no replica identity key") {
		t.Errorf("without xid, JSON DELETE: %s", msg)
	}
}

// fixturePayload reads payload line of a testdata .txt file, or a .hex
// file's one payload.
func fixturePayload(t *testing.T, name string, line int) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".hex") {
		p, err := ParseHexDump(bytes.NewReader(raw))
		if err != nil || len(p) != 1 {
			t.Fatalf("%s: %d payloads, %v", name, len(p), err)
		}
		return p[0]
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return []byte(lines[line])
}
