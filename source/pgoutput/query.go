package pgoutput

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// queryOne runs a query returning one text value on a replication
// connection (simple protocol only).
func queryOne(ctx context.Context, conn *pgconn.PgConn, sql string, scan func(string) error) error {
	res, err := conn.Exec(ctx, sql).ReadAll()
	if err != nil {
		return err
	}
	if len(res) == 0 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return fmt.Errorf("query %q returned no single value", sql)
	}
	return scan(string(res[0].Rows[0][0]))
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
