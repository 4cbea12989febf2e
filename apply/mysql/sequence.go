package mysql

import (
	"context"
	"fmt"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// SyncSequence gives the target column a source sequence feeds (table
// routed, column renamed as configured) the source's next value as its
// table's AUTO_INCREMENT. A column that is not AUTO_INCREMENT is left
// alone, and the line it returns says so: new rows there need explicit
// values.
func (a *Admin) SyncSequence(ctx context.Context, s source.Sequence) (string, error) {
	target, col := a.cfg.Router.Route(s.Table), a.cfg.Columns[s.Table].TargetColumn(s.Column)
	var extra string
	err := a.s.Conn.QueryRowContext(ctx, `SELECT EXTRA FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND COLUMN_NAME = ?`, target.Schema, target.Name, col).Scan(&extra)
	if err != nil {
		return "", fmt.Errorf("read target column %s.%s: %w", target, col, err)
	}
	if extra != "auto_increment" {
		return fmt.Sprintf("%s.%s: not AUTO_INCREMENT on the target (the source's next value is %d); new rows there need explicit values", mapping.QuoteMySQLTable(target), col, s.Next), nil
	}
	// MySQL never sets AUTO_INCREMENT below the largest value present.
	if _, err := a.s.Conn.ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s AUTO_INCREMENT = %d", mapping.QuoteMySQLTable(target), s.Next)); err != nil {
		return "", fmt.Errorf("set AUTO_INCREMENT of %s: %w", target, err)
	}
	return fmt.Sprintf("%s.%s: AUTO_INCREMENT %d", target, col, s.Next), nil
}
