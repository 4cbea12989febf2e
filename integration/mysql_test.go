package integration

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// myValue runs a query on the MariaDB target that returns one value.
func (p *pair) myValue(query string) string {
	p.t.Helper()
	s, err := mysql.Connect(p.t.Context(), p.tgt)
	if err != nil {
		p.t.Fatal(err)
	}
	defer s.Conn.Close()
	defer s.DB.Close()
	var v sql.NullString
	if err := s.Conn.QueryRowContext(p.t.Context(), query).Scan(&v); err != nil {
		p.t.Fatalf("%s: %v", query, err)
	}
	return v.String
}

// assertEqualMySQL compares every source table with its MariaDB table. The
// expected target value of each source value is what the type mapping
// says it becomes (mapping.MySQLConverter for the target column, with the
// pair's policy); both sides are then normalised by the target column's
// type (DECIMAL trailing zeros, DATETIME fractions, JSON spacing, FLOAT
// precision) and compared as sorted row lists, so a missing, extra or
// duplicated row shows.
func (p *pair) assertEqualMySQL() {
	p.t.Helper()
	ctx := p.t.Context()
	src := connect(p.t, p.src)
	s, err := mysql.Connect(ctx, p.tgt)
	if err != nil {
		p.t.Fatal(err)
	}
	defer s.DB.Close()
	defer s.Conn.Close()
	router := mapping.NewRouter(nil, true)
	names := tables(p.t, src)
	if len(names) == 0 {
		p.t.Fatal("source has no tables to compare")
	}
	for _, qualified := range names {
		schema, name, _ := strings.Cut(qualified, ".")
		tn := source.TableName{Schema: strings.Trim(schema, `"`), Name: strings.Trim(name, `"`)}
		rel, err := pgoutput.Relation(ctx, src, pgoutput.Table{Name: tn, Identity: source.IdentityFull})
		if err != nil {
			p.t.Fatal(err)
		}
		tt, err := mysql.Inspect(ctx, s.Conn, router.Route(tn))
		if err != nil {
			p.t.Fatal(err)
		}
		want := p.expectedRows(rel, tt)
		got := actualRows(p.t, s.Conn, rel, tt)
		p.t.Logf("table %s: %d rows on source, %d on target", tn, len(want), len(got))
		if d := diff(want, got); d != "" {
			p.t.Errorf("table %s: target differs from source (%d source rows, %d target rows):\n%s", tn, len(want), len(got), d)
		}
	}
}

// expectedRows reads the source rows in text format (the simple query
// protocol returns each value as its type's output function prints it,
// exactly what pgoutput sends), converts them as decant does, then
// normalises them by target column.
func (p *pair) expectedRows(rel *source.Relation, tt *mysql.Table) []string {
	p.t.Helper()
	src := connect(p.t, p.src)
	cols := make([]string, len(rel.Columns))
	convs := make([]mapping.Converter, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = quotePG(c.Name)
		conv, err := mapping.MySQLConverter(c, tt.MySQL[c.Name], p.policy)
		if err != nil {
			p.t.Fatalf("column %s: %v", c.Name, err)
		}
		convs[i] = conv
	}
	rows, err := src.Query(p.t.Context(), fmt.Sprintf("SELECT %s FROM %s", strings.Join(cols, ", "), quotePG(rel.Schema)+"."+quotePG(rel.Name)),
		pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		p.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		fields := make([]string, len(cols))
		for i, v := range rows.RawValues() {
			var conv any
			if v != nil {
				if conv, err = convs[i](bytes.Clone(v)); err != nil {
					p.t.Fatalf("column %s: the mapping cannot convert a source value: %v", rel.Columns[i].Name, err)
				}
			}
			fields[i] = normalize(argText(conv), tt.MySQL[rel.Columns[i].Name])
		}
		out = append(out, strings.Join(fields, " | "))
	}
	if err := rows.Err(); err != nil {
		p.t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// actualRows reads the target rows in the source's column order.
func actualRows(t testing.TB, conn *sql.Conn, rel *source.Relation, tt *mysql.Table) []string {
	t.Helper()
	cols := make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = mapping.QuoteMySQL(c.Name)
		if tt.MySQL[c.Name].DataType == "float" {
			// MariaDB prints FLOAT with 6 digits; the value stored is exact.
			cols[i] = "CAST(" + cols[i] + " AS DOUBLE)"
		}
	}
	rows, err := conn.QueryContext(t.Context(), fmt.Sprintf("SELECT %s FROM %s", strings.Join(cols, ", "), mapping.QuoteMySQLTable(tt.Name)))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fields := make([]string, len(cols))
		for i, v := range vals {
			var arg any
			if v != nil {
				arg = bytes.Clone(v)
			}
			fields[i] = normalize(argText(arg), tt.MySQL[rel.Columns[i].Name])
		}
		out = append(out, strings.Join(fields, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// argText gives a driver argument or a value read back as text; ok is
// false for NULL.
func argText(v any) *string {
	var s string
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		s = x
	case []byte:
		s = string(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

// normalize makes equal values print equally for a target column type.
func normalize(v *string, col mapping.MySQLColumn) string {
	if v == nil {
		return "NULL"
	}
	s := *v
	switch col.DataType {
	case "decimal":
		if strings.Contains(s, ".") {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
		if s == "-0" {
			s = "0"
		}
	case "float", "double":
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return "bad float " + s
		}
		if f == 0 {
			f = 0 // -0 and 0 compare equal in MySQL
		}
		bits := 64
		if col.DataType == "float" {
			bits = 32
		}
		s = strconv.FormatFloat(f, 'g', -1, bits)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			s = "non-finite " + s
		}
	case "datetime", "timestamp", "time":
		if i := strings.IndexByte(s, '.'); i >= 0 {
			s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
		}
	case "json":
		var x any
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if err := dec.Decode(&x); err != nil {
			return "bad json " + s
		}
		b, _ := json.Marshal(x)
		s = string(b)
	case "blob", "longblob", "mediumblob", "tinyblob", "binary", "varbinary":
		s = hex.EncodeToString([]byte(s))
	case "char":
		s = strings.TrimRight(s, " ")
	}
	return s
}

// quotePG quotes a PostgreSQL identifier for the test's own queries.
func quotePG(s string) string { return mapping.QuotePG(s) }
