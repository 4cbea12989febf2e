package mysql

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	mysqlerr "github.com/go-sql-driver/mysql"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Admin is the MySQL target as the workflows of apply/migrate (init,
// copy, verify, cutover, status, drop) see it: checks, table creation,
// the checkpoint row, recorded definitions, sequences.
type Admin struct {
	s   Session
	cfg Config
}

// OpenAdmin connects to the target for setup work.
func OpenAdmin(ctx context.Context, cfg Config) (*Admin, error) {
	s, err := Connect(ctx, cfg.DSN)
	if err != nil {
		return nil, err
	}
	if cfg.Router == nil {
		cfg.Router = mapping.NewRouter(nil, true)
	}
	return &Admin{s: s, cfg: cfg}, nil
}

// Close ends the session.
func (a *Admin) Close(context.Context) { a.s.close() }

// Check lists what keeps the relations from being applied: target tables
// that are missing, and other problems (missing columns, types that cannot
// be converted), one line each; and, as notes, existing target columns
// whose type differs from what decant would create (their values may be
// unrepresentable where the source's are not).
func (a *Admin) Check(ctx context.Context, rels []*source.Relation) (missing []source.TableName, problems, notes []string, err error) {
	for _, rel := range rels {
		name := a.cfg.Router.Route(rel.Table())
		tt, err := Inspect(ctx, a.s.Conn, name)
		if errors.Is(err, ErrNoTable) {
			missing = append(missing, name)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		p, err := newPlan(rel, tt, a.cfg.Columns[rel.Table()], a.cfg.Policy, a.s.Maria)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, i := range p.Cols {
			c := rel.Columns[i]
			want, err := mapping.MySQLType(c.Type, c.TypeMod, c.Info)
			got := tt.MySQL[p.Targets[i].Name].ColumnType
			if err == nil && !sameMySQLType(want, got) {
				notes = append(notes, fmt.Sprintf("target column %s.%s is %s where decant would create %s; values it cannot hold follow --on-unrepresentable",
					targetText(name), p.Targets[i].Name, got, strings.ToLower(want)))
			}
		}
	}
	return missing, problems, notes, nil
}

// sameMySQLType compares a type decant would create with a COLUMN_TYPE,
// ignoring case and integer display widths ("int(11)" is INT).
func sameMySQLType(want, got string) bool {
	want, got = strings.ToLower(want), strings.ToLower(got)
	got = displayWidth.ReplaceAllString(got, "$1")
	if want == "tinyint(1)" {
		return got == "tinyint" || got == "tinyint(1)"
	}
	return want == got
}

var displayWidth = regexp.MustCompile(`^((?:tiny|small|medium|big)?int)\(\d+\)`)

// EnsureCheckpoint creates the checkpoint table and the pipeline's row.
func (a *Admin) EnsureCheckpoint(ctx context.Context, row checkpoint.Row) (checkpoint.Row, bool, error) {
	return checkpoint.MySQLEnsure(ctx, a.s.Conn, row)
}

// ReadCheckpoint reads the pipeline's row.
func (a *Admin) ReadCheckpoint(ctx context.Context, pipeline string) (checkpoint.Row, error) {
	return checkpoint.MySQLRead(ctx, a.s.Conn, pipeline)
}

// ResetCheckpoint sets the pipeline's row to row's position outright
// (checkpoint.MySQLReset), for resync.
func (a *Admin) ResetCheckpoint(ctx context.Context, row checkpoint.Row) error {
	return checkpoint.MySQLReset(ctx, a.s.Conn, row)
}

// DeleteCheckpoint removes the pipeline's row.
func (a *Admin) DeleteCheckpoint(ctx context.Context, pipeline string) (bool, error) {
	return checkpoint.MySQLDelete(ctx, a.s.Conn, pipeline)
}

// CheckCreate lists why Create would refuse the given definitions, one
// line each, without touching the target: Create refuses them all before
// creating any.
func (a *Admin) CheckCreate(defs []*source.TableDef) []string {
	var problems []string
	for _, def := range defs {
		if _, err := mapping.CreateMySQL(def, a.cfg.Router.Route(def.Name), a.cfg.Columns[def.Name]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// Create creates the target tables for the given source definitions (the
// caller passes those missing on the target) and returns notes about what
// was not carried over. MySQL commits each DDL statement by itself; the
// statements use IF NOT EXISTS where they can, so running init again after
// a failure is safe. Without indexes, plain secondary indexes wait for
// CreateIndexes (after an initial copy); keys are made with the table.
func (a *Admin) Create(ctx context.Context, defs []*source.TableDef, indexes bool) (notes []string, err error) {
	if problems := a.CheckCreate(defs); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	for _, def := range defs {
		target := a.cfg.Router.Route(def.Name)
		ddl, err := mapping.CreateMySQL(def, target, a.cfg.Columns[def.Name])
		if err != nil {
			return notes, err
		}
		stmts := ddl.Table
		if indexes {
			stmts = append(stmts, ddl.Indexes...)
		} else {
			stmts = append(stmts, "ALTER TABLE "+mapping.QuoteMySQLTable(target)+" COMMENT = '"+mapping.UnfinishedCopy+"'")
		}
		for _, s := range stmts {
			if _, err := a.s.Conn.ExecContext(ctx, s); err != nil {
				return notes, fmt.Errorf("create target table %s: %w", targetText(target), describe(err))
			}
		}
		for _, n := range ddl.Notes {
			notes = append(notes, targetText(target)+": "+n)
		}
	}
	return notes, nil
}

// CreateIndexes builds the plain secondary indexes of tables Create made
// without them, then clears their unfinished-copy mark.
func (a *Admin) CreateIndexes(ctx context.Context, defs []*source.TableDef) error {
	for _, def := range defs {
		target := a.cfg.Router.Route(def.Name)
		ddl, err := mapping.CreateMySQL(def, target, a.cfg.Columns[def.Name])
		if err != nil {
			return err
		}
		stmts := append(ddl.Indexes, "ALTER TABLE "+mapping.QuoteMySQLTable(target)+" COMMENT = ''")
		for _, s := range stmts {
			if _, err := a.s.Conn.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("build the indexes of %s: %w", targetText(target), describe(err))
			}
		}
	}
	return nil
}

// DropUnfinished drops the target tables of the given source tables that
// Create made for an initial copy that did not finish (their indexes were
// never built), and returns them: init --copy makes them again.
func (a *Admin) DropUnfinished(ctx context.Context, tables []source.TableName) ([]source.TableName, error) {
	var dropped []source.TableName
	for _, t := range tables {
		target := a.cfg.Router.Route(t)
		var n int
		err := a.s.Conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND TABLE_COMMENT = ?`,
			target.Schema, target.Name, mapping.UnfinishedCopy).Scan(&n)
		if err != nil {
			return dropped, fmt.Errorf("read the comment of target table %s: %w", targetText(target), describe(err))
		}
		if n == 0 {
			continue
		}
		if _, err := a.s.Conn.ExecContext(ctx, "DROP TABLE "+mapping.QuoteMySQLTable(target)); err != nil {
			return dropped, fmt.Errorf("drop target table %s left by an interrupted copy: %w", targetText(target), describe(err))
		}
		dropped = append(dropped, target)
	}
	return dropped, nil
}

// RecordSchema stores the source definitions of the replicated tables as
// the starting point for schema changes (init --ddl).
func (a *Admin) RecordSchema(ctx context.Context, defs []*source.TableDef) error {
	for _, q := range checkpoint.MySQLSchemaCreate {
		if _, err := a.s.Conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create decant_schema on the target: %w", describe(err))
		}
	}
	for _, def := range defs {
		data, err := checkpoint.EncodeDef(def)
		if err != nil {
			return err
		}
		if _, err := a.s.Conn.ExecContext(ctx, checkpoint.MySQLSchemaSave, a.cfg.Pipeline, def.OID, string(data)); err != nil {
			return fmt.Errorf("record the definition of %s on the target: %w", def.Name, describe(err))
		}
	}
	return nil
}

// ForgetSchema removes the pipeline's stored definitions and its rows
// of decant_skipped (drop).
func (a *Admin) ForgetSchema(ctx context.Context) error {
	_, err := a.s.Conn.ExecContext(ctx, `DELETE FROM decant_schema WHERE pipeline = ?`, a.cfg.Pipeline)
	var my *mysqlerr.MySQLError
	if errors.As(err, &my) && my.Number == 1146 {
		err = nil
	}
	if err != nil {
		return err
	}
	return a.forgetSkips(ctx)
}

// LoadSchema reads the pipeline's stored definitions, by source table OID.
func (a *Admin) LoadSchema(ctx context.Context) (map[uint32]*source.TableDef, error) {
	return checkpoint.MySQLSchemaLoad(ctx, a.s.Conn, a.cfg.Pipeline)
}

// Empty removes every row of the target tables of the given source
// tables (restarting an interrupted initial copy). decant's session has
// foreign_key_checks = 0 (ParseDSN), under which InnoDB truncates a table
// that foreign keys reference; rows of other tables that reference the
// emptied ones are left as they are, as a copy with the checks off leaves
// them.
func (a *Admin) Empty(ctx context.Context, tables []source.TableName) error {
	for _, t := range tables {
		target := a.cfg.Router.Route(t)
		if _, err := a.s.Conn.ExecContext(ctx, "TRUNCATE TABLE "+mapping.QuoteMySQLTable(target)); err != nil {
			return fmt.Errorf("empty target table %s: %w", targetText(target), describe(err))
		}
	}
	return nil
}
