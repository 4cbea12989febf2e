// Package compare checks that a target database holds exactly the rows of
// a PostgreSQL source, table by table, for the tests and the demo.
//
// Rows are compared as sorted lists of their text, so a missing, extra or
// duplicated row shows. On PostgreSQL targets the text is the row's own
// (both sides print with the same settings); on MySQL/MariaDB targets each
// source value is first converted the way the type mapping says decant
// converts it, then both sides are normalised by the target column's type.
package compare

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// Result is one table's comparison.
type Result struct {
	Table        string
	Source, Dest []string // sorted row texts
}

// Equal reports whether the target holds exactly the source's rows.
func (r Result) Equal() bool { return Diff(r.Source, r.Dest) == "" }

// Connect opens a source or PostgreSQL target session with the canonical
// text settings decant uses, so that equal values print equally.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{"DateStyle": "ISO, MDY", "TimeZone": "UTC", "extra_float_digits": "3", "IntervalStyle": "postgres", "bytea_output": "hex"} {
		cfg.RuntimeParams[k] = v
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Tables lists the user tables of a PostgreSQL database.
func Tables(ctx context.Context, c *pgx.Conn) ([]source.TableName, error) {
	rows, err := c.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r','p') AND NOT c.relispartition
		  AND n.nspname NOT IN ('pg_catalog','information_schema','decant') AND n.nspname NOT LIKE 'pg_toast%'
		ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (source.TableName, error) {
		var t source.TableName
		err := r.Scan(&t.Schema, &t.Name)
		return t, err
	})
}

// fromOnly names table t for reading its own rows: ONLY t, leaving out
// inheritance children (tables of their own), unless t is partitioned,
// whose rows are its partitions'.
func fromOnly(ctx context.Context, c *pgx.Conn, t source.TableName) (string, error) {
	var partitioned bool
	err := c.QueryRow(ctx, `SELECT c.relkind = 'p' FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, t.Schema, t.Name).Scan(&partitioned)
	if err != nil {
		return "", fmt.Errorf("table %s: %w", t, err)
	}
	if partitioned {
		return mapping.QuotePGTable(t), nil
	}
	return "ONLY " + mapping.QuotePGTable(t), nil
}

// PG compares every source table with the same table on a PostgreSQL
// target.
func PG(ctx context.Context, srcDSN, tgtDSN string) ([]Result, error) {
	src, err := Connect(ctx, srcDSN)
	if err != nil {
		return nil, err
	}
	defer src.Close(ctx)
	tgt, err := Connect(ctx, tgtDSN)
	if err != nil {
		return nil, err
	}
	defer tgt.Close(ctx)
	names, err := Tables(ctx, src)
	if err != nil {
		return nil, err
	}
	var out []Result
	for _, t := range names {
		r := Result{Table: t.String()}
		for _, side := range []struct {
			conn *pgx.Conn
			rows *[]string
		}{{src, &r.Source}, {tgt, &r.Dest}} {
			from, err := fromOnly(ctx, side.conn, t)
			if err != nil {
				return nil, err
			}
			if *side.rows, err = texts(ctx, side.conn, "SELECT r::text FROM "+from+" r ORDER BY 1"); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

func texts(ctx context.Context, c *pgx.Conn, q string) ([]string, error) {
	rows, err := c.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// MySQL compares every source table with its table in a MySQL/MariaDB
// target (routed by default rules), following the type mapping with the
// given unrepresentable-value policy.
func MySQL(ctx context.Context, srcDSN, tgtDSN string, policy mapping.Policy) ([]Result, error) {
	src, err := Connect(ctx, srcDSN)
	if err != nil {
		return nil, err
	}
	defer src.Close(ctx)
	s, err := mysql.Connect(ctx, tgtDSN)
	if err != nil {
		return nil, err
	}
	defer s.DB.Close()
	defer s.Conn.Close()
	names, err := Tables(ctx, src)
	if err != nil {
		return nil, err
	}
	router := mapping.NewRouter(nil, true)
	var out []Result
	for _, tn := range names {
		rel, err := pgoutput.Relation(ctx, src, source.Table{Name: tn, Identity: source.IdentityFull})
		if err != nil {
			return nil, err
		}
		tt, err := mysql.Inspect(ctx, s.Conn, router.Route(tn))
		if err != nil {
			return nil, err
		}
		r := Result{Table: tn.String()}
		if r.Source, err = expectedRows(ctx, src, rel, tt, policy); err != nil {
			return nil, fmt.Errorf("table %s: %w", tn, err)
		}
		if r.Dest, err = actualRows(ctx, s.Conn, rel, tt); err != nil {
			return nil, fmt.Errorf("table %s: %w", tn, err)
		}
		// The column sets must match too: a column the source dropped
		// and the target kept would not show in the rows. Columns the
		// target generates are left out, as the source's are.
		want := make([]string, 0, len(rel.Columns))
		for _, c := range rel.Columns {
			want = append(want, c.Name)
		}
		var have []string
		for name, c := range tt.MySQL {
			if !c.Generated { // the source does not publish generated columns
				have = append(have, name)
			}
		}
		slices.Sort(have)
		slices.Sort(want)
		if !slices.Equal(want, have) {
			return nil, fmt.Errorf("table %s: the target has columns (%s), the source (%s)", tn, strings.Join(have, ", "), strings.Join(want, ", "))
		}
		out = append(out, r)
	}
	return out, nil
}

// expectedRows reads the source rows in text format (the simple query
// protocol returns each value as its type's output function prints it,
// exactly what pgoutput sends), converts them as decant does, then
// normalises them by target column.
func expectedRows(ctx context.Context, src *pgx.Conn, rel *source.Relation, tt *mysql.Table, policy mapping.Policy) ([]string, error) {
	cols := make([]string, len(rel.Columns))
	convs := make([]mapping.Converter, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = mapping.QuotePG(c.Name)
		conv, err := mapping.MySQLConverter(c, tt.MySQL[c.Name], policy)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		convs[i] = conv
	}
	from, err := fromOnly(ctx, src, rel.Table())
	if err != nil {
		return nil, err
	}
	rows, err := src.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM "+from, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		fields := make([]string, len(cols))
		for i, v := range rows.RawValues() {
			var conv any
			if v != nil {
				if conv, err = convs[i](bytes.Clone(v)); err != nil {
					return nil, fmt.Errorf("column %s: the mapping cannot convert a source value: %w", rel.Columns[i].Name, err)
				}
			}
			fields[i] = normalize(argText(conv), tt.MySQL[rel.Columns[i].Name])
		}
		out = append(out, strings.Join(fields, " | "))
	}
	sort.Strings(out)
	return out, rows.Err()
}

// actualRows reads the target rows in the source's column order.
func actualRows(ctx context.Context, conn *sql.Conn, rel *source.Relation, tt *mysql.Table) ([]string, error) {
	cols := make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		cols[i] = mapping.QuoteMySQL(c.Name)
		if tt.MySQL[c.Name].DataType == "float" {
			// MariaDB prints FLOAT with 6 digits; the value stored is exact.
			cols[i] = "CAST(" + cols[i] + " AS DOUBLE)"
		}
	}
	rows, err := conn.QueryContext(ctx, fmt.Sprintf("SELECT %s FROM %s", strings.Join(cols, ", "), mapping.QuoteMySQLTable(tt.Name)))
	if err != nil {
		return nil, err
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
			return nil, err
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
	sort.Strings(out)
	return out, rows.Err()
}

// argText gives a driver argument or a value read back as text, nil for
// NULL.
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
			f = 0 // -0 and 0 are equal in MySQL
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
		if strings.IndexByte(s, '.') >= 0 {
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

// Diff describes the first few differences between two sorted lists.
func Diff(a, b []string) string {
	var out []string
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && len(out) < 5 {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			out = append(out, "  missing on target: "+clip(a[i]))
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, "  extra on target:   "+clip(b[j]))
			j++
		default:
			i++
			j++
		}
	}
	return strings.Join(out, "\n")
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + fmt.Sprintf("…(%d bytes)", len(s))
	}
	return s
}
