package mysql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

var _ apply.DDLCommitter = (*Target)(nil)

// CommitPartial commits what the open transaction holds, with cp as the
// checkpoint and the mark that the first seq changes of txn are applied:
// MySQL commits the transaction implicitly before a schema change, so the
// pipeline calls this first, and a restart resumes inside txn.
func (t *Target) CommitPartial(ctx context.Context, cp checkpoint.Row, txn *source.Txn, seq int) error {
	cp.PartialCommit, cp.PartialSeq = txn.Commit, seq
	return t.Commit(ctx, cp)
}

// applyDDL brings the target's tables to the definitions a schema change
// produced. Each statement commits by itself, so each runs only if the
// catalog shows it is still needed: after a crash between a statement and
// the checkpoint, the replay skips what is done. The new definitions are
// stored with the rows of the rest of the transaction.
func (t *Target) applyDDL(ctx context.Context, txn *source.Txn, d *source.DDL) error {
	// The pipeline committed everything before this change (CommitPartial);
	// the statements below run outside any transaction, and what follows
	// them opens a new one (the batch still begins with START TRANSACTION).
	if len(t.batch.stmts) > 0 {
		return fmt.Errorf("schema change with %d statements pending: the transaction was not committed first", len(t.batch.stmts))
	}
	if d.Unsupported != "" {
		// Stop, or record the statement and apply what the source
		// could describe of it.
		if err := t.runSchemaSteps(ctx, txn, d, source.TableName{}, nil, nil, &mapping.UnsupportedDDL{What: d.Unsupported}); err != nil {
			return err
		}
	}
	for _, c := range mapping.SchemaChanges(mapping.DialectMySQL, t.schema, d, t.cfg.Router, t.cfg.Columns) {
		if err := t.runSchemaSteps(ctx, txn, d, c.Table, c.Steps, c.Notes, c.Err); err != nil {
			return err
		}
		origin := apply.Origin{Op: "ddl", Table: c.Table, Txn: txn, Expect: -1}
		if c.Def == nil {
			t.batch.add(checkpoint.MySQLSchemaDelete, []any{t.cfg.Pipeline, uint64(c.OID)}, origin)
			delete(t.schema, c.OID)
			continue
		}
		data, err := checkpoint.EncodeDef(c.Def)
		if err != nil {
			return err
		}
		t.batch.add(checkpoint.MySQLSchemaSave, []any{t.cfg.Pipeline, uint64(c.OID), string(data)}, origin)
		t.schema[c.OID] = c.Def
	}
	t.forgetTables()
	return nil
}

func (t *Target) runSchemaSteps(ctx context.Context, txn *source.Txn, d *source.DDL, table source.TableName, steps []mapping.SchemaStep, notes []string, err error) error {
	var u *mapping.UnsupportedDDL
	if errors.As(err, &u) {
		if !t.cfg.SkipUnsupportedDDL {
			return apply.UnsupportedDDL(txn, d, table, u)
		}
		apply.LogSkippedDDL(t.log, txn, d, table, u)
		// The statement itself is kept only here, on the target.
		t.batch.add(checkpoint.MySQLSkipped, []any{t.cfg.Pipeline, uint64(txn.Commit), txn.Xid, d.Statement, u.Error()},
			apply.Origin{Op: "ddl", Table: table, Txn: txn, Expect: 1})
		return nil
	}
	if err != nil {
		return &apply.Error{Op: "ddl", Table: table, Xid: txn.Xid, Commit: txn.Commit, Err: err}
	}
	for _, n := range notes {
		t.log.Warn("schema change: "+n, "table", table.String(), "commit", txn.Commit.String())
	}
	for _, s := range steps {
		if err := t.bound().Do(ctx, "a schema change", func(ctx context.Context) error {
			return t.schemaStep(ctx, txn, table, s)
		}); err != nil {
			return err
		}
	}
	return nil
}

// schemaStep runs one step unless its precondition says it is done.
func (t *Target) schemaStep(ctx context.Context, txn *source.Txn, table source.TableName, s mapping.SchemaStep) error {
	needed, err := t.needed(ctx, s.Check)
	if err != nil {
		return &apply.Error{Op: "ddl", Table: table, Xid: txn.Xid, Commit: txn.Commit, Err: err}
	}
	if !needed {
		t.log.Info("schema step already done; skipped", "statement", apply.OneLine(s.SQL))
		return nil
	}
	if _, err := t.conn.ExecContext(ctx, s.SQL); err != nil {
		return &apply.Error{Op: "ddl", Table: table, Xid: txn.Xid, Commit: txn.Commit,
			Err: fmt.Errorf("%s: %w", apply.OneLine(s.SQL), describe(err))}
	}
	return nil
}

// needed checks a step's precondition against information_schema.
func (t *Target) needed(ctx context.Context, pre mapping.Precondition) (bool, error) {
	db, table := pre.Table.Schema, pre.Table.Name
	count := func(q string, args ...any) (int, error) {
		var n int
		err := t.conn.QueryRowContext(ctx, q, args...).Scan(&n)
		return n, describe(err)
	}
	const where = "TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?"
	switch pre.Kind {
	case mapping.PreTableMissing, mapping.PreTableExists:
		n, err := count("SELECT COUNT(*) FROM information_schema.TABLES WHERE "+where, db, table)
		return (n == 0) == (pre.Kind == mapping.PreTableMissing), err
	case mapping.PreColumnMissing, mapping.PreColumnExists:
		n, err := count("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE "+where+" AND COLUMN_NAME = ?", db, table, pre.Name)
		return (n == 0) == (pre.Kind == mapping.PreColumnMissing), err
	case mapping.PreIndexMissing, mapping.PreIndexExists:
		n, err := count("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE "+where+" AND INDEX_NAME = ?", db, table, pre.Name)
		return (n == 0) == (pre.Kind == mapping.PreIndexMissing), err
	case mapping.PrePrimaryKeyDiffers:
		pk, err := primaryKey(ctx, t.conn, pre.Table)
		return !slices.Equal(pk, keyList(pre.Name)), err
	case mapping.PrePrimaryKeyOther:
		pk, err := primaryKey(ctx, t.conn, pre.Table)
		return len(pk) > 0 && !slices.Equal(pk, keyList(pre.Name)), err
	}
	return true, nil
}

// keyList splits a comma-joined key ("" is no key).
func keyList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// forgetTables drops what the writer learned about target tables: rows
// after a schema change are planned against the new shape.
func (t *Target) forgetTables() {
	t.tables = map[source.TableName]*Table{}
	t.plans = map[source.TableName]*plan{}
	t.last = nil
}
