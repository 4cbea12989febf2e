package gauss

import (
	"strings"
	"testing"
)

// TestDDLTypes: type spellings in a column definition, the OID, atttypmod
// and format_type spelling they give, and the modifiers refused.
func TestDDLTypes(t *testing.T) {
	for _, tc := range []struct {
		typ    string
		oid    uint32
		typmod int32
		sql    string // or, with oid 0, a part of the error
	}{
		{"pg_catalog.int4", 23, -1, "integer"},
		{"integer", 23, -1, "integer"},
		{"INT", 23, -1, "integer"},
		{`"int4"`, 23, -1, "integer"},
		{"pg_catalog.int2", 21, -1, "smallint"},
		{"pg_catalog.int8", 20, -1, "bigint"},
		{"pg_catalog.float4", 700, -1, "real"},
		{"pg_catalog.float8", 701, -1, "double precision"},
		{"double precision", 701, -1, "double precision"},
		{"float", 701, -1, "double precision"},
		{"float(24)", 700, -1, "real"},
		{"float(25)", 701, -1, "double precision"},
		{"pg_catalog.bool", 16, -1, "boolean"},
		{"pg_catalog.varchar(32)", 1043, 36, "character varying(32)"},
		{"character varying(32)", 1043, 36, "character varying(32)"},
		{"varchar", 1043, -1, "character varying"},
		{"varchar2(10)", 1043, 14, "character varying(10)"},
		{"national character varying(5)", 1043, 9, "character varying(5)"},
		{"pg_catalog.bpchar(10)", 1042, 14, "character(10)"},
		{"pg_catalog.bpchar", 1042, -1, "bpchar"},
		{"char", 1042, 5, "character(1)"},
		{"character(3)", 1042, 7, "character(3)"},
		{`pg_catalog."char"`, 18, -1, `"char"`},
		{`"char"`, 18, -1, `"char"`},
		{"pg_catalog.nvarchar2(20)", 3969, 24, "nvarchar2(20)"},
		{"pg_catalog.text", 25, -1, "text"},
		{"clob", 25, -1, "text"},
		{"pg_catalog.numeric(10,2)", 1700, 10<<16 | 2 + 4, "numeric(10,2)"},
		{`pg_catalog."numeric"(10,2)`, 1700, 10<<16 | 2 + 4, "numeric(10,2)"},
		{"numeric(7)", 1700, 7<<16 + 4, "numeric(7,0)"},
		{"decimal", 1700, -1, "numeric"},
		{"number(38, 0)", 1700, 38<<16 + 4, "numeric(38,0)"},
		{"pg_catalog.timestamptz(3)", 1184, 3, "timestamp(3) with time zone"},
		{"pg_catalog.timestamp", 1114, -1, "timestamp without time zone"},
		{"timestamp(6) without time zone", 1114, 6, "timestamp(6) without time zone"},
		{"timestamp with time zone", 1184, -1, "timestamp with time zone"},
		{"TIMESTAMP(9) WITH TIME ZONE", 1184, 6, "timestamp(6) with time zone"},
		{"time(2) with time zone", 1266, 2, "time(2) with time zone"},
		{"pg_catalog.time(0)", 1083, 0, "time(0) without time zone"},
		{"pg_catalog.timetz", 1266, -1, "time with time zone"},
		{"pg_catalog.date", 1082, -1, "date"},
		{"pg_catalog.smalldatetime", 9003, -1, "smalldatetime"},
		{"interval", 1186, -1, "interval"},
		{"interval(3)", 1186, 0x7FFF<<16 | 3, "interval(3)"},
		{"interval day to second(2)", 1186, (1<<3|1<<10|1<<11|1<<12)<<16 | 2, "interval day to second(2)"},
		{"pg_catalog.interval year", 1186, 1<<2<<16 | 0xFFFF, "interval year"},
		{"pg_catalog.bit(8)", 1560, 8, "bit(8)"},
		{"bit", 1560, 1, "bit(1)"},
		{"pg_catalog.bit", 1560, -1, `"bit"`},
		{"bit varying(5)", 1562, 5, "bit varying(5)"},
		{"pg_catalog.varbit", 1562, -1, "bit varying"},
		{"pg_catalog.bytea", 17, -1, "bytea"},
		{"pg_catalog.json", 114, -1, "json"},
		{"jsonb", 3802, -1, "jsonb"},
		{"uuid", 2950, -1, "uuid"},
		{"pg_catalog.inet", 869, -1, "inet"},
		{"cidr", 650, -1, "cidr"},
		{"macaddr", 829, -1, "macaddr"},
		{"money", 790, -1, "money"},
		{"oid", 26, -1, "oid"},
		{"name", 19, -1, "name"},
		{"tinyint", 5545, -1, "tinyint"},
		{"pg_catalog.int1", 5545, -1, "tinyint"},
		{"int(11)", 23, -1, "integer"},
		{"pg_catalog.raw", 86, -1, "raw"},
		{"blob", 88, -1, "blob"},
		{"pg_catalog.int4[]", 1007, -1, "integer[]"},
		{"pg_catalog._int4", 1007, -1, "integer[]"},
		{"integer ARRAY", 1007, -1, "integer[]"},
		{"text[][]", 1009, -1, "text[]"},
		{"character varying(32)[3]", 1015, 36, "character varying(32)[]"},
		{"pg_catalog.numeric(5,1)[]", 1231, 5<<16 | 1 + 4, "numeric(5,1)[]"},
		{"public.mood", 0, 0, "type public.mood is not a built-in type"},
		{"mood", 0, 0, "type mood is not a built-in type"},
		{"db.pg_catalog.int4", 0, 0, "not a built-in type"},
		{"pg_catalog.hll", 0, 0, "not a built-in type"},
		{"pg_catalog.smalldatetime[]", 9005, -1, "smalldatetime[]"},
		{"pg_catalog.cid[]", 1012, -1, "cid[]"},
		{"pg_catalog.circle[]", 0, 0, "type pg_catalog.circle[] is not a type decant knows"},
		{"varchar(0)", 0, 0, "length 0 out of range"},
		{"varchar(10485761)", 0, 0, "out of range"},
		{"varchar(1, 2)", 0, 0, "takes one modifier"},
		{"numeric(1001)", 0, 0, "precision 1001 and scale 0 out of range"},
		{"numeric(5,6)", 0, 0, "out of range"},
		{"numeric(5,-1)", 0, 0, "out of range"},
		{"numeric(1,2,3)", 0, 0, "expected an integer type modifier"},
		{"timestamp(-1)", 0, 0, "must not be negative"},
		{"float(54)", 0, 0, "precision out of range 1..53"},
		{"varchar(x)", 0, 0, "expected an integer type modifier"},
		{"varchar(99999999999)", 0, 0, "expected an integer type modifier"},
	} {
		st, err := parseDDL("CREATE TABLE public.t (c " + tc.typ + ")")
		s, ok := st.(*createTableStmt)
		if err != nil || !ok {
			t.Errorf("%s: %s, %v", tc.typ, showStmt(st), err)
			continue
		}
		if tc.oid == 0 {
			if s.err == nil || !strings.Contains(s.err.Error(), tc.sql) {
				t.Errorf("%s: %v, want %q", tc.typ, s.err, tc.sql)
			}
			continue
		}
		if s.err != nil || len(s.elems) != 1 || s.elems[0].column == nil {
			t.Errorf("%s: %s", tc.typ, showStmt(st))
			continue
		}
		col := s.elems[0].column.def
		if col.Type != tc.oid || col.TypeMod != tc.typmod || col.SQLType != tc.sql {
			t.Errorf("%s: oid %d typmod %d %q, want %d %d %q", tc.typ, col.Type, col.TypeMod, col.SQLType, tc.oid, tc.typmod, tc.sql)
		}
	}
}

// TestDDLBuiltinTypes: every type the parser knows has an OID, and
// format gives back a spelling TypeOID knows for the bare type.
func TestDDLBuiltinTypes(t *testing.T) {
	for name, b := range builtinTypes {
		if _, ok := TypeOID(b.sql); !ok {
			t.Errorf("%s: %q has no OID", name, b.sql)
		}
		if b.mod == modNone && b.format(-1) != b.sql {
			t.Errorf("%s: format(-1) = %q", name, b.format(-1))
		}
	}
	for _, w := range sqlTypeWords {
		if _, ok := builtinTypes[w.typname]; !ok {
			t.Errorf("%v: typname %q is not in builtinTypes", w.words, w.typname)
		}
	}
}
