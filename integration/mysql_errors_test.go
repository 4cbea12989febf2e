package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestMySQLTargetProblems: a missing database, a column too short for a
// value (under each policy), a row larger than max_allowed_packet.
func TestMySQLTargetProblems(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `CREATE TABLE narrow (id integer PRIMARY KEY, v text); CREATE TABLE big (id integer PRIMARY KEY, body text);`)
	if _, err := targetMy.Exec(t.Context(), p.name, "CREATE TABLE narrow (id int PRIMARY KEY, v varchar(5))"); err != nil {
		t.Fatal(err)
	}

	odd := newMySQLPair(t)
	psql(t, odd.src, `CREATE TABLE odd (id integer PRIMARY KEY, r regclass);`)
	_, errOut, code := odd.decant("init", "--create-tables")
	if code != 1 {
		t.Errorf("init with an unsupported type: exit %d", code)
	}
	oneLineError(t, "unsupported type", errOut, "public.odd", "column r", "unsupported source type")

	nodb := *p
	nodb.tgt = targetMy.DSN("no_such_db")
	_, errOut, code = nodb.decant("init", "--create-tables")
	if code != 1 {
		t.Errorf("init into a missing database: exit %d", code)
	}
	oneLineError(t, "missing database", errOut, "no_such_db", "Unknown database")

	if out := p.mustDecant("init", "--create-tables"); !strings.Contains(out, "target column narrow.v is varchar(5) where decant would create longtext") {
		t.Errorf("init did not report the narrower existing column:\n%s", out)
	}
	psql(t, p.src, `INSERT INTO narrow VALUES (1, '`+secret+`');`)
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("value too long: exit %d, want 3", code)
	}
	oneLineError(t, "too long", errOut, "public.narrow", "column v", "VARCHAR(5)", "--on-unrepresentable")
	p.mustDecant("run", "--catch-up", "--on-unrepresentable", "clamp")
	if got := p.myValue(`SELECT v FROM narrow WHERE id = 1`); got != secret[:5] {
		t.Errorf("clamp stored %q, want the first 5 characters", got)
	}

	psql(t, p.src, `INSERT INTO big VALUES (1, repeat('x', 20 * 1024 * 1024));`)
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("row over max_allowed_packet: exit %d, want 3", code)
	}
	oneLineError(t, "packet", errOut, "public.big", "max_allowed_packet")
}

// TestMySQLLockWait: a target row locked by another session makes decant's
// update time out (lock wait timeout, MySQL error 1205); decant rolls back,
// retries from the checkpoint, and succeeds once the lock is gone.
func TestMySQLLockWait(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `CREATE TABLE acct (id integer PRIMARY KEY, balance integer);`)
	p.mustDecant("init", "--create-tables")
	psql(t, p.src, `INSERT INTO acct SELECT g, 0 FROM generate_series(1, 10) g;`)
	p.mustDecant("run", "--catch-up")

	setGlobal(t, "innodb_lock_wait_timeout", "1")
	// Another session holds row 5 for 4 seconds: it has the lock before
	// decant starts.
	conn, closeConn := p.myConn()
	defer closeConn()
	tx, err := conn.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int
	if err := tx.QueryRowContext(t.Context(), "SELECT id FROM acct WHERE id = 5 FOR UPDATE").Scan(&id); err != nil {
		t.Fatal(err)
	}
	locker := make(chan error, 1)
	go func() {
		_, err := tx.ExecContext(t.Context(), "DO SLEEP(4)")
		if err == nil {
			err = tx.Commit()
		}
		locker <- err
	}()
	a := p.start()
	psql(t, p.src, `UPDATE acct SET balance = balance + 1;`)
	xid := queryValue(t, p.src, `INSERT INTO acct VALUES (11, 0) RETURNING pg_current_xact_id()::text`)
	waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid })
	a.stop(t)
	if err := <-locker; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(a.stderr.String(), "1205") || !strings.Contains(a.stderr.String(), "resuming from the checkpoint") {
		t.Errorf("decant did not report the lock wait timeout and the retry:\n%s", a.stderr.String())
	}
	p.assertEqual()
}

// TestMySQLValues checks, against values written out by hand (not computed
// by the mapping code under test), what edge values become on MariaDB
// under the clamp policy.
func TestMySQLValues(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `
		CREATE TYPE pair AS (a integer, b text);
		CREATE TYPE mood AS ENUM ('sad', 'happy');
		CREATE TABLE v (id integer PRIMARY KEY, tstz timestamptz, ts timestamp, d date, n numeric, n4 numeric(12,4),
			f8 float8, f4 real, b boolean, by bytea, ia integer[], ta text[], pr pair, r int4range, m mood,
			u uuid, j jsonb, iv interval, tz timetz, t text, c char(5), bits bit(4));`)
	p.extra = []string{"--on-unrepresentable", "clamp"}
	p.mustDecant("init", "--create-tables")
	psql(t, p.src, `INSERT INTO v VALUES
		(1, '2024-02-29 12:00:00.000001+05:30', '1999-12-31 23:59:59.5', '2000-02-29', 'NaN', 12345678.1234,
		 'Infinity', '-0', true, '\x00ff00', '{1,NULL,3}', '{a,"b c",NULL,""}', '(1,"x y")', '[1,5)', 'happy',
		 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"b": 1, "a": [true, null]}', '1 year 2 mons 3 days 04:05:06.789',
		 '12:00:00.5-03', 'emoji 😀 日本', 'ab', B'0101'),
		(2, 'infinity', '-infinity', '4713-01-01 BC', 'Infinity', -0.0001,
		 '-Infinity', 'NaN', false, '', '{}', '{}', '(,)', 'empty', 'sad',
		 NULL, '[]', '-1 days', '23:30:00+00', '', '', B'0000');`)
	p.mustDecant("run", "--catch-up")
	cols := "CONCAT_WS('|', tstz, ts, d, IFNULL(n, 'NULL'), n4, f8, IFNULL(f4, 'NULL'), b, HEX(`by`), ia, ta, pr, r, m, IFNULL(u, 'NULL'), j, iv, tz, t, CONCAT('[', c, ']'), bits)"
	want := map[int]string{
		1: `2024-02-29 06:30:00.000001|1999-12-31 23:59:59.500000|2000-02-29|NULL|12345678.1234|1.7976931348623157e308|0|1|00FF00|[1,null,3]|["a","b c",null,""]|{"a":1,"b":"x y"}|{"lower":1,"upper":5,"lower_inc":true,"upper_inc":false}|happy|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|{"a": [true, null], "b": 1}|1 year 2 mons 3 days 04:05:06.789|15:00:00.500000|emoji 😀 日本|[ab]|0101`,
		2: `9999-12-31 23:59:59.999999|1000-01-01 00:00:00.000000|1000-01-01|99999999999999999999999999999999999.999999999999999999999999999999|-0.0001|-1.7976931348623157e308|NULL|0||[]|[]|{"a":null,"b":null}|{"empty":true}|sad|NULL|[]|-1 days|23:30:00.000000||[]|0000`,
	}
	for id, w := range want {
		got := p.myValue(fmt.Sprintf("SELECT %s FROM v WHERE id = %d", cols, id))
		if got != w {
			t.Errorf("row %d on MariaDB:\n got %s\nwant %s", id, got, w)
		}
	}
}

// setGlobal sets global variable name of the shared MariaDB target to
// value (an SQL literal) and puts back the value it had when the test
// ends, checking that it took: a value left behind would change every
// later test on the server. The test's context is done by the time
// cleanup runs, so the reset has a context of its own.
func setGlobal(t *testing.T, name, value string) {
	t.Helper()
	read := func(ctx context.Context) (string, error) {
		out, err := targetMy.Exec(ctx, "", "SELECT @@GLOBAL."+name)
		return strings.TrimSpace(out), err
	}
	before, err := read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := targetMy.Exec(t.Context(), "", fmt.Sprintf("SET GLOBAL %s = %s", name, value)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := targetMy.Exec(ctx, "", fmt.Sprintf("SET GLOBAL %s = %s", name, before)); err != nil {
			t.Errorf("reset %s to %s: %v", name, before, err)
			return
		}
		if now, err := read(ctx); err != nil || now != before {
			t.Errorf("%s is %q after the reset (%v), want %s", name, now, err, before)
		}
	})
}
