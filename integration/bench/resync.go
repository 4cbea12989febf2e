package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// The resync case: a 1M-row table copied by decant init --copy into an
// empty database, then 1% of its rows changed on the target behind
// decant's back (0.5% updated, 0.25% deleted, 0.25% added), then decant
// resync --yes. It times both, on both targets, and gives resync's time
// as a share of the copy's: the goal is at most 0.3×. decant verify then
// checks that the resync left the target equal. The 1% is changed twice:
// spread evenly over the key (every span differs, so resync reads the
// whole table on both sides), then clustered in the highest 1% of keys
// (recent rows, as a target restored from a backup or a lost slot
// leaves them: the other spans cost one checksum each).

const resyncSchema = `
CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), created timestamptz, attrs jsonb, qty integer);
CREATE INDEX items_created ON items (created);`

// resyncDiverge changes 1% of the rows on the target, spread or
// clustered; the same SQL runs on PostgreSQL and MariaDB.
var resyncDiverge = []struct {
	name string
	sql  []string
}{
	{"spread", []string{
		`UPDATE items SET qty = qty + 1 WHERE id % 200 = 0`,
		`DELETE FROM items WHERE id % 400 = 1`,
		`INSERT INTO items (id, name, qty) SELECT id + 10000000, 'extra', 0 FROM items WHERE id % 400 = 2`,
	}},
	{"clustered", []string{
		`UPDATE items SET qty = qty + 1 WHERE id > %[1]d AND id % 2 = 0`,
		`DELETE FROM items WHERE id > %[1]d AND id % 4 = 1`,
		`INSERT INTO items (id, name, qty) SELECT id + 10000000, 'extra', 0 FROM items WHERE id > %[1]d AND id % 4 = 3`,
	}},
}

func resyncCase(rows int) benchCase {
	return benchCase{
		key:  "resync",
		name: fmt.Sprintf("resync: %s-row table, 1%% of rows differing", thousands(int64(rows))),
		rows: rows,
		load: func(ctx context.Context, b *bench) error {
			if err := b.src.CreateDatabase(ctx, "resyncsrc"); err != nil {
				return err
			}
			items := strings.SplitN(fmt.Sprintf(copyLoad, rows), ";", 2)[0]
			return execSQL(ctx, b.src.DSN("resyncsrc"), resyncSchema+items+";\nANALYZE;")
		},
	}
}

// runResync times init --copy and resync into each target.
func (b *bench) runResync(ctx context.Context, c benchCase) ([]result, []string, error) {
	if err := c.load(ctx, b); err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	src := b.src.DSN("resyncsrc")
	jobs := fmt.Sprint(runtime.NumCPU())
	targets := []struct {
		name, pipeline, writes string
		create                 func(ctx context.Context) (string, error)
		exec                   func(ctx context.Context, dsn, sql string) error
	}{
		{"PostgreSQL", "resync_pg", "pg", func(ctx context.Context) (string, error) {
			return b.tgt.DSN("resync_pg"), b.tgt.CreateDatabase(ctx, "resync_pg")
		}, execSQL},
		{"MariaDB", "resync_my", "mariadb", func(ctx context.Context) (string, error) {
			return b.my.DSN("resync_my"), b.my.CreateDatabase(ctx, "resync_my")
		}, func(ctx context.Context, _, q string) error { return b.execMy(ctx, "resync_my", q) }},
	}
	var results []result
	var notes []string
	for _, t := range targets {
		dsn, err := t.create(ctx)
		if err != nil {
			return nil, nil, err
		}
		run := func(name string, args ...string) consumer {
			return consumer{name, func(ctx context.Context, m *meter) (result, error) {
				cmd := exec.CommandContext(ctx, b.bin, append(args, "--jobs", jobs, "--source", src, "--target", dsn, "--pipeline", t.pipeline)...)
				return timeExit(ctx, m, name, cmd)
			}, t.writes}
		}
		cp, err := b.timeCPU(ctx, run("decant init --copy --create-tables into "+t.name, "init", "--copy", "--create-tables"))
		cp.consumer = "decant init --copy --create-tables into " + t.name
		if err != nil {
			return nil, nil, err
		}
		results = append(results, cp)
		for _, d := range resyncDiverge {
			for _, q := range d.sql {
				if strings.Contains(q, "%[1]d") {
					q = fmt.Sprintf(strings.ReplaceAll(q, "% ", "%% "), c.rows-c.rows/100)
				}
				if err := t.exec(ctx, dsn, q); err != nil {
					return nil, nil, fmt.Errorf("diverge %s: %w", t.name, err)
				}
			}
			name := "decant resync --yes on " + t.name + ", 1% " + d.name
			args := []string{"resync", "--yes"}
			if profileDir != "" {
				args = append(args, "--cpuprofile", filepath.Join(profileDir, "resync-"+t.pipeline+"-"+d.name+".pprof"))
			}
			rs, err := b.timeCPU(ctx, run(name, args...))
			rs.consumer = name
			if err != nil {
				return nil, nil, err
			}
			if out, err := exec.CommandContext(ctx, b.bin, "verify", "--source", src, "--target", dsn, "--pipeline", t.pipeline).CombinedOutput(); err != nil {
				return nil, nil, fmt.Errorf("verify after resync on %s: %v\n%s", t.name, err, out)
			}
			ratio := rs.elapsed.Seconds() / cp.elapsed.Seconds()
			fmt.Fprintf(os.Stderr, "%s: %s: init --copy %.1f s, resync (1%% %s) %.1f s (%.2f×)\n", c.name, t.name, cp.elapsed.Seconds(), d.name, rs.elapsed.Seconds(), ratio)
			notes = append(notes, fmt.Sprintf("resync case: %s, 1%% of rows %s: resync %.1f s vs init --copy %.1f s into an empty database: %.2f× (goal ≤ 0.3×)",
				t.name, d.name, rs.elapsed.Seconds(), cp.elapsed.Seconds(), ratio))
			results = append(results, rs)
		}
	}
	return results, notes, nil
}

// execMy runs one statement on a MariaDB database of the bench.
func (b *bench) execMy(ctx context.Context, db, q string) error {
	pool, err := sql.Open("mysql", fmt.Sprintf("decant:decant@tcp(127.0.0.1:%d)/%s", b.my.Port, db))
	if err != nil {
		return err
	}
	defer pool.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	_, err = pool.ExecContext(ctx, q)
	return err
}
