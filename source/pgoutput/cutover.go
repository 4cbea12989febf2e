package pgoutput

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/source"
)

// FencePrefix is the prefix of the logical decoding message WriteFence
// commits.
const FencePrefix = "decant.fence"

// WriteFence commits a transactional logical decoding message on the
// source (pg_logical_emit_message) and returns the WAL position after its
// commit. The message passes through the pipeline even when no table
// changes, so once the pipeline's checkpoint reaches that position the
// target holds everything the source committed before the fence.
func WriteFence(ctx context.Context, conn *pgx.Conn, pipeline string) (source.LSN, error) {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT pg_logical_emit_message(true, $1, $2)`,
			FencePrefix, pipeline+" "+time.Now().UTC().Format(time.RFC3339Nano))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("write the fence on the source: %w", err)
	}
	var lsn source.LSN
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("read the source's WAL position: %w", err)
	}
	return lsn, nil
}

// Sequences lists the columns of a table that a sequence feeds (serial
// and identity columns, as pg_get_serial_sequence finds them), in column
// order, each with the value its sequence gives next.
func Sequences(ctx context.Context, conn *pgx.Conn, table source.TableName) ([]source.Sequence, error) {
	rows, err := conn.Query(ctx, `SELECT a.attname::text, s.seq::text FROM pg_attribute a
		CROSS JOIN LATERAL (SELECT pg_get_serial_sequence($1, a.attname) AS seq) s
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped AND s.seq IS NOT NULL
		ORDER BY a.attnum`, pgx.Identifier{table.Schema, table.Name}.Sanitize())
	if err != nil {
		return nil, fmt.Errorf("read the sequences of %s: %w", table, err)
	}
	type colSeq struct{ col, seq string }
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (colSeq, error) {
		var cs colSeq
		err := row.Scan(&cs.col, &cs.seq)
		return cs, err
	})
	if err != nil {
		return nil, fmt.Errorf("read the sequences of %s: %w", table, err)
	}
	out := make([]source.Sequence, len(found))
	for i, cs := range found {
		next, err := nextValue(ctx, conn, cs.seq)
		if err != nil {
			return nil, err
		}
		out[i] = source.Sequence{Table: table, Column: cs.col, Next: next}
	}
	return out, nil
}

// nextValue is the value a sequence gives next. seq is its name as
// pg_get_serial_sequence returns it: already quoted.
func nextValue(ctx context.Context, conn *pgx.Conn, seq string) (int64, error) {
	var next int64
	err := conn.QueryRow(ctx, `SELECT CASE WHEN is_called
		THEN last_value + (SELECT seqincrement FROM pg_sequence WHERE seqrelid = $1::regclass)
		ELSE last_value END FROM `+seq, seq).Scan(&next)
	if err != nil {
		return 0, fmt.Errorf("read sequence %s: %w", seq, err)
	}
	return next, nil
}
