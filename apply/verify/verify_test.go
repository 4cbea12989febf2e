package verify

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

func tableDef(cols []source.ColumnDef, pk ...string) *source.TableDef {
	return &source.TableDef{Name: source.TableName{Schema: "public", Name: "t"}, Columns: cols, PrimaryKey: pk}
}

func pgTable(t *testing.T, def *source.TableDef) *table {
	t.Helper()
	tt := &mapping.TargetTable{Name: def.Name, PrimaryKey: def.PrimaryKey}
	for _, c := range def.Columns {
		tt.Columns = append(tt.Columns, mapping.TargetColumn{Name: c.Name})
	}
	tb, err := newTable(def, tt, nil, mapping.ColumnRules{}, mapping.PolicyError, false)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// TestMySQLNormalForms: a source value and the value a MySQL target
// holds for it normalize alike exactly when they are the same value.
func TestMySQLNormalForms(t *testing.T) {
	cases := []struct {
		name     string
		src      source.ColumnDef
		tgt      mapping.MySQLColumn
		srcValue string
		tgtValue string
		equal    bool
	}{
		{"decimal scale", source.ColumnDef{Type: pgtype.NumericOID, TypeMod: 12<<16 | 3 + 4},
			mapping.MySQLColumn{DataType: "decimal", ColumnType: "decimal(12,3)", Precision: 12, Scale: 3}, "1.5", "1.500", true},
		{"decimal differs", source.ColumnDef{Type: pgtype.NumericOID, TypeMod: 12<<16 | 3 + 4},
			mapping.MySQLColumn{DataType: "decimal", ColumnType: "decimal(12,3)", Precision: 12, Scale: 3}, "1.5", "1.510", false},
		{"decimal integer", source.ColumnDef{Type: pgtype.NumericOID, TypeMod: 12<<16 | 3 + 4},
			mapping.MySQLColumn{DataType: "decimal", ColumnType: "decimal(12,3)", Precision: 12, Scale: 3}, "-2", "-2.000", true},
		{"timestamptz to UTC", source.ColumnDef{Type: pgtype.TimestamptzOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "datetime", ColumnType: "datetime(6)", DatetimePrecision: 6}, "2024-03-01 12:00:00.25+02", "2024-03-01 10:00:00.250000", true},
		{"timestamptz differs", source.ColumnDef{Type: pgtype.TimestamptzOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "datetime", ColumnType: "datetime(6)", DatetimePrecision: 6}, "2024-03-01 12:00:00.25+00", "2024-03-01 10:00:00.250000", false},
		{"double", source.ColumnDef{Type: pgtype.Float8OID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "double", ColumnType: "double"}, "0.1", "0.1", true},
		{"real read as double", source.ColumnDef{Type: pgtype.Float4OID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "float", ColumnType: "float"}, "0.333333343", "0.3333333432674408", true},
		{"negative zero", source.ColumnDef{Type: pgtype.Float8OID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "double", ColumnType: "double"}, "-0", "0", true},
		{"json key order and space", source.ColumnDef{Type: pgtype.JSONBOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "json", ColumnType: "json"}, `{"a": 1, "b": [1, 2.50]}`, `{"b":[1,2.50],"a":1}`, true},
		{"json differs", source.ColumnDef{Type: pgtype.JSONBOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "json", ColumnType: "json"}, `{"a": 1}`, `{"a":2}`, false},
		{"boolean", source.ColumnDef{Type: pgtype.BoolOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "tinyint", ColumnType: "tinyint(1)", Precision: 3}, "t", "1", true},
		{"boolean differs", source.ColumnDef{Type: pgtype.BoolOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "tinyint", ColumnType: "tinyint(1)", Precision: 3}, "f", "1", false},
		{"char padding", source.ColumnDef{Type: pgtype.BPCharOID, TypeMod: 5 + 4},
			mapping.MySQLColumn{DataType: "char", ColumnType: "char(5)", MaxLength: 5}, "ab   ", "ab", true},
		{"text case", source.ColumnDef{Type: pgtype.TextOID, TypeMod: -1},
			mapping.MySQLColumn{DataType: "longtext", ColumnType: "longtext", MaxLength: 1 << 32}, "Ab", "ab", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.src.Name, c.tgt.Name, c.tgt.Nullable = "v", "v", true
			def := tableDef([]source.ColumnDef{{Name: "id", Type: pgtype.Int4OID, TypeMod: -1, NotNull: true}, c.src}, "id")
			my := &mysql.Table{TargetTable: mapping.TargetTable{Name: source.TableName{Name: "t"}, PrimaryKey: []string{"id"},
				Columns: []mapping.TargetColumn{{Name: "id"}, {Name: "v"}}},
				MySQL: map[string]mapping.MySQLColumn{"id": {Name: "id", DataType: "int", ColumnType: "int(11)"}, "v": c.tgt}}
			tb, err := newTable(def, &my.TargetTable, my, mapping.ColumnRules{}, mapping.PolicyError, false)
			if err != nil {
				t.Fatal(err)
			}
			var a, b row
			if err := a.fill([][]byte{[]byte("1"), []byte(c.srcValue)}, tb.src, tb.key, tb.isKey); err != nil {
				t.Fatal(err)
			}
			if err := b.fill([][]byte{[]byte("1"), []byte(c.tgtValue)}, tb.tgt, tb.key, tb.isKey); err != nil {
				t.Fatal(err)
			}
			if got := a.hash == b.hash; got != c.equal {
				t.Errorf("source %q and target %q: equal %v, want %v (normal forms %q, %q)", c.srcValue, c.tgtValue, got, c.equal, a.buf, b.buf)
			}
		})
	}
}

// TestRowEncoding: NULL, the empty string and shifted field boundaries
// all hash apart.
func TestRowEncoding(t *testing.T) {
	norm := normal{asText, asText}
	hash := func(vals ...[]byte) uint64 {
		var r row
		if err := r.fill(vals, norm, nil, nil); err != nil {
			t.Fatal(err)
		}
		return r.hash
	}
	rows := map[string]uint64{
		"NULL,NULL": hash(nil, nil),
		"'',NULL":   hash([]byte{}, nil),
		"NULL,''":   hash(nil, []byte{}),
		"a,bc":      hash([]byte("a"), []byte("bc")),
		"ab,c":      hash([]byte("ab"), []byte("c")),
	}
	seen := map[uint64]string{}
	for name, h := range rows {
		if other, ok := seen[h]; ok {
			t.Errorf("rows %s and %s hash alike", name, other)
		}
		seen[h] = name
	}
}

func TestCompareKeys(t *testing.T) {
	num := []order{orderNumber}
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"9", "10", -1}, {"-5", "3", -1}, {"10", "10", 0}, {"1.5", "1.50", 0}, {"1.49", "1.5", -1},
		{"1e+300", "2", 1}, {"-Infinity", "-1e300", -1}, {"Infinity", "99999999999999999999999", 1},
		{"NaN", "Infinity", 1}, {"9223372036854775807", "9223372036854775808", -1},
		{"-0", "0", 0}, {"12", "12.0", 0}, {"999999999999999999", "1000000000000000000", -1}, {"-12", "-3", -1},
	} {
		if got := compareKeys(num, [][]byte{[]byte(c.a)}, [][]byte{[]byte(c.b)}); got != c.want {
			t.Errorf("number %s vs %s: %d, want %d", c.a, c.b, got, c.want)
		}
		if got := compareKeys(num, [][]byte{[]byte(c.b)}, [][]byte{[]byte(c.a)}); got != -c.want {
			t.Errorf("number %s vs %s: %d, want %d", c.b, c.a, got, -c.want)
		}
	}
	two := []order{orderText, orderNumber}
	k := func(a, b string) [][]byte { return [][]byte{[]byte(a), []byte(b)} }
	if compareKeys(two, k("Z", "10"), k("a", "1")) >= 0 || compareKeys(two, k("a", "9"), k("a", "10")) >= 0 ||
		compareKeys(two, k("a", "9"), k("a", "9")) != 0 {
		t.Error("composite keys compare wrongly")
	}
}

func TestOrderOf(t *testing.T) {
	for _, c := range []struct {
		oid       uint32
		mysql     bool
		mysqlType string
		want      order
	}{
		{pgtype.Int4OID, false, "", orderNumber}, {pgtype.NumericOID, true, "decimal", orderNumber}, {pgtype.Int8OID, true, "varchar", orderText},
		{pgtype.TimestamptzOID, false, "", orderLexical}, {pgtype.TimestamptzOID, true, "datetime", orderLexical},
		{pgtype.BoolOID, true, "tinyint", orderLexical}, {pgtype.TextOID, false, "", orderText}, {pgtype.TextOID, true, "varchar", orderText},
	} {
		if got := orderOf(c.oid, c.mysql, c.mysqlType); got != c.want {
			t.Errorf("orderOf(%d, %v, %q) = %d, want %d", c.oid, c.mysql, c.mysqlType, got, c.want)
		}
	}
}

func TestSpans(t *testing.T) {
	spans := spansOf([][]string{{"10", "a"}, {"20", "b"}})
	want := []span{{nil, []string{"10", "a"}}, {[]string{"10", "a"}, []string{"20", "b"}}, {[]string{"20", "b"}, nil}}
	if !reflect.DeepEqual(spans, want) {
		t.Fatalf("spans %v", spans)
	}
	keys := []string{`"k"`, `"n"`}
	if q, args := pgSpan(keys, spans[1], 1); q != `("k", "n") >= ($1, $2) AND ("k", "n") < ($3, $4)` || len(args) != 4 || string(args[2]) != "20" {
		t.Errorf("pgSpan: %s %q", q, args)
	}
	if q, args := pgSpan(keys, span{}, 1); q != "true" || args != nil {
		t.Errorf("pgSpan of everything: %s", q)
	}
	q, args := mysqlSpan([]string{"`k`", "`n`"}, nil, []any{int64(20), "b"})
	if q != "`k` <= ? AND ((`k` < ?) OR (`k` = ? AND `n` < ?))" || fmt.Sprint(args) != "[20 20 20 b]" {
		t.Errorf("mysqlSpan: %s %v", q, args)
	}
	if q, args := mysqlSpan([]string{"`k`"}, []any{int64(5)}, []any{int64(9)}); q != "`k` >= ? AND `k` < ?" || len(args) != 2 {
		t.Errorf("mysqlSpan one column: %s", q)
	}
}

// fakeRows serves rows given as "v1|v2|..." strings ("~" is NULL).
type fakeRows struct {
	rows []string
	cur  [][]byte
}

func (f *fakeRows) Next() bool {
	if len(f.rows) == 0 {
		return false
	}
	f.cur = nil
	for _, v := range strings.Split(f.rows[0], "|") {
		if v == "~" {
			f.cur = append(f.cur, nil)
		} else {
			f.cur = append(f.cur, []byte(v))
		}
	}
	f.rows = f.rows[1:]
	return true
}
func (f *fakeRows) Values() [][]byte { return f.cur }
func (f *fakeRows) Close() error     { return nil }

func TestMerge(t *testing.T) {
	def := tableDef([]source.ColumnDef{
		{Name: "v", Type: pgtype.TextOID, TypeMod: -1},
		{Name: "id", Type: pgtype.Int4OID, TypeMod: -1, NotNull: true},
	}, "id")
	tb := pgTable(t, def)
	if !tb.split || !reflect.DeepEqual(tb.keyNames, []string{"id"}) {
		t.Fatalf("table: %+v", tb)
	}
	src := &fakeRows{rows: []string{"a|1", "b|2", "c|9", "d|10", "~|11", "f|30"}}
	tgt := &fakeRows{rows: []string{"a|1", "c|9", "x|10", "|11", "e|12", "f|30", "g|31"}}
	res, err := merge(t.Context(), tb, src, tgt, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("rows %d/%d missing %d %v extra %d %v different %d %v", res.SourceRows, res.TargetRows,
		res.Missing, res.MissingKeys, res.Extra, res.ExtraKeys, res.Different, res.DifferentKeys)
	want := "rows 6/7 missing 1 [[2]] extra 2 [[12] [31]] different 2 [[10] [11]]"
	if got != want {
		t.Errorf("merge:\n got %s\nwant %s", got, want)
	}
	res, err = merge(t.Context(), tb, &fakeRows{rows: []string{"a|1", "b|2"}}, &fakeRows{rows: []string{"a|1", "b|2"}}, 2, nil)
	if err != nil || res.differs() {
		t.Errorf("equal spans differ: %+v %v", res, err)
	}
	res, err = merge(t.Context(), tb, &fakeRows{rows: []string{"a|1", "b|2", "c|3", "d|4"}}, &fakeRows{}, 3, nil)
	if err != nil || res.Missing != 4 || len(res.MissingKeys) != 3 {
		t.Errorf("keys are not capped: %+v %v", res, err)
	}
}

func TestSumRows(t *testing.T) {
	norm := normal{asText, asText}
	sum := func(rows ...string) (int64, [2]uint64) {
		var n int64
		var s [2]uint64
		if err := sumRows(&fakeRows{rows: rows}, norm, &n, &s); err != nil {
			t.Fatal(err)
		}
		return n, s
	}
	n1, s1 := sum("a|1", "b|2", "a|1")
	n2, s2 := sum("a|1", "a|1", "b|2")
	if n1 != n2 || s1 != s2 {
		t.Error("row order changes the multiset hash")
	}
	if _, s3 := sum("a|1", "b|2", "b|2"); s3 == s1 {
		t.Error("another duplicate gives the same multiset hash")
	}
}

// TestRowComparer: values equal as read are equal without normalizing;
// others are compared in normal form; NULL equals only NULL.
func TestRowComparer(t *testing.T) {
	tb := &table{key: []int{0}, isKey: []bool{true, false, false}, norms: []normalizer{nil, normDecimal, nil},
		srcRaw: normal{asText, asText, asText}}
	var c rowComparer
	c.init(tb)
	read := func(vals ...[]byte) *readRow {
		var r readRow
		if err := r.fill(vals, tb.srcRaw, tb); err != nil {
			t.Fatal(err)
		}
		return &r
	}
	for _, tc := range []struct {
		a, b [][]byte
		same bool
	}{
		{[][]byte{[]byte("1"), []byte("1.50"), []byte("x")}, [][]byte{[]byte("1"), []byte("1.5"), []byte("x")}, true},
		{[][]byte{[]byte("1"), []byte("1.5"), []byte("x")}, [][]byte{[]byte("1"), []byte("1.6"), []byte("x")}, false},
		{[][]byte{[]byte("1"), []byte("1.5"), []byte("x")}, [][]byte{[]byte("1"), []byte("1.5"), []byte("X")}, false},
		{[][]byte{[]byte("1"), nil, []byte("")}, [][]byte{[]byte("1"), nil, []byte("")}, true},
		{[][]byte{[]byte("1"), nil, []byte("x")}, [][]byte{[]byte("1"), []byte(""), []byte("x")}, false},
		{[][]byte{[]byte("1"), []byte("2"), nil}, [][]byte{[]byte("1"), []byte("2"), []byte("")}, false},
	} {
		if got := c.same(read(tc.a...), read(tc.b...)); got != tc.same {
			t.Errorf("same(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestDeleteKeys: a batch of repair deletes is one statement whatever its
// size: = ANY over a one-column key, the key arrays unnested for a longer
// key or an array-typed one; MySQL lists the keys, or their tuples.
func TestDeleteKeys(t *testing.T) {
	one := &table{target: source.TableName{Schema: "s", Name: "t"}, tgtKey: []string{`"id"`}, tgtKeyType: []string{"bigint"}}
	if got, want := one.deleteKeysPG(), `DELETE FROM "s"."t" WHERE "id" = ANY($1::bigint[])`; got != want {
		t.Errorf("one-column key:\n got %s\nwant %s", got, want)
	}
	arr := &table{target: source.TableName{Schema: "s", Name: "t"}, tgtKey: []string{`"tags"`}, tgtKeyType: []string{"text[]"}}
	if got, want := arr.deleteKeysPG(), `DELETE FROM "s"."t" AS x USING unnest($1::text[]) AS v(c1) WHERE x."tags" = v.c1::text[]`; got != want {
		t.Errorf("array key:\n got %s\nwant %s", got, want)
	}
	two := &table{target: source.TableName{Schema: "s", Name: "t"}, tgtKey: []string{`"a"`, `"b"`}, tgtKeyType: []string{"integer", "numeric(6,2)"}}
	if got, want := two.deleteKeysPG(), `DELETE FROM "s"."t" AS x USING unnest($1::text[], $2::text[]) AS v(c1, c2) WHERE x."a" = v.c1::integer AND x."b" = v.c2::numeric(6,2)`; got != want {
		t.Errorf("two-column key:\n got %s\nwant %s", got, want)
	}
	myOne := &table{target: source.TableName{Schema: "d", Name: "t"}, tgtKey: []string{"`id`"}}
	if got, want := myOne.deleteKeysMySQL(3), "DELETE FROM `d`.`t` WHERE `id` IN (?, ?, ?)"; got != want {
		t.Errorf("MySQL one-column key:\n got %s\nwant %s", got, want)
	}
	myTwo := &table{target: source.TableName{Schema: "d", Name: "t"}, tgtKey: []string{"`a`", "`b`"}}
	if got, want := myTwo.deleteKeysMySQL(2), "DELETE FROM `d`.`t` WHERE (`a`, `b`) IN ((?, ?), (?, ?))"; got != want {
		t.Errorf("MySQL two-column key:\n got %s\nwant %s", got, want)
	}
}
