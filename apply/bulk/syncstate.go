package bulk

import (
	"context"
	"fmt"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// The table states of decant add-tables (checkpoint.TableSync), kept on
// the target beside the copy state, on a session of their own.

// ReadSyncs reads the pipeline's rows of decant.table_sync; none without
// the table. It opens a session for the read, so that a caller inside a
// target transaction (the stream, waiting for a copy) sees the latest
// commit on MySQL too.
func ReadSyncs(ctx context.Context, target, pipeline string) ([]checkpoint.TableSync, error) {
	t, err := openState(ctx, target)
	if err != nil {
		return nil, err
	}
	defer t.close(ctx)
	if t.my != nil {
		return t.readSyncsMySQL(ctx, pipeline)
	}
	return t.readSyncsPG(ctx, pipeline)
}

func (t *targetState) readSyncsPG(ctx context.Context, pipeline string) ([]checkpoint.TableSync, error) {
	rows, err := t.pg.Query(ctx, checkpoint.PGTableSyncRead, pipeline)
	if err != nil {
		if pg.Missing(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read decant.table_sync: %w", pg.Describe(err))
	}
	defer rows.Close()
	var out []checkpoint.TableSync
	for rows.Next() {
		var s checkpoint.TableSync
		var state, asOf string
		if err := rows.Scan(&s.Table.Schema, &s.Table.Name, &state, &asOf); err != nil {
			return nil, fmt.Errorf("read decant.table_sync: %w", err)
		}
		if s.AsOf, err = source.ParseLSN(asOf); err != nil {
			return nil, fmt.Errorf("read decant.table_sync: table %s: %w", s.Table, err)
		}
		s.State = checkpoint.SyncState(state)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		if pg.Missing(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read decant.table_sync: %w", pg.Describe(err))
	}
	return out, nil
}

func (t *targetState) readSyncsMySQL(ctx context.Context, pipeline string) ([]checkpoint.TableSync, error) {
	rows, err := t.my.Conn.QueryContext(ctx, checkpoint.MySQLTableSyncRead, pipeline)
	if missingMySQL(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read decant_table_sync: %w", mysql.Describe(err))
	}
	defer rows.Close()
	var out []checkpoint.TableSync
	for rows.Next() {
		var s checkpoint.TableSync
		var state string
		var asOf uint64
		if err := rows.Scan(&s.Table.Schema, &s.Table.Name, &state, &asOf); err != nil {
			return nil, fmt.Errorf("read decant_table_sync: %w", err)
		}
		s.State, s.AsOf = checkpoint.SyncState(state), source.LSN(asOf)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read decant_table_sync: %w", mysql.Describe(err))
	}
	return out, nil
}

// SetSyncs writes the tables' state (and, for ready, the position the
// copy was taken at) in one target transaction, creating the table when
// it is missing.
func SetSyncs(ctx context.Context, target, pipeline string, syncs []checkpoint.TableSync) error {
	t, err := openState(ctx, target)
	if err != nil {
		return err
	}
	defer t.close(ctx)
	if t.my != nil {
		err = t.setSyncsMySQL(ctx, pipeline, syncs)
	} else {
		err = t.setSyncsPG(ctx, pipeline, syncs)
	}
	if err != nil {
		return fmt.Errorf("record the add-tables state of pipeline %s on the target: %w", pipeline, err)
	}
	return nil
}

func (t *targetState) setSyncsPG(ctx context.Context, pipeline string, syncs []checkpoint.TableSync) error {
	if _, err := t.pg.Exec(ctx, checkpoint.PGTableSyncCreate); err != nil {
		return pg.Describe(err)
	}
	tx, err := t.pg.Begin(ctx)
	if err != nil {
		return pg.Describe(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op once committed
	for _, s := range syncs {
		if _, err := tx.Exec(ctx, checkpoint.PGTableSyncSet, pipeline, s.Table.Schema, s.Table.Name, string(s.State), s.AsOf.String()); err != nil {
			return pg.Describe(err)
		}
	}
	return pg.Describe(tx.Commit(ctx))
}

func (t *targetState) setSyncsMySQL(ctx context.Context, pipeline string, syncs []checkpoint.TableSync) error {
	if _, err := t.my.Conn.ExecContext(ctx, checkpoint.MySQLTableSyncCreate); err != nil {
		return mysql.Describe(err)
	}
	tx, err := t.my.Conn.BeginTx(ctx, nil)
	if err != nil {
		return mysql.Describe(err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op once committed
	for _, s := range syncs {
		if _, err := tx.ExecContext(ctx, checkpoint.MySQLTableSyncSet, pipeline, s.Table.Schema, s.Table.Name, string(s.State), uint64(s.AsOf)); err != nil {
			return mysql.Describe(err)
		}
	}
	return mysql.Describe(tx.Commit())
}

// ForgetSyncs removes the pipeline's rows of decant.table_sync (decant
// drop); nothing to do without the table.
func ForgetSyncs(ctx context.Context, target, pipeline string) error {
	t, err := openState(ctx, target)
	if err != nil {
		return err
	}
	defer t.close(ctx)
	if t.my != nil {
		_, err = t.my.Conn.ExecContext(ctx, checkpoint.MySQLTableSyncForget, pipeline)
		if missingMySQL(err) {
			return nil
		}
		err = mysql.Describe(err)
	} else {
		_, err = t.pg.Exec(ctx, checkpoint.PGTableSyncForget, pipeline)
		if pg.Missing(err) {
			return nil
		}
		err = pg.Describe(err)
	}
	if err != nil {
		return fmt.Errorf("forget the add-tables state of pipeline %s: %w", pipeline, err)
	}
	return nil
}

func openState(ctx context.Context, target string) (*targetState, error) {
	if err := checkTargetDSN(target); err != nil {
		return nil, err
	}
	return openTarget(ctx, target)
}
