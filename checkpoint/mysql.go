package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/decant/decant/source"
)

// On MySQL and MariaDB targets the row lives in decant_checkpoint in the
// target database itself (MySQL has no schemas inside a database). LSNs
// are stored as unsigned integers so the monotonic test is a comparison.

// MySQLCreate creates the checkpoint table.
var MySQLCreate = `CREATE TABLE IF NOT EXISTS decant_checkpoint (
	pipeline     VARCHAR(63) NOT NULL PRIMARY KEY,
	system_id    VARCHAR(32) NOT NULL,
	commit_lsn   BIGINT UNSIGNED NOT NULL,
	end_lsn      BIGINT UNSIGNED NOT NULL,
	commit_csn   BIGINT UNSIGNED NULL,
	xid          BIGINT UNSIGNED NULL,
	commit_time  DATETIME(6) NULL,
	applied_time DATETIME(6) NOT NULL,
	partial_commit_lsn BIGINT UNSIGNED NOT NULL DEFAULT 0,
	partial_seq  INT NOT NULL DEFAULT 0,
	hold_lsn     BIGINT UNSIGNED NOT NULL DEFAULT 0,
	timeline     INT UNSIGNED NOT NULL DEFAULT 0,
	ddl          TINYINT(1) NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='` + versionComment + strconv.Itoa(SchemaVersion) + `'`

// mysqlAdded are the columns added to decant_checkpoint since its first
// version, each with the statement that adds it to a table made before it
// existed (MySQL 8 has no ADD COLUMN IF NOT EXISTS), and the one that
// fills it in (then) where its default would be wrong.
var mysqlAdded = []struct{ column, add, then string }{
	{"hold_lsn", `ALTER TABLE decant_checkpoint ADD COLUMN hold_lsn BIGINT UNSIGNED NOT NULL DEFAULT 0`, ""},
	{"timeline", `ALTER TABLE decant_checkpoint ADD COLUMN timeline INT UNSIGNED NOT NULL DEFAULT 0`, ""},
	{"ddl", `ALTER TABLE decant_checkpoint ADD COLUMN ddl TINYINT(1) NOT NULL DEFAULT 0`,
		`UPDATE decant_checkpoint c SET ddl = 1 WHERE EXISTS (SELECT 1 FROM decant_schema s WHERE s.pipeline = c.pipeline)`},
}

// MySQLAdvance moves the checkpoint forward inside the applying
// transaction; it matches no row if the stored position is already past
// the new one (the connection reports matched rows: clientFoundRows).
// Parameters: MySQLAdvanceArgs.
const MySQLAdvance = `UPDATE decant_checkpoint
	SET commit_lsn = ?, end_lsn = ?, xid = ?, commit_time = ?, commit_csn = ?, applied_time = UTC_TIMESTAMP(6),
		partial_commit_lsn = ?, partial_seq = ?, hold_lsn = ?, timeline = IF(? = 0, timeline, ?)
	WHERE pipeline = ? AND end_lsn <= ? AND COALESCE(commit_csn, 0) <= ?`

// MySQLAdvanceArgs are MySQLAdvance's parameters.
func (r Row) MySQLAdvanceArgs() []any {
	var xid, commitTime any
	if r.Xid != 0 {
		xid = r.Xid
	}
	if !r.CommitTime.IsZero() {
		commitTime = r.CommitTime.UTC().Format("2006-01-02 15:04:05.999999")
	}
	var csn any
	if r.CSN != 0 {
		csn = r.CSN
	}
	return []any{uint64(r.Commit), uint64(r.End), xid, commitTime, csn, uint64(r.PartialCommit), int64(r.PartialSeq), uint64(r.Hold), uint64(r.Timeline), uint64(r.Timeline), r.Pipeline, uint64(r.End), r.CSN}
}

// Querier is what the MySQL functions need: *sql.DB, *sql.Conn or *sql.Tx.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// MySQLEnsure creates the table if needed and inserts the pipeline's row
// unless one exists; like PGEnsure.
func MySQLEnsure(ctx context.Context, db Querier, row Row) (Row, bool, error) {
	for _, q := range append([]string{MySQLCreate}, MySQLSchemaCreate...) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return Row{}, false, fmt.Errorf("create decant's tables on target: %w", err)
		}
	}
	if err := mysqlVersion(ctx, db); err != nil {
		return Row{}, false, err
	}
	var csn any
	if row.CSN != 0 {
		csn = row.CSN
	}
	res, err := db.ExecContext(ctx, `INSERT IGNORE INTO decant_checkpoint (pipeline, system_id, commit_lsn, end_lsn, commit_csn, applied_time, ddl)
		VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6), ?)`, row.Pipeline, row.SystemID, uint64(row.Commit), uint64(row.End), csn, row.DDL)
	if err != nil {
		return Row{}, false, fmt.Errorf("insert checkpoint of pipeline %s: %w", row.Pipeline, err)
	}
	n, _ := res.RowsAffected()
	if row.DDL { // as in PGEnsure
		if _, err := db.ExecContext(ctx, `UPDATE decant_checkpoint SET ddl = 1 WHERE pipeline = ?`, row.Pipeline); err != nil {
			return Row{}, false, fmt.Errorf("record DDL capture in the checkpoint of pipeline %s: %w", row.Pipeline, err)
		}
	}
	stored, err := MySQLRead(ctx, db, row.Pipeline)
	if err != nil {
		return Row{}, false, err
	}
	if stored.SystemID != row.SystemID {
		return stored, false, fmt.Errorf("target already holds pipeline %s from source system %s, not %s: use another --pipeline or run decant drop for it", row.Pipeline, stored.SystemID, row.SystemID)
	}
	return stored, n == 1, nil
}

// mysqlUpgrade adds the columns a checkpoint table made by an older
// decant lacks, and records the version.
func mysqlUpgrade(ctx context.Context, db Querier) error {
	for _, c := range mysqlAdded {
		var has int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'decant_checkpoint' AND COLUMN_NAME = ?`, c.column).Scan(&has); err != nil {
			return fmt.Errorf("read decant_checkpoint's columns: %w", err)
		}
		if has > 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, c.add); err != nil {
			return fmt.Errorf("add %s to decant_checkpoint: %w", c.column, err)
		}
		if c.then == "" {
			continue
		}
		var myErr *mysql.MySQLError
		if _, err := db.ExecContext(ctx, c.then); err != nil && !(errors.As(err, &myErr) && myErr.Number == 1146) { // 1146: no decant_schema, so nothing to fill in
			return fmt.Errorf("fill in %s of decant_checkpoint: %w", c.column, err)
		}
	}
	if _, err := db.ExecContext(ctx, mysqlSetVersion); err != nil {
		return fmt.Errorf("record decant_checkpoint's schema version: %w", err)
	}
	return nil
}

// MySQLRead reads the pipeline's row; ErrNotFound when there is none. A
// checkpoint table made by an older decant is upgraded first, one from a
// newer decant refused, as with PGRead.
func MySQLRead(ctx context.Context, db Querier, pipeline string) (Row, error) {
	if err := mysqlVersion(ctx, db); err != nil {
		return Row{}, err
	}
	r, err := mysqlRead(ctx, db, pipeline)
	var myErr *mysql.MySQLError
	if !errors.As(err, &myErr) || myErr.Number != 1054 { // unknown column: a table that says its version but lacks a column
		return r, err
	}
	if err := mysqlUpgrade(ctx, db); err != nil {
		return Row{}, err
	}
	return mysqlRead(ctx, db, pipeline)
}

func mysqlRead(ctx context.Context, db Querier, pipeline string) (Row, error) {
	var r Row
	var commit, end uint64
	var xid sql.Null[uint64] // BIGINT UNSIGNED: a 64-bit xid (GaussDB) does not fit an int64 read
	var csn sql.NullString
	var commitTime sql.NullString
	var applied string
	var partial, hold uint64
	var timeline uint32
	err := db.QueryRowContext(ctx, `SELECT pipeline, system_id, commit_lsn, end_lsn, xid, commit_csn,
			DATE_FORMAT(commit_time, '%Y-%m-%d %H:%i:%s.%f'), DATE_FORMAT(applied_time, '%Y-%m-%d %H:%i:%s.%f'),
			partial_commit_lsn, partial_seq, hold_lsn, timeline, ddl
		FROM decant_checkpoint WHERE pipeline = ?`, pipeline).
		Scan(&r.Pipeline, &r.SystemID, &commit, &end, &xid, &csn, &commitTime, &applied, &partial, &r.PartialSeq, &hold, &timeline, &r.DDL)
	var myErr *mysql.MySQLError
	if errors.Is(err, sql.ErrNoRows) || (errors.As(err, &myErr) && myErr.Number == 1146) {
		return Row{}, fmt.Errorf("%w for pipeline %s on the target; run decant init first", ErrNotFound, pipeline)
	}
	if err != nil {
		return Row{}, fmt.Errorf("read checkpoint of pipeline %s: %w", pipeline, err)
	}
	r.Commit, r.End, r.Xid = source.LSN(commit), source.LSN(end), xid.V
	r.PartialCommit, r.Hold, r.Timeline = source.LSN(partial), source.LSN(hold), timeline
	if csn.Valid {
		r.CSN, _ = strconv.ParseUint(csn.String, 10, 64)
	}
	if commitTime.Valid {
		r.CommitTime, _ = time.Parse("2006-01-02 15:04:05.999999", commitTime.String)
	}
	r.AppliedTime, _ = time.Parse("2006-01-02 15:04:05.999999", applied)
	return r, nil
}

// MySQLDelete removes the pipeline's row; it reports whether there was one.
func MySQLDelete(ctx context.Context, db Querier, pipeline string) (bool, error) {
	res, err := db.ExecContext(ctx, `DELETE FROM decant_checkpoint WHERE pipeline = ?`, pipeline)
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && myErr.Number == 1146 {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete checkpoint of pipeline %s: %w", pipeline, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// MySQLReset is PGReset for a MySQL target.
func MySQLReset(ctx context.Context, db Querier, row Row) error {
	res, err := db.ExecContext(ctx, `UPDATE decant_checkpoint
	SET commit_lsn = ?, end_lsn = ?, xid = NULL, commit_time = NULL, commit_csn = NULL, applied_time = UTC_TIMESTAMP(6),
		partial_commit_lsn = 0, partial_seq = 0, hold_lsn = 0, timeline = 0
	WHERE pipeline = ?`, uint64(row.Commit), uint64(row.End), row.Pipeline)
	if err == nil {
		// Matched rows (clientFoundRows): 1 also when nothing changed.
		if n, _ := res.RowsAffected(); n != 1 {
			err = ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("reset checkpoint of pipeline %s to %s: %w", row.Pipeline, row.End, err)
	}
	return nil
}
