package bulk

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// The copy state: one row per task, in the target beside the checkpoint
// (decant.copy_state on PostgreSQL, decant_copy_state on MySQL). A task's
// row turns done in the transaction that holds its rows.

const pgStateCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.copy_state (
	pipeline     text NOT NULL,
	table_schema text NOT NULL,
	table_name   text NOT NULL,
	n            integer NOT NULL,
	as_of        pg_lsn NOT NULL,
	first_block  bigint NOT NULL,
	end_block    bigint NOT NULL,
	est_rows     bigint NOT NULL,
	est_bytes    bigint NOT NULL,
	done         boolean NOT NULL DEFAULT false,
	copied_rows  bigint NOT NULL DEFAULT 0,
	copied_bytes bigint NOT NULL DEFAULT 0,
	done_time    timestamptz,
	PRIMARY KEY (pipeline, table_schema, table_name, n)
)`

const mysqlStateCreate = `CREATE TABLE IF NOT EXISTS decant_copy_state (
	pipeline     VARCHAR(63) NOT NULL,
	table_schema VARCHAR(63) NOT NULL,
	table_name   VARCHAR(63) NOT NULL,
	n            INT NOT NULL,
	as_of        BIGINT UNSIGNED NOT NULL,
	first_block  BIGINT NOT NULL,
	end_block    BIGINT NOT NULL,
	est_rows     BIGINT NOT NULL,
	est_bytes    BIGINT NOT NULL,
	done         BOOLEAN NOT NULL DEFAULT FALSE,
	copied_rows  BIGINT NOT NULL DEFAULT 0,
	copied_bytes BIGINT NOT NULL DEFAULT 0,
	done_time    DATETIME(6) NULL,
	PRIMARY KEY (pipeline, table_schema, table_name, n)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

const (
	pgStateLoad = `SELECT table_schema, table_name, n, as_of::text, first_block, end_block, est_rows, est_bytes,
		done, copied_rows, copied_bytes FROM decant.copy_state WHERE pipeline = $1 ORDER BY table_schema, table_name, n`
	mysqlStateLoad = `SELECT table_schema, table_name, n, as_of, first_block, end_block, est_rows, est_bytes,
		done, copied_rows, copied_bytes FROM decant_copy_state WHERE pipeline = ? ORDER BY table_schema, table_name, n`

	pgStateInsert = `INSERT INTO decant.copy_state (pipeline, table_schema, table_name, n, as_of, first_block, end_block, est_rows, est_bytes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`
	mysqlStateInsert = `INSERT INTO decant_copy_state (pipeline, table_schema, table_name, n, as_of, first_block, end_block, est_rows, est_bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// The done marks match only a row not done yet: a task is never
	// counted twice, even by two copies racing each other.
	pgStateDone = `UPDATE decant.copy_state SET done = true, copied_rows = $5, copied_bytes = $6, done_time = now()
		WHERE pipeline = $1 AND table_schema = $2 AND table_name = $3 AND n = $4 AND NOT done`
	mysqlStateDone = `UPDATE decant_copy_state SET done = TRUE, copied_rows = ?, copied_bytes = ?, done_time = UTC_TIMESTAMP(6)
		WHERE pipeline = ? AND table_schema = ? AND table_name = ? AND n = ? AND NOT done`

	pgStateForget    = `DELETE FROM decant.copy_state WHERE pipeline = $1`
	mysqlStateForget = `DELETE FROM decant_copy_state WHERE pipeline = ?`
)

// targetState is a session on the target for the copy state: exactly one
// of pg and my is set.
type targetState struct {
	pg *pgx.Conn
	my *mysql.Session
}

func openTarget(ctx context.Context, dsn string) (*targetState, error) {
	if mysql.IsDSN(dsn) {
		s, err := mysql.Connect(ctx, dsn)
		if err != nil {
			return nil, err
		}
		return &targetState{my: &s}, nil
	}
	conn, err := pg.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	return &targetState{pg: conn}, nil
}

func (t *targetState) close(ctx context.Context) {
	if t.my != nil {
		t.my.Close()
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	t.pg.Close(cctx)
}

// ensure creates the state table when it is missing.
func (t *targetState) ensure(ctx context.Context) error {
	var err error
	if t.my != nil {
		_, err = t.my.Conn.ExecContext(ctx, mysqlStateCreate)
		err = mysql.Describe(err)
	} else {
		_, err = t.pg.Exec(ctx, pgStateCreate)
		err = pg.Describe(err)
	}
	if err != nil {
		return fmt.Errorf("create the copy state table on the target: %w", err)
	}
	return nil
}

// missingMySQL reports "table doesn't exist".
func missingMySQL(err error) bool {
	var myErr *gomysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1146
}

// loadState reads the pipeline's tasks; none when the table does not exist.
func (t *targetState) loadState(ctx context.Context, pipeline string) ([]task, error) {
	var tasks []task
	if t.my != nil {
		rows, err := t.my.Conn.QueryContext(ctx, mysqlStateLoad, pipeline)
		if missingMySQL(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read the copy state: %w", mysql.Describe(err))
		}
		defer rows.Close()
		for rows.Next() {
			var ts task
			var asOf uint64
			if err := rows.Scan(&ts.Table.Schema, &ts.Table.Name, &ts.N, &asOf, &ts.First, &ts.End, &ts.EstRows, &ts.EstBytes,
				&ts.Done, &ts.Rows, &ts.Bytes); err != nil {
				return nil, fmt.Errorf("read the copy state: %w", mysql.Describe(err))
			}
			ts.AsOf = source.LSN(asOf)
			tasks = append(tasks, ts)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read the copy state: %w", mysql.Describe(err))
		}
		return tasks, nil
	}
	rows, err := t.pg.Query(ctx, pgStateLoad, pipeline)
	if err == nil {
		for rows.Next() {
			var ts task
			var asOf string
			if err := rows.Scan(&ts.Table.Schema, &ts.Table.Name, &ts.N, &asOf, &ts.First, &ts.End, &ts.EstRows, &ts.EstBytes,
				&ts.Done, &ts.Rows, &ts.Bytes); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the copy state: %w", err)
			}
			if ts.AsOf, err = source.ParseLSN(asOf); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read the copy state: %w", err)
			}
			tasks = append(tasks, ts)
		}
		rows.Close()
		err = rows.Err()
	}
	if pg.Missing(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the copy state: %w", pg.Describe(err))
	}
	return tasks, nil
}

// store records a new plan, every task not done, in one transaction.
func (t *targetState) store(ctx context.Context, pipeline string, tasks []task) error {
	if len(tasks) == 0 {
		return nil
	}
	if t.my != nil {
		return t.storeMySQL(ctx, pipeline, tasks)
	}
	err := pgx.BeginFunc(ctx, t.pg, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, ts := range tasks {
			b.Queue(pgStateInsert, pipeline, ts.Table.Schema, ts.Table.Name, ts.N, ts.AsOf.String(), ts.First, ts.End, ts.EstRows, ts.EstBytes)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("store the copy plan: %w", pg.Describe(err))
	}
	return nil
}

func (t *targetState) storeMySQL(ctx context.Context, pipeline string, tasks []task) error {
	tx, err := t.my.Conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store the copy plan: %w", mysql.Describe(err))
	}
	defer tx.Rollback()
	for _, ts := range tasks {
		if _, err := tx.ExecContext(ctx, mysqlStateInsert, pipeline, ts.Table.Schema, ts.Table.Name, ts.N, uint64(ts.AsOf),
			ts.First, ts.End, ts.EstRows, ts.EstBytes); err != nil {
			return fmt.Errorf("store the copy plan: %w", mysql.Describe(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store the copy plan: %w", mysql.Describe(err))
	}
	return nil
}

// forget deletes the pipeline's state; nothing to do without the table.
func (t *targetState) forget(ctx context.Context, pipeline string) error {
	var err error
	if t.my != nil {
		_, err = t.my.Conn.ExecContext(ctx, mysqlStateForget, pipeline)
		if missingMySQL(err) {
			return nil
		}
		err = mysql.Describe(err)
	} else {
		_, err = t.pg.Exec(ctx, pgStateForget, pipeline)
		if pg.Missing(err) {
			return nil
		}
		err = pg.Describe(err)
	}
	if err != nil {
		return fmt.Errorf("forget the copy state of pipeline %s: %w", pipeline, err)
	}
	return nil
}

// hasRows reports whether a target table holds any row.
func (t *targetState) hasRows(ctx context.Context, table source.TableName) (bool, error) {
	var found bool
	var err error
	if t.my != nil {
		err = t.my.Conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM "+mapping.QuoteMySQLTable(table)+")").Scan(&found)
		err = mysql.Describe(err)
	} else {
		err = t.pg.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+mapping.QuotePGTable(table)+")").Scan(&found)
		err = pg.Describe(err)
	}
	if err != nil {
		return false, fmt.Errorf("check that target table %s is empty: %w", table, err)
	}
	return found, nil
}

// markDonePG marks a task done inside the target transaction of its rows.
func markDonePG(ctx context.Context, tx pgx.Tx, pipeline string, t *task, rows, bytes int64) error {
	tag, err := tx.Exec(ctx, pgStateDone, pipeline, t.Table.Schema, t.Table.Name, t.N, rows, bytes)
	if err != nil {
		return fmt.Errorf("mark the task done: %w", pg.Describe(err))
	}
	return checkMarked(tag.RowsAffected())
}

// markDoneMySQL is markDonePG for MySQL.
func markDoneMySQL(ctx context.Context, tx *sql.Tx, pipeline string, t *task, rows, bytes int64) error {
	res, err := tx.ExecContext(ctx, mysqlStateDone, rows, bytes, pipeline, t.Table.Schema, t.Table.Name, t.N)
	if err != nil {
		return fmt.Errorf("mark the task done: %w", mysql.Describe(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("mark the task done: %w", err)
	}
	return checkMarked(n)
}

func checkMarked(n int64) error {
	if n != 1 {
		return errors.New("its copy state row is missing or already done: another copy of this pipeline is running, or the state was forgotten meanwhile")
	}
	return nil
}
