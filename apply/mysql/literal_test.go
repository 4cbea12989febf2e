package mysql

import (
	"encoding/json"
	"testing"
)

func TestAppendQuery(t *testing.T) {
	cases := []struct {
		name        string
		query       string
		args        []any
		noBackslash bool
		want        string
	}{
		{"values", "INSERT INTO `t` (`a`, `b`, `c`) VALUES (?, ?, ?), (?, ?, ?)",
			[]any{int64(-7), "x", nil, uint64(18446744073709551615), 1.5, true},
			false, "INSERT INTO `t` (`a`, `b`, `c`) VALUES (-7, 'x', NULL), (18446744073709551615, 1.5, 1)"},
		{"marks inside quotes are not placeholders", "UPDATE `a?b``?` SET `c` = ? WHERE `d` = '?''?' AND `e` = \"?\\\"?\" AND `f` = ?",
			[]any{int64(1), int64(2)},
			false, "UPDATE `a?b``?` SET `c` = 1 WHERE `d` = '?''?' AND `e` = \"?\\\"?\" AND `f` = 2"},
		{"escapes", "SELECT ?", []any{"a'b\"c\\d\x00e\nf\rg\x1ah?"},
			false, `SELECT 'a\'b\"c\\d\0e\nf\rg\Zh?'`},
		{"no backslash escapes", "SELECT ?", []any{"a'b\\c\"\n"},
			true, "SELECT 'a''b\\c\"\n'"},
		{"bytes", "SELECT ?, ?", []any{[]byte{0, '\'', 0xff}, []byte(nil)},
			false, "SELECT _binary'\\0\\'\xff', NULL"},
		{"json", "SELECT ?", []any{json.RawMessage(`{"a":"it's"}`)},
			false, `SELECT '{\"a\":\"it\'s\"}'`},
		{"small integers and float", "SELECT ?, ?, ?, ?", []any{int(3), int32(-4), uint32(5), 1e21},
			false, "SELECT 3, -4, 5, 1e+21"},
		{"no placeholders", "COMMIT", nil, false, "COMMIT"},
	}
	for _, c := range cases {
		got, ok := literals{noBackslash: c.noBackslash}.appendQuery([]byte("prefix;"), c.query, c.args)
		if !ok || string(got) != "prefix;"+c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, ok, "prefix;"+c.want)
		}
	}
}

// A query the literals cannot write is left to the driver.
func TestAppendQueryRefuses(t *testing.T) {
	cases := []struct {
		name  string
		query string
		args  []any
	}{
		{"too few arguments", "SELECT ?, ?", []any{int64(1)}},
		{"too many arguments", "SELECT ?", []any{int64(1), int64(2)}},
		{"a type it does not write", "SELECT ?", []any{struct{}{}}},
		{"a float32, which the driver widens", "SELECT ?", []any{float32(0.1)}},
	}
	for _, c := range cases {
		if got, ok := (literals{}).appendQuery(nil, c.query, c.args); ok {
			t.Errorf("%s: wrote %q", c.name, got)
		}
	}
}
