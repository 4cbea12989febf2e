package pg

import (
	"context"
	"fmt"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// SyncSequence sets the sequence of the target column a source sequence
// feeds (table routed, column renamed as configured) so that it gives
// next what the source's gives next: setval(seq, next, false). It says
// what it set, and refuses a target column without a sequence: new rows
// there would need explicit values.
func (a *Admin) SyncSequence(ctx context.Context, s source.Sequence) (string, error) {
	target, col := a.cfg.Router.Route(s.Table), a.cfg.Columns[s.Table].TargetColumn(s.Column)
	var seq *string
	if err := a.conn.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, $2)`, mapping.QuotePGTable(target), col).Scan(&seq); err != nil {
		return "", fmt.Errorf("find the sequence of %s.%s on the target: %w", target, col, err)
	}
	if seq == nil {
		return "", fmt.Errorf("target column %s.%s has no sequence (serial or identity) but the source's has: give it one, or new rows on the target will need explicit values", target, col)
	}
	if _, err := a.conn.Exec(ctx, `SELECT setval($1, $2, false)`, *seq, s.Next); err != nil {
		return "", fmt.Errorf("set sequence %s on the target: %w", *seq, err)
	}
	return fmt.Sprintf("%s.%s: next value %d", target, col, s.Next), nil
}
