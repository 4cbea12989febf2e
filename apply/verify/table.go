package verify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// table is one source table and how its rows are read and compared on
// each side. Compared columns are those decant writes (mapping.Plan.Cols),
// in source order; the key is the plan's row identity.
type table struct {
	def *source.TableDef
	// rel is the source table as the stream describes it, and cols the
	// source column of each compared position: repairs write rows of rel.
	rel         *source.Relation
	cols        []int
	rows        int64 // source rows, when the spans were cut (else 0)
	target      source.TableName
	partitioned bool // the source table is partitioned (read without ONLY)
	keyNames    []string
	// key holds the positions within the compared columns of the key
	// columns; nil for a table without one.
	key    []int
	isKey  []bool // by compared position
	orders []order
	// split: every key column sorts natively on both servers, so the
	// table is cut into spans read by index ranges.
	split bool

	srcCols, tgtCols   []string // select expressions
	srcOrder, tgtOrder []string // ORDER BY expressions
	srcKey, tgtKey     []string // key columns, quoted, for span conditions
	tgtKeyType         []string // PostgreSQL target: key column types, as casts spell them
	src, tgt           normal   // per compared column
	// srcRaw reads a source value as the target writer sends it (for a
	// PostgreSQL target: as it is), norms brings that and the target's
	// value to their normal form (nil: they are compared as they are).
	// The merge normalizes only values that differ as read.
	srcRaw normal
	norms  []normalizer
	// keyConv converts a source key value (a span bound) into what the
	// MySQL target compares it with.
	keyConv []mapping.Converter
	// hashed is the table's view for the hashed comparison of a span
	// (hashed.go): PostgreSQL targets, tables with a key; full, in that
	// view, is the table itself.
	hashed, full *table
	// srcHash and tgtHash are the compared columns as the row hash reads
	// them on a PostgreSQL target; byType: hash_record_extended over them
	// (hashed.go).
	srcHash, tgtHash []string
	byType           bool
	tgtNames         []string // the target column of each compared position
	sums             *sumStats
}

// normal brings each value of a row (NULL: nil) to its normal form.
type normal []func(dst, v []byte) ([]byte, bool, error)

func asText(dst, v []byte) ([]byte, bool, error) { return append(dst, v...), false, nil }

// newTable matches a source table with its target table. tt is the
// target table as mapping sees it; my is its MySQL description (nil for
// a PostgreSQL target). A keyless table (an append-only one) is compared
// by no key whatever indexes either side has.
func newTable(def *source.TableDef, tt *mapping.TargetTable, my *mysql.Table, rules mapping.ColumnRules, policy mapping.Policy, keyless bool) (*table, error) {
	rel := def.PublishedRelation()
	if keyless {
		// Identity NOTHING: the plan takes no key, not even the target's
		// primary key, which it would for FULL.
		rel.Identity = source.IdentityNothing
		for i := range rel.Columns {
			rel.Columns[i].Key = false
		}
	}
	p, err := mapping.NewPlan(rel, *tt, rules)
	if err != nil {
		return nil, err
	}
	t := &table{def: def, target: tt.Name, rel: rel, cols: p.Cols, sums: &sumStats{}}

	pos := map[int]int{} // source column → compared position
	for n, i := range p.Cols {
		pos[i] = n
		c := rel.Columns[i]
		name := p.Targets[i].Name
		t.tgtNames = append(t.tgtNames, name)
		t.srcCols = append(t.srcCols, mapping.QuotePG(c.Name))
		t.src = append(t.src, asText)
		t.srcRaw = append(t.srcRaw, asText)
		t.norms = append(t.norms, nil)
		if my == nil {
			t.tgtCols = append(t.tgtCols, mapping.QuotePG(name))
			t.tgt = append(t.tgt, asText)
			continue
		}
		mc := my.MySQL[name]
		expr := mapping.QuoteMySQL(name)
		if mc.DataType == "float" {
			// MariaDB prints FLOAT with 6 digits; the value stored is exact.
			expr = "CAST(" + expr + " AS DOUBLE)"
		}
		t.tgtCols = append(t.tgtCols, expr)
		conv, err := mapping.MySQLConverter(c, mc, policy)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.Name, err)
		}
		norm := mysqlNormalizer(mc)
		t.src[n] = convertThen(conv, norm, c.Name)
		t.srcRaw[n] = convertRaw(conv, c.Name)
		t.norms[n] = norm
		t.tgt = append(t.tgt, func(dst, v []byte) ([]byte, bool, error) { return norm(dst, v), false, nil })
	}
	if len(p.Key) == 0 {
		return t, nil
	}
	t.split = true
	t.isKey = make([]bool, len(p.Cols))
	for _, i := range keyOrder(rel, p.Key, def.PrimaryKey) {
		c := rel.Columns[i]
		name := p.Targets[i].Name
		n, ok := pos[i]
		if !ok {
			return nil, fmt.Errorf("key column %s is not written to the target", c.Name)
		}
		t.key = append(t.key, n)
		t.isKey[n] = true
		t.keyNames = append(t.keyNames, c.Name)
		var o order
		if my == nil {
			o = orderOf(c.Type, false, "")
			t.tgtOrder = append(t.tgtOrder, pgOrderExpr(name, o))
			t.tgtKey = append(t.tgtKey, mapping.QuotePG(name))
			t.tgtKeyType = append(t.tgtKeyType, p.Targets[i].Type)
		} else {
			mc := my.MySQL[name]
			o = orderOf(c.Type, true, mc.DataType)
			t.tgtOrder = append(t.tgtOrder, mysqlOrderExpr(name, o))
			t.tgtKey = append(t.tgtKey, mapping.QuoteMySQL(name))
			conv, err := mapping.MySQLConverter(c, mc, policy)
			if err != nil {
				return nil, fmt.Errorf("key column %s: %w", c.Name, err)
			}
			t.keyConv = append(t.keyConv, conv)
		}
		t.orders = append(t.orders, o)
		t.srcOrder = append(t.srcOrder, pgOrderExpr(c.Name, o))
		t.srcKey = append(t.srcKey, mapping.QuotePG(c.Name))
		t.split = t.split && o != orderText
	}
	return t, nil
}

// keyOrder puts the key columns in primary key order, which the key's
// index serves, when the key is the primary key; else in column order.
func keyOrder(rel *source.Relation, key []int, pk []string) []int {
	if len(pk) != len(key) {
		return key
	}
	out := make([]int, 0, len(key))
	for _, name := range pk {
		for _, i := range key {
			if rel.Columns[i].Name == name {
				out = append(out, i)
			}
		}
	}
	if len(out) != len(key) {
		return key
	}
	return out
}

// convertThen normalizes a source value as the MySQL writer would send it.
func convertThen(conv mapping.Converter, norm normalizer, col string) func(dst, v []byte) ([]byte, bool, error) {
	return func(dst, v []byte) ([]byte, bool, error) {
		out, err := conv(v)
		if err != nil {
			return dst, false, fmt.Errorf("column %s: a source value cannot be written to the target: %w", col, err)
		}
		if out == nil {
			return dst, true, nil
		}
		return norm(dst, appendArg(nil, out)), false, nil
	}
}

// convertRaw reads a source value as the MySQL writer would send it.
func convertRaw(conv mapping.Converter, col string) func(dst, v []byte) ([]byte, bool, error) {
	return func(dst, v []byte) ([]byte, bool, error) {
		out, err := conv(v)
		if err != nil {
			return dst, false, fmt.Errorf("column %s: a source value cannot be written to the target: %w", col, err)
		}
		if out == nil {
			return dst, true, nil
		}
		return appendArg(dst, out), false, nil
	}
}

// describeTarget reads the target table of a source table.
func (w *worker) describeTarget(ctx context.Context, name source.TableName) (*mapping.TargetTable, *mysql.Table, error) {
	if w.cfg.MySQL {
		my, err := mysql.Inspect(ctx, w.run.my, name)
		if err != nil {
			return nil, nil, err
		}
		return &my.TargetTable, my, nil
	}
	conn, err := w.target(ctx)
	if err != nil {
		return nil, nil, err
	}
	tt, err := pg.Inspect(ctx, conn, name)
	return tt, nil, err
}

// prepare describes a table on both sides and cuts it into spans.
func (w *worker) prepare(ctx context.Context, def *source.TableDef) (*table, []span, error) {
	target := w.cfg.Router.Route(def.Name)
	tt, my, err := w.describeTarget(ctx, target)
	if errors.Is(err, pg.ErrNoTable) || errors.Is(err, mysql.ErrNoTable) {
		return nil, nil, fmt.Errorf("target table %s does not exist", target)
	}
	if err != nil {
		return nil, nil, err
	}
	t, err := newTable(def, tt, my, w.cfg.Columns[def.Name], w.cfg.Policy, slices.Contains(w.cfg.AppendOnly, def.Name))
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", def.Name, err)
	}
	src, err := w.source(ctx)
	if err != nil {
		return nil, nil, err
	}
	var kind string
	if err := src.QueryRow(ctx, `SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = $2`, def.Name.Schema, def.Name.Name).Scan(&kind); err != nil {
		return nil, nil, fmt.Errorf("read source table %s: %w", def.Name, err)
	}
	t.partitioned = kind == "p"
	if !w.cfg.MySQL {
		tgt, err := w.target(ctx)
		if err != nil {
			return nil, nil, err
		}
		var version int
		if err := tgt.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
			return nil, nil, fmt.Errorf("read the target's server version: %w", pg.Describe(err))
		}
		t.setRowHash(def, tt, version >= 140000)
	}
	if !t.split {
		return t, []span{{}}, nil
	}
	bounds, ok, err := w.evenBounds(ctx, t)
	if err == nil && !ok {
		bounds, err = w.bounds(ctx, t)
	}
	if err != nil {
		return nil, nil, err
	}
	return t, spansOf(bounds), nil
}

// bounds reads the source's keys in order and keeps every SpanRows-th as
// a span boundary: one pass over the key (an index-only scan where the
// visibility map allows), holding only the boundaries.
func (w *worker) bounds(ctx context.Context, t *table) ([][]string, error) {
	src, err := w.source(ctx)
	if err != nil {
		return nil, err
	}
	q := "SELECT " + strings.Join(t.srcKey, ", ") + " FROM " + t.srcFrom() + " ORDER BY " + strings.Join(t.srcOrder, ", ")
	rr := src.PgConn().ExecParams(ctx, q, nil, nil, nil, nil)
	var out [][]string
	var n int64
	for rr.NextRow() {
		n++
		if n%w.cfg.SpanRows != 0 {
			continue
		}
		vals := rr.Values()
		b := make([]string, len(vals))
		for i, v := range vals {
			b[i] = string(v)
		}
		out = append(out, b)
	}
	if _, err := rr.Close(); err != nil {
		return nil, fmt.Errorf("read the keys of source table %s: %w", t.def.Name, err)
	}
	t.rows = n
	return out, nil
}

func (t *table) srcFrom() string {
	if t.partitioned {
		return mapping.QuotePGTable(t.def.Name)
	}
	return "ONLY " + mapping.QuotePGTable(t.def.Name)
}

func (t *table) tgtFrom(mysqlTarget bool) string {
	if mysqlTarget {
		return mapping.QuoteMySQLTable(t.target)
	}
	return mapping.QuotePGTable(t.target)
}

// srcQuery selects the compared columns of a span on the source, in key
// order.
func (t *table) srcQuery(s span) (string, [][]byte) {
	return t.pgSpanQuery(t.srcCols, t.srcFrom(), t.srcKey, t.srcOrder, s)
}

// pgTargetQuery is srcQuery for a PostgreSQL target.
func (t *table) pgTargetQuery(s span) (string, [][]byte) {
	return t.pgSpanQuery(t.tgtCols, t.tgtFrom(false), t.tgtKey, t.tgtOrder, s)
}

// pgSpanQuery selects cols from a PostgreSQL table over span s of key
// columns key, ordered by order; a keyless table is read whole.
func (t *table) pgSpanQuery(cols []string, from string, key, order []string, s span) (string, [][]byte) {
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + from
	if t.key == nil {
		return q, nil
	}
	cond, args := pgSpan(key, s, 1)
	return q + " WHERE " + cond + " ORDER BY " + strings.Join(order, ", "), args
}

// mysqlTargetQuery is srcQuery for a MySQL target: span bounds are
// converted as the writer converts key values.
func (t *table) mysqlTargetQuery(s span) (string, []any, error) {
	q := "SELECT " + strings.Join(t.tgtCols, ", ") + " FROM " + t.tgtFrom(true)
	if t.key == nil {
		return q, nil, nil
	}
	lo, err := t.convertBound(s.lo)
	if err != nil {
		return "", nil, err
	}
	hi, err := t.convertBound(s.hi)
	if err != nil {
		return "", nil, err
	}
	cond, args := mysqlSpan(t.tgtKey, lo, hi)
	return q + " WHERE " + cond + " ORDER BY " + strings.Join(t.tgtOrder, ", "), args, nil
}

func (t *table) convertBound(b []string) ([]any, error) {
	if b == nil {
		return nil, nil
	}
	out := make([]any, len(b))
	for i, v := range b {
		x, err := t.keyConv[i]([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("key column %s: a span bound cannot be written to the target: %w", t.keyNames[i], err)
		}
		out[i] = x
	}
	return out, nil
}
