package verify

import (
	"context"
	"fmt"
	"math/big"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/decant/decant/mapping"
)

// evenBounds cuts a table whose key is one integer column into spans of
// equal key width, from the key's least and greatest values (two probes
// of its index) and the planner's estimate of the table's rows, instead
// of reading every key: ok is false when that does not apply (another
// key, a partitioned table, no estimate because the table was never
// vacuumed or analyzed). Gaps in the key make some spans hold fewer
// rows than others; the spans still cover every key.
func (w *worker) evenBounds(ctx context.Context, t *table) (bounds [][]string, ok bool, err error) {
	if len(t.key) != 1 || t.partitioned || !isInteger(t.rel.Columns[t.cols[t.key[0]]].Type) {
		return nil, false, nil
	}
	src, err := w.source(ctx)
	if err != nil {
		return nil, false, err
	}
	var tuples float64
	var pages, nowPages int64
	if err := src.QueryRow(ctx, `SELECT reltuples::float8, relpages::int8, pg_relation_size(oid) / current_setting('block_size')::int8
		FROM pg_class WHERE oid = $1::regclass`, mapping.QuotePGTable(t.def.Name)).Scan(&tuples, &pages, &nowPages); err != nil {
		return nil, false, fmt.Errorf("read the size of source table %s: %w", t.def.Name, err)
	}
	est, known := estimateRows(tuples, pages, nowPages)
	if !known {
		return nil, false, nil
	}
	var lo, hi pgtype.Int8
	k := t.srcKey[0]
	if err := src.QueryRow(ctx, "SELECT min("+k+")::int8, max("+k+")::int8 FROM "+t.srcFrom()).Scan(&lo, &hi); err != nil {
		return nil, false, fmt.Errorf("read the key range of source table %s: %w", t.def.Name, err)
	}
	t.rows = est
	if !lo.Valid {
		return nil, true, nil
	}
	return evenCuts(lo.Int64, hi.Int64, (est+w.cfg.SpanRows-1)/w.cfg.SpanRows), true, nil
}

func isInteger(oid uint32) bool {
	return oid == pgtype.Int2OID || oid == pgtype.Int4OID || oid == pgtype.Int8OID
}

// estimateRows scales the rows pg_class counted when the table was last
// vacuumed or analyzed to its pages now, as the planner does.
func estimateRows(tuples float64, pages, nowPages int64) (int64, bool) {
	switch {
	case tuples < 0:
		return 0, false // never vacuumed or analyzed
	case pages > 0:
		return int64(tuples / float64(pages) * float64(nowPages)), true
	case nowPages == 0:
		return 0, true // empty
	}
	return 0, false
}

// evenCuts returns the n-1 boundaries cutting [lo, hi] into n spans of
// equal width (fewer when the range is narrower than n).
func evenCuts(lo, hi, n int64) [][]string {
	width := new(big.Int).Sub(big.NewInt(hi), big.NewInt(lo))
	width.Add(width, big.NewInt(1))
	if n <= 1 || width.Cmp(big.NewInt(n)) < 0 {
		n = min(n, width.Int64())
	}
	if n <= 1 {
		return nil
	}
	width.Div(width.Add(width, big.NewInt(n-1)), big.NewInt(n)) // rounded up
	var out [][]string
	b := big.NewInt(lo)
	for i := int64(1); i < n; i++ {
		b.Add(b, width)
		if b.Cmp(big.NewInt(hi)) > 0 {
			break
		}
		out = append(out, []string{b.String()})
	}
	return out
}
