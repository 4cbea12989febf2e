package integration

import (
	"testing"
	"time"
)

const generatedSchema = `
CREATE TABLE gen (id integer PRIMARY KEY, price integer, qty integer,
	total integer GENERATED ALWAYS AS (price * qty) STORED);
CREATE TABLE gen_keyless (a integer, b text, blen integer GENERATED ALWAYS AS (length(b)) STORED);
ALTER TABLE gen_keyless REPLICA IDENTITY FULL;
CREATE TABLE marker (id integer PRIMARY KEY, xid text);
`

// The MariaDB twin of generatedSchema: the target computes the columns
// itself.
const generatedMySQL = `
CREATE TABLE gen (id int PRIMARY KEY, price int, qty int, total int GENERATED ALWAYS AS (price * qty) STORED);
CREATE TABLE gen_keyless (a int, b longtext, blen int GENERATED ALWAYS AS (CHAR_LENGTH(b)) STORED);
CREATE TABLE marker (id int PRIMARY KEY, xid longtext);
`

const generatedWork = `
INSERT INTO gen (id, price, qty) SELECT g, g, 2 FROM generate_series(1, 20) g;
INSERT INTO gen_keyless (a, b) SELECT g % 5, repeat('x', g) FROM generate_series(1, 20) g;
UPDATE gen SET qty = qty + 1 WHERE id % 3 = 0;
UPDATE gen SET price = 100 WHERE id = 7;
DELETE FROM gen WHERE id > 17;
UPDATE gen_keyless SET b = b || 'y' WHERE a = 1;
DELETE FROM gen_keyless WHERE a = 2;
`

// TestGeneratedColumns replicates tables with stored generated columns:
// decant never writes a column the target generates and never matches on
// one (PostgreSQL 15 does not publish them). On PostgreSQL --create-tables
// makes them generated with the source's expression; on MariaDB the
// target defines them, and computes the same values.
func TestGeneratedColumns(t *testing.T) {
	check := func(t *testing.T, p *pair, total, blen func() string) {
		a := p.start()
		psql(t, p.src, generatedWork)
		xid := finalMarker(t, p.src)
		waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
		if a.exited() {
			t.Fatalf("decant stopped:\n%s", a.stderr.String())
		}
		a.stop(t)
		p.assertEqual()
		wantTotal := queryValue(t, p.src, `SELECT sum(total)::text FROM gen`)
		wantLen := queryValue(t, p.src, `SELECT sum(blen)::text FROM gen_keyless`)
		if got := total(); got != wantTotal {
			t.Errorf("target generated total sums to %s, source %s", got, wantTotal)
		}
		if got := blen(); got != wantLen {
			t.Errorf("target generated blen sums to %s, source %s", got, wantLen)
		}
	}
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		psql(t, p.src, generatedSchema)
		p.mustDecant("init", "--create-tables")
		if got := queryValue(t, p.tgt, `SELECT string_agg(attname || ':' || attgenerated::text, ',' ORDER BY attname) FROM pg_attribute
			WHERE attrelid IN ('gen'::regclass, 'gen_keyless'::regclass) AND attgenerated <> ''`); got != "blen:s,total:s" {
			t.Fatalf("--create-tables made generated columns %q, want blen and total", got)
		}
		check(t, p,
			func() string { return queryValue(t, p.tgt, `SELECT sum(total)::text FROM gen`) },
			func() string { return queryValue(t, p.tgt, `SELECT sum(blen)::text FROM gen_keyless`) })
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, generatedSchema)
		p.myExec(generatedMySQL)
		p.mustDecant("init")
		check(t, p,
			func() string { return p.myValue(`SELECT SUM(total) FROM gen`) },
			func() string { return p.myValue(`SELECT SUM(blen) FROM gen_keyless`) })
	})
}
