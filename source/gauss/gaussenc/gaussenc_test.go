package gaussenc

import (
	"testing"

	"github.com/decant/decant/source/gauss"
)

func TestLiteral(t *testing.T) {
	for _, tc := range []struct {
		col  gauss.Column
		want string
	}{
		{gauss.Column{Type: 23, Value: []byte("-5")}, "-5"},
		{gauss.Column{Type: 1700, Value: []byte("NaN")}, "NaN"},
		{gauss.Column{Type: 5545, Value: []byte("7")}, "7"},
		{gauss.Column{Type: 16, Value: []byte("t")}, "true"},
		{gauss.Column{Type: 16, Value: []byte("f")}, "false"},
		{gauss.Column{Type: 1562, Value: []byte("01")}, "B'01'"},
		{gauss.Column{Type: 25, Value: []byte(`it's \x`)}, `'it''s \x'`},
		{gauss.Column{TypeName: "integer", Value: []byte("1")}, "1"},
		{gauss.Column{TypeName: "mood", Value: []byte("sad")}, "'sad'"},
		{gauss.Column{Type: 25, Null: true}, "null"},
		{gauss.Column{Type: 25, Unchanged: true}, "unchanged-toast-datum"},
	} {
		if got := Literal(tc.col); got != tc.want {
			t.Errorf("Literal(%+v) = %s, want %s", tc.col, got, tc.want)
		}
	}
}

func TestCJSONString(t *testing.T) {
	in := "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f é\xff<>&"
	want := `"q\"b\\s/\b\f\n\r\t\u0001\u001f` + "\x7f é\xff<>&" + `"`
	if got := cJSONString(in); got != want {
		t.Errorf("cJSONString = %q, want %q", got, want)
	}
}

func TestUnsupported(t *testing.T) {
	for _, tc := range []struct {
		f   gauss.Format
		rec gauss.Record
	}{
		{gauss.Format{Style: 'b'}, gauss.Record{Kind: gauss.KindDDL, DDL: "x"}},
		{gauss.Format{Style: 't'}, gauss.Record{Kind: gauss.KindTruncate}},
		{gauss.Format{Style: 'b'}, gauss.Record{Kind: gauss.KindInsert, New: []gauss.Column{{Unchanged: true}}}},
		{gauss.Format{Style: 't'}, gauss.Record{Kind: gauss.KindInsert, New: []gauss.Column{{Type: 99999}}}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s %s: no panic", tc.f, tc.rec.Kind)
				}
			}()
			Transaction(tc.f, []gauss.Record{tc.rec}, 0)
		}()
	}
}
