package checkpoint

import "github.com/decant/decant/source"

// Beside the checkpoint, a target keeps the state of each table that
// decant add-tables brings into a running pipeline (decant.table_sync,
// decant_table_sync on MySQL), as PostgreSQL's tablesync workers keep
// theirs in pg_subscription_rel: a row is written 'copying' before the
// table joins the publication, and 'ready' with the position its copy
// was taken at once every row of the copy has committed. The stream holds
// a copying table's changes back, and of a ready table's applies only
// those of transactions its copy does not hold.

// SyncState is a table's state in decant.table_sync.
type SyncState string

const (
	// SyncCopying: add-tables is copying the table (or was interrupted);
	// the stream must not apply its changes yet.
	SyncCopying SyncState = "copying"
	// SyncReady: the copy committed; AsOf says which changes it holds.
	SyncReady SyncState = "ready"
)

// TableSync is one row of decant.table_sync.
type TableSync struct {
	Table source.TableName // the source table
	State SyncState
	// AsOf is the consistent point of the snapshot the copy was taken
	// under (0 while copying): the copy holds exactly the transactions
	// that commit before it, as a checkpoint whose End is AsOf has
	// applied them (Row.Applied).
	AsOf source.LSN
}

// Copied reports whether the table's copy holds txn, so that the stream
// must not apply txn's changes to it again. Only for a ready table, and by
// LSN: add-tables refuses GaussDB sources, so no copy is placed by CSN.
func (s TableSync) Copied(txn *source.Txn) bool { return !txn.ByCSN && txn.Commit < s.AsOf }

// PGTableSyncCreate creates decant.table_sync on PostgreSQL.
const PGTableSyncCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.table_sync (
	pipeline     text NOT NULL,
	table_schema text NOT NULL,
	table_name   text NOT NULL,
	state        text NOT NULL,
	as_of        pg_lsn NOT NULL DEFAULT '0/0',
	updated      timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (pipeline, table_schema, table_name)
)`

// MySQLTableSyncCreate creates decant_table_sync on MySQL.
const MySQLTableSyncCreate = `CREATE TABLE IF NOT EXISTS decant_table_sync (
	pipeline     VARCHAR(63) NOT NULL,
	table_schema VARCHAR(63) NOT NULL,
	table_name   VARCHAR(63) NOT NULL,
	state        VARCHAR(16) NOT NULL,
	as_of        BIGINT UNSIGNED NOT NULL DEFAULT 0,
	updated      DATETIME(6) NOT NULL,
	PRIMARY KEY (pipeline, table_schema, table_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`

// The statements on decant.table_sync: read a pipeline's rows; set a
// table's state ($1 pipeline, $2 schema, $3 table, $4 state, $5 as_of);
// forget a pipeline's rows.
const (
	PGTableSyncRead = `SELECT table_schema, table_name, state, as_of::text FROM decant.table_sync WHERE pipeline = $1 ORDER BY table_schema, table_name`
	PGTableSyncSet  = `INSERT INTO decant.table_sync (pipeline, table_schema, table_name, state, as_of) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (pipeline, table_schema, table_name) DO UPDATE SET state = EXCLUDED.state, as_of = EXCLUDED.as_of, updated = now()`
	PGTableSyncForget = `DELETE FROM decant.table_sync WHERE pipeline = $1`

	MySQLTableSyncRead = `SELECT table_schema, table_name, state, as_of FROM decant_table_sync WHERE pipeline = ? ORDER BY table_schema, table_name`
	MySQLTableSyncSet  = `INSERT INTO decant_table_sync (pipeline, table_schema, table_name, state, as_of, updated) VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6))
	ON DUPLICATE KEY UPDATE state = VALUES(state), as_of = VALUES(as_of), updated = VALUES(updated)`
	MySQLTableSyncForget = `DELETE FROM decant_table_sync WHERE pipeline = ?`
)
