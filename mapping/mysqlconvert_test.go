package mapping

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/decant/decant/source"
)

// edge is one value written into one target column. A value the column
// holds has rule "" and the same result under every policy. A value it
// cannot hold fails with rule under PolicyError, is NULL under PolicyNull,
// and is clamped (nil: has no nearest value) under PolicyClamp; on a NOT
// NULL column, every NULL outcome becomes the rule's error instead.
type edge struct {
	name string
	src  source.Column
	tgt  string // COLUMN_TYPE
	in   string
	rule string // the failed rule, "" when the value fits
	want any    // the value written when it fits, or its clamp
}

// runEdges checks each edge under every policy, on nullable and NOT NULL
// columns.
func runEdges(t *testing.T, edges []edge) {
	t.Helper()
	for _, e := range edges {
		for _, nn := range []bool{false, true} {
			for _, p := range []Policy{PolicyError, PolicyNull, PolicyClamp} {
				t.Run(fmt.Sprintf("%s/%s/notnull=%t", e.name, p, nn), func(t *testing.T) {
					checkEdge(t, e, p, nn)
				})
			}
		}
	}
}

func checkEdge(t *testing.T, e edge, p Policy, nn bool) {
	tgt := mycol(e.tgt)
	tgt.Nullable = !nn
	conv, err := MySQLConverter(e.src, tgt, p)
	if err != nil {
		t.Fatalf("MySQLConverter: %v", err)
	}
	got, err := conv([]byte(e.in))
	want, wantRule := e.want, ""
	if e.rule != "" {
		switch {
		case p == PolicyError:
			want, wantRule = nil, e.rule
		case p == PolicyNull:
			want = nil
		}
		if want == nil && nn {
			wantRule = e.rule
		}
	}
	if wantRule != "" {
		var u *Unrepresentable
		if !errors.As(err, &u) || u.Rule != wantRule {
			t.Fatalf("got %#v, %v; want Unrepresentable %q", got, err, wantRule)
		}
		if leaks(u.Rule, e.in) {
			t.Errorf("rule %q contains the value %q", u.Rule, e.in)
		}
		return
	}
	if err != nil {
		t.Fatalf("got error %v, want %#v", err, want)
	}
	checkArg(t, got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v (%T), want %#v (%T)", got, got, want, want)
	}
}

// leaks reports whether a rule quotes the value; the names of special
// values (NaN, infinity) are part of rules.
func leaks(rule, value string) bool {
	switch strings.ToLower(strings.TrimPrefix(value, "-")) {
	case "nan", "infinity":
		return false
	}
	return len(value) > 2 && strings.Contains(rule, value)
}

// checkArg checks that a value is one the driver is promised.
func checkArg(t *testing.T, v any) {
	t.Helper()
	switch v.(type) {
	case nil, string, []byte, int64, float64:
	default:
		t.Errorf("converter returned a %T", v)
	}
}

const dec124 = "decimal(12,4)"

func TestIntegerEdges(t *testing.T) {
	runEdges(t, []edge{
		{"int4", col(oidInt4, -1), "int(11)", "42", "", int64(42)},
		{"int8 min", col(oidInt8, -1), "bigint(20)", "-9223372036854775808", "", int64(math.MinInt64)},
		{"int8 max", col(oidInt8, -1), "bigint(20)", "9223372036854775807", "", int64(math.MaxInt64)},
		{"int8 above INT", col(oidInt8, -1), "int(11)", "9223372036854775807", "int8 is outside INT(11)'s range -2147483648..2147483647", int64(math.MaxInt32)},
		{"int8 below INT", col(oidInt8, -1), "int(11)", "-2147483649", "int8 is outside INT(11)'s range -2147483648..2147483647", int64(math.MinInt32)},
		{"int2 into TINYINT", col(oidInt2, -1), "tinyint(4)", "-300", "int2 is outside TINYINT(4)'s range -128..127", int64(-128)},
		{"negative into UNSIGNED", col(oidInt4, -1), "int(10) unsigned", "-1", "int4 is outside INT(10) UNSIGNED's range 0..4294967295", int64(0)},
		{"oid max", col(oidOID, -1), "bigint(20)", "4294967295", "", int64(4294967295)},
		{"xid8 max into BIGINT UNSIGNED", col(oidXID8, -1), "bigint(20) unsigned", "18446744073709551615", "", "18446744073709551615"},
		{"xid8 above BIGINT", col(oidXID8, -1), "bigint(20)", "18446744073709551615", "xid8 is outside BIGINT(20)'s range -9223372036854775808..9223372036854775807", int64(math.MaxInt64)},
		{"bool true", col(oidBool, -1), "tinyint(1)", "t", "", int64(1)},
		{"bool false", col(oidBool, -1), "tinyint(1)", "f", "", int64(0)},
		{"numeric integral", col(oidNumeric, -1), "int(11)", "123.000", "", int64(123)},
		{"numeric with a fraction", col(oidNumeric, -1), "int(11)", "12.5", "numeric has a fraction; INT(11) holds integers", int64(13)},
		{"negative numeric with a fraction", col(oidNumeric, -1), "int(11)", "-12.5", "numeric has a fraction; INT(11) holds integers", int64(-13)},
		{"numeric NaN", col(oidNumeric, -1), "int(11)", "NaN", "numeric NaN has no INT(11) value", nil},
		{"numeric Infinity", col(oidNumeric, -1), "int(11)", "Infinity", "numeric Infinity has no INT(11) value", int64(math.MaxInt32)},
		{"numeric past uint64", col(oidNumeric, -1), "bigint(20)", "-99999999999999999999999", "numeric is outside BIGINT(20)'s range -9223372036854775808..9223372036854775807", int64(math.MinInt64)},
		{"float8 integral", col(oidFloat8, -1), "int(11)", "1e+03", "", int64(1000)},
		{"money", col(oidMoney, -1), "int(11)", "$1,234.00", "", int64(1234)},
		{"YEAR", col(oidInt4, -1), "year(4)", "2024", "", int64(2024)},
		{"before YEAR", col(oidInt4, -1), "year(4)", "1900", "int4 is outside YEAR(4)'s range 1901..2155", int64(1901)},
	})
}

func TestDecimalEdges(t *testing.T) {
	num := col(oidNumeric, -1)
	nines35 := strings.Repeat("9", 35)
	runEdges(t, []edge{
		{"fits", num, dec124, "1234.5678", "", "1234.5678"},
		{"trailing zeros are not digits lost", num, dec124, "1234.50000000", "", "1234.5"},
		{"negative zero", num, dec124, "-0.0000", "", "0"},
		{"too many fraction digits", num, dec124, "1234.56789", "numeric does not fit DECIMAL(12,4): more than 4 fractional digits", "1234.5679"},
		{"round half away from zero", num, dec124, "-0.00005", "numeric does not fit DECIMAL(12,4): more than 4 fractional digits", "-0.0001"},
		{"rounds to zero", num, dec124, "-0.00004", "numeric does not fit DECIMAL(12,4): more than 4 fractional digits", "0"},
		{"too many integer digits", num, dec124, "123456789", "numeric does not fit DECIMAL(12,4): more than 8 integer digits", "99999999.9999"},
		{"too small", num, dec124, "-123456789.5", "numeric does not fit DECIMAL(12,4): more than 8 integer digits", "-99999999.9999"},
		{"rounding carries past the range", num, dec124, "99999999.99995", "numeric does not fit DECIMAL(12,4): more than 4 fractional digits", "99999999.9999"},
		{"NaN", num, dec124, "NaN", "numeric NaN has no DECIMAL value", nil},
		{"Infinity", num, dec124, "Infinity", "numeric Infinity has no DECIMAL value", "99999999.9999"},
		{"-Infinity", num, dec124, "-Infinity", "numeric -Infinity has no DECIMAL value", "-99999999.9999"},
		{"35 integer digits", num, "decimal(65,30)", nines35 + ".5", "", nines35 + ".5"},
		{"36 integer digits", num, "decimal(65,30)", "1" + nines35, "numeric does not fit DECIMAL(65,30): more than 35 integer digits", nines35 + "." + strings.Repeat("9", 30)},
		{"30 fraction digits", num, "decimal(65,30)", "0." + strings.Repeat("0", 29) + "1", "", "0." + strings.Repeat("0", 29) + "1"},
		{"31 fraction digits", num, "decimal(65,30)", "0." + strings.Repeat("0", 30) + "1", "numeric does not fit DECIMAL(65,30): more than 30 fractional digits", "0"},
		{"float8 max", col(oidFloat8, -1), "decimal(65,30)", "1.7976931348623157e+308", "float8 does not fit DECIMAL(65,30): more than 35 integer digits", nines35 + "." + strings.Repeat("9", 30)},
		{"float8 tiny", col(oidFloat8, -1), "decimal(10,2)", "1e-320", "float8 does not fit DECIMAL(10,2): more than 2 fractional digits", "0"},
		{"float8", col(oidFloat8, -1), "decimal(10,2)", "0.5", "", "0.5"},
		{"float4 NaN", col(oidFloat4, -1), "decimal(10,2)", "NaN", "float4 NaN has no DECIMAL value", nil},
		{"int8 min", col(oidInt8, -1), "decimal(19,0)", "-9223372036854775808", "", "-9223372036854775808"},
		{"money", col(oidMoney, -1), "decimal(19,2)", "$1,234.56", "", "1234.56"},
		{"money min", col(oidMoney, -1), "decimal(19,2)", "-$92,233,720,368,547,758.08", "", "-92233720368547758.08"},
		{"money max", col(oidMoney, -1), "decimal(19,2)", "$92,233,720,368,547,758.07", "", "92233720368547758.07"},
		{"domain over numeric(5,2)", infoCol(priceType), "decimal(5,2)", "999.99", "", "999.99"},
	})
}

func TestFloatEdges(t *testing.T) {
	f8, f4 := col(oidFloat8, -1), col(oidFloat4, -1)
	runEdges(t, []edge{
		{"float8 max", f8, "double", "1.7976931348623157e+308", "", math.MaxFloat64},
		{"float8 smallest", f8, "double", "5e-324", "", 5e-324},
		{"NaN", f8, "double", "NaN", "float8 NaN has no DOUBLE value", nil},
		{"Infinity", f8, "double", "Infinity", "float8 infinity has no DOUBLE value", math.MaxFloat64},
		{"-Infinity", f8, "double", "-Infinity", "float8 infinity has no DOUBLE value", -math.MaxFloat64},
		{"float4 max into FLOAT", f4, "float", "3.4028235e+38", "", float64(math.MaxFloat32)},
		{"float4 into FLOAT keeps float32", f4, "float", "0.1", "", float64(float32(0.1))},
		{"float4 Infinity into FLOAT", f4, "float", "Infinity", "float4 infinity has no FLOAT value", float64(math.MaxFloat32)},
		{"float8 past FLOAT", f8, "float", "-1e+39", "float8 is outside FLOAT's range", -float64(math.MaxFloat32)},
		{"numeric past DOUBLE", col(oidNumeric, -1), "double", "1" + strings.Repeat("0", 400), "numeric is outside DOUBLE's range", math.MaxFloat64},
		{"numeric NaN", col(oidNumeric, -1), "double", "NaN", "numeric NaN has no DOUBLE value", nil},
		{"numeric", col(oidNumeric, -1), "double", "12.25", "", 12.25},
		{"int8", col(oidInt8, -1), "double", "42", "", 42.0},
		{"money", col(oidMoney, -1), "double", "-$1.50", "", -1.5},
	})
}

func TestNegativeZero(t *testing.T) {
	for _, tgt := range []string{"double", "float"} {
		conv, err := MySQLConverter(col(oidFloat8, -1), mycol(tgt), PolicyError)
		if err != nil {
			t.Fatal(err)
		}
		got, err := conv([]byte("-0"))
		if f, ok := got.(float64); err != nil || !ok || f != 0 || !math.Signbit(f) {
			t.Errorf("-0 into %s = %#v, %v; want float64 -0", tgt, got, err)
		}
	}
}

func TestStringEdges(t *testing.T) {
	text := col(oidText, -1)
	emoji64 := strings.Repeat("😀", 64)
	runEdges(t, []edge{
		{"fits in characters, not bytes", text, "varchar(5)", "héllo", "", "héllo"},
		{"longer than VARCHAR", text, "varchar(5)", "héllo!", "string of 6 characters is longer than VARCHAR(5)", "héllo"},
		{"emoji fit", text, "varchar(3)", "😀😀😀", "", "😀😀😀"},
		{"emoji too many", text, "varchar(3)", "😀😀😀😀", "string of 4 characters is longer than VARCHAR(3)", "😀😀😀"},
		{"TINYTEXT counts bytes", text, "tinytext", emoji64, "string of 256 bytes is longer than TINYTEXT", strings.Repeat("😀", 63)},
		{"empty", text, "varchar(3)", "", "", ""},
		{"char(n) padding goes", col(oidBpchar, 5+4), "char(5)", "ab   ", "", "ab"},
		{"char(n) padding does not count", col(oidBpchar, 5+4), "varchar(3)", "abc  ", "", "abc"},
		{"name", col(oidName, -1), "varchar(63)", "pg_class", "", "pg_class"},
		{`"char"`, col(oidChar, -1), "char(1)", "x", "", "x"},
		{`"char" high byte prints as octal`, col(oidChar, -1), "char(1)", `\377`, "string of 4 characters is longer than CHAR(1)", `\`},
		{"uuid", col(oidUUID, -1), "char(36)", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
		{"int4 as text", col(oidInt4, -1), "varchar(10)", "-42", "", "-42"},
		{"bytea as text", col(oidBytea, -1), "longtext", `\x0a0b`, "", `\x0a0b`},
		{"interval", col(oidInterval, -1), "varchar(80)", "-178956970 years -8 mons -2147483648 days -2562047788:00:54.775807", "",
			"-178956970 years -8 mons -2147483648 days -2562047788:00:54.775807"},
		{"array as its text", col(1007, -1), "longtext", "{1,2}", "", "{1,2}"},
		{"inet", col(oidInet, -1), "varchar(43)", "::ffff:1.2.3.4", "", "::ffff:1.2.3.4"},
		{"bit as text", col(oidBit, 4), "varchar(4)", "0101", "", "0101"},
		{"timestamptz as text", col(oidTimestamptz, -1), "text", "2024-02-29 06:30:00+00", "", "2024-02-29 06:30:00+00"},
	})
}

func TestBinaryEdges(t *testing.T) {
	bytea := col(oidBytea, -1)
	runEdges(t, []edge{
		{"hex", bytea, "longblob", `\x0a0bff`, "", []byte{0x0a, 0x0b, 0xff}},
		{"hex empty is not NULL", bytea, "longblob", `\x`, "", []byte{}},
		{"escape form", bytea, "longblob", `\012\013\\'\377`, "", []byte{0x0a, 0x0b, '\\', '\'', 0xff}},
		{"escape form empty", bytea, "longblob", ``, "", []byte{}},
		{"escape form plain", bytea, "blob", `abc`, "", []byte("abc")},
		{"longer than VARBINARY", bytea, "varbinary(2)", `\x0a0b0c`, "bytea of 3 bytes is longer than VARBINARY(2)", []byte{0x0a, 0x0b}},
		{"uuid into BINARY(16)", col(oidUUID, -1), "binary(16)", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "",
			[]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}},
		{"text into BLOB", col(oidText, -1), "blob", "héllo", "", []byte("héllo")},
	})
	conv, _ := MySQLConverter(bytea, mycol("longblob"), PolicyError)
	for _, bad := range []string{`\x0`, `\xzz`, `\9`, `a\`} {
		if v, err := conv([]byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed bytea text") {
			t.Errorf("bytea %q = %#v, %v; want malformed", bad, v, err)
		}
	}
}

func TestLabelEdges(t *testing.T) {
	mood := infoCol(moodType)
	runEdges(t, []edge{
		{"enum label", mood, "enum('sad','ok')", "ok", "", "ok"},
		{"enum label with quotes", mood, `enum('sad','it''s "great"')`, `it's "great"`, "", `it's "great"`},
		{"enum label the target lacks", mood, "enum('sad','ok')", "happy", "public.mood value is not a member of the target ENUM", nil},
		{"labels are exact", mood, "enum('sad','ok')", "OK", "public.mood value is not a member of the target ENUM", nil},
		{"emoji label as information_schema shows it", mood, "enum('sad','ünïcödé ?')", "ünïcödé 😀", "", "ünïcödé 😀"},
		{"text into ENUM", col(oidText, -1), "enum('a','b')", "b", "", "b"},
		{"char(n) into ENUM", col(oidBpchar, 5+4), "enum('a','b')", "b    ", "", "b"},
		{"SET members", col(oidText, -1), "set('p','q')", "p,q", "", "p,q"},
		{"empty SET", col(oidText, -1), "set('p','q')", "", "", ""},
		{"SET member the target lacks", col(oidVarchar, -1), "set('p','q')", "p,r", "varchar value is not a member of the target SET", nil},
	})
}

func TestBitEdges(t *testing.T) {
	runEdges(t, []edge{
		{"bit(4)", col(oidBit, 4), "bit(4)", "0101", "", []byte{0x05}},
		{"varbit(10)", col(oidVarbit, 10), "bit(10)", "1111111111", "", []byte{0x03, 0xff}},
		{"leading zeros do not count", col(oidVarbit, -1), "bit(4)", "00001", "", []byte{0x01}},
		{"bit(64)", col(oidBit, 64), "bit(64)", "1" + strings.Repeat("0", 63), "", []byte{0x80, 0, 0, 0, 0, 0, 0, 0}},
		{"too many bits", col(oidVarbit, -1), "bit(4)", "11111", "varbit with 5 significant bits is longer than BIT(4)", []byte{0x0f}},
		{"bool into BIT(1)", col(oidBool, -1), "bit(1)", "t", "", []byte{0x01}},
	})
}

func TestJSONTargetEdges(t *testing.T) {
	runEdges(t, []edge{
		{"jsonb as is", col(oidJSONB, -1), "json", `{"a": [1, 2]}`, "", `{"a": [1, 2]}`},
		{"json as is", col(oidJSON, -1), "json", `{"b":1, "a":2}`, "", `{"b":1, "a":2}`},
		{"text holding JSON", col(oidText, -1), "json", `[1,"x"]`, "", `[1,"x"]`},
		{"text not JSON", col(oidText, -1), "json", `not json`, "text value is not a JSON document", nil},
		{"int4 as a number", col(oidInt4, -1), "json", "-5", "", "-5"},
		{"bool", col(oidBool, -1), "json", "t", "", "true"},
		{"numeric NaN as a string", col(oidNumeric, -1), "json", "NaN", "", `"NaN"`},
		{"timestamptz as a string", col(oidTimestamptz, -1), "json", "2024-01-01 00:00:00+00", "", `"2024-01-01 00:00:00+00"`},
		{"enum as a string", infoCol(moodType), "json", `it's "great"`, "", `"it's \"great\""`},
		{"int4[]", col(1007, -1), "json", "{1,NULL}", "", "[1,null]"},
	})
}

func TestMalformedText(t *testing.T) {
	tests := []struct {
		src source.Column
		tgt string
		in  string
	}{
		{col(oidInt4, -1), "int(11)", "4x"},
		{col(oidInt4, -1), "int(11)", ""},
		{col(oidNumeric, -1), dec124, "1.2.3"},
		{col(oidNumeric, -1), dec124, "1e99999"},
		{col(oidMoney, -1), dec124, "1.234,56"},
		{col(oidMoney, -1), dec124, "$1,23.00"},
		{col(oidFloat8, -1), "double", "fast"},
		{col(oidBool, -1), "tinyint(1)", "true"},
		{col(oidBit, -1), "bit(8)", "012"},
		{col(oidUUID, -1), "binary(16)", "a0eebc99"},
		{col(oidDate, -1), "date", "2024-13-01"},
		{col(oidTimestamp, -1), "datetime(6)", "2024-01-01T00:00:00"},
		{col(oidTimestamp, -1), "datetime(6)", "2024-01-01 24:00:00"},
		{col(oidTimestamptz, -1), "datetime(6)", "2024-01-01 00:00:00"},
		{col(oidTimestamptz, -1), "datetime(6)", "2024-01-01 00:00:00+5"},
		{col(oidTime, -1), "time(6)", "24:00:01"},
		{col(oidTime, -1), "time(6)", "12:00:00.1234567"},
		{col(oidTimetz, -1), "time(6)", "12:00:00"},
		{col(1007, -1), "json", "{1,2"},
	}
	for _, tt := range tests {
		conv, err := MySQLConverter(tt.src, mycol(tt.tgt), PolicyClamp)
		if err != nil {
			t.Fatalf("%d into %s: %v", tt.src.Type, tt.tgt, err)
		}
		got, err := conv([]byte(tt.in))
		var u *Unrepresentable
		if err == nil || errors.As(err, &u) || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("%q into %s = %#v, %v; want a malformed-text error", tt.in, tt.tgt, got, err)
		}
		if err != nil && len(tt.in) > 2 && strings.Contains(err.Error(), tt.in) {
			t.Errorf("error %q contains the value", err)
		}
	}
}
