package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/decant/decant/integration/harness"
)

// secret is a value that must never appear in decant's output.
const secret = "SECRET-VALUE-7f3a"

// oneLineError checks decant's stderr: exactly one line, prefixed, without
// panics, stack traces or row values, containing every want.
func oneLineError(t testing.TB, what, stderr string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "decant: error: ") {
		t.Errorf("%s: last line is not a decant error: %q", what, stderr)
	}
	for _, w := range want {
		if !strings.Contains(last, w) {
			t.Errorf("%s: error lacks %q: %s", what, w, last)
		}
	}
	t.Logf("%s: %s", what, last)
	for _, bad := range []string{"panic", "goroutine ", secret} {
		if strings.Contains(stderr, bad) {
			t.Errorf("%s: output contains %q:\n%s", what, bad, stderr)
		}
	}
}

// TestInitRefusals: init lists what is wrong before creating anything.
func TestInitRefusals(t *testing.T) {
	p := newPair(t)
	psql(t, p.src, `CREATE TABLE present (id integer PRIMARY KEY, extra text);
		CREATE TABLE absent1 (id integer PRIMARY KEY); CREATE TABLE absent2 (id integer PRIMARY KEY);
		CREATE TABLE nokey (v text);`)
	psql(t, p.tgt, `CREATE TABLE present (id integer PRIMARY KEY); CREATE TABLE nokey (v text);`)

	_, errOut, code := p.decant("init", "--tables", "public.absent*,public.present")
	if code != 1 {
		t.Errorf("init with missing tables: exit %d", code)
	}
	oneLineError(t, "missing tables", errOut, "public.absent1", "public.absent2", "create them on the target")

	_, errOut, code = p.decant("init", "--tables", "public.present")
	if code != 1 {
		t.Errorf("init with a missing column: exit %d", code)
	}
	oneLineError(t, "missing column", errOut, "extra", "public.present")

	_, errOut, code = p.decant("init", "--tables", "public.nokey")
	if code != 1 {
		t.Errorf("init with a keyless table without REPLICA IDENTITY FULL: exit %d", code)
	}
	oneLineError(t, "no identity", errOut, "public.nokey", "REPLICA IDENTITY FULL")

	_, errOut, code = p.decant("init", "--tables", "public.nothing_matches*")
	if code != 1 {
		t.Errorf("init with no matching table: exit %d", code)
	}
	oneLineError(t, "no tables", errOut, "no source table matches")

	for _, q := range []string{
		`SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = '` + p.name + `'`,
		`SELECT count(*)::text FROM pg_publication WHERE pubname = '` + p.name + `'`,
	} {
		if n := queryValue(t, p.src, q); n != "0" {
			t.Errorf("a refused init left something behind: %s = %s", q, n)
		}
	}
}

// TestSourceSettings: a source without wal_level = logical, and a user
// without REPLICATION, are refused with the fix.
func TestSourceSettings(t *testing.T) {
	replica := harness.PostgresT(t, harness.PostgresOptions{Settings: map[string]string{"wal_level": "replica"}})
	if err := replica.CreateDatabase(t.Context(), "src"); err != nil {
		t.Fatal(err)
	}
	p := newPair(t)
	p.src = replica.DSN("src")
	psql(t, p.src, `CREATE TABLE t (id integer PRIMARY KEY);`)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	_, errOut, code := p.decant("init")
	if code != 1 {
		t.Errorf("init on wal_level=replica: exit %d", code)
	}
	oneLineError(t, "wal_level", errOut, "wal_level", "logical", "restart")

	p2 := newPair(t)
	psql(t, p2.src, `CREATE TABLE t (id integer PRIMARY KEY); CREATE ROLE plain LOGIN; GRANT SELECT ON t TO plain;`)
	psql(t, p2.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	p2.src = strings.Replace(p2.src, "postgres@", "plain@", 1)
	_, errOut, code = p2.decant("init")
	if code != 1 {
		t.Errorf("init as a user without REPLICATION: exit %d", code)
	}
	oneLineError(t, "replication privilege", errOut, "REPLICATION", "plain")
}

// TestApplyFailure: a target constraint the source does not have rejects a
// row. decant stops with the position, xid and table, without the row's
// values, acknowledges nothing past the last good transaction, and resumes
// from there once the target is fixed. A webhook gets exactly one
// pipeline_stopped event naming the same place, without the row's values.
func TestApplyFailure(t *testing.T) {
	p := newPair(t)
	psql(t, p.src, `CREATE TABLE items (id integer PRIMARY KEY, code text);`)
	psql(t, p.tgt, `CREATE TABLE items (id integer PRIMARY KEY, code text CHECK (code NOT LIKE 'SECRET%'));`)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO items VALUES (1, 'good');`)
	p.mustDecant("run", "--catch-up")
	good := p.checkpointEnd()
	xid := queryValue(t, p.src, `INSERT INTO items VALUES (2, '`+secret+`') RETURNING pg_current_xact_id()::text`)
	psql(t, p.src, `INSERT INTO items VALUES (3, 'after');`)

	hook := newWebhookReceiver(t)
	_, errOut, code := p.decant("run", "--webhook", hook.URL, "--webhook-secret", "k")
	if code != 3 {
		t.Fatalf("run over a rejected row: exit %d, want 3 (needs a person)\n%s", code, errOut)
	}
	oneLineError(t, "check violation", errOut, "xid "+xid, "public.items", "check constraint", "commit ")
	events := hook.events()
	if len(events) != 1 {
		t.Fatalf("%d webhook events, want 1: %v", len(events), events)
	}
	e := events[0]
	if e["kind"] != "pipeline_stopped" || e["table"] != "public.items" || fmt.Sprint(e["xid"]) != xid || e["lsn"] == nil ||
		!strings.Contains(fmt.Sprint(e["message"]), "check constraint") || !strings.Contains(fmt.Sprint(e["message"]), "commit "+fmt.Sprint(e["lsn"])) {
		t.Errorf("event %v, want pipeline_stopped at xid %s table public.items with the error line", e, xid)
	}
	if raw := hook.raw(); strings.Contains(raw, secret) || strings.Contains(raw, "SECRET") {
		t.Errorf("the webhook event shows the row's value: %s", raw)
	}
	if got := p.checkpointEnd(); got != good {
		t.Errorf("checkpoint moved from %s to %s past a failed transaction", good, got)
	}
	confirmed := queryValue(t, p.src, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`)
	if confirmed != good {
		t.Errorf("source was told %s is flushed; the last applied position is %s", confirmed, good)
	}
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM items`); n != "1" {
		t.Errorf("target has %s rows; nothing after the failure may land", n)
	}

	psql(t, p.tgt, `ALTER TABLE items DROP CONSTRAINT items_code_check;`)
	p.catchUp()
}

// TestTargetProblems: a value too long for the target column, a table
// dropped from the target, a target user who cannot set
// session_replication_role, and a slot held by another run.
func TestTargetProblems(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE keep (id integer PRIMARY KEY);`)
	psql(t, p.src, `CREATE TABLE narrow (id integer PRIMARY KEY, v text);`)
	psql(t, p.tgt, `CREATE TABLE narrow (id integer PRIMARY KEY, v varchar(5));
		CREATE ROLE plain LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO plain;`)
	p.mustDecant("init")

	psql(t, p.src, `INSERT INTO narrow VALUES (1, '`+secret+`');`)
	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("value too long: exit %d, want 3", code)
	}
	oneLineError(t, "too long", errOut, "public.narrow", "too long", "22001")
	psql(t, p.tgt, `ALTER TABLE narrow ALTER v TYPE text;`)
	p.mustDecant("run", "--catch-up")

	psql(t, p.tgt, `DROP TABLE keep;`)
	psql(t, p.src, `INSERT INTO keep VALUES (1);`)
	_, errOut, code = p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("dropped target table: exit %d, want 3", code)
	}
	oneLineError(t, "missing table", errOut, "public.keep", "does not exist", "create it on the target")
	psql(t, p.tgt, `CREATE TABLE keep (id integer PRIMARY KEY);`)
	p.mustDecant("run", "--catch-up")

	plain := *p
	plain.tgt = strings.Replace(p.tgt, "postgres@", "plain@", 1)
	_, errOut, code = plain.decant("run", "--catch-up")
	if code != 1 {
		t.Errorf("non-superuser target: exit %d", code)
	}
	oneLineError(t, "permission", errOut, "session_replication_role", "superuser")

	a := p.start()
	waitFor(t, 30*time.Second, func() bool {
		return queryValue(t, p.src, `SELECT active::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`) == "true"
	})
	start := time.Now()
	_, errOut, code = p.decant("run", "--slot-wait", "2s")
	if code != 4 {
		t.Errorf("second run on an active slot: exit %d, want 4 (gave up)", code)
	}
	oneLineError(t, "slot in use", errOut, "is active", "stop the other run")
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("second run took %s to give up", d)
	}
	a.stop(t)
	p.assertEqual()
}

// TestDivergedTarget: a row removed on the target behind decant's back
// makes the set-based UPDATE of a window of hot-row updates find one row
// too few. decant then applies that target transaction again change by
// change and stops naming the source transaction that changed the missing
// row, its table and commit position, with nothing acknowledged past the
// last good transaction.
func TestDivergedTarget(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE acct (id integer PRIMARY KEY, bal integer);`)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO acct SELECT g, 0 FROM generate_series(1, 50) g;`)
	p.mustDecant("run", "--catch-up")
	good := p.checkpointEnd()
	psql(t, p.tgt, `DELETE FROM acct WHERE id = 40;`)
	// Many transactions updating a few hot rows, one of them also the row
	// the target lost, then more of the same: one target transaction.
	psql(t, p.src, `DO $$ BEGIN FOR i IN 1..30 LOOP UPDATE acct SET bal = bal + 1 WHERE id <= 5; COMMIT; END LOOP; END $$;`)
	// An ANALYZE (autovacuum's, on a busy table) makes pgoutput announce
	// the table again; the same shape must not split the window.
	psql(t, p.src, `ANALYZE acct;`)
	xid := queryValue(t, p.src, `UPDATE acct SET bal = bal + 1 WHERE id IN (3, 40) RETURNING pg_current_xact_id()::text`)
	psql(t, p.src, `DO $$ BEGIN FOR i IN 1..30 LOOP UPDATE acct SET bal = bal + 1 WHERE id <= 5; COMMIT; END LOOP; END $$;`)

	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Fatalf("run over a diverged target: exit %d, want 3\n%s", code, errOut)
	}
	oneLineError(t, "diverged", errOut, "apply update at xid "+xid+" commit ", "public.acct", "no target row matches")
	if !strings.Contains(errOut, "applies them again one by one") {
		t.Errorf("the failure did not come from a set-based statement, so this test proves nothing about them:\n%s", errOut)
	}
	// The transactions before the failed one may have committed in a
	// target transaction of their own (where group commit cuts depends on
	// how far the reader is ahead), but nothing at or past the failed one.
	failed := regexp.MustCompile(`commit ([0-9A-F]+/[0-9A-F]+)`).FindStringSubmatch(errOut)
	got := p.checkpointEnd()
	if failed == nil {
		t.Fatalf("the error names no commit LSN:\n%s", errOut)
	}
	if queryValue(t, p.src, `SELECT ('`+got+`'::pg_lsn >= '`+good+`'::pg_lsn AND '`+got+`'::pg_lsn < '`+failed[1]+`'::pg_lsn)::text`) != "true" {
		t.Errorf("checkpoint moved from %s to %s, past the failed transaction's commit %s", good, got, failed[1])
	}
	confirmed := queryValue(t, p.src, `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`)
	if confirmed != got {
		t.Errorf("source was told %s is flushed; the last applied position is %s", confirmed, got)
	}
	psql(t, p.tgt, `INSERT INTO acct VALUES (40, 0);`)
	p.catchUp()
}

// TestOtherSource: the checkpoint remembers which source cluster it came
// from; pointing the pipeline at another server is refused.
func TestOtherSource(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE t (id integer PRIMARY KEY);`)
	p.mustDecant("init")
	// The shared clusters are copies of one template and share a system
	// identifier; a fresh initdb gets its own.
	fresh := harness.PostgresT(t, harness.PostgresOptions{Fresh: true})
	if err := fresh.CreateDatabase(t.Context(), "src"); err != nil {
		t.Fatal(err)
	}
	other := *p
	other.src = fresh.DSN("src")
	_, errOut, code := other.decant("run", "--catch-up")
	if code != 1 {
		t.Errorf("run against another source: exit %d", code)
	}
	oneLineError(t, "other source", errOut, "different source server", "system identifier")
}

// webhookReceiver records the bodies POSTed to it.
type webhookReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newWebhookReceiver(t *testing.T) *webhookReceiver {
	r := &webhookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.bodies = append(r.bodies, string(body))
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *webhookReceiver) events() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for _, b := range r.bodies {
		var e map[string]any
		_ = json.Unmarshal([]byte(b), &e)
		out = append(out, e)
	}
	return out
}

func (r *webhookReceiver) raw() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.bodies, "\n")
}
