package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// The copy case: an initial copy of a database whose largest table has a
// million rows, by decant init --copy --create-tables into PostgreSQL and
// MariaDB, and by pg_dump and pg_restore into PostgreSQL, through a pipe
// and in directory format with one job per CPU. Every consumer starts
// from an empty database and ends with the tables, their rows, their
// primary keys and their secondary indexes.

const copySchema = `
CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(12,2), created timestamptz, attrs jsonb, qty integer);
CREATE INDEX items_created ON items (created);
CREATE TABLE customers (id integer PRIMARY KEY, name text, email text, joined date);
CREATE TABLE orders (id bigint PRIMARY KEY, customer integer, total numeric(12,2), placed timestamptz, status text);
CREATE INDEX orders_customer ON orders (customer);
CREATE TABLE settings (key text PRIMARY KEY, value text);`

const copyLoad = `
INSERT INTO items SELECT g, 'item ' || g || ' ' || repeat('x', g %% 40), (g %% 100000) / 100.0,
	'2025-01-01'::timestamptz + g * interval '17 s',
	jsonb_build_object('color', 'c' || (g %% 13), 'size', g %% 7, 'tags', jsonb_build_array('a', 'b' || (g %% 5))), g %% 1000
	FROM generate_series(1, %d) g;
INSERT INTO customers SELECT g, 'customer ' || g, 'c' || g || '@example.com', '2020-01-01'::date + g %% 2000 FROM generate_series(1, 50000) g;
INSERT INTO orders SELECT g, 1 + g %% 50000, (g %% 9999) / 10.0, '2025-06-01'::timestamptz + g * interval '1 min',
	(ARRAY['new', 'paid', 'shipped'])[1 + g %% 3] FROM generate_series(1, 200000) g;
INSERT INTO settings SELECT 'key ' || g, repeat('v', g) FROM generate_series(1, 100) g;`

// copyCase is the case's entry in cases; run sends it to runCopy. Its
// load fills a source database of its own, copysrc.
func copyCase(rows int) benchCase {
	return benchCase{
		key:  "copy",
		name: fmt.Sprintf("initial copy: %s-row table + 3 smaller (%s rows)", thousands(int64(rows)), thousands(int64(rows+250100))),
		rows: rows + 250100,
		load: func(ctx context.Context, b *bench) error {
			if err := b.src.CreateDatabase(ctx, "copysrc"); err != nil {
				return err
			}
			return execSQL(ctx, b.src.DSN("copysrc"), copySchema+fmt.Sprintf(copyLoad, rows)+"\nANALYZE;")
		},
	}
}

// runCopy loads the copy case's database and times each consumer copying
// it into an empty database of its own. The rows/s column counts every
// table's rows; the notes give MB/s over the source tables' heap size.
func (b *bench) runCopy(ctx context.Context, c benchCase) ([]result, []string, error) {
	src := b.src.DSN("copysrc")
	start := time.Now()
	if err := c.load(ctx, b); err != nil {
		return nil, nil, fmt.Errorf("load: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s: loaded in %.1f s\n", c.name, time.Since(start).Seconds())
	heap, err := queryText(ctx, src, `SELECT sum(pg_relation_size(oid))::text FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace`)
	if err != nil {
		return nil, nil, err
	}
	heapBytes, _ := strconv.ParseFloat(heap, 64)
	jobs := strconv.Itoa(runtime.NumCPU())
	dir, err := os.MkdirTemp("", "decant-bench-dump-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)

	pgBin := func(name string) string { return "/usr/lib/postgresql/15/bin/" + name }
	srcConn := connString(b.src.Port, "copysrc")
	var phases []string // decant's own account of where its time went
	decantCopy := func(m *meter, target, pipeline string) (result, error) {
		log := filepath.Join(dir, pipeline+".log")
		cmd := exec.CommandContext(ctx, "bash", "-c", fmt.Sprintf(`exec "$0" "$@" > '%s' 2>&1`, log), b.bin, "init", "--copy", "--create-tables", "--jobs", jobs,
			"--source", src, "--target", target, "--pipeline", pipeline, "--log-json")
		r, err := timeExit(ctx, m, "decant init --copy", cmd)
		out, _ := os.ReadFile(log)
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, `"msg":"initial copy done"`) || strings.Contains(line, `"msg":"keys and indexes built"`) {
				phases = append(phases, "copy case: "+pipeline+": "+line)
			}
		}
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, out)
		}
		return r, err
	}
	consumers := []consumer{
		{"decant init --copy --create-tables --jobs " + jobs, func(ctx context.Context, m *meter) (result, error) {
			if err := b.tgt.CreateDatabase(ctx, "copy_decant"); err != nil {
				return result{}, err
			}
			return decantCopy(m, b.tgt.DSN("copy_decant"), "copy_pg")
		}, "pg"},
		{"pg_dump -Fc | pg_restore", func(ctx context.Context, m *meter) (result, error) {
			if err := b.tgt.CreateDatabase(ctx, "copy_pipe"); err != nil {
				return result{}, err
			}
			script := fmt.Sprintf("set -o pipefail; %s -Fc -Z0 -d '%s' | %s -d '%s'",
				pgBin("pg_dump"), srcConn, pgBin("pg_restore"), connString(b.tgt.Port, "copy_pipe"))
			return timeExit(ctx, m, "pg_dump | pg_restore", exec.CommandContext(ctx, "bash", "-c", script))
		}, "pg"},
		{"pg_dump -Fd -j " + jobs + " && pg_restore -j " + jobs, func(ctx context.Context, m *meter) (result, error) {
			if err := b.tgt.CreateDatabase(ctx, "copy_dir"); err != nil {
				return result{}, err
			}
			// Timed apart too: the restore alone is the target's share of
			// the work, which no tool that loads the same rows skips.
			out := filepath.Join(dir, "dump")
			if err := m.begin(); err != nil {
				return result{}, err
			}
			dump, err := runCmd("pg_dump -j", exec.CommandContext(ctx, pgBin("pg_dump"), "-Fd", "-Z0", "-j", jobs, "-f", out, "-d", srcConn))
			if err != nil {
				return dump, err
			}
			restore, err := runCmd("pg_restore -j", exec.CommandContext(ctx, pgBin("pg_restore"), "-j", jobs, "-d", connString(b.tgt.Port, "copy_dir"), out))
			if err != nil {
				return restore, err
			}
			if err := m.exited(ctx); err != nil {
				return result{}, err
			}
			phases = append(phases, fmt.Sprintf("copy case: pg_dump -Fd -j %s alone %.1f s, pg_restore -j %s alone %.1f s", jobs, dump.elapsed.Seconds(), jobs, restore.elapsed.Seconds()))
			return result{rssKiB: max(dump.rssKiB, restore.rssKiB), cpuSelf: dump.cpuSelf + restore.cpuSelf}, nil
		}, "pg"},
		{"decant init --copy --create-tables --jobs " + jobs + " into MariaDB", func(ctx context.Context, m *meter) (result, error) {
			if err := b.my.CreateDatabase(ctx, "copy_my"); err != nil {
				return result{}, err
			}
			return decantCopy(m, b.my.DSN("copy_my"), "copy_my")
		}, "mariadb"},
	}
	var results []result
	for _, k := range consumers {
		r, err := b.timeCPU(ctx, k)
		r.consumer, r.err = k.name, err
		if err == nil {
			fmt.Fprintf(os.Stderr, "%s: %s: %.1f s\n", c.name, k.name, r.elapsed.Seconds())
		}
		results = append(results, r)
	}
	if err := b.checkCopies(ctx); err != nil {
		return nil, nil, err
	}
	// decant verify compares what the two decant copies hold.
	for _, v := range []struct{ pipeline, target string }{{"copy_pg", b.tgt.DSN("copy_decant")}, {"copy_my", b.my.DSN("copy_my")}} {
		r, err := runCmd("decant verify", exec.CommandContext(ctx, b.bin, "verify", "--source", src, "--target", v.target, "--pipeline", v.pipeline))
		if err != nil {
			return nil, nil, err
		}
		phases = append(phases, fmt.Sprintf("copy case: decant verify of %s: %.1f s, %.0f rows/s, peak RSS %s",
			v.pipeline, r.elapsed.Seconds(), float64(c.rows)/r.elapsed.Seconds(), mib(r.rssKiB)))
	}
	notes := []string{fmt.Sprintf("copy case: %d rows, %.0f MB of table heap on the source, %s CPUs", c.rows, heapBytes/1e6, jobs)}
	var parallelDump time.Duration
	for _, r := range results {
		if r.err == nil && r.consumer == consumers[2].name {
			parallelDump = r.elapsed
		}
	}
	for _, r := range results {
		if r.err != nil {
			continue
		}
		n := fmt.Sprintf("copy case: %s: %.1f s, %.0f rows/s, %.1f MB/s", r.consumer, r.elapsed.Seconds(),
			float64(c.rows)/r.elapsed.Seconds(), heapBytes/1e6/r.elapsed.Seconds())
		if parallelDump > 0 && r.consumer != consumers[2].name {
			n += fmt.Sprintf(" (%.2f× as fast as pg_dump -j && pg_restore -j)", parallelDump.Seconds()/r.elapsed.Seconds())
		}
		notes = append(notes, n)
	}
	return results, append(notes, phases...), nil
}

// checkCopies makes sure every PostgreSQL copy holds what the source
// holds, so that no consumer is timed for doing less.
func (b *bench) checkCopies(ctx context.Context) error {
	const sum = `SELECT (SELECT count(*) || '/' || sum(hashtext(i::text)) FROM items i) || ' ' ||
		(SELECT count(*) || '/' || sum(hashtext(o::text)) FROM orders o) || ' ' ||
		(SELECT count(*) FROM customers) || ' ' || (SELECT count(*) FROM settings) || ' ' ||
		(SELECT count(*) FROM pg_indexes WHERE schemaname = 'public')`
	want, err := queryText(ctx, b.src.DSN("copysrc"), sum)
	if err != nil {
		return err
	}
	for _, db := range []string{"copy_decant", "copy_pipe", "copy_dir"} {
		got, err := queryText(ctx, b.tgt.DSN(db), sum)
		if err != nil {
			return fmt.Errorf("check %s: %w", db, err)
		}
		if got != want {
			return fmt.Errorf("copy case: database %s differs from the source: %s, want %s", db, got, want)
		}
	}
	items, err := queryText(ctx, b.src.DSN("copysrc"), `SELECT count(*)::text FROM items`)
	if err != nil {
		return err
	}
	n, err := b.my.Exec(ctx, "copy_my", "SELECT COUNT(*) FROM items")
	if err != nil {
		return err
	}
	if strings.TrimSpace(n) != items {
		return fmt.Errorf("copy case: MariaDB holds %s items, the source %s", strings.TrimSpace(n), items)
	}
	return nil
}

// timeExit times a consumer that is done when its process exits.
func timeExit(ctx context.Context, m *meter, name string, cmd *exec.Cmd) (result, error) {
	if err := m.begin(); err != nil {
		return result{}, err
	}
	r, err := runCmd(name, cmd)
	if err != nil {
		return r, err
	}
	return r, m.exited(ctx)
}
