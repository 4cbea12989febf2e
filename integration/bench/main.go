// Command bench measures how fast decant drains a backlog from a
// PostgreSQL 15 source into a PostgreSQL 15 target, next to PostgreSQL's
// own subscription and to pg_recvlogical (the rate at which the source can
// decode at all), on the same machine in the same run.
//
//	go run ./integration/bench [-rows 1000000]     (or: make bench)
//
// Each case loads its workload on the source while nothing consumes (so a
// backlog builds in every slot), then times each consumer catching up.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/harness"
)

const schema = `CREATE TABLE bench (id bigint PRIMARY KEY, n integer, label text, amount numeric(14,2), at timestamptz, flag boolean);`

type benchCase struct {
	name string
	rows int    // rows changed, for rows/s
	load string // SQL run on the source, in transactions it delimits itself
}

func cases(rows int) []benchCase {
	txns := rows / 1000
	return []benchCase{
		{
			name: fmt.Sprintf("insert %d rows, 1,000-row transactions", rows),
			rows: rows,
			load: fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				INSERT INTO bench SELECT g, g %% 1000, 'label ' || g, g / 7.0, '2026-01-01'::timestamptz + g * interval '1 s', g %% 2 = 0
				FROM generate_series(t * 1000 + 1, t * 1000 + 1000) g; COMMIT; END LOOP; END $$;`, txns-1),
		},
		{
			name: fmt.Sprintf("update %d rows, 1,000-row transactions", rows/2),
			rows: rows / 2,
			load: fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				UPDATE bench SET n = n + 1, label = label || '+' WHERE id BETWEEN t * 2000 + 1 AND t * 2000 + 2000 AND id %% 2 = 0; COMMIT; END LOOP; END $$;`, txns/2-1),
		},
		{
			name: fmt.Sprintf("delete %d rows, 1,000-row transactions", rows/4),
			rows: rows / 4,
			load: fmt.Sprintf(`DO $$ BEGIN FOR t IN 0..%d LOOP
				DELETE FROM bench WHERE id BETWEEN t * 4000 + 1 AND t * 4000 + 4000 AND id %% 4 = 1; COMMIT; END LOOP; END $$;`, txns/4-1),
		},
		{
			name: fmt.Sprintf("%d single-row transactions", rows/20),
			rows: rows / 20,
			load: fmt.Sprintf(`DO $$ BEGIN FOR g IN 1..%d LOOP
				UPDATE bench SET amount = amount + 1 WHERE id = g * 3; COMMIT; END LOOP; END $$;`, rows/20),
		},
	}
}

func main() {
	rows := flag.Int("rows", 1000000, "rows inserted by the first case")
	flag.Parse()
	if err := run(context.Background(), *rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench failed:", err)
		os.Exit(1)
	}
}

type result struct {
	consumer string
	elapsed  time.Duration
	rssKiB   int64
}

func run(ctx context.Context, rows int) error {
	dir, err := os.MkdirTemp("", "decant-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := harness.BuildDecant(ctx, dir)
	if err != nil {
		return err
	}
	settings := map[string]string{"shared_buffers": "512MB", "max_wal_size": "4GB", "checkpoint_timeout": "30min"}
	src, err := harness.StartPostgres(ctx, harness.PostgresOptions{Settings: settings})
	if err != nil {
		return err
	}
	defer src.Remove()
	// The subscriber's launcher would otherwise wait up to 5 s before
	// starting the apply worker of a re-enabled subscription.
	tgtSettings := map[string]string{"wal_retrieve_retry_interval": "50ms"}
	for k, v := range settings {
		tgtSettings[k] = v
	}
	tgt, err := harness.StartPostgres(ctx, harness.PostgresOptions{Settings: tgtSettings})
	if err != nil {
		return err
	}
	defer tgt.Remove()
	for _, db := range []string{"decant", "native"} {
		if err := tgt.CreateDatabase(ctx, db); err != nil {
			return err
		}
		if err := execSQL(ctx, tgt.DSN(db), schema); err != nil {
			return err
		}
	}
	if err := src.CreateDatabase(ctx, "bench"); err != nil {
		return err
	}
	srcDSN := src.DSN("bench")
	if err := execSQL(ctx, srcDSN, schema); err != nil {
		return err
	}
	decant := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, bin, append(args, "--source", srcDSN, "--target", tgt.DSN("decant"), "--pipeline", "bench")...)
	}
	if out, err := decant("init").CombinedOutput(); err != nil {
		return fmt.Errorf("decant init: %v\n%s", err, out)
	}
	// A second pipeline from the same source into MariaDB.
	my, err := harness.StartMariaDB(ctx)
	if err != nil {
		return err
	}
	defer my.Remove()
	if err := my.CreateDatabase(ctx, "bench"); err != nil {
		return err
	}
	decantMy := func(args ...string) *exec.Cmd {
		return exec.CommandContext(ctx, bin, append(args, "--source", srcDSN, "--target", my.DSN("bench"), "--pipeline", "bench_my")...)
	}
	if out, err := decantMy("init", "--create-tables").CombinedOutput(); err != nil {
		return fmt.Errorf("decant init (MariaDB): %v\n%s", err, out)
	}
	// The native subscription and the drain get their own slots on the
	// same publication, created before any load.
	if err := execSQL(ctx, srcDSN, `SELECT pg_create_logical_replication_slot('native', 'pgoutput');
		SELECT pg_create_logical_replication_slot('drain', 'pgoutput');
		SELECT pg_create_logical_replication_slot('warm', 'pgoutput');`); err != nil {
		return err
	}
	if err := execSQL(ctx, tgt.DSN("native"), fmt.Sprintf(`CREATE SUBSCRIPTION native CONNECTION '%s' PUBLICATION bench
		WITH (create_slot = false, slot_name = 'native', copy_data = false, enabled = false)`, connString(src.Port, "bench"))); err != nil {
		return err
	}

	fmt.Printf("| case | consumer | seconds | rows/s | peak RSS |\n|---|---|---:|---:|---:|\n")
	for _, c := range cases(rows) {
		if err := execSQL(ctx, srcDSN, c.load); err != nil {
			return fmt.Errorf("%s: load: %w", c.name, err)
		}
		end, err := currentLSN(ctx, srcDSN)
		if err != nil {
			return err
		}
		drain := func(slot string) *exec.Cmd {
			return exec.CommandContext(ctx, "/usr/lib/postgresql/15/bin/pg_recvlogical",
				"-d", connString(src.Port, "bench"), "--slot", slot, "--start", "--endpos", end,
				"-o", "proto_version=1", "-o", "publication_names=bench", "-f", "/dev/null", "--no-loop")
		}
		// An untimed drain first, so that every timed consumer finds the
		// WAL in the page cache and none pays for reading it from disk.
		if _, err := timeCmd("warm-up", drain("warm")); err != nil {
			return err
		}
		var results []result
		r, err := timeCmd("pg_recvlogical (decode only)", drain("drain"))
		if err != nil {
			return err
		}
		results = append(results, r)
		if r, err = timeCmd("decant run --catch-up", decant("run", "--catch-up")); err != nil {
			return err
		}
		results = append(results, r)
		if r, err = timeNative(ctx, srcDSN, tgt.DSN("native")); err != nil {
			return err
		}
		results = append(results, r)
		if r, err = timeCmd("decant run --catch-up into MariaDB", decantMy("run", "--catch-up")); err != nil {
			return err
		}
		results = append(results, r)
		for _, r := range results {
			rss := ""
			if r.rssKiB > 0 {
				rss = fmt.Sprintf("%d MiB", r.rssKiB/1024)
			}
			fmt.Printf("| %s | %s | %.1f | %.0f | %s |\n", c.name, r.consumer, r.elapsed.Seconds(), float64(c.rows)/r.elapsed.Seconds(), rss)
		}
	}
	return nil
}

func connString(port int, db string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=postgres dbname=%s sslmode=disable", port, db)
}

func timeCmd(name string, cmd *exec.Cmd) (result, error) {
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return result{}, fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	r := result{consumer: name, elapsed: time.Since(start)}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKiB = ru.Maxrss
	}
	return r, nil
}

// fingerprint summarises the bench table; equal fingerprints mean the
// subscriber has applied everything (its confirmed position lags by up to
// wal_receiver_status_interval, so it cannot tell when the work is done).
const fingerprint = `SELECT count(*)::text || '/' || coalesce(sum(n), 0)::text || '/' || coalesce(sum(amount), 0)::text || '/' ||
	coalesce(sum(length(label)), 0)::text FROM bench`

// timeNative enables the subscription and waits until the subscriber's
// table matches the source, then disables it again for the next case.
func timeNative(ctx context.Context, srcDSN, subDSN string) (result, error) {
	want, err := queryText(ctx, srcDSN, fingerprint)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	if err := execSQL(ctx, subDSN, `ALTER SUBSCRIPTION native ENABLE`); err != nil {
		return result{}, err
	}
	for {
		got, err := queryText(ctx, subDSN, fingerprint)
		if err != nil {
			return result{}, err
		}
		if got == want {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	conn, err := pgx.Connect(ctx, srcDSN)
	if err != nil {
		return result{}, err
	}
	defer conn.Close(ctx)
	if err := execSQL(ctx, subDSN, `ALTER SUBSCRIPTION native DISABLE`); err != nil {
		return result{}, err
	}
	for { // wait for the apply worker to release the slot
		var active bool
		if err := conn.QueryRow(ctx, `SELECT active FROM pg_replication_slots WHERE slot_name = 'native'`).Scan(&active); err != nil {
			return result{}, err
		}
		if !active {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return result{consumer: "PostgreSQL subscription", elapsed: elapsed}, nil
}

func currentLSN(ctx context.Context, dsn string) (string, error) {
	return queryText(ctx, dsn, `SELECT pg_current_wal_lsn()::text`)
}

func queryText(ctx context.Context, dsn, sql string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var s string
	err = conn.QueryRow(ctx, sql).Scan(&s)
	return s, err
}

func execSQL(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
