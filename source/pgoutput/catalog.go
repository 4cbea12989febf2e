package pgoutput

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
)

// firstNormalOID is PostgreSQL's FirstNormalObjectId: objects with a lower
// OID were created by initdb (built-in), the rest by users and extensions.
const firstNormalOID = 16384

// ResolveTypes describes the given type OIDs from the source catalog
// (pg_type, pg_enum, pg_attribute, pg_range), following references:
// arrays get Elem, domains Base and BaseMod, composites Fields (in attnum
// order, without dropped attributes), ranges and multiranges Elem (the
// subtype), enums Labels in enumsortorder.
//
// Built-in types are described by the same rules, so a built-in scalar
// (or pseudo-type) is KindBase and a built-in range KindRange. An array is a
// "true" array as format_type sees one (array subscripting, not plain
// storage); fixed-length vectors such as int2vector, name and point are
// KindBase.
//
// Name is the unquoted typname, prefixed with "schema." unless the schema is
// pg_catalog: "int4", "public.mood". An array is named after its element
// with "[]" appended ("int4[]", "public.mood[]"), never "_int4".
//
// The returned map holds one entry for every OID reached, requested or
// referenced; references share pointers. It issues one query per level of
// nesting, never one per OID. An OID missing from pg_type is an error.
// Requires PostgreSQL 14 or later (typsubscript, multiranges).
func ResolveTypes(ctx context.Context, conn *pgx.Conn, oids []uint32) (map[uint32]*source.Type, error) {
	r := &typeResolver{types: make(map[uint32]*source.Type)}
	for _, oid := range oids {
		r.ref(oid)
	}
	for len(r.next) > 0 {
		want := r.next
		r.next = nil
		if err := r.level(ctx, conn, want); err != nil {
			return nil, fmt.Errorf("resolve source types: %w", err)
		}
	}
	return r.types, nil
}

// typeResolver fills types level by level. Every map entry is created by
// ref, empty, and filled by the level that queries its OID; next holds the
// OIDs referenced but not yet queried.
type typeResolver struct {
	types map[uint32]*source.Type
	next  []uint32
}

// ref returns the (possibly still empty) type for oid, queueing it for the
// next level when it is new.
func (r *typeResolver) ref(oid uint32) *source.Type {
	if t, ok := r.types[oid]; ok {
		return t
	}
	t := &source.Type{OID: oid}
	r.types[oid] = t
	r.next = append(r.next, oid)
	return t
}

// typesSQL reads one level. For a true array (as format_type defines it)
// the namespace and name are the element's, and elem is its OID; else
// elem is 0.
const typesSQL = `SELECT t.oid, n.nspname, coalesce(e.typname, t.typname), t.typtype::text, coalesce(e.oid, 0),
		t.typbasetype, t.typtypmod,
		coalesce((SELECT r.rngsubtype FROM pg_range r WHERE t.oid IN (r.rngtypid, r.rngmultitypid)), 0),
		(SELECT array_agg(l.enumlabel::text ORDER BY l.enumsortorder) FROM pg_enum l WHERE l.enumtypid = t.oid),
		f.names, f.types, f.mods
	FROM pg_type t
	LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typsubscript = 'array_subscript_handler'::regproc AND t.typstorage <> 'p'
	JOIN pg_namespace n ON n.oid = coalesce(e.typnamespace, t.typnamespace)
	LEFT JOIN LATERAL (SELECT array_agg(a.attname::text ORDER BY a.attnum) AS names,
			array_agg(a.atttypid ORDER BY a.attnum) AS types, array_agg(a.atttypmod ORDER BY a.attnum) AS mods
		FROM pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped) f ON true
	WHERE t.oid = ANY($1)`

// typeRow is one row of typesSQL.
type typeRow struct {
	oid, elem, base, subtype uint32
	schema, name, typtype    string
	baseMod                  int32
	labels, fieldNames       []string
	fieldTypes               []uint32
	fieldMods                []int32
}

// level queries the OIDs in want and fills their entries.
func (r *typeResolver) level(ctx context.Context, conn *pgx.Conn, want []uint32) error {
	rows, err := conn.Query(ctx, typesSQL, want)
	if err != nil {
		return err
	}
	var row typeRow
	_, err = pgx.ForEachRow(rows, []any{&row.oid, &row.schema, &row.name, &row.typtype, &row.elem,
		&row.base, &row.baseMod, &row.subtype, &row.labels, &row.fieldNames, &row.fieldTypes, &row.fieldMods},
		func() error { r.fill(r.types[row.oid], row); return nil })
	if err != nil {
		return err
	}
	for _, oid := range want {
		if r.types[oid].Name == "" {
			return fmt.Errorf("type OID %d not found", oid)
		}
	}
	return nil
}

// fill describes t from its row, referencing the types it is built on.
func (r *typeResolver) fill(t *source.Type, row typeRow) {
	t.Name = row.name
	if row.schema != "pg_catalog" {
		t.Name = row.schema + "." + row.name
	}
	switch {
	case row.elem != 0:
		t.Kind, t.Name, t.Elem = source.KindArray, t.Name+"[]", r.ref(row.elem)
	case row.typtype == "e":
		t.Kind, t.Labels = source.KindEnum, row.labels
	case row.typtype == "d":
		t.Kind, t.Base, t.BaseMod = source.KindDomain, r.ref(row.base), row.baseMod
	case row.typtype == "c":
		t.Kind = source.KindComposite
		t.Fields = make([]source.Field, len(row.fieldNames))
		for i, name := range row.fieldNames {
			t.Fields[i] = source.Field{Name: name, Type: r.ref(row.fieldTypes[i]), TypeMod: row.fieldMods[i]}
		}
	case row.typtype == "r":
		t.Kind, t.Elem = source.KindRange, r.ref(row.subtype)
	case row.typtype == "m":
		t.Kind, t.Elem = source.KindMultirange, r.ref(row.subtype)
	default: // 'b' base, 'p' pseudo
		t.Kind = source.KindBase
	}
}

// DescribeTable reads an ordinary or partitioned source table's definition,
// for creating the table on a target.
//
// Columns come in attnum order without dropped ones. Info is set for
// user-defined types only (OID >= 16384, which covers domains and arrays of
// user types), resolved by ResolveTypes in one call for the whole table.
// SQLType and the expressions are printed by the source (format_type,
// pg_get_expr) and so depend on the session's search_path.
//
// A column's default expression goes into exactly one place: Generated for
// a generated column, Identity 'a' or 'd' (and no Default) for an identity
// column, Identity 'd' (and no Default) for a serial column — one whose
// default is exactly nextval() of a sequence OWNED BY the column — and
// Default otherwise.
//
// Indexes are read from pg_index, valid ones only, ordered by name. The
// primary key gives PrimaryKey and PrimaryKeyDeferral (PrimaryKeyName is
// left empty); other unique indexes (unique constraints included, with
// their Deferral) go to Uniques, the rest to Indexes. An index with expressions, a
// predicate or an access method other than btree has Expr set to
// pg_get_indexdef and no Columns; otherwise Columns lists the key columns
// in order (INCLUDE columns, sort order, operator classes and NULLS NOT
// DISTINCT are not represented).
//
// The catalog is read in a few statements, not one snapshot: DDL running
// concurrently on the table may show through.
func DescribeTable(ctx context.Context, conn *pgx.Conn, name source.TableName) (*source.TableDef, error) {
	def, err := describeTable(ctx, conn, name)
	if err != nil {
		return nil, fmt.Errorf("describe source table %s: %w", name, err)
	}
	return def, nil
}

func describeTable(ctx context.Context, conn *pgx.Conn, name source.TableName) (*source.TableDef, error) {
	var rel uint32
	err := conn.QueryRow(ctx, `SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p')`, name.Schema, name.Name).Scan(&rel)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errors.New("no such table")
	}
	if err != nil {
		return nil, err
	}
	def := &source.TableDef{OID: rel, Name: name}
	if def.Columns, err = tableColumns(ctx, conn, rel); err != nil {
		return nil, err
	}
	if err := resolveColumnTypes(ctx, conn, def.Columns); err != nil {
		return nil, err
	}
	if err := tableIndexes(ctx, conn, rel, def); err != nil {
		return nil, err
	}
	return def, nil
}

// columnsSQL reads the columns of table $1. serial is true when the
// default is exactly nextval() of a sequence owned by the column (the
// auto dependency ALTER SEQUENCE ... OWNED BY and serial create); printing
// the sequence as regclass matches pg_get_expr's own spelling. DDL capture
// (tableJSONSQL) runs this same query on the source, by column position.
const columnsSQL = `SELECT a.attnum, a.attname, a.atttypid, a.atttypmod, format_type(a.atttypid, a.atttypmod), a.attnotnull,
		coalesce(pg_get_expr(d.adbin, d.adrelid), ''), a.attidentity::text, a.attgenerated::text,
		coalesce((SELECT bool_or(pg_get_expr(d.adbin, d.adrelid) = format('nextval(%L::regclass)', s.oid::regclass))
			FROM pg_depend o JOIN pg_class s ON s.oid = o.objid AND s.relkind = 'S'
			WHERE o.classid = 'pg_class'::regclass AND o.refclassid = 'pg_class'::regclass
				AND o.refobjid = a.attrelid AND o.refobjsubid = a.attnum AND o.deptype = 'a'), false)
	FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
	WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped
	ORDER BY a.attnum`

func tableColumns(ctx context.Context, conn *pgx.Conn, rel uint32) ([]source.ColumnDef, error) {
	rows, err := conn.Query(ctx, columnsSQL, rel)
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	var cols []source.ColumnDef
	var c source.ColumnDef
	var expr, identity, generated string
	var serial bool
	_, err = pgx.ForEachRow(rows, []any{&c.Attnum, &c.Name, &c.Type, &c.TypeMod, &c.SQLType, &c.NotNull, &expr, &identity, &generated, &serial},
		func() error {
			cols = append(cols, columnDefault(c, expr, identity, generated, serial))
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	return cols, nil
}

// columnDefault puts a column's default expression where it belongs.
func columnDefault(c source.ColumnDef, expr, identity, generated string, serial bool) source.ColumnDef {
	switch {
	case generated != "": // 's' stored (PostgreSQL 18 adds 'v' virtual)
		c.Generated = expr
	case identity != "":
		c.Identity = identity[0]
	case serial:
		c.Identity = 'd'
	default:
		c.Default = expr
	}
	return c
}

// resolveColumnTypes sets Info on the columns of user-defined types.
func resolveColumnTypes(ctx context.Context, conn *pgx.Conn, cols []source.ColumnDef) error {
	var oids []uint32
	for _, c := range cols {
		if c.Type >= firstNormalOID {
			oids = append(oids, c.Type)
		}
	}
	if len(oids) == 0 {
		return nil
	}
	types, err := ResolveTypes(ctx, conn, oids)
	if err != nil {
		return err
	}
	for i := range cols {
		if cols[i].Type >= firstNormalOID {
			cols[i].Info = types[cols[i].Type]
		}
	}
	return nil
}

// indexesSQL reads the valid indexes of table $1 with their key columns
// (indkey up to indnkeyatts; INCLUDE columns follow) and, for the index
// of a primary key or unique constraint, whether the constraint is
// DEFERRABLE and INITIALLY DEFERRED (a foreign key's conindid names the
// referenced table's index, hence the conrelid and contype conditions).
// DDL capture (tableJSONSQL) runs this same query on the source, by
// column position.
const indexesSQL = `SELECT i.relname, x.indisprimary, x.indisunique,
		x.indexprs IS NOT NULL OR x.indpred IS NOT NULL OR am.amname <> 'btree', pg_get_indexdef(x.indexrelid),
		ARRAY(SELECT a.attname::text FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(num, pos)
			JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.num
			WHERE k.pos <= x.indnkeyatts ORDER BY k.pos),
		coalesce(con.condeferrable, false), coalesce(con.condeferred, false)
	FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_am am ON am.oid = i.relam
	LEFT JOIN pg_constraint con ON con.conindid = x.indexrelid AND con.conrelid = x.indrelid AND con.contype IN ('p', 'u')
	WHERE x.indrelid = $1 AND x.indisvalid AND x.indislive
	ORDER BY i.relname`

// deferral is a key constraint's Deferral from pg_constraint's flags.
func deferral(deferrable, deferred bool) source.Deferral {
	switch {
	case deferred:
		return source.DeferrableDeferred
	case deferrable:
		return source.DeferrableImmediate
	}
	return source.NotDeferrable
}

func tableIndexes(ctx context.Context, conn *pgx.Conn, rel uint32, def *source.TableDef) error {
	rows, err := conn.Query(ctx, indexesSQL, rel)
	if err != nil {
		return fmt.Errorf("read indexes: %w", err)
	}
	var name, indexDef string
	var primary, unique, expr, deferrable, deferred bool
	var cols []string
	_, err = pgx.ForEachRow(rows, []any{&name, &primary, &unique, &expr, &indexDef, &cols, &deferrable, &deferred}, func() error {
		ix := source.IndexDef{Name: name, Columns: cols, Deferral: deferral(deferrable, deferred)}
		if expr {
			ix = source.IndexDef{Name: name, Expr: indexDef}
		}
		switch {
		case primary:
			def.PrimaryKey, def.PrimaryKeyDeferral = cols, ix.Deferral
		case unique:
			def.Uniques = append(def.Uniques, ix)
		default:
			def.Indexes = append(def.Indexes, ix)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read indexes: %w", err)
	}
	return nil
}
