package integration

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestKeylessUsesIndex: a keyless table (REPLICA IDENTITY FULL) of 100,000
// rows with an index on the target. Each streamed UPDATE and DELETE finds
// its row by the whole old row, compared column by column in the column's
// own type, so the target can use its index: none of the 1,000 changes may
// scan the table. (A text comparison, "col::text IS NOT DISTINCT FROM $1",
// scanned all 100,000 rows for each.)
func TestKeylessUsesIndex(t *testing.T) {
	const schema = `CREATE TABLE big (id integer, v text, n numeric(12,4), at timestamptz);
CREATE INDEX big_id ON big (id);
ALTER TABLE big REPLICA IDENTITY FULL;`
	const load = `INSERT INTO big SELECT g, 'v' || g, g / 7.0, '2020-01-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 100000) g;`
	const workload = `UPDATE big SET v = v || 'x' WHERE id % 200 = 0;
DELETE FROM big WHERE id % 200 = 1;`
	for _, mysql := range []bool{false, true} {
		name := "postgres"
		if mysql {
			name = "mariadb"
		}
		t.Run(name, func(t *testing.T) {
			p := newTargetPair(t, mysql)
			psql(t, p.src, schema)
			psql(t, p.src, load)
			if mysql {
				p.mustDecant("init", "--copy", "--create-tables")
			} else {
				psql(t, p.tgt, schema)
				p.mustDecant("init", "--copy")
			}
			psql(t, p.src, workload)
			if mysql {
				scanned := func() int64 {
					n, err := strconv.ParseInt(p.myValue(`SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'HANDLER_READ_RND_NEXT'`), 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					return n
				}
				before := scanned()
				p.mustDecant("run", "--catch-up")
				// A scan of the table reads 100,000 rows; a scan per change
				// would read 100 million. Catalog reads add a few hundred.
				if got := scanned() - before; got > 50000 {
					t.Errorf("the target read %d rows sequentially while applying 1,000 changes to an indexed table", got)
				}
			} else {
				stats := func() (seq, idx, changed int64) {
					v := queryValue(t, p.tgt, `SELECT seq_scan || ' ' || coalesce(idx_scan, 0) || ' ' || (n_tup_upd + n_tup_del) FROM pg_stat_user_tables WHERE relname = 'big'`)
					f := strings.Fields(v)
					seq, _ = strconv.ParseInt(f[0], 10, 64)
					idx, _ = strconv.ParseInt(f[1], 10, 64)
					changed, _ = strconv.ParseInt(f[2], 10, 64)
					return seq, idx, changed
				}
				seq0, idx0, changed0 := stats()
				p.mustDecant("run", "--catch-up")
				// The target backend reports its statistics when it ends,
				// which is just after decant exits.
				var seq, idx, changed int64
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
					if seq, idx, changed = stats(); changed-changed0 >= 1000 {
						break
					}
				}
				if changed-changed0 != 1000 {
					t.Fatalf("the target's statistics show %d changed rows, want 1000", changed-changed0)
				}
				if seq != seq0 || idx-idx0 < 1000 {
					t.Errorf("applying 1,000 changes took %d sequential scans and %d index scans of the target table; want none and at least 1,000", seq-seq0, idx-idx0)
				}
			}
			p.assertEqual()
		})
	}
}
