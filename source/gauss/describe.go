package gauss

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Table definitions from the GaussDB/openGauss catalog, for --create-tables
// and for the definitions a DDL-replicating pipeline starts from. The
// catalog is PostgreSQL's as of 9.2 with GaussDB additions: stored
// generated columns are pg_attrdef.adgencol = 's', Ustore tables say
// storage_type=ustore in reloptions. The queries run on a plain (not a
// replication) session, in the simple protocol, with text results.

// RownoColumn is the name the stream gives the Ustore row number column
// (enable-rowno), and the name of the column decant adds for it.
const RownoColumn = "rowno"

// rownoAttnum is the attribute number decant gives the rowno column in a
// definition: negative like a system column's, so it never collides with
// one the source adds.
const rownoAttnum = -100

// gaussSystemSchemas are the schemas GaussDB and openGauss keep for
// themselves, beyond PostgreSQL's (source.SystemSchema).
var gaussSystemSchemas = []string{
	"cstore", "dbe_perf", "snapshot", "blockchain", "db4ai", "sqladvisor", "pkg_service", "pkg_util",
	"dbe_pldebugger", "dbe_pldeveloper", "dbe_sql_util", "dbe_raw", "dbe_scheduler", "dbe_session",
	"dbe_task", "dbe_utility", "dbe_output", "dbe_lob", "dbe_random", "dbe_application_info",
	"dbe_match", "dbe_file", "dbe_xml", "dbe_describe", "dbe_xmldom", "dbe_xmlparser", "dbe_stats",
	"dbe_profiler", "dbe_heat_map", "dbe_ilm", "dbe_ilm_admin", "dbe_compression", "dbe_sql", "sys",
}

const (
	tablesQuery = `/* decant:tables */ SELECT c.oid, n.nspname, c.relname, COALESCE(pg_catalog.array_to_string(c.reloptions, ','), '')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND c.relpersistence <> 't' ORDER BY 2, 3`
	columnsQuery = `/* decant:columns */ SELECT a.attrelid, a.attnum, a.attname, a.atttypid, a.atttypmod,
pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
COALESCE(pg_catalog.pg_get_expr(d.adbin, d.adrelid), ''), COALESCE(d.adgencol::text, '')
FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
WHERE a.attrelid IN (%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, 2`
	indexesQuery = `/* decant:indexes */ SELECT i.indrelid, c.relname, i.indisprimary, i.indisunique, i.indkey::text,
i.indexprs IS NOT NULL OR i.indpred IS NOT NULL, pg_catalog.pg_get_indexdef(i.indexrelid)
FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid IN (%s) ORDER BY 1, 2`
)

// DescribeTables reads the definitions of the source tables the filter
// selects. With rowno (enable-rowno), a Ustore table without a primary key
// gets the rowno column, NOT NULL with a unique index, which the stream
// carries and by which rows are found.
func DescribeTables(ctx context.Context, dsn string, filter source.TableFilter, rowno bool) ([]*source.TableDef, error) {
	cc, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cc.Replication = false
	conn, err := Connect(ctx, cc)
	if err != nil {
		return nil, err
	}
	defer pgsession.Close(ctx, conn)

	rows, err := queryRows(ctx, conn, tablesQuery, 4)
	if err != nil {
		return nil, fmt.Errorf("read the source's tables: %w", err)
	}
	var defs []*source.TableDef
	byOID := map[uint32]*source.TableDef{}
	ustore := map[uint32]bool{}
	var oids []string
	for _, r := range rows {
		name := source.TableName{Schema: r[1], Name: r[2]}
		if systemSchema(name.Schema) || !filter.Match(name.Schema, name.Name) {
			continue
		}
		oid, err := parseOID(r[0])
		if err != nil {
			return nil, fmt.Errorf("read the source's tables: %w", err)
		}
		def := &source.TableDef{OID: oid, Name: name}
		defs, byOID[oid] = append(defs, def), def
		ustore[oid] = slices.Contains(strings.Split(strings.ToLower(r[3]), ","), "storage_type=ustore")
		oids = append(oids, r[0])
	}
	if len(defs) == 0 {
		return nil, nil
	}
	in := strings.Join(oids, ",")
	if err := describeColumns(ctx, conn, in, byOID); err != nil {
		return nil, err
	}
	if err := describeIndexes(ctx, conn, in, byOID); err != nil {
		return nil, err
	}
	for _, def := range defs {
		if rowno && ustore[def.OID] && len(def.PrimaryKey) == 0 {
			addRowno(def)
		}
	}
	return defs, nil
}

// systemSchema reports whether a schema belongs to the server (or to
// decant) and is never replicated.
func systemSchema(schema string) bool {
	return source.SystemSchema(schema) || slices.Contains(gaussSystemSchemas, schema)
}

// addRowno gives a keyless Ustore table the rowno column and its unique
// index.
func addRowno(def *source.TableDef) {
	def.Columns = append(def.Columns, source.ColumnDef{Attnum: rownoAttnum, Name: RownoColumn, Type: 20, TypeMod: -1, SQLType: "bigint", NotNull: true})
	def.Uniques = append(def.Uniques, source.IndexDef{Name: def.Name.Name + "_" + RownoColumn + "_key", Columns: []string{RownoColumn}})
}

func describeColumns(ctx context.Context, conn *pgconn.PgConn, in string, byOID map[uint32]*source.TableDef) error {
	rows, err := queryRows(ctx, conn, fmt.Sprintf(columnsQuery, in), 9)
	if err != nil {
		return fmt.Errorf("read the source's columns: %w", err)
	}
	for _, r := range rows {
		oid, err := parseOID(r[0])
		if err != nil {
			return err
		}
		def := byOID[oid]
		attnum, err1 := strconv.ParseInt(r[1], 10, 16)
		typ, err2 := parseOID(r[3])
		mod, err3 := strconv.ParseInt(r[4], 10, 32)
		if def == nil || err1 != nil || err2 != nil || err3 != nil {
			return fmt.Errorf("read the source's columns: unexpected row for table OID %s column %q", r[0], r[2])
		}
		c := source.ColumnDef{Attnum: int16(attnum), Name: r[2], Type: typ, TypeMod: int32(mod), SQLType: r[5], NotNull: r[6] == "t"}
		switch expr := r[7]; {
		case r[8] == "s":
			c.Generated = expr
		case strings.HasPrefix(expr, "nextval("):
			c.Identity = 'd' // serial: the target generates its own values
		default:
			c.Default = expr
		}
		def.Columns = append(def.Columns, c)
	}
	return nil
}

func describeIndexes(ctx context.Context, conn *pgconn.PgConn, in string, byOID map[uint32]*source.TableDef) error {
	rows, err := queryRows(ctx, conn, fmt.Sprintf(indexesQuery, in), 7)
	if err != nil {
		return fmt.Errorf("read the source's indexes: %w", err)
	}
	for _, r := range rows {
		oid, err := parseOID(r[0])
		if err != nil {
			return err
		}
		def := byOID[oid]
		if def == nil {
			continue
		}
		ix := source.IndexDef{Name: r[1]}
		if r[5] == "t" {
			ix.Expr = r[6]
		} else if ix.Columns, err = indexColumns(def, r[4]); err != nil {
			return fmt.Errorf("read the source's index %s: %w", r[1], err)
		}
		switch {
		case r[2] == "t":
			def.PrimaryKey, def.PrimaryKeyName = ix.Columns, ix.Name
		case r[3] == "t":
			def.Uniques = append(def.Uniques, ix)
		default:
			def.Indexes = append(def.Indexes, ix)
		}
	}
	return nil
}

// indexColumns names the columns of an int2vector of attnums ("1 3").
func indexColumns(def *source.TableDef, indkey string) ([]string, error) {
	var cols []string
	for _, f := range strings.Fields(indkey) {
		n, err := strconv.ParseInt(f, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("index key %q", indkey)
		}
		i := slices.IndexFunc(def.Columns, func(c source.ColumnDef) bool { return int64(c.Attnum) == n })
		if i < 0 {
			return nil, fmt.Errorf("index key %q names a column the table does not have", indkey)
		}
		cols = append(cols, def.Columns[i].Name)
	}
	return cols, nil
}

// queryRows runs a simple-protocol query and returns its rows as text,
// checking each has the expected number of columns (NULL reads as "").
func queryRows(ctx context.Context, conn *pgconn.PgConn, sql string, width int) ([][]string, error) {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(res) != 1 {
		return nil, fmt.Errorf("%d results for one query", len(res))
	}
	out := make([][]string, 0, len(res[0].Rows))
	for _, r := range res[0].Rows {
		if len(r) != width {
			return nil, fmt.Errorf("a row of %d columns, want %d", len(r), width)
		}
		row := make([]string, width)
		for i, v := range r {
			row[i] = string(v)
		}
		out = append(out, row)
	}
	return out, nil
}

func parseOID(s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("OID %q: %w", s, err)
	}
	return uint32(v), nil
}
