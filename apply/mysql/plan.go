package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Table is a target table as information_schema describes it.
type Table struct {
	mapping.TargetTable
	MySQL map[string]mapping.MySQLColumn // by target column name
}

// ErrNoTable means a target table does not exist.
var ErrNoTable = errors.New("target table does not exist")

// Inspect reads a target table's columns, primary key, unique indexes and
// whether triggers fire on it; ErrNoTable when it does not exist. An empty
// Schema means the connection's database.
func Inspect(ctx context.Context, db querier, name source.TableName) (*Table, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, LOWER(DATA_TYPE), LOWER(COLUMN_TYPE),
			COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0),
			COALESCE(DATETIME_PRECISION, 0), IS_NULLABLE = 'YES', COALESCE(GENERATION_EXPRESSION, '') <> '',
			COLUMN_KEY = 'PRI', LOWER(COALESCE(COLLATION_NAME, ''))
		FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?
		ORDER BY ORDINAL_POSITION`, name.Schema, name.Name)
	if err != nil {
		return nil, fmt.Errorf("read target table %s: %w", targetText(name), describe(err))
	}
	defer rows.Close()
	t := &Table{TargetTable: mapping.TargetTable{Name: name}, MySQL: map[string]mapping.MySQLColumn{}}
	for rows.Next() {
		var c mapping.MySQLColumn
		var pk bool
		var collation string
		if err := rows.Scan(&c.Name, &c.DataType, &c.ColumnType, &c.MaxLength, &c.Precision, &c.Scale,
			&c.DatetimePrecision, &c.Nullable, &c.Generated, &pk, &collation); err != nil {
			return nil, fmt.Errorf("read target table %s: %w", targetText(name), describe(err))
		}
		tc := mapping.TargetColumn{Name: c.Name, Generated: c.Generated}
		if identityEqual(c.DataType, collation) {
			tc.Compare = mapping.CompareEqual
		}
		t.Columns = append(t.Columns, tc)
		t.MySQL[c.Name] = c
		if pk {
			t.PrimaryKey = append(t.PrimaryKey, c.Name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read target table %s: %w", targetText(name), describe(err))
	}
	if len(t.Columns) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, targetText(name))
	}
	if err := markJSON(ctx, db, name, t); err != nil {
		return nil, err
	}
	if len(t.PrimaryKey) > 1 {
		// COLUMN_KEY lists key columns in table order; the key's own order
		// matters only for display, matching uses names.
		t.PrimaryKey, err = primaryKey(ctx, db, name)
		if err != nil {
			return nil, err
		}
	}
	if err := inspectUnique(ctx, db, name, t); err != nil {
		return nil, err
	}
	return t, nil
}

// identityEqual reports whether equal values of a column of this type
// and collation are identical (mapping.CompareEqual), which compaction
// asks of key columns (mapping.NetMode): integers, dates and times, and
// binary strings compare their values alone. Character columns only with
// a binary collation that does not pad: under PAD SPACE (MariaDB's
// utf8mb4_bin among them) 'a' = 'a ', two keys for one row. CHAR is left
// out whatever its collation (it drops trailing spaces as it stores),
// and DECIMAL too: 1.0 and 1.00 are one value with two texts.
func identityEqual(dataType, collation string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year",
		"date", "datetime", "timestamp", "time",
		"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return true
	case "varchar", "tinytext", "text", "mediumtext", "longtext":
		// MariaDB spells NO PAD in the name; MySQL 8's only binary NO PAD
		// collation is utf8mb4_0900_bin (information_schema.COLLATIONS
		// has PAD_ATTRIBUTE on MySQL alone).
		return strings.HasSuffix(collation, "_nopad_bin") || collation == "utf8mb4_0900_bin"
	}
	return false
}

// inspectUnique reads what decides whether the table's changes may be
// compacted (mapping.NetMode): its unique indexes, and its triggers. A
// unique index counts as Unique when every part is a whole column; one
// with a prefix length (a prefix is unique, not the column) or an
// expression part (MySQL's functional indexes) is OtherUnique. InnoDB
// checks every unique index row by row, none deferred. Any trigger on the
// table fires for decant's rows. (MySQL shows triggers only to users with
// the TRIGGER privilege on the table; MariaDB to any user with a
// privilege on it.)
func inspectUnique(ctx context.Context, db querier, name source.TableName, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT INDEX_NAME, COALESCE(COLUMN_NAME, ''), SUB_PART IS NOT NULL
		FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND NON_UNIQUE = 0
		ORDER BY INDEX_NAME, SEQ_IN_INDEX`, name.Schema, name.Name)
	if err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", targetText(name), describe(err))
	}
	defer rows.Close()
	type index struct {
		cols  []string
		plain bool
	}
	var indexes []index
	last := ""
	for rows.Next() {
		var ix, col string
		var prefix bool
		if err := rows.Scan(&ix, &col, &prefix); err != nil {
			return fmt.Errorf("read unique indexes of %s: %w", targetText(name), describe(err))
		}
		if len(indexes) == 0 || ix != last {
			indexes = append(indexes, index{plain: true})
			last = ix
		}
		cur := &indexes[len(indexes)-1]
		cur.cols = append(cur.cols, col)
		cur.plain = cur.plain && col != "" && !prefix
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read unique indexes of %s: %w", targetText(name), describe(err))
	}
	for _, ix := range indexes {
		if ix.plain {
			t.Unique = append(t.Unique, ix.cols)
		} else {
			t.OtherUnique = true
		}
	}
	var triggers int
	err = db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TRIGGERS
		WHERE EVENT_OBJECT_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND EVENT_OBJECT_TABLE = ?`, name.Schema, name.Name).Scan(&triggers)
	if err != nil {
		return fmt.Errorf("read triggers of %s: %w", targetText(name), describe(err))
	}
	t.Triggers = triggers > 0
	return nil
}

// markJSON finds MariaDB's JSON columns: MariaDB spells JSON as LONGTEXT
// with a CHECK (json_valid(column)) constraint, so information_schema
// reports them as longtext. (On MySQL the constraint does not exist and
// DATA_TYPE says json already.)
func markJSON(ctx context.Context, db querier, name source.TableName, t *Table) error {
	rows, err := db.QueryContext(ctx, `SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS
		WHERE CONSTRAINT_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?`, name.Schema, name.Name)
	if err != nil {
		return fmt.Errorf("read check constraints of %s: %w", targetText(name), describe(err))
	}
	defer rows.Close()
	for rows.Next() {
		var clause string
		if err := rows.Scan(&clause); err != nil {
			return err
		}
		col, ok := strings.CutPrefix(clause, "json_valid(`")
		if !ok {
			continue
		}
		col, ok = strings.CutSuffix(col, "`)")
		if c, found := t.MySQL[strings.ReplaceAll(col, "``", "`")]; ok && found && c.DataType == "longtext" {
			c.DataType, c.ColumnType = "json", "json"
			t.MySQL[c.Name] = c
		}
	}
	return rows.Err()
}

func primaryKey(ctx context.Context, db querier, name source.TableName) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME FROM information_schema.STATISTICS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'
		ORDER BY SEQ_IN_INDEX`, name.Schema, name.Name)
	if err != nil {
		return nil, fmt.Errorf("read primary key of %s: %w", targetText(name), describe(err))
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func targetText(t source.TableName) string {
	if t.Schema == "" {
		return t.Name
	}
	return t.String()
}

// querier is what Inspect needs: *sql.DB or *sql.Conn.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (t *Target) table(ctx context.Context, name source.TableName) (*Table, error) {
	if tt, ok := t.tables[name]; ok {
		return tt, nil
	}
	var tt *Table
	err := t.bound().Do(ctx, "reading the target catalog", func(ctx context.Context) error {
		var err error
		tt, err = Inspect(ctx, t.conn, name)
		return err
	})
	if errors.Is(err, ErrNoTable) {
		return nil, fmt.Errorf("%w; create it on the target (decant init --create-tables creates missing tables)", err)
	}
	if err != nil {
		return nil, err
	}
	t.tables[name] = tt
	return tt, nil
}

// plan is a mapping.Plan with its statements and value converters.
type plan struct {
	*mapping.Plan
	conv       []mapping.Converter // by source column; nil for columns not written
	cmp        []comparer
	insertHead string
	rowMarks   string
	deleteHead string
	keyMarks   string
	shapes     *mapping.Shapes // UPDATE statements
	// For a window of net changes (net.go): the key columns by source
	// column, and the DELETE's head, rendered on first use.
	isKey         []bool
	netDeleteHead string
	netKeyMarks   string
	maria         bool // the target is MariaDB (its table value constructor)
}

func (t *Target) plan(ctx context.Context, rel *source.Relation) (*plan, error) {
	if t.last != nil && t.last.Rel == rel {
		return t.last, nil
	}
	if p, ok := t.plans[rel.Table()]; ok && p.Rel == rel {
		t.last = p
		return p, nil
	}
	tt, err := t.table(ctx, t.cfg.Router.Route(rel.Table()))
	if err != nil {
		return nil, err
	}
	p, err := newPlan(rel, tt, t.cfg.Columns[rel.Table()], t.cfg.Policy, t.maria)
	if err != nil {
		return nil, err
	}
	t.plans[rel.Table()] = p // replacing the plan of the table's older shape
	t.last = p
	return p, nil
}

// newPlan compiles the statements and converters for a relation.
func newPlan(rel *source.Relation, tt *Table, rules mapping.ColumnRules, policy mapping.Policy, maria bool) (*plan, error) {
	mp, err := mapping.NewPlan(rel, tt.TargetTable, rules)
	if err != nil {
		return nil, err
	}
	p := &plan{
		Plan:  mp,
		conv:  make([]mapping.Converter, len(rel.Columns)),
		cmp:   make([]comparer, len(rel.Columns)),
		maria: maria,
	}
	// <=> matches NULL old values, so one shape serves NULL and not NULL.
	p.shapes = mp.NewShapes(mapping.ShapeRenderers{
		Update: func(set []bool, m mapping.Match) string { return renderUpdate(mp, set, m, p.cmp) },
		Delete: func(m mapping.Match) string { return renderDelete(mp, m, p.cmp) },
	})
	var bad []string
	for _, i := range mp.Cols {
		col := tt.MySQL[mp.Targets[i].Name]
		conv, err := mapping.MySQLConverter(rel.Columns[i], col, policy)
		if err != nil {
			bad = append(bad, fmt.Sprintf("column %s: %v", rel.Columns[i].Name, err))
			continue
		}
		p.conv[i] = conv
		p.cmp[i] = compareWith(col, maria)
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("source table %s cannot be written to target table %s: %v", rel.Table(), targetText(tt.Name), bad)
	}
	p.insertHead, p.rowMarks = insertHead(mp)
	p.isKey = make([]bool, len(rel.Columns))
	for _, i := range mp.Key {
		p.isKey[i] = true
	}
	if len(mp.Key) > 0 {
		p.deleteHead, p.keyMarks = deleteInHead(mp)
	}
	return p, nil
}

// convertRow appends the converted values of the given columns of row. A
// value the column cannot hold has already met the policy in the
// converter; what is left is an error naming the column and the rule.
func (p *plan) convertRow(args []any, row []source.Value, cols []int) ([]any, error) {
	for _, i := range cols {
		v := row[i]
		switch v.Kind {
		case source.ValueNull:
			args = append(args, nil)
			continue
		case source.ValueText:
		default:
			return nil, fmt.Errorf("column %s: the source sent no usable value (an unchanged TOAST value where a value is needed, or binary)", p.Rel.Columns[i].Name)
		}
		out, err := p.conv[i](v.Data)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w (--on-unrepresentable null or clamp stores something else instead)", p.Rel.Columns[i].Name, err)
		}
		args = append(args, out)
	}
	return args, nil
}
