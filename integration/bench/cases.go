package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/decant/decant/integration/harness"
)

// schema is made on the source and on every PostgreSQL target database
// before the pipelines, so that every publication and every target holds
// each table (MariaDB gets them from init --create-tables). bench is the
// table of the insert, update, delete, single and large cases; ins and
// updel, of the insert1m and updel cases, have an int key, a bigint, a
// 40-byte text, numeric(14,4), timestamptz and jsonb; bench_marker takes
// the one row each case commits last, which stops every consumer's clock
// (timing.go).
const schema = `
CREATE TABLE bench (id bigint PRIMARY KEY, n integer, label text, amount numeric(14,2), at timestamptz, flag boolean);
CREATE TABLE bench_marker (id integer PRIMARY KEY);
CREATE TABLE ins (id integer PRIMARY KEY, big bigint, label text, amount numeric(14,4), at timestamptz, doc jsonb);
CREATE TABLE updel (id integer PRIMARY KEY, big bigint, label text, amount numeric(14,4), at timestamptz, doc jsonb);`

// wideRow is the select list of an ins or updel row for id g: the same
// values wherever it is run, so the source and every target agree.
const wideRow = `g, g * 7919::bigint, md5(g::text) || lpad(g::text, 8, '0'), (g % 100000) / 7.0,
	'2026-01-01'::timestamptz + g * interval '1 s', jsonb_build_object('k', g % 100, 'tag', 'v' || g % 7)`

type benchCase struct {
	key  string // name for -only
	name string // what the table says
	rows int    // row changes, for rows/s and CPU per row
	txns int    // source transactions, for transactions/s
	// load builds the backlog on the source, in transactions it delimits
	// itself; the case's marker is committed after it.
	load func(ctx context.Context, b *bench) error
	// preload, when set, loads the rows the case changes into one
	// PostgreSQL database; prepare runs it on the source and on each
	// PostgreSQL target alike before any slot exists, so that it is no
	// part of any backlog, and init --copy brings the rows to MariaDB.
	preload func(ctx context.Context, p *harness.Postgres, db string) error
	// sourceSQL runs on the source after preload.
	sourceSQL string
	tables    []string // what the case changes, for checkTargets
	needs     string   // key of the case that loads the rows this one changes
	large     bool     // one large transaction, drained by the large-case consumers
}

// sqlLoad is a load that runs sql on the source.
func sqlLoad(sql string) func(ctx context.Context, b *bench) error {
	return func(ctx context.Context, b *bench) error { return execSQL(ctx, b.srcDSN, sql) }
}

// The pgbench case's shape: tpcb-like at scale 10, 4 clients, 80,000
// transactions in all. Each transaction updates an account, a teller and
// a branch (10 hot rows) and inserts into pgbench_history: 4 row changes.
const (
	pgbenchScale   = 10
	pgbenchClients = 4
	pgbenchTxns    = 80000
)

func pgbench(ctx context.Context, p *harness.Postgres, db string, args ...string) error {
	cmd := exec.CommandContext(ctx, "/usr/lib/postgresql/15/bin/pgbench",
		append(args, "-h", "127.0.0.1", "-p", strconv.Itoa(p.Port), "-U", "postgres", db)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

func cases(rows, largeRows, copyRows int) []benchCase {
	txns := rows / 1000
	return []benchCase{
		{
			key:    "insert",
			tables: []string{"bench"},
			name:   fmt.Sprintf("insert %s rows, 1,000-row transactions", thousands(int64(rows))),
			rows:   rows,
			txns:   txns,
			load: sqlLoad(fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				INSERT INTO bench SELECT g, g %% 1000, 'label ' || g, g / 7.0, '2026-01-01'::timestamptz + g * interval '1 s', g %% 2 = 0
				FROM generate_series(t * 1000 + 1, t * 1000 + 1000) g; COMMIT; END LOOP; END $$;`, txns-1)),
		},
		{
			key:    "update",
			tables: []string{"bench"},
			name:   fmt.Sprintf("update %s rows, 1,000-row transactions", thousands(int64(rows/2))),
			rows:   rows / 2,
			txns:   txns / 2,
			needs:  "insert",
			load: sqlLoad(fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				UPDATE bench SET n = n + 1, label = label || '+' WHERE id BETWEEN t * 2000 + 1 AND t * 2000 + 2000 AND id %% 2 = 0; COMMIT; END LOOP; END $$;`, txns/2-1)),
		},
		{
			key:    "delete",
			tables: []string{"bench"},
			name:   fmt.Sprintf("delete %s rows, 1,000-row transactions", thousands(int64(rows/4))),
			rows:   rows / 4,
			txns:   txns / 4,
			needs:  "insert",
			load: sqlLoad(fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				DELETE FROM bench WHERE id BETWEEN t * 4000 + 1 AND t * 4000 + 4000 AND id %% 4 = 1; COMMIT; END LOOP; END $$;`, txns/4-1)),
		},
		{
			key:    "single",
			tables: []string{"bench"},
			name:   fmt.Sprintf("%s single-row transactions", thousands(int64(rows/20))),
			rows:   rows / 20,
			txns:   rows / 20,
			needs:  "insert",
			load: sqlLoad(fmt.Sprintf(`DO $$ BEGIN FOR g IN 1..%d LOOP
				UPDATE bench SET amount = amount + 1 WHERE id = g * 3; COMMIT; END LOOP; END $$;`, rows/20)),
		},
		{
			// One statement, so one transaction. The ids follow whatever
			// the earlier cases left, so the case runs after them or alone.
			key:    "large",
			tables: []string{"bench"},
			name:   fmt.Sprintf("insert %s rows in one transaction", thousands(int64(largeRows))),
			rows:   largeRows,
			txns:   1,
			large:  true,
			load: sqlLoad(fmt.Sprintf(`INSERT INTO bench SELECT id, id %% 1000, 'label ' || id, id / 7.0, '2026-01-01'::timestamptz + id * interval '1 s', id %% 2 = 0
				FROM (SELECT (SELECT coalesce(max(id), 0) FROM bench) + g AS id FROM generate_series(1, %d) g) s;`, largeRows)),
		},
		{
			// pgbench -i loads the same rows wherever it runs (abalance
			// 0, blank filler). pgbench_history has no key and takes
			// inserts only; REPLICA IDENTITY FULL is what a source would
			// give a keyless table it publishes. -n: no vacuum and, above
			// all, no TRUNCATE of pgbench_history before the run, which
			// would be replicated.
			key:    "pgbench",
			tables: []string{"pgbench_accounts", "pgbench_branches", "pgbench_tellers", "pgbench_history"},
			name:   fmt.Sprintf("pgbench tpcb-like, scale %d, %d clients, %s transactions", pgbenchScale, pgbenchClients, thousands(pgbenchTxns)),
			rows:   4 * pgbenchTxns,
			txns:   pgbenchTxns,
			preload: func(ctx context.Context, p *harness.Postgres, db string) error {
				return pgbench(ctx, p, db, "-i", "-q", "-s", strconv.Itoa(pgbenchScale))
			},
			sourceSQL: `ALTER TABLE pgbench_history REPLICA IDENTITY FULL`,
			load: func(ctx context.Context, b *bench) error {
				return pgbench(ctx, b.src, "bench", "-n", "-c", strconv.Itoa(pgbenchClients), "-j", "2",
					"-t", strconv.Itoa(pgbenchTxns/pgbenchClients))
			},
		},
		{
			key:    "insert1m",
			tables: []string{"ins"},
			name:   "insert 1,000,000 rows (int, bigint, text, numeric, timestamptz, jsonb), 1,000-row transactions",
			rows:   1000000,
			txns:   1000,
			load: sqlLoad(`DO $$ BEGIN FOR t IN 0..999 LOOP
				INSERT INTO ins SELECT ` + wideRow + ` FROM generate_series(t * 1000 + 1, t * 1000 + 1000) g; COMMIT; END LOOP; END $$;`),
		},
		{
			// The 1,000,000 rows are loaded before the slots; the backlog
			// is 2,000 transactions each updating 100 rows spread over
			// 500 ids, then 1,000 each deleting 100 other rows.
			key:    "updel",
			tables: []string{"updel"},
			name:   "on 1,000,000 rows: 2,000 100-row UPDATE, then 1,000 100-row DELETE transactions",
			rows:   300000,
			txns:   3000,
			preload: func(ctx context.Context, p *harness.Postgres, db string) error {
				return execSQL(ctx, p.DSN(db), `INSERT INTO updel SELECT `+wideRow+` FROM generate_series(1, 1000000) g`)
			},
			load: sqlLoad(`DO $$ BEGIN
				FOR t IN 0..1999 LOOP
					UPDATE updel SET big = big + 1, amount = amount + 1, at = at + interval '1 min'
					WHERE id BETWEEN t * 500 + 1 AND t * 500 + 500 AND id % 5 = 0; COMMIT;
				END LOOP;
				FOR t IN 0..999 LOOP
					DELETE FROM updel WHERE id BETWEEN t * 1000 + 1 AND t * 1000 + 1000 AND id % 10 = 1; COMMIT;
				END LOOP; END $$;`),
		},
		copyCase(copyRows),
		resyncCase(copyRows),
	}
}

// defaultCases is -only's default: every case.
const defaultCases = "insert,update,delete,single,large,pgbench,insert1m,updel,copy,resync"

// selectCases returns the cases -only names, in the order cases lists them.
func selectCases(all []benchCase, only string) ([]benchCase, error) {
	var keys []string
	for _, c := range all {
		keys = append(keys, c.key)
	}
	want := map[string]bool{}
	for _, k := range strings.Split(only, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(keys, k) {
			return nil, fmt.Errorf("-only: unknown case %q (cases: %s)", k, strings.Join(keys, ","))
		}
		want[k] = true
	}
	var picked []benchCase
	for _, c := range all {
		if !want[c.key] {
			continue
		}
		if c.needs != "" && !want[c.needs] {
			return nil, fmt.Errorf("-only: case %s changes the rows case %s loads; add %s", c.key, c.needs, c.needs)
		}
		picked = append(picked, c)
	}
	return picked, nil
}
