package integration

import (
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

	nodb := *p
	nodb.tgt = targetMy.DSN("no_such_db")
	_, errOut, code := nodb.decant("init", "--create-tables")
	if code != 1 {
		t.Errorf("init into a missing database: exit %d", code)
	}
	oneLineError(t, "missing database", errOut, "no_such_db", "Unknown database")

	p.mustDecant("init", "--create-tables")
	psql(t, p.src, `INSERT INTO narrow VALUES (1, '`+secret+`');`)
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 1 {
		t.Errorf("value too long: exit %d", code)
	}
	oneLineError(t, "too long", errOut, "public.narrow", "column v", "VARCHAR(5)", "--on-unrepresentable")
	p.mustDecant("run", "--catch-up", "--on-unrepresentable", "clamp")
	if got := p.myValue(`SELECT v FROM narrow WHERE id = 1`); got != secret[:5] {
		t.Errorf("clamp stored %q, want the first 5 characters", got)
	}

	psql(t, p.src, `INSERT INTO big VALUES (1, repeat('x', 20 * 1024 * 1024));`)
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 1 {
		t.Errorf("row over max_allowed_packet: exit %d", code)
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

	if _, err := targetMy.Exec(t.Context(), "", "SET GLOBAL innodb_lock_wait_timeout = 1"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { targetMy.Exec(t.Context(), "", "SET GLOBAL innodb_lock_wait_timeout = 50") })
	// Another session holds row 5 for 4 seconds.
	locker := make(chan error, 1)
	go func() {
		_, err := targetMy.Exec(t.Context(), p.name, "START TRANSACTION; SELECT * FROM acct WHERE id = 5 FOR UPDATE; DO SLEEP(4); COMMIT;")
		locker <- err
	}()
	time.Sleep(500 * time.Millisecond)
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
