package checkpoint

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// Beside the checkpoint, a target keeps the source definition of every
// replicated table as it last applied it (decant.schema, decant_schema on
// MySQL), written in the same transaction as the rows. A schema change is
// applied as the difference between that definition and the new one, and
// a DDL command decant could not translate and skipped is recorded in
// decant.skipped_ddl (decant_skipped_ddl). Transactions skipped on an
// operator's request are kept in decant.skipped (skip.go).

// PGSchemaCreate creates the schema store on PostgreSQL.
var PGSchemaCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.schema (
	pipeline   text NOT NULL,
	table_oid  bigint NOT NULL,
	definition jsonb NOT NULL,
	updated    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (pipeline, table_oid)
);
CREATE TABLE IF NOT EXISTS decant.skipped_ddl (
	pipeline   text NOT NULL,
	commit_lsn pg_lsn NOT NULL,
	xid        bigint,
	statement  text NOT NULL,
	reason     text NOT NULL,
	skipped_at timestamptz NOT NULL DEFAULT now()
);
` + PGSkippedCreate

// PGSchemaSave upserts one definition: $1 pipeline, $2 table OID, $3 JSON.
const PGSchemaSave = `INSERT INTO decant.schema (pipeline, table_oid, definition) VALUES ($1, $2, $3)
	ON CONFLICT (pipeline, table_oid) DO UPDATE SET definition = EXCLUDED.definition, updated = now()`

// PGSchemaDelete forgets a dropped table: $1 pipeline, $2 table OID.
const PGSchemaDelete = `DELETE FROM decant.schema WHERE pipeline = $1 AND table_oid = $2`

// PGSkipped records a skipped command: $1 pipeline, $2 commit LSN, $3 xid,
// $4 statement, $5 reason.
const PGSkipped = `INSERT INTO decant.skipped_ddl (pipeline, commit_lsn, xid, statement, reason) VALUES ($1, $2, $3, $4, $5)`

// MySQLSchemaCreate creates the schema store on MySQL.
var MySQLSchemaCreate = []string{
	`CREATE TABLE IF NOT EXISTS decant_schema (
		pipeline   VARCHAR(63) NOT NULL,
		table_oid  BIGINT UNSIGNED NOT NULL,
		definition LONGTEXT NOT NULL,
		updated    DATETIME(6) NOT NULL,
		PRIMARY KEY (pipeline, table_oid)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE IF NOT EXISTS decant_skipped_ddl (
		pipeline   VARCHAR(63) NOT NULL,
		commit_lsn BIGINT UNSIGNED NOT NULL,
		xid        BIGINT UNSIGNED NULL,
		statement  LONGTEXT NOT NULL,
		reason     TEXT NOT NULL,
		skipped_at DATETIME(6) NOT NULL
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	MySQLSkippedCreate,
}

// MySQLSchemaSave upserts one definition: pipeline, table OID, JSON.
const MySQLSchemaSave = `INSERT INTO decant_schema (pipeline, table_oid, definition, updated) VALUES (?, ?, ?, UTC_TIMESTAMP(6))
	ON DUPLICATE KEY UPDATE definition = VALUES(definition), updated = VALUES(updated)`

// MySQLSchemaDelete forgets a dropped table: pipeline, table OID.
const MySQLSchemaDelete = `DELETE FROM decant_schema WHERE pipeline = ? AND table_oid = ?`

// MySQLSkipped records a skipped command: pipeline, commit LSN, xid,
// statement, reason.
const MySQLSkipped = `INSERT INTO decant_skipped_ddl (pipeline, commit_lsn, xid, statement, reason, skipped_at) VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6))`

// EncodeDef renders a definition for the store.
func EncodeDef(def *source.TableDef) ([]byte, error) { return json.Marshal(def) }

func decodeDef(data []byte) (*source.TableDef, error) {
	var def source.TableDef
	if err := json.Unmarshal(data, &def); err != nil {
		return nil, fmt.Errorf("stored table definition: %w", err)
	}
	return &def, nil
}

// PGSchemaLoad reads the pipeline's stored definitions by table OID; an
// empty map when there is no store.
func PGSchemaLoad(ctx context.Context, conn *pgx.Conn, pipeline string) (map[uint32]*source.TableDef, error) {
	rows, err := conn.Query(ctx, `SELECT definition::text FROM decant.schema WHERE pipeline = $1`, pipeline)
	if isMissingPG(err) {
		return map[uint32]*source.TableDef{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stored table definitions: %w", err)
	}
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		if isMissingPG(err) {
			return map[uint32]*source.TableDef{}, nil
		}
		return nil, fmt.Errorf("read stored table definitions: %w", err)
	}
	return defsByOID(texts)
}

// MySQLSchemaLoad is PGSchemaLoad for MySQL.
func MySQLSchemaLoad(ctx context.Context, db Querier, pipeline string) (map[uint32]*source.TableDef, error) {
	rows, err := db.QueryContext(ctx, `SELECT definition FROM decant_schema WHERE pipeline = ?`, pipeline)
	if isMissingTable(err) {
		return map[uint32]*source.TableDef{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stored table definitions: %w", err)
	}
	defer rows.Close()
	var texts []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		texts = append(texts, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored table definitions: %w", err)
	}
	return defsByOID(texts)
}

func defsByOID(texts []string) (map[uint32]*source.TableDef, error) {
	out := map[uint32]*source.TableDef{}
	for _, t := range texts {
		def, err := decodeDef([]byte(t))
		if err != nil {
			return nil, err
		}
		out[def.OID] = def
	}
	return out, nil
}

// isMissingTable reports MySQL's "table doesn't exist".
func isMissingTable(err error) bool {
	var myErr *mysql.MySQLError
	return errors.As(err, &myErr) && myErr.Number == 1146
}

// isMissingPG reports whether err says decant's table or schema does not
// exist on a PostgreSQL target (42P01 undefined_table, 3F000
// invalid_schema_name): nothing was stored yet. The check apply/pg.Missing
// makes, kept here because checkpoint sits below apply.
func isMissingPG(err error) bool {
	code := pgsession.Code(err)
	return code == "42P01" || code == "3F000"
}
