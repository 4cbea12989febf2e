package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSkipMidGroup, on both targets, once with a key the target already
// has (set-based statements, replayed change by change) and once under
// --on-conflict (changes one by one) with a row the target lacks: two
// writers commit on the source at once behind a large transaction, and
// run catches up with the backlog, so the transaction the target refuses
// lands in the middle of a target transaction, behind transactions that
// apply (one of them a conflict the policy resolves and logs). run stops naming it,
// with everything before it committed, so decant skip with the printed
// position is honoured, every time: a second run stops at the same
// place, a run killed with SIGKILL before its skip commits leaves the
// skip pending, and the next run skips it once and applies the rest.
func TestSkipMidGroup(t *testing.T) {
	for _, my := range []bool{false, true} {
		for _, conflicts := range []bool{false, true} {
			name := map[bool]string{false: "postgres", true: "mariadb"}[my] + map[bool]string{false: "/duplicate", true: "/conflict"}[conflicts]
			t.Run(name, func(t *testing.T) { testSkipMidGroup(t, my, conflicts) })
		}
	}
}

// The writers' transactions: writer w's i-th inserts row 100w+i and bumps
// the hot row 1, but for writer 1's midRefused (the one refused: a row
// the target has, or an update of one it lacks) and midLogged (under
// --on-conflict, an insert of a key the target has, resolved by skip).
const (
	midTxns    = 8
	midRefused = 5
	midLogged  = 2
)

func testSkipMidGroup(t *testing.T, my, conflicts bool) {
	p := newTargetPair(t, my)
	s := skipSides{p}
	psql(t, p.src, `CREATE TABLE acct (id integer PRIMARY KEY, w integer, n integer, v text); CREATE TABLE pad (id integer PRIMARY KEY, v text)`)
	if my {
		s.exec(`CREATE TABLE acct (id INT PRIMARY KEY, w INT, n INT, v TEXT)`)
		s.exec(`CREATE TABLE pad (id INT PRIMARY KEY, v TEXT)`)
	} else {
		s.exec(`CREATE TABLE acct (id integer PRIMARY KEY, w integer, n integer, v text); CREATE TABLE pad (id integer PRIMARY KEY, v text)`)
	}
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO acct VALUES (1, 0, 0, 'hot'), (2000, 0, 0, 'gone')`)
	p.mustDecant("run", "--catch-up")
	s.exec(`INSERT INTO acct VALUES (1000, 0, 0, 'target'), (3000, 0, 0, 'target')`)
	s.exec(`DELETE FROM acct WHERE id = 2000`)
	var policy []string
	if conflicts {
		policy = []string{"--on-conflict", "insert_exists=skip"}
	}

	// The backlog: a large transaction first, then the two writers at
	// once. The applier is still writing the large one when the others
	// wait behind it, so they share its target transaction, and the
	// refused one is never the first of it.
	psql(t, p.src, `INSERT INTO pad SELECT g, repeat('x', 100) FROM generate_series(1, 5000) g`)
	refusedXid, loggedXid := midWriters(t, p.src, conflicts)
	_, stderr, code := p.decant(append([]string{"run", "--catch-up", "--log-level", "debug"}, policy...)...)
	if code != 3 {
		t.Fatalf("run over the refused transaction: exit %d, want 3\n%s", code, stderr)
	}
	xid, lsn := stopPosition(t, stderr)
	if xid != refusedXid {
		t.Fatalf("run stopped on xid %s, want the refused xid %s:\n%s", xid, refusedXid, stderr)
	}
	// It was behind others in its target transaction: the session that
	// stopped committed those first.
	why := map[bool]string{false: "one by one", true: "each on its own"}[conflicts]
	retried := strings.LastIndex(stderr, "resuming from the checkpoint")
	if !strings.Contains(stderr, why) || retried < 0 || !strings.Contains(stderr[retried:], "msg=committed") {
		t.Errorf("run did not commit the transactions before the refused one in a session of its own (%q, then a commit):\n%s", why, stderr)
	}
	stopEnd := p.checkpointEnd()
	p.assertBeforeRefused(conflicts, loggedXid)
	// The source was told of those commits, and of nothing past them.
	if got := queryValue(t, p.src, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`); got != stopEnd {
		t.Errorf("source was told %s is flushed; the checkpoint is at %s", got, stopEnd)
	}

	// The same stop every time.
	_, errOut, code := p.decant(append([]string{"run", "--catch-up"}, policy...)...)
	if x, l := stopPosition(t, errOut); code != 3 || x != xid || l != lsn {
		t.Errorf("second run: exit %d at xid %s commit %s, want 3 at xid %s commit %s\n%s", code, x, l, xid, lsn, errOut)
	}

	// The printed advice; a run killed before its skip commits.
	p.mustDecant("skip", "--lsn", lsn, "--xid", xid)
	release := s.lockCheckpoint()
	b := p.start(policy...)
	waitFor(t, 60*time.Second, func() bool { return s.lockWaits() > 0 || b.exited() })
	if b.exited() {
		t.Fatalf("the skipping run ended before it waited for the checkpoint row: %v\n%s", b.err, b.stderr.String())
	}
	b.kill()
	release()
	if got := p.checkpointEnd(); got != stopEnd {
		t.Errorf("checkpoint at %s after the killed run, want %s", got, stopEnd)
	}
	if got := s.value(`SELECT count(*) FROM ` + s.skipped() + ` WHERE skipped_at IS NULL AND requested_at IS NOT NULL`); got != "1" {
		t.Errorf("%s pending skips after the killed run, want 1", got)
	}
	out := p.mustDecant(append([]string{"run", "--catch-up"}, policy...)...)
	if !strings.Contains(out, "skipping transaction as requested") {
		t.Errorf("the run after the skip says nothing of it:\n%s", out)
	}
	if got := s.value(`SELECT count(*) FROM ` + s.skipped() + ` WHERE skipped_at IS NOT NULL AND xid = ` + xid); got != "1" {
		t.Errorf("%s skipped rows of xid %s, want 1", got, xid)
	}
	if conflicts {
		p.assertLoggedOnce(loggedXid)
	}
	// The target has every source row but those of the skipped
	// transaction and the rows it held of its own: give it the source's,
	// and the two must be equal.
	fix := fmt.Sprintf("%d, 1000, 2000, 3000", 100+midRefused)
	rows := queryValue(t, p.src, `SELECT string_agg(format('(%s, %s, %s, %L)', id, w, n, v), ', ') FROM acct WHERE id IN (`+fix+`)`)
	s.exec(`DELETE FROM acct WHERE id IN (` + fix + `)`)
	s.exec(`INSERT INTO acct VALUES ` + rows)
	p.assertEqual()
}

// midWriters runs the two writers at once and returns the xids of the
// refused transaction and (under --on-conflict) of the logged one.
func midWriters(t *testing.T, src string, conflicts bool) (refused, logged string) {
	t.Helper()
	conns := []*pgx.Conn{connect(t, src), connect(t, src)}
	type result struct {
		refused, logged string
		err             error
	}
	done := make(chan result, len(conns))
	for w, c := range conns {
		go func() {
			var r result
			r.refused, r.logged, r.err = midWriter(t.Context(), c, w+1, conflicts)
			done <- r
		}()
	}
	for range conns {
		r := <-done
		if r.err != nil {
			t.Fatal(r.err)
		}
		refused, logged = refused+r.refused, logged+r.logged
	}
	return refused, logged
}

// midWriter commits writer w's transactions.
func midWriter(ctx context.Context, c *pgx.Conn, w int, conflicts bool) (refused, logged string, err error) {
	for i := 1; i <= midTxns; i++ {
		stmts := []string{fmt.Sprintf(`INSERT INTO acct VALUES (%d, %d, %d, 'w')`, 100*w+i, w, i)}
		switch {
		case w == 1 && i == midRefused && conflicts:
			stmts = append(stmts, `UPDATE acct SET v = 'source' WHERE id = 2000`)
		case w == 1 && i == midRefused:
			stmts = append(stmts, `INSERT INTO acct VALUES (1000, 1, 0, 'source')`)
		case w == 1 && i == midLogged && conflicts:
			stmts = append(stmts, `INSERT INTO acct VALUES (3000, 1, 0, 'source')`, `UPDATE acct SET n = n + 1 WHERE id = 1`)
		default:
			stmts = append(stmts, `UPDATE acct SET n = n + 1 WHERE id = 1`)
		}
		xid, err := commitTxn(ctx, c, stmts)
		if err != nil {
			return "", "", fmt.Errorf("writer %d, transaction %d: %w", w, i, err)
		}
		if w == 1 && i == midRefused {
			refused = xid
		}
		if w == 1 && i == midLogged && conflicts {
			logged = xid
		}
	}
	return refused, logged, nil
}

// commitTxn runs stmts in one transaction and returns its xid.
func commitTxn(ctx context.Context, c *pgx.Conn, stmts []string) (string, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer tx.Rollback(ctx)
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return "", err
		}
	}
	var xid string
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
		return "", err
	}
	return xid, tx.Commit(ctx)
}

// waitSent waits until the walsender of the pipeline's slot has sent the
// source's WAL up to lsn.
func (p *pair) waitSent(lsn string) {
	p.t.Helper()
	q := `SELECT coalesce(bool_or(r.sent_lsn >= '` + lsn + `'), false)::text FROM pg_stat_replication r
		JOIN pg_replication_slots s ON s.active_pid = r.pid WHERE s.slot_name = '` + p.name + `'`
	waitFor(p.t, 60*time.Second, func() bool { return queryValue(p.t, p.src, q) == "true" })
}

var stopRe = regexp.MustCompile(`decant: error: apply \w+ at xid (\d+) commit ([0-9A-F]+/[0-9A-F]+)`)

// stopPosition reads the xid and commit position run stopped on.
func stopPosition(t *testing.T, stderr string) (xid, lsn string) {
	t.Helper()
	m := stopRe.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("run's error names no transaction:\n%s", stderr)
	}
	return m[1], m[2]
}

// assertBeforeRefused checks the target after the stop: the refused
// transaction's writer's earlier transactions are there, its own row is
// not, and under --on-conflict the conflict resolved before it is logged.
func (p *pair) assertBeforeRefused(conflicts bool, loggedXid string) {
	p.t.Helper()
	s := skipSides{p}
	before := fmt.Sprintf(`SELECT count(*) FROM acct WHERE id BETWEEN 101 AND %d`, 100+midRefused-1)
	if got, want := s.value(before), fmt.Sprint(midRefused-1); got != want {
		p.t.Errorf("%s of writer 1's %s transactions before the refused one on the target after the stop, want all", got, want)
	}
	if got := s.value(fmt.Sprintf(`SELECT count(*) FROM acct WHERE id = %d`, 100+midRefused)); got != "0" {
		p.t.Errorf("the refused transaction's row is on the target")
	}
	if conflicts {
		p.assertLoggedOnce(loggedXid)
	}
}

// assertLoggedOnce checks that the conflict log holds one row: the
// insert_exists that loggedXid met, resolved by skip.
func (p *pair) assertLoggedOnce(loggedXid string) {
	p.t.Helper()
	s := skipSides{p}
	if got, want := s.value(`SELECT count(*) FROM `+s.conflicts()), "1"; got != want {
		p.t.Errorf("%s conflict rows, want %s", got, want)
	}
	if got, want := s.value(`SELECT concat(kind, ' ', policy, ' ', xid) FROM `+s.conflicts()), "insert_exists skip "+loggedXid; got != want {
		p.t.Errorf("conflict log: %q, want %q", got, want)
	}
}
