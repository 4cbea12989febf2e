package integration

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/source"
)

// TestSkip, on both targets: a duplicate key stops run (exit 3) and run
// records where; decant skip with the printed position makes the next run
// skip exactly that transaction, and record it in decant.skipped in the
// target transaction that moves the checkpoint past it (a SIGKILL while
// that transaction waits leaves neither); a wrong position is refused by
// skip or by run, naming both positions, and --cancel withdraws it.
func TestSkip(t *testing.T) {
	for _, my := range []bool{false, true} {
		name := "postgres"
		if my {
			name = "mariadb"
		}
		t.Run(name, func(t *testing.T) { testSkip(t, my) })
	}
}

func testSkip(t *testing.T, my bool) {
	p := newTargetPair(t, my)
	s := skipSides{p}
	psql(t, p.src, `CREATE TABLE items (id integer PRIMARY KEY, v text); CREATE TABLE other (id integer PRIMARY KEY);`)
	s.exec(`CREATE TABLE items (id integer PRIMARY KEY, v text)`)
	s.exec(`CREATE TABLE other (id integer PRIMARY KEY)`)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO items VALUES (1, 'one');`)
	p.mustDecant("run", "--catch-up")
	before := p.checkpointEnd()

	s.exec(`INSERT INTO items VALUES (2, 'target')`)
	xid := skipTxn(t, p.src)
	psql(t, p.src, `INSERT INTO items VALUES (3, 'after'); INSERT INTO other VALUES (11);`)
	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Fatalf("run over a duplicate key: exit %d, want 3\n%s", code, errOut)
	}
	_, stopLine, _ := strings.Cut(errOut, "decant: error: ")
	m := regexp.MustCompile(`xid (\d+) commit ([0-9A-F]+/[0-9A-F]+)`).FindStringSubmatch(stopLine)
	if m == nil || m[1] != xid {
		t.Fatalf("run's error names no commit of xid %s:\n%s", xid, errOut)
	}
	lsn := m[2]

	// Wrong requests.
	_, errOut, code = p.decant("skip", "--lsn", "0/1")
	if code != 2 {
		t.Errorf("skip of an applied position: exit %d, want 2\n%s", code, errOut)
	}
	oneLineError(t, "skip behind the checkpoint", errOut, "already has it", "resumes at "+before)
	_, errOut, code = p.decant("skip", "--lsn", lsn, "--xid", "12345")
	if code != 2 {
		t.Errorf("skip with another xid: exit %d, want 2\n%s", code, errOut)
	}
	oneLineError(t, "skip with another xid", errOut, "as xid "+xid, "not 12345")
	wrong := nextLSN(t, lsn)
	if out := p.mustDecant("skip", "--lsn", wrong); !strings.Contains(out, "run last stopped at commit "+lsn) {
		t.Errorf("skip at another position than the stop says nothing of it:\n%s", out)
	}
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("run with a skip that is not the next transaction: exit %d, want 3\n%s", code, errOut)
	}
	oneLineError(t, "skip not next", errOut, "pending skip of commit "+wrong, "next transaction to apply is commit "+lsn, "decant skip --cancel")
	if out := p.mustDecant("skip", "--cancel"); !strings.Contains(out, "pending skip cancelled") {
		t.Errorf("skip --cancel: %s", out)
	}
	if out := p.mustDecant("skip", "--cancel"); !strings.Contains(out, "no skip was pending") {
		t.Errorf("second skip --cancel: %s", out)
	}

	out := p.mustDecant("skip", "--lsn", lsn, "--xid", xid)
	if !strings.Contains(out, "run stopped there on: apply insert at xid "+xid) || !strings.Contains(out, "public.items") {
		t.Errorf("skip does not repeat the error run stopped on:\n%s", out)
	}
	if st := p.mustDecant("status"); !strings.Contains(st, "skip pending   commit "+lsn+" (xid "+xid+")") {
		t.Errorf("status shows no pending skip:\n%s", st)
	}

	// A SIGKILL while the skipping transaction waits for the checkpoint
	// row: neither the skip nor the checkpoint is committed.
	release := s.lockCheckpoint()
	a := p.start()
	waitFor(t, 30*time.Second, func() bool { return s.lockWaits() > 0 || a.exited() })
	if a.exited() {
		t.Fatalf("run ended before it waited for the checkpoint row: %v\n%s", a.err, a.stderr.String())
	}
	a.kill()
	release()
	if got := p.checkpointEnd(); got != before {
		t.Errorf("checkpoint at %s after the killed run, want %s", got, before)
	}
	if got := s.value(`SELECT count(*) FROM ` + s.skipped() + ` WHERE skipped_at IS NULL AND requested_at IS NOT NULL`); got != "1" {
		t.Errorf("%s pending rows after the killed run, want 1", got)
	}

	psql(t, p.src, `INSERT INTO items VALUES (4, 'later');`)
	p.mustDecant("run", "--catch-up")
	if got := s.value(`SELECT count(*) FROM items WHERE id = 2 AND v = 'target'`); got != "1" {
		t.Errorf("the target's own row 2: %s, want it untouched", got)
	}
	if got := s.value(`SELECT count(*) FROM items WHERE id IN (1, 3, 4)`) + s.value(`SELECT count(*) FROM other WHERE id = 11`) + s.value(`SELECT count(*) FROM other WHERE id = 10`); got != "310" {
		t.Errorf("rows 1,3,4 / other 11 / other 10 on the target: %s, want 3, 1, 0", got)
	}
	row := s.value(`SELECT concat(xid, ' ', tables, ' ', changes, ' ', commit_time IS NOT NULL, ' ', skipped_at IS NOT NULL) FROM ` + s.skipped() + ` WHERE requested_at IS NOT NULL`)
	want := xid + " public.items, public.other 2 t t"
	if my {
		want = xid + " public.items, public.other 2 1 1"
	}
	if row != want {
		t.Errorf("the skipped row: %q, want %q", row, want)
	}
	if st := p.mustDecant("status"); !strings.Contains(st, "skipped        commit "+lsn+" (xid "+xid+")") || !strings.Contains(st, "2 change(s) to public.items, public.other") || strings.Contains(st, "skip pending") {
		t.Errorf("status does not show the skipped transaction:\n%s", st)
	}
}

// skipTxn commits the transaction to skip on the source: two changes to
// two tables, the first a duplicate on the target. It returns its xid.
func skipTxn(t *testing.T, dsn string) string {
	t.Helper()
	ctx := t.Context()
	tx, err := connect(t, dsn).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var xid string
	if _, err := tx.Exec(ctx, `INSERT INTO items VALUES (2, 'source')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO other VALUES (10)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return xid
}

// nextLSN is the position one byte after lsn.
func nextLSN(t *testing.T, lsn string) string {
	t.Helper()
	l, err := source.ParseLSN(lsn)
	if err != nil {
		t.Fatal(err)
	}
	return (l + 1).String()
}

// skipSides runs the test's statements on either target.
type skipSides struct{ *pair }

func (s skipSides) exec(sql string) {
	if s.mysql {
		s.myExec(sql)
		return
	}
	psql(s.t, s.tgt, sql)
}

func (s skipSides) value(sql string) string {
	if s.mysql {
		return s.myValue(sql)
	}
	return queryValue(s.t, s.tgt, "SELECT ("+sql+")::text")
}

func (s skipSides) skipped() string {
	if s.mysql {
		return "decant_skipped"
	}
	return "decant.skipped"
}

// lockCheckpoint holds the pipeline's checkpoint row locked until the
// returned function runs.
func (s skipSides) lockCheckpoint() func() {
	ctx := s.t.Context()
	if s.mysql {
		conn, closeConn := s.myConn()
		if _, err := conn.ExecContext(ctx, `START TRANSACTION`); err != nil {
			s.t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `SELECT 1 FROM decant_checkpoint WHERE pipeline = ? FOR UPDATE`, s.name); err != nil {
			s.t.Fatal(err)
		}
		return func() { conn.ExecContext(ctx, `ROLLBACK`); closeConn() }
	}
	conn := connect(s.t, s.tgt)
	tx, err := conn.Begin(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM decant.checkpoint WHERE pipeline = $1 FOR UPDATE`, s.name); err != nil {
		s.t.Fatal(err)
	}
	return func() { tx.Rollback(ctx) }
}

// lockWaits counts the target sessions waiting for a row lock.
func (s skipSides) lockWaits() int {
	var v string
	if s.mysql {
		v = s.myValue(`SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`)
	} else {
		v = queryValue(s.t, s.tgt, `SELECT count(*)::text FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)
	}
	n, _ := strconv.Atoi(v)
	return n
}
