package gaussenc_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/gauss/gaussenc"
)

var formats = []gauss.Format{
	{Style: 'b'}, {Style: 'b', Batch: true},
	{Style: 't'}, {Style: 't', Batch: true},
	{Style: 'j'}, {Style: 'j', Batch: true},
	{Style: 'm'},
}

// TestRoundTrip encodes random transactions in every format and decodes
// them back: the records must come back equal, except for the LSNs a
// format does not carry (§1.4).
func TestRoundTrip(t *testing.T) {
	for _, f := range formats {
		t.Run(f.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(f.Style), 7))
			for i := range 400 {
				g := gen{rng: rng, f: f}
				txn := g.transaction()
				const commitStart = 0x1234_5678
				var got []gauss.Record
				for _, p := range gaussenc.Transaction(f, txn, commitStart) {
					recs, err := gauss.Decode(f, p.Data, p.DataStart)
					if err != nil {
						t.Fatalf("txn %d: decode %q: %v", i, p.Data, err)
					}
					got = append(got, recs...)
				}
				want := expected(f, txn, commitStart)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("txn %d:\n got  %+v\n want %+v", i, got, want)
				}
			}
		})
	}
}

// expected is what decoding gives back: formats without per-record LSNs
// give only COMMIT the XLogData dataStart (the commit start in parallel
// non-batch mode, the commit end in serial mode).
func expected(f gauss.Format, txn []gauss.Record, commitStart source.LSN) []gauss.Record {
	out := make([]gauss.Record, len(txn))
	for i, r := range txn {
		switch {
		case f.Style == 'm':
			if r.Kind != gauss.KindCommit {
				r.LSN = 0
			}
			r.FirstLSN = 0
		case (f.Style == 't' || f.Style == 'j') && !f.Batch:
			r.LSN = 0
			if r.Kind == gauss.KindCommit {
				r.LSN = commitStart
			}
		}
		out[i] = r
	}
	return out
}

// gen makes random records restricted to what format f can carry.
type gen struct {
	rng *rand.Rand
	f   gauss.Format
}

func (g gen) binary() bool      { return g.f.Style == 'b' }
func (g gen) chance(n int) bool { return g.rng.IntN(n) == 0 }

func (g gen) pick(s []string) string { return s[g.rng.IntN(len(s))] }

var (
	identifiers = []string{"id", "t1", "public", "My Schema", `qu"ote`, "select", "a.b", "x[y]:z", "new-tuple:", "é", "_9", "Col"}
	plainNames  = []string{"id", "t1", "public", "S", `q"t`, "select", "a.b", "é"}
	times       = []string{"2025-11-22 16:09:34.531976+08", "2000-01-01 00:00:00+00", "1999-12-31 23:59:59.999999-03:30"}
	texts       = []string{"", "abc", "it's", "''", " spaced ]: out ", "new-tuple: x", `back\slash`, "line\nbreak\ttab\x01",
		"\xc4\xe3\xba\xc3", "é€😀", `{"json": [1, "two"]}`, "null", "true", "(no-tuple-data)", "unchanged-toast-datum"}
	ddls = []struct{ doc, sql string }{
		{`{"fmt":"DROP TABLE %{t}D","t":{"objname":"x","schemaname":"My S"}}`, `DROP TABLE "My S".x`},
		{`{"fmt":"%{a:, }L","a":["x","it's"]}`, `'x', $$it's$$`},
	}
)

func (g gen) transaction() []gauss.Record {
	txn := []gauss.Record{g.begin()}
	for range g.rng.IntN(6) {
		txn = append(txn, g.change())
	}
	return append(txn, g.commit(txn[0]))
}

func (g gen) begin() gauss.Record {
	r := gauss.Record{Kind: gauss.KindBegin}
	if g.chance(2) {
		r.Xid, r.HasXid = g.rng.Uint64(), true
	}
	if g.chance(3) {
		r.Origin, r.HasOrigin = g.rng.Uint32(), true
	}
	if g.f.Style == 'm' {
		r.Xid &= 0xFFFF_FFFF
		return r
	}
	r.CSN, r.FirstLSN = g.rng.Uint64(), source.LSN(g.rng.Uint64())
	r.LSN = r.FirstLSN
	if g.chance(2) {
		r.Time = g.pick(times)
	}
	if g.binary() && g.chance(2) {
		r.User = g.pick([]string{"alice", "Bob Smith", "é"})
	}
	return r
}

func (g gen) commit(begin gauss.Record) gauss.Record {
	r := gauss.Record{Kind: gauss.KindCommit, LSN: source.LSN(g.rng.Uint64())}
	if g.chance(4) != begin.HasXid { // mostly as BEGIN, sometimes not
		r.Xid, r.HasXid = g.rng.Uint64(), true
	}
	if g.chance(2) {
		r.Time = g.pick(times)
	}
	if g.f.Style == 'm' {
		r.CSN = g.rng.Uint64()
	}
	return r
}

func (g gen) change() gauss.Record {
	if !g.binary() && g.chance(8) {
		d := ddls[g.rng.IntN(len(ddls))]
		if g.chance(2) {
			return gauss.Record{Kind: gauss.KindDDL, LSN: source.LSN(g.rng.Uint64()), DDL: d.sql, DDLJSON: []byte(d.doc)}
		}
		return gauss.Record{Kind: gauss.KindDDL, LSN: source.LSN(g.rng.Uint64()), DDL: g.pick(texts)}
	}
	if g.f.Style == 'm' && g.chance(8) {
		return g.truncate()
	}
	r := gauss.Record{Kind: []gauss.Kind{gauss.KindInsert, gauss.KindUpdate, gauss.KindDelete}[g.rng.IntN(3)], LSN: source.LSN(g.rng.Uint64())}
	names := identifiers
	if g.f.Style == 't' {
		names = plainNames // printed raw: no spaces
	}
	r.Schema, r.Table = g.pick(names), g.pick(names)
	// A missing tuple cannot be told from an empty one in JSON: a
	// DELETE's old tuple is always there, possibly empty.
	jsonish := g.f.Style == 'j' || g.f.Style == 'm'
	if r.Kind != gauss.KindDelete && (jsonish || !g.chance(6)) {
		r.New = g.columns(0)
	}
	switch {
	case r.Kind == gauss.KindDelete && jsonish:
		r.Old = g.columns(0)
	case r.Kind != gauss.KindInsert && !g.chance(3):
		r.Old = g.columns(1)
	}
	return r
}

func (g gen) truncate() gauss.Record {
	r := gauss.Record{Kind: gauss.KindTruncate, Cascade: g.chance(2), RestartSeqs: g.chance(2)}
	for range 1 + g.rng.IntN(3) {
		r.Truncated = append(r.Truncated, source.TableName{Schema: g.pick(identifiers), Name: g.pick(identifiers)})
	}
	return r
}

var columnTypes = []uint32{23, 20, 21, 5545, 26, 700, 701, 1700, 16, 1560, 1562, 25, 1043, 1042, 18, 1184, 17, 3802, 1007, 1009, 2950}

func (g gen) columns(min int) []gauss.Column {
	cols := make([]gauss.Column, min+g.rng.IntN(4))
	for i := range cols {
		cols[i] = g.column()
	}
	return cols
}

func (g gen) column() gauss.Column {
	c := gauss.Column{Name: g.pick(identifiers), Type: columnTypes[g.rng.IntN(len(columnTypes))]}
	if !g.binary() {
		c.TypeName, _ = gauss.TypeName(c.Type)
	}
	switch {
	case g.chance(6):
		c.Null = true
	case g.binary() && g.chance(8):
		c.Rowno, c.RowNo = true, g.rng.Uint64()
	case !g.binary() && g.f.Style != 'j' && g.chance(10):
		c.Unchanged = true
	default:
		c.Value = []byte(g.value(c.Type))
	}
	return c
}

func (g gen) value(oid uint32) string {
	switch oid {
	case 23, 20, 21, 5545, 26:
		return fmt.Sprint(g.rng.Int64N(1e12) - 5e11)
	case 700, 701, 1700:
		return g.pick([]string{"1.5", "-0.25", "1e+300", "NaN", "Infinity", "-Infinity", "0"})
	case 16:
		return g.pick([]string{"t", "f"})
	case 1560, 1562:
		return g.pick([]string{"", "0", "0101", "1111000011110000"})
	}
	return g.pick(texts)
}
