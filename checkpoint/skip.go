package checkpoint

import (
	"database/sql"
	"strconv"
	"strings"
	"time"

	"github.com/decant/decant/source"
)

// Beside the checkpoint, a target keeps the source transactions that an
// operator had run skip (decant skip), in decant.skipped (decant_skipped
// on MySQL): one row per pipeline and commit position. A row passes
// through up to three states, told by its timestamps:
//
//   - stopped (stopped_at set): run stopped on this transaction, with
//     error; run writes it as it stops, so that skip can check the
//     position it is given and keep the error. A pipeline keeps at most
//     one such row that is neither requested nor skipped.
//   - pending (requested_at set, skipped_at not): decant skip asked the
//     next run to skip it.
//   - skipped (skipped_at set): run skipped it, and wrote the row in the
//     same target transaction that moved the checkpoint past it, with the
//     tables and number of changes the transaction held.

// Skip is one row of decant.skipped.
type Skip struct {
	Pipeline   string
	Commit     source.LSN
	Xid        uint64 // 0 when not known
	CommitTime time.Time
	// Tables and Changes: what the transaction held (once skipped).
	Tables  []string
	Changes int64
	// Error is what run stopped on at this transaction, if it recorded it.
	Error       string
	StoppedAt   time.Time
	RequestedAt time.Time
	SkippedAt   time.Time
}

// Pending reports whether the skip is requested and not yet done.
func (s Skip) Pending() bool { return !s.RequestedAt.IsZero() && s.SkippedAt.IsZero() }

// PendingOf returns the pending skip among rows, if one is.
func PendingOf(rows []Skip) (Skip, bool) {
	for _, s := range rows {
		if s.Pending() {
			return s, true
		}
	}
	return Skip{}, false
}

// Skipped reports whether run skipped the transaction.
func (s Skip) Skipped() bool { return !s.SkippedAt.IsZero() }

// PGSkippedCreate creates decant.skipped on PostgreSQL.
const PGSkippedCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.skipped (
	pipeline     text NOT NULL,
	commit_lsn   pg_lsn NOT NULL,
	xid          bigint,
	commit_time  timestamptz,
	tables       text,
	changes      bigint,
	error        text,
	stopped_at   timestamptz,
	requested_at timestamptz,
	skipped_at   timestamptz,
	PRIMARY KEY (pipeline, commit_lsn)
)`

// MySQLSkippedCreate creates decant_skipped on MySQL.
const MySQLSkippedCreate = `CREATE TABLE IF NOT EXISTS decant_skipped (
	pipeline     VARCHAR(63) NOT NULL,
	commit_lsn   BIGINT UNSIGNED NOT NULL,
	xid          BIGINT UNSIGNED NULL,
	commit_time  DATETIME(6) NULL,
	tables       TEXT NULL,
	changes      BIGINT NULL,
	error        TEXT NULL,
	stopped_at   DATETIME(6) NULL,
	requested_at DATETIME(6) NULL,
	skipped_at   DATETIME(6) NULL,
	PRIMARY KEY (pipeline, commit_lsn)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// PGStopForget removes the pipeline's earlier stopped rows that were
// never requested: $1 pipeline. PGStopRecord follows it.
const PGStopForget = `DELETE FROM decant.skipped WHERE pipeline = $1 AND requested_at IS NULL AND skipped_at IS NULL`

// PGStopRecord records the transaction run stopped on: $1 pipeline, $2
// commit LSN, $3 xid, $4 error. A row already skipped is left alone.
const PGStopRecord = `INSERT INTO decant.skipped AS s (pipeline, commit_lsn, xid, error, stopped_at) VALUES ($1, $2, $3, $4, now())
	ON CONFLICT (pipeline, commit_lsn) DO UPDATE SET xid = coalesce(s.xid, EXCLUDED.xid), error = EXCLUDED.error, stopped_at = now()
	WHERE s.skipped_at IS NULL`

// PGSkipRequest makes the skip of one transaction pending: $1 pipeline,
// $2 commit LSN, $3 xid (NULL: not given).
const PGSkipRequest = `INSERT INTO decant.skipped AS s (pipeline, commit_lsn, xid, requested_at) VALUES ($1, $2, $3, now())
	ON CONFLICT (pipeline, commit_lsn) DO UPDATE SET xid = coalesce(EXCLUDED.xid, s.xid), requested_at = now()
	WHERE s.skipped_at IS NULL`

// PGSkipCancel withdraws the pipeline's pending skip: $1 pipeline.
const PGSkipCancel = `UPDATE decant.skipped SET requested_at = NULL WHERE pipeline = $1 AND requested_at IS NOT NULL AND skipped_at IS NULL`

// PGSkipDone marks the pending skip done, inside the transaction that
// moves the checkpoint past it; it matches no row when the skip was
// cancelled meanwhile. Parameters: Skip.PGDoneArgs.
const PGSkipDone = `UPDATE decant.skipped SET xid = $3, commit_time = $4, tables = $5, changes = $6, skipped_at = now()
	WHERE pipeline = $1 AND commit_lsn = $2 AND requested_at IS NOT NULL AND skipped_at IS NULL`

// PGSkipsRead reads the pipeline's rows not yet skipped, then the last
// skipped ones: $1 pipeline, $2 how many rows at most.
const PGSkipsRead = `SELECT commit_lsn::text, xid, commit_time, tables, changes, error, stopped_at, requested_at, skipped_at
	FROM decant.skipped WHERE pipeline = $1 ORDER BY skipped_at IS NOT NULL, skipped_at DESC, commit_lsn DESC LIMIT $2`

// MySQLStopForget is PGStopForget for MySQL: pipeline.
const MySQLStopForget = `DELETE FROM decant_skipped WHERE pipeline = ? AND requested_at IS NULL AND skipped_at IS NULL`

// MySQLStopRecord is PGStopRecord for MySQL: pipeline, commit LSN, xid,
// error. IF keeps a skipped row as it is.
const MySQLStopRecord = `INSERT INTO decant_skipped (pipeline, commit_lsn, xid, error, stopped_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))
	ON DUPLICATE KEY UPDATE xid = IF(skipped_at IS NULL, COALESCE(xid, VALUES(xid)), xid),
		error = IF(skipped_at IS NULL, VALUES(error), error), stopped_at = IF(skipped_at IS NULL, VALUES(stopped_at), stopped_at)`

// MySQLSkipRequest is PGSkipRequest for MySQL: pipeline, commit LSN, xid.
const MySQLSkipRequest = `INSERT INTO decant_skipped (pipeline, commit_lsn, xid, requested_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))
	ON DUPLICATE KEY UPDATE xid = IF(skipped_at IS NULL, COALESCE(VALUES(xid), xid), xid),
		requested_at = IF(skipped_at IS NULL, VALUES(requested_at), requested_at)`

// MySQLSkipCancel is PGSkipCancel for MySQL: pipeline.
const MySQLSkipCancel = `UPDATE decant_skipped SET requested_at = NULL WHERE pipeline = ? AND requested_at IS NOT NULL AND skipped_at IS NULL`

// MySQLSkipLock reads whether the skip of a transaction is still pending
// and locks its row until the transaction that does it commits, so that a
// cancel waits for it: pipeline, commit LSN.
const MySQLSkipLock = `SELECT COUNT(*) FROM decant_skipped WHERE pipeline = ? AND commit_lsn = ? AND requested_at IS NOT NULL AND skipped_at IS NULL FOR UPDATE`

// MySQLSkipDone is PGSkipDone for MySQL. Parameters: Skip.MySQLDoneArgs.
const MySQLSkipDone = `UPDATE decant_skipped SET xid = ?, commit_time = ?, tables = ?, changes = ?, skipped_at = UTC_TIMESTAMP(6)
	WHERE pipeline = ? AND commit_lsn = ? AND requested_at IS NOT NULL AND skipped_at IS NULL`

// MySQLSkipsRead is PGSkipsRead for MySQL: pipeline, how many rows.
const MySQLSkipsRead = `SELECT commit_lsn, xid, DATE_FORMAT(commit_time, '%Y-%m-%d %H:%i:%s.%f'), tables, changes, error,
		DATE_FORMAT(stopped_at, '%Y-%m-%d %H:%i:%s.%f'), DATE_FORMAT(requested_at, '%Y-%m-%d %H:%i:%s.%f'), DATE_FORMAT(skipped_at, '%Y-%m-%d %H:%i:%s.%f')
	FROM decant_skipped WHERE pipeline = ? ORDER BY skipped_at IS NOT NULL, skipped_at DESC, commit_lsn DESC LIMIT ?`

// tableList is how Tables is stored: the names, comma-separated.
func (s Skip) tableList() string { return strings.Join(s.Tables, ", ") }

// ParseTables reads a stored table list.
func ParseTables(list string) []string {
	if list == "" {
		return nil
	}
	return strings.Split(list, ", ")
}

// PGDoneArgs renders the skip as PGSkipDone's text-format parameters.
func (s Skip) PGDoneArgs() [][]byte {
	args := [][]byte{[]byte(s.Pipeline), []byte(s.Commit.String()), nil, nil, []byte(s.tableList()), strconv.AppendInt(nil, s.Changes, 10)}
	if s.Xid != 0 {
		args[2] = strconv.AppendUint(nil, uint64(s.Xid), 10)
	}
	if !s.CommitTime.IsZero() {
		args[3] = s.CommitTime.UTC().AppendFormat(nil, "2006-01-02 15:04:05.999999Z07:00")
	}
	return args
}

// MySQLDoneArgs are MySQLSkipDone's parameters.
func (s Skip) MySQLDoneArgs() []any {
	var xid, commitTime any
	if s.Xid != 0 {
		xid = int64(s.Xid)
	}
	if !s.CommitTime.IsZero() {
		commitTime = s.CommitTime.UTC().Format("2006-01-02 15:04:05.999999")
	}
	return []any{xid, commitTime, s.tableList(), s.Changes, s.Pipeline, uint64(s.Commit)}
}

// XidArg is the xid as a parameter: nil (NULL) when not known.
func (s Skip) XidArg() any {
	if s.Xid == 0 {
		return nil
	}
	return int64(s.Xid)
}

// ScanMySQLSkip fills s from a MySQLSkipsRead row's values.
func ScanMySQLSkip(s *Skip, commit uint64, xid sql.Null[uint64], commitTime, tables sql.NullString, changes sql.NullInt64, errText, stopped, requested, skipped sql.NullString) {
	s.Commit, s.Xid, s.Changes, s.Error = source.LSN(commit), xid.V, changes.Int64, errText.String
	s.Tables = ParseTables(tables.String)
	s.CommitTime, s.StoppedAt = mysqlTime(commitTime), mysqlTime(stopped)
	s.RequestedAt, s.SkippedAt = mysqlTime(requested), mysqlTime(skipped)
}

func mysqlTime(v sql.NullString) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	t, _ := time.Parse("2006-01-02 15:04:05.999999", v.String)
	return t
}
