package checkpoint

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// SchemaVersion is the version of the checkpoint table this decant
// writes: 1 was the first, 2 added hold_lsn, 3 timeline, 4 ddl. It is kept as
// the table's comment, "decant checkpoint schema 4". A table without one
// was made before versions were recorded (1 to 3): like any older
// version it is upgraded in place, by adding what it lacks and setting
// the comment, at init or at the first read of a run or status. A table
// of a newer version than this decant knows is refused, since this
// decant would not write what the newer one relies on.
const SchemaVersion = 4

const versionComment = "decant checkpoint schema "

var pgSetVersion = `COMMENT ON TABLE decant.checkpoint IS '` + versionComment + strconv.Itoa(SchemaVersion) + `'`

var mysqlSetVersion = `ALTER TABLE decant_checkpoint COMMENT = '` + versionComment + strconv.Itoa(SchemaVersion) + `'`

// ErrNewerSchema means the checkpoint table was written by a newer decant.
var ErrNewerSchema = errors.New("checkpoint table from a newer decant")

// parseVersion reads a table comment; 0 when it holds no version.
func parseVersion(comment string) int {
	v, err := strconv.Atoi(strings.TrimPrefix(comment, versionComment))
	if err != nil || !strings.HasPrefix(comment, versionComment) {
		return 0
	}
	return v
}

// checkVersion refuses a version newer than SchemaVersion.
func checkVersion(table string, v int) error {
	if v <= SchemaVersion {
		return nil
	}
	return fmt.Errorf("%w: %s on the target has schema version %d, and this decant knows versions up to %d; run the decant that wrote it, or a later one (docs/operations.md#upgrading)", ErrNewerSchema, table, v, SchemaVersion)
}

// pgVersion upgrades an older decant.checkpoint in place and refuses a
// newer one; with no table it does nothing (init makes one).
func pgVersion(ctx context.Context, conn *pgx.Conn) error {
	var comment *string
	err := conn.QueryRow(ctx, `SELECT obj_description(c.oid, 'pg_class') FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'decant' AND c.relname = 'checkpoint'`).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the schema version of decant.checkpoint on the target: %w", err)
	}
	v := 0
	if comment != nil {
		v = parseVersion(*comment)
	}
	if err := checkVersion("decant.checkpoint", v); err != nil || v == SchemaVersion {
		return err
	}
	if _, err := conn.Exec(ctx, pgUpgrade); err != nil {
		return fmt.Errorf("upgrade decant.checkpoint on the target from schema version %d to %d (run decant once as the table's owner): %w", v, SchemaVersion, err)
	}
	return nil
}

// mysqlVersion is pgVersion for decant_checkpoint.
func mysqlVersion(ctx context.Context, db Querier) error {
	var comment string
	err := db.QueryRowContext(ctx, `SELECT TABLE_COMMENT FROM information_schema.TABLES
		WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'decant_checkpoint'`).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the schema version of decant_checkpoint on the target: %w", err)
	}
	v := parseVersion(comment)
	if err := checkVersion("decant_checkpoint", v); err != nil || v == SchemaVersion {
		return err
	}
	if err := mysqlUpgrade(ctx, db); err != nil {
		return fmt.Errorf("upgrade decant_checkpoint on the target from schema version %d to %d (run decant once as a user with the ALTER privilege): %w", v, SchemaVersion, err)
	}
	return nil
}
