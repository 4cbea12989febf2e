package gauss

import (
	"bytes"
	"testing"
)

func TestLiteralValue(t *testing.T) {
	for _, tc := range []struct {
		lit       string
		value     string
		null      bool
		unchanged bool
	}{
		{lit: "1", value: "1"},
		{lit: "-2.5e+10", value: "-2.5e+10"},
		{lit: "NaN", value: "NaN"},
		{lit: "true", value: "t"},
		{lit: "false", value: "f"},
		{lit: "B'0101'", value: "0101"},
		{lit: "B''", value: ""},
		{lit: "''", value: ""},
		{lit: "'abc'", value: "abc"},
		{lit: "'it''s'", value: "it's"},
		{lit: "''''", value: "'"},
		{lit: `'a\b'`, value: `a\b`},
		{lit: "'null'", value: "null"},
		{lit: "'true'", value: "true"},
		{lit: "' spaced ]: out '", value: " spaced ]: out "},
		{lit: "null", null: true},
		{lit: "unchanged-toast-datum", unchanged: true},
	} {
		var col Column
		if !literalValue(tc.lit, &col) {
			t.Errorf("%q: rejected", tc.lit)
			continue
		}
		if col.Null != tc.null || col.Unchanged != tc.unchanged {
			t.Errorf("%q: null %v unchanged %v", tc.lit, col.Null, col.Unchanged)
		}
		if !tc.null && !tc.unchanged && (col.Value == nil || !bytes.Equal(col.Value, []byte(tc.value))) {
			t.Errorf("%q: value %q, want %q", tc.lit, col.Value, tc.value)
		}
		if (tc.null || tc.unchanged) && col.Value != nil {
			t.Errorf("%q: value %q, want nil", tc.lit, col.Value)
		}
	}
	for _, bad := range []string{"", "'abc", "'a'b'", "'a''", "B'01", "B'0'1'", "a b", "x'y", "'a' "} {
		var col Column
		if literalValue(bad, &col) {
			t.Errorf("%q: accepted as %+v", bad, col)
		}
	}
}

func TestScanLiteral(t *testing.T) {
	for _, tc := range []struct {
		s   string
		end int
		ok  bool
	}{
		{"1 rest", 1, true},
		{"'a b' rest", 5, true},
		{"'a''b' rest", 6, true},
		{"B'01' rest", 5, true},
		{"'open", 0, false},
		{"", 0, false},
	} {
		end, ok := scanLiteral(tc.s, 0)
		if ok != tc.ok || ok && end != tc.end {
			t.Errorf("%q: %d %v, want %d %v", tc.s, end, ok, tc.end, tc.ok)
		}
	}
}

func TestQuoteIdentifier(t *testing.T) {
	for in, want := range map[string]string{
		"id": "id", "_x1": "_x1", "Foo": `"Foo"`, "1a": `"1a"`, "a b": `"a b"`, `q"t`: `"q""t"`,
		"select": `"select"`, "default": `"default"`, "date": `"date"`, "name": "name", "text": "text",
		"user": `"user"`, "": `""`, "é": `"é"`, "new-tuple:": `"new-tuple:"`,
	} {
		if got := QuoteIdentifier(in); got != want {
			t.Errorf("QuoteIdentifier(%q) = %s, want %s", in, got, want)
		}
		if back := unquoteIdentifier(QuoteIdentifier(in)); back != in {
			t.Errorf("unquote(quote(%q)) = %q", in, back)
		}
	}
	for _, raw := range []string{`"`, `"a`, `"a"b"`} {
		if got := unquoteIdentifier(raw); got != raw {
			t.Errorf("unquoteIdentifier(%q) = %q, want it unchanged", raw, got)
		}
	}
}

func TestSplitQualifiedName(t *testing.T) {
	for in, want := range map[string][2]string{
		"public.t1": {"public", "t1"}, `"My Schema"."T"`: {"My Schema", "T"}, `"a.b".c`: {"a.b", "c"}, `s."x""y"`: {"s", `x"y`},
	} {
		s, tb, ok := splitQualifiedName(in)
		if !ok || s != want[0] || tb != want[1] {
			t.Errorf("%s: %q %q %v", in, s, tb, ok)
		}
	}
	for _, bad := range []string{"t1", "a.b.c", `"a.b`, ".t", "s."} {
		if _, _, ok := splitQualifiedName(bad); ok {
			t.Errorf("%s accepted", bad)
		}
	}
}
