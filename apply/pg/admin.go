package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Admin is the PostgreSQL target as the workflows of apply/migrate (init,
// copy, verify, cutover, status, drop) see it: checks, table creation,
// the checkpoint row, recorded definitions, sequences.
type Admin struct {
	conn *pgx.Conn
	cfg  Config
}

// OpenAdmin connects to the target for setup work.
func OpenAdmin(ctx context.Context, cfg Config) (*Admin, error) {
	conn, err := Connect(ctx, cfg.DSN)
	if err != nil {
		return nil, err
	}
	if cfg.Router == nil {
		cfg.Router = mapping.NewRouter(nil, false)
	}
	return &Admin{conn: conn, cfg: cfg}, nil
}

// Close ends the session.
func (a *Admin) Close(ctx context.Context) { a.conn.Close(ctx) }

// Check lists what keeps the relations from being applied: target tables
// that are missing (first value) and other problems, one line each.
// PostgreSQL targets take values in their text form, so differing column
// types surface as apply errors only when a value does not fit; there are
// no notes.
func (a *Admin) Check(ctx context.Context, rels []*source.Relation) (missing []source.TableName, problems, notes []string, err error) {
	for _, rel := range rels {
		name := a.cfg.Router.Route(rel.Table())
		tt, err := Inspect(ctx, a.conn, name)
		if errors.Is(err, ErrNoTable) {
			missing = append(missing, name)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if _, err := mapping.NewPlan(rel, *tt, a.cfg.Columns[rel.Table()]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return missing, problems, nil, nil
}

// EnsureCheckpoint creates the checkpoint table and the pipeline's row.
func (a *Admin) EnsureCheckpoint(ctx context.Context, row checkpoint.Row) (checkpoint.Row, bool, error) {
	return checkpoint.PGEnsure(ctx, a.conn, row)
}

// ReadCheckpoint reads the pipeline's row.
func (a *Admin) ReadCheckpoint(ctx context.Context, pipeline string) (checkpoint.Row, error) {
	return checkpoint.PGRead(ctx, a.conn, pipeline)
}

// ResetCheckpoint sets the pipeline's row to row's position outright
// (checkpoint.PGReset), for resync.
func (a *Admin) ResetCheckpoint(ctx context.Context, row checkpoint.Row) error {
	return checkpoint.PGReset(ctx, a.conn, row)
}

// DeleteCheckpoint removes the pipeline's row.
func (a *Admin) DeleteCheckpoint(ctx context.Context, pipeline string) (bool, error) {
	return checkpoint.PGDelete(ctx, a.conn, pipeline)
}

// CheckCreate lists why Create would refuse the given definitions, one
// line each, without touching the target: Create refuses them all before
// creating any.
func (a *Admin) CheckCreate(defs []*source.TableDef) []string {
	var problems []string
	for _, def := range defs {
		if _, err := mapping.CreatePG(def, a.cfg.Router.Route(def.Name), a.cfg.Columns[def.Name]); err != nil {
			problems = append(problems, err.Error())
		}
	}
	return problems
}

// Create creates the target tables for the given source definitions (the
// caller passes those missing on the target), with any user-defined types
// they use that the target lacks, and returns notes about what was not
// carried over. Each table is created in its own transaction. Without
// indexes, only the primary key is made: an initial copy loads faster
// into a table without secondary indexes, built after it (CreateIndexes).
func (a *Admin) Create(ctx context.Context, defs []*source.TableDef, indexes bool) (notes []string, err error) {
	if problems := a.CheckCreate(defs); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	for _, def := range defs {
		target := a.cfg.Router.Route(def.Name)
		ddl, err := mapping.CreatePG(def, target, a.cfg.Columns[def.Name])
		if err != nil {
			return notes, err
		}
		types, err := a.missingTypes(ctx, def)
		if err != nil {
			return notes, err
		}
		stmts := append(mapping.CreateTypesPG(types), ddl.Table...)
		if indexes {
			stmts = append(stmts, ddl.Indexes...)
		} else {
			stmts = append(append(mapping.CreateTypesPG(types), ddl.Keyless...),
				"COMMENT ON TABLE "+mapping.QuotePGTable(target)+" IS "+quoteLiteral(mapping.UnfinishedCopy))
		}
		if err := pgx.BeginFunc(ctx, a.conn, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", firstLine(s), err)
				}
			}
			return nil
		}); err != nil {
			return notes, fmt.Errorf("create target table %s: %w", target, err)
		}
		for _, n := range ddl.Notes {
			notes = append(notes, target.String()+": "+n)
		}
	}
	return notes, nil
}

// CreateIndexes builds the primary keys and secondary indexes of tables
// Create made without them, then clears their unfinished-copy mark.
func (a *Admin) CreateIndexes(ctx context.Context, defs []*source.TableDef) error {
	// As for a restore: index builds sort in memory up to this.
	if _, err := a.conn.Exec(ctx, "SET maintenance_work_mem = '256MB'"); err != nil {
		return fmt.Errorf("set maintenance_work_mem on the target: %w", err)
	}
	defer a.conn.Exec(context.WithoutCancel(ctx), "RESET maintenance_work_mem")
	for _, def := range defs {
		target := a.cfg.Router.Route(def.Name)
		ddl, err := mapping.CreatePG(def, target, a.cfg.Columns[def.Name])
		if err != nil {
			return err
		}
		stmts := ddl.Indexes
		if ddl.AddKey != "" {
			stmts = append([]string{ddl.AddKey}, stmts...)
		}
		stmts = append(stmts, "COMMENT ON TABLE "+mapping.QuotePGTable(target)+" IS NULL")
		for _, s := range stmts {
			if _, err := a.conn.Exec(ctx, s); err != nil {
				return fmt.Errorf("build the keys and indexes of %s: %s: %w", target, firstLine(s), err)
			}
		}
	}
	return nil
}

// DropUnfinished drops the target tables of the given source tables that
// Create made for an initial copy that did not finish (their keys and
// indexes were never built), and returns them: init --copy makes them
// again.
func (a *Admin) DropUnfinished(ctx context.Context, tables []source.TableName) ([]source.TableName, error) {
	var dropped []source.TableName
	for _, t := range tables {
		target := a.cfg.Router.Route(t)
		var marked bool
		err := a.conn.QueryRow(ctx, `SELECT coalesce(obj_description(to_regclass($1), 'pg_class') = $2, false)`,
			mapping.QuotePGTable(target), mapping.UnfinishedCopy).Scan(&marked)
		if err != nil {
			return dropped, fmt.Errorf("read the comment of target table %s: %w", target, err)
		}
		if !marked {
			continue
		}
		if _, err := a.conn.Exec(ctx, "DROP TABLE "+mapping.QuotePGTable(target)); err != nil {
			return dropped, fmt.Errorf("drop target table %s left by an interrupted copy: %w", target, err)
		}
		dropped = append(dropped, target)
	}
	return dropped, nil
}

// missingTypes lists the user-defined types of def's columns that the
// target does not have yet.
func (a *Admin) missingTypes(ctx context.Context, def *source.TableDef) ([]*source.Type, error) {
	var missing []*source.Type
	for _, c := range def.Columns {
		if c.Info == nil {
			continue
		}
		var exists bool
		if err := a.conn.QueryRow(ctx, `SELECT to_regtype($1) IS NOT NULL`, c.SQLType).Scan(&exists); err != nil {
			return nil, fmt.Errorf("look up type %s on the target: %w", c.SQLType, err)
		}
		if !exists {
			missing = append(missing, c.Info)
		}
	}
	return missing, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// RecordSchema stores the source definitions of the replicated tables as
// the starting point for schema changes (init --ddl).
func (a *Admin) RecordSchema(ctx context.Context, defs []*source.TableDef) error {
	if _, err := a.conn.Exec(ctx, checkpoint.PGSchemaCreate); err != nil {
		return fmt.Errorf("create decant.schema on the target: %w", err)
	}
	for _, def := range defs {
		data, err := checkpoint.EncodeDef(def)
		if err != nil {
			return err
		}
		if _, err := a.conn.Exec(ctx, checkpoint.PGSchemaSave, a.cfg.Pipeline, int64(def.OID), string(data)); err != nil {
			return fmt.Errorf("record the definition of %s on the target: %w", def.Name, err)
		}
	}
	return nil
}

// ForgetSchema removes the pipeline's stored definitions and its rows
// of decant.skipped (drop).
func (a *Admin) ForgetSchema(ctx context.Context) error {
	_, err := a.conn.Exec(ctx, `DELETE FROM decant.schema WHERE pipeline = $1`, a.cfg.Pipeline)
	if Missing(err) {
		err = nil
	}
	if err != nil {
		return err
	}
	return a.forgetSkips(ctx)
}

// LoadSchema reads the pipeline's stored definitions, by source table OID.
func (a *Admin) LoadSchema(ctx context.Context) (map[uint32]*source.TableDef, error) {
	return checkpoint.PGSchemaLoad(ctx, a.conn, a.cfg.Pipeline)
}

// Empty removes every row of the target tables of the given source
// tables (restarting an interrupted initial copy), in one TRUNCATE, so
// that foreign keys among them do not stand in its way. A foreign key
// from a table outside the set (counting the partitions and inheritance
// children TRUNCATE empties too) is refused before anything is emptied:
// TRUNCATE would refuse it, and CASCADE would empty a table that is not
// copied again.
func (a *Admin) Empty(ctx context.Context, tables []source.TableName) error {
	if len(tables) == 0 {
		return nil
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = mapping.QuotePGTable(a.cfg.Router.Route(t))
	}
	var ref foreignRef
	err := a.conn.QueryRow(ctx, outsideRefSQL, names).Scan(&ref.from.Schema, &ref.from.Name, &ref.constraint, &ref.to.Schema, &ref.to.Name)
	switch {
	case err == nil:
		return fmt.Errorf("empty the target tables of the interrupted initial copy: target table %s is referenced by foreign key %s of %s, which this pipeline does not copy, so TRUNCATE refuses it (and CASCADE would empty %s): copy %s too (add its source table to --tables), or drop the foreign key (ALTER TABLE %s DROP CONSTRAINT %s) and add it back after the copy, then run init --copy again",
			ref.to, ref.constraint, ref.from, ref.from, ref.from, mapping.QuotePGTable(ref.from), mapping.QuotePG(ref.constraint))
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("read the foreign keys referencing the target tables: %w", Describe(err))
	}
	if _, err := a.conn.Exec(ctx, "TRUNCATE "+strings.Join(names, ", ")); err != nil {
		return fmt.Errorf("empty the target tables of the interrupted initial copy: %w", Describe(err))
	}
	return nil
}

// foreignRef is a foreign key: table from references table to.
type foreignRef struct {
	from, to   source.TableName
	constraint string
}

// outsideRefSQL finds a foreign key into the tables $1 (quoted names,
// with their partitions and inheritance children, all of which TRUNCATE
// empties) from a table outside them; a partition's copy of a key comes
// after the key itself.
const outsideRefSQL = `WITH RECURSIVE tree(oid) AS (
		SELECT n::regclass::oid FROM unnest($1::text[]) n
		UNION SELECT i.inhrelid FROM pg_inherits i JOIN tree t ON i.inhparent = t.oid
	)
	SELECT fn.nspname::text, f.relname::text, c.conname::text, tn.nspname::text, t.relname::text
	FROM pg_constraint c
	JOIN pg_class f ON f.oid = c.conrelid JOIN pg_namespace fn ON fn.oid = f.relnamespace
	JOIN pg_class t ON t.oid = c.confrelid JOIN pg_namespace tn ON tn.oid = t.relnamespace
	WHERE c.contype = 'f' AND c.confrelid IN (SELECT oid FROM tree) AND c.conrelid NOT IN (SELECT oid FROM tree)
	ORDER BY c.conparentid <> 0, 1, 2, 3
	LIMIT 1`

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// DropOrigins removes the pipeline's replication origins (origin.go) and
// says how many there were.
func (a *Admin) DropOrigins(ctx context.Context) (int, error) {
	return DropOrigins(ctx, a.conn, a.cfg.Pipeline)
}

// CheckOrigins refuses a target user that may not set up replication
// origins (origin.go), which every apply session does.
func (a *Admin) CheckOrigins(ctx context.Context) error {
	var ok bool
	err := a.conn.QueryRow(ctx, `SELECT rolsuper OR (has_function_privilege('pg_replication_origin_create(text)', 'EXECUTE')
			AND has_function_privilege('pg_replication_origin_session_setup(text)', 'EXECUTE'))
		FROM pg_roles WHERE rolname = current_user`).Scan(&ok)
	if err != nil {
		return fmt.Errorf("target: check the privileges for replication origins: %w", err)
	}
	if !ok {
		return errors.New("target: the target user may not set up replication origins, which decant's apply sessions need: make it a superuser, or GRANT EXECUTE ON FUNCTION pg_replication_origin_create(text), pg_replication_origin_oid(text), pg_replication_origin_session_setup(text) to it")
	}
	return nil
}
