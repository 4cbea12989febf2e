// Package bulkcopy tests the initial copy (apply/bulk) against real
// servers that the harness starts: a source and a target database in one
// PostgreSQL cluster, and a MariaDB. The copy's server-free tests stay
// beside it in apply/bulk.
package bulkcopy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/apply/bulk"
	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgoutput"
)

// recProgress records Progress calls.
type recProgress struct {
	mu      sync.Mutex
	planned map[source.TableName]int64
	rows    map[source.TableName]int64
	bytes   map[source.TableName]int64
	done    map[source.TableName]int
}

func newRecProgress() *recProgress {
	return &recProgress{planned: map[source.TableName]int64{}, rows: map[source.TableName]int64{},
		bytes: map[source.TableName]int64{}, done: map[source.TableName]int{}}
}

func (p *recProgress) Planned(t source.TableName, rows, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.planned[t] = rows
}

func (p *recProgress) Copied(t source.TableName, rows, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows[t] += rows
	p.bytes[t] += bytes
}

func (p *recProgress) Done(t source.TableName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[t]++
}

type fixture struct {
	src, tgt string // DSNs
	srcConn  *pgx.Conn
	snapshot string
}

func exec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// newFixture creates source and target databases and runs schema in both
// (then rows in the source only), and exports a snapshot that stays
// until the test ends.
func newFixture(t *testing.T, pg *harness.Postgres, name, schema, rows string) *fixture {
	ctx := t.Context()
	for _, db := range []string{name + "_src", name + "_tgt"} {
		if err := pg.CreateDatabase(ctx, db); err != nil {
			t.Fatal(err)
		}
	}
	f := &fixture{src: pg.DSN(name + "_src"), tgt: pg.DSN(name + "_tgt")}
	tgt, err := pgx.Connect(ctx, f.tgt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close(context.Background())
	if schema != "" {
		exec(t, tgt, schema)
	}
	if f.srcConn, err = pgx.Connect(ctx, f.src); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.srcConn.Close(context.Background()) })
	exec(t, f.srcConn, schema+rows+"; ANALYZE")
	f.export(t)
	return f
}

// export exports a snapshot of the source on a session of its own.
func (f *fixture) export(t *testing.T) {
	conn, err := pgx.Connect(t.Context(), f.src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	exec(t, conn, "BEGIN ISOLATION LEVEL REPEATABLE READ")
	if err := conn.QueryRow(t.Context(), "SELECT pg_export_snapshot()").Scan(&f.snapshot); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) config(t *testing.T, target string, tables ...string) bulk.Config {
	cfg := bulk.Config{Source: f.src, Snapshot: f.snapshot, AsOf: 0x1000, Target: target, Pipeline: "p1", Jobs: 3}
	for _, name := range tables {
		def, err := pgoutput.DescribeTable(t.Context(), f.srcConn, source.TableName{Schema: "public", Name: name})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Tables = append(cfg.Tables, def)
	}
	return cfg
}

// digest is an order-independent summary of a table's rows as text.
func digest(t *testing.T, dsn, table string) string {
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var d string
	err = conn.QueryRow(t.Context(), fmt.Sprintf(`SELECT count(*) || ':' || coalesce(md5(string_agg(x::text, '|' ORDER BY x::text)), '')
		FROM %s x`, table)).Scan(&d)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

const pgSchema = `
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE big (id integer PRIMARY KEY, v text, b bytea, n numeric(12,2), at timestamptz, doc jsonb, arr int[]);
CREATE TABLE moods (id integer PRIMARY KEY, m mood, g integer GENERATED ALWAYS AS (id * 2) STORED);
CREATE TABLE parts (id integer, k text) PARTITION BY RANGE (id);
CREATE TABLE parts_1 PARTITION OF parts FOR VALUES FROM (0) TO (5000);
CREATE TABLE parts_2 PARTITION OF parts FOR VALUES FROM (5000) TO (100000);
CREATE TABLE checked (id integer PRIMARY KEY, v integer);
`

const pgRows = `
INSERT INTO big SELECT g, CASE g % 5 WHEN 0 THEN NULL WHEN 1 THEN E'tab\there\nnl\\back' WHEN 2 THEN '\N' ELSE 'row ' || g END,
	CASE WHEN g % 3 = 0 THEN NULL ELSE decode(lpad(to_hex(g), 8, '0') || '00ff0a09', 'hex') END,
	g * 1.25, '2024-01-01'::timestamptz + g * interval '1 minute', jsonb_build_object('g', g, 's', E'q"\\'), ARRAY[g, NULL]
	FROM generate_series(1, 20000) g;
INSERT INTO moods (id, m) SELECT g, (ARRAY['sad', 'ok', 'happy'])[1 + g % 3]::mood FROM generate_series(1, 300) g;
INSERT INTO parts SELECT g, 'k' || g FROM generate_series(1, 9000) g;
INSERT INTO checked SELECT g, g FROM generate_series(1, 100) g;
`

func TestCopyPostgres(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	// The target refuses v = 77 until the constraint is dropped.
	f := newFixture(t, pg, "pgcopy", pgSchema, pgRows)
	tgt, err := pgx.Connect(t.Context(), f.tgt)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close(context.Background())
	exec(t, tgt, "ALTER TABLE checked ADD CONSTRAINT no77 CHECK (v <> 77)")

	cfg := f.config(t, f.tgt, "big", "moods", "parts", "checked")
	cfg.SplitBytes = 256 << 10
	res, err := bulk.Copy(t.Context(), cfg)
	if err == nil {
		t.Fatal("copy succeeded although the target refuses a row")
	}
	msg := err.Error()
	if !strings.Contains(msg, "public.checked") || !strings.Contains(msg, "whole table") || !strings.Contains(msg, "no77") ||
		strings.Contains(msg, "77)") || strings.Contains(msg, "\n") {
		t.Errorf("error does not name table, task and constraint on one line without the row: %s", msg)
	}

	// The failed task left nothing; the others may have committed. Fix the
	// target and run again: only what is not done is copied.
	exec(t, tgt, "ALTER TABLE checked DROP CONSTRAINT no77")
	_, remaining, err := bulk.Pending(t.Context(), f.tgt, "p1")
	if err != nil || !slices.Contains(remaining, source.TableName{Schema: "public", Name: "checked"}) {
		t.Fatalf("Pending after the failure: %v %v", remaining, err)
	}
	// A Progress per call, as each call reports every table from the start.
	prog := newRecProgress()
	cfg.Progress = prog
	res2, err := bulk.Copy(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tasks int
	if err := tgt.QueryRow(t.Context(), `SELECT count(*) FROM decant.copy_state WHERE pipeline = 'p1' AND table_name = 'big'`).Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	if tasks < 4 {
		t.Errorf("big was cut into %d tasks, want several at SplitBytes 256 KiB", tasks)
	}
	t.Logf("first call %+v, second %+v, %d tasks for big", res, res2, tasks)
	if res2.Tasks == 0 || res2.Skipped != res.Tasks {
		t.Errorf("results do not add up: %+v then %+v", res, res2)
	}
	for _, table := range []string{"big", "moods", "parts", "checked"} {
		if s, g := digest(t, f.src, table), digest(t, f.tgt, table); s != g {
			t.Errorf("table %s differs: source %s, target %s", table, s, g)
		}
	}
	for _, table := range []string{"big", "moods", "parts", "checked"} {
		name := source.TableName{Schema: "public", Name: table}
		if prog.done[name] != 1 {
			t.Errorf("table %s: Done %d times, want once", table, prog.done[name])
		}
	}
	big := source.TableName{Schema: "public", Name: "big"}
	if prog.rows[big] != 20000 || prog.bytes[big] == 0 {
		t.Errorf("big: progress counted %d rows %d bytes, want 20000 rows", prog.rows[big], prog.bytes[big])
	}

	// Run again: everything is skipped and reported as copied before.
	prog2 := newRecProgress()
	cfg.Progress = prog2
	res3, err := bulk.Copy(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res3.Tasks != 0 || res3.Skipped != res2.Tasks+res2.Skipped || prog2.rows[big] != 20000 || prog2.done[big] != 1 {
		t.Errorf("a finished copy run again: %+v, progress rows %d done %d", res3, prog2.rows[big], prog2.done[big])
	}
	asOf, remaining, err := bulk.Pending(t.Context(), f.tgt, "p1")
	if err != nil || asOf != cfg.AsOf || len(remaining) != 0 {
		t.Errorf("Pending: %s %v %v", asOf, remaining, err)
	}

	// Another AsOf is refused; a forgotten copy finds the tables full.
	other := cfg
	other.AsOf++
	if _, err := bulk.Copy(t.Context(), other); !errors.Is(err, bulk.ErrDifferentAsOf) {
		t.Errorf("copy with another AsOf: %v, want ErrDifferentAsOf", err)
	}
	if err := bulk.Forget(t.Context(), f.tgt, "p1"); err != nil {
		t.Fatal(err)
	}
	if asOf, remaining, err := bulk.Pending(t.Context(), f.tgt, "p1"); asOf != 0 || remaining != nil || err != nil {
		t.Errorf("Pending after Forget: %s %v %v", asOf, remaining, err)
	}
	if _, err := bulk.Copy(t.Context(), cfg); !errors.Is(err, bulk.ErrNotEmpty) || !strings.Contains(err.Error(), "empty it or drop and re-create it") {
		t.Errorf("copy into full tables: %v, want ErrNotEmpty", err)
	}
}

func TestCopySnapshotGone(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	f := newFixture(t, pg, "gone", "CREATE TABLE a (id integer);", "INSERT INTO a VALUES (1)")
	cfg := f.config(t, f.tgt, "a")
	cfg.Snapshot = "00000003-00000002-1" // never exported
	if _, err := bulk.Copy(t.Context(), cfg); !errors.Is(err, bulk.ErrSnapshotGone) {
		t.Errorf("copy under a snapshot that is gone: %v, want ErrSnapshotGone", err)
	}
	// Neither Pending nor Forget needs the state table to exist.
	if asOf, rem, err := bulk.Pending(t.Context(), f.tgt, "p1"); asOf != 0 || rem != nil || err != nil {
		t.Errorf("Pending without state: %s %v %v", asOf, rem, err)
	}
	if err := bulk.Forget(t.Context(), f.tgt, "p1"); err != nil {
		t.Errorf("Forget without state: %v", err)
	}
}

const myRows = `
CREATE TABLE vals (id integer PRIMARY KEY, t text, b bytea, j jsonb, n numeric(10,2), ts timestamptz, f float8, bo boolean, bits bit(4));
INSERT INTO vals VALUES
	(1, E'tab\there\nnl\r\\back', '\x00ff5c0a09', '{"a": [1, "x\ty"]}', 12.5, '2024-02-03 04:05:06.789+00', 1.5e300, true, B'1010'),
	(2, '\N', '', 'null', -0.01, '1999-12-31 23:59:59+02', -0.0, false, B'0001'),
	(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
	(4, 'ünïcødé 🎉', '\x5c4e', '"\\N"', 0, '2024-01-01 00:00:00+00', 3, true, B'0000'),
	(5, '', '\x0d', '[]', 99999999.99, '2038-01-19 03:14:08+00', 1e-300, false, B'1111');
CREATE TABLE wide (id integer PRIMARY KEY, v text);
INSERT INTO wide SELECT g, repeat('w', g % 300) FROM generate_series(1, 30000) g;
CREATE TABLE small (id integer PRIMARY KEY, v varchar(10));
INSERT INTO small VALUES (1, 'fits');
`

const myTables = "CREATE TABLE vals (id INT PRIMARY KEY, t LONGTEXT, b LONGBLOB, j LONGTEXT CHECK (json_valid(j)), n DECIMAL(10,2), " +
	"ts DATETIME(6), f DOUBLE, bo TINYINT(1), bits BIT(4));" +
	"CREATE TABLE wide (id INT PRIMARY KEY, v TEXT);" +
	"CREATE TABLE small (id INT PRIMARY KEY, v VARCHAR(2));"

func TestCopyMariaDB(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	my := harness.MariaDBT(t)
	if err := my.CreateDatabase(t.Context(), "cp"); err != nil {
		t.Fatal(err)
	}
	if _, err := my.Exec(t.Context(), "cp", myTables); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, pg, "mycopy", "", myRows)
	cfg := f.config(t, my.DSN("cp"), "vals", "wide", "small")

	// small's value does not fit VARCHAR(2): the task fails, naming the
	// column and not the value.
	_, err := bulk.Copy(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "public.small") || !strings.Contains(err.Error(), "column v") ||
		strings.Contains(err.Error(), "fits") {
		t.Fatalf("copy of a value the target cannot hold: %v", err)
	}
	if _, err := my.Exec(t.Context(), "cp", "ALTER TABLE small MODIFY v VARCHAR(10)"); err != nil {
		t.Fatal(err)
	}
	res, err := bulk.Copy(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)

	s, err := mysql.Connect(t.Context(), my.DSN("cp"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.Conn.QueryContext(t.Context(), `SELECT id, COALESCE(HEX(t), 'NULL'), COALESCE(HEX(b), 'NULL'), COALESCE(j, 'NULL'),
		COALESCE(n, 'NULL'), COALESCE(ts, 'NULL'), COALESCE(f, 'NULL'), COALESCE(bo, 'NULL'), COALESCE(bits + 0, 'NULL') FROM vals ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var v [9]string
		if err := rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8]); err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(v[:], " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	hexOf := func(s string) string { return fmt.Sprintf("%X", s) }
	want := []string{
		"1 " + hexOf("tab\there\nnl\r\\back") + ` 00FF5C0A09 {"a": [1, "x\ty"]} 12.50 2024-02-03 04:05:06.789000 1.5e300 1 10`,
		"2 " + hexOf(`\N`) + ` ` + ` null -0.01 1999-12-31 21:59:59.000000 0 0 1`,
		"3 NULL NULL NULL NULL NULL NULL NULL NULL",
		"4 " + hexOf("ünïcødé 🎉") + ` 5C4E "\\N" 0.00 2024-01-01 00:00:00.000000 3 1 0`,
		"5  0D [] 99999999.99 2038-01-19 03:14:08.000000 1e-300 0 15",
	}
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			t.Errorf("row %d:\n got %q\nwant %q", i+1, g, w)
		}
	}
	var n int
	var sum string
	if err := s.Conn.QueryRowContext(t.Context(), "SELECT COUNT(*), SUM(LENGTH(v)) FROM wide").Scan(&n, &sum); err != nil {
		t.Fatal(err)
	}
	var srcSum string
	if err := f.srcConn.QueryRow(t.Context(), "SELECT sum(length(v))::text FROM wide").Scan(&srcSum); err != nil {
		t.Fatal(err)
	}
	if n != 30000 || sum != srcSum {
		t.Errorf("wide: %d rows, %s characters; want 30000, %s", n, sum, srcSum)
	}
}

// TestBinaryIO checks which column types binary COPY is used for: a type
// whose values are made (through a domain, an array, a composite, a range
// or a multirange) of one without binary send/receive must go as text.
func TestBinaryIO(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{})
	if err := pg.CreateDatabase(t.Context(), "bin"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), pg.DSN("bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	exec(t, conn, `CREATE DOMAIN acl_dom AS aclitem;
		CREATE DOMAIN acl_doms AS aclitem[];
		CREATE TYPE acl_pair AS (id int, a aclitem);
		CREATE TYPE int_pair AS (id int, t text[]);
		CREATE DOMAIN int_dom AS int4range;`)
	for _, tc := range []struct {
		types []string
		want  bool
	}{
		{[]string{"int4", "text", "numeric", "jsonb", "timestamptz", "bytea"}, true},
		{[]string{"int4[]", "int4range", "int4multirange", "point", "name", "int2vector"}, true},
		{[]string{"int_pair", "int_pair[]", "int_dom"}, true},
		{[]string{"int4", "aclitem"}, false},
		{[]string{"aclitem[]"}, false},
		{[]string{"acl_dom"}, false},
		{[]string{"acl_doms"}, false},
		{[]string{"acl_pair"}, false},
		{[]string{"acl_pair[]", "int4"}, false},
	} {
		var oids []uint32
		for _, typ := range tc.types {
			var oid uint32
			if err := conn.QueryRow(t.Context(), "SELECT $1::regtype::oid", typ).Scan(&oid); err != nil {
				t.Fatal(err)
			}
			oids = append(oids, oid)
		}
		for _, version := range []int{0, 130000} { // 13: no multirange branch
			got, err := bulk.BinaryIO(t.Context(), conn, version, oids)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("BinaryIO(%v) with version %d = %v, want %v", tc.types, version, got, tc.want)
			}
		}
	}
}
