package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/harness"
)

// reverseSchema: items is replicated both ways; hits, on each side
// alone, counts every row written into items there, by an ALWAYS
// trigger, which fires for decant's replica-role sessions too. A change
// sent back where it came from would add hits (or break a key).
const reverseSchema = `CREATE TABLE items (id bigserial PRIMARY KEY, v text NOT NULL, n integer NOT NULL DEFAULT 0);
	CREATE SCHEMA audit;
	CREATE TABLE audit.hits (hit boolean NOT NULL DEFAULT true);
	CREATE FUNCTION audit.hit() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO audit.hits DEFAULT VALUES; RETURN NULL; END$$;
	CREATE TRIGGER hit AFTER INSERT OR UPDATE ON items FOR EACH ROW EXECUTE FUNCTION audit.hit();
	ALTER TABLE items ENABLE ALWAYS TRIGGER hit;`

// TestCutoverReverse: a forward migration, cutover --reverse, writes on
// the new primary flowing back to the old one, writes replicated forward
// never coming back (nor backward ones going forward again), and a switch
// back (cutover of the reverse pipeline) that leaves both equal. "streamed"
// does it with both sources decoding in the least memory, so that the
// large transactions arrive streamed in progress and are applied as they
// arrive, on sessions of their own (origins decant_<pipeline>.N).
func TestCutoverReverse(t *testing.T) {
	t.Run("whole", func(t *testing.T) { testCutoverReverse(t, false) })
	t.Run("streamed", func(t *testing.T) { testCutoverReverse(t, true) })
}

func testCutoverReverse(t *testing.T, streamed bool) {
	p := newPair(t)
	p.both(reverseSchema)
	psql(t, p.src, `INSERT INTO items (v) SELECT 'copied' FROM generate_series(1, 200)`)
	p.mustDecant("init", "--copy", "--tables", "public.items")
	psql(t, p.src, `INSERT INTO items (v) SELECT 'streamed' FROM generate_series(1, 50); UPDATE items SET n = 1 WHERE id <= 10`)

	// fwd and rev are what decant runs with: with streamed, through
	// sources that stream large transactions in progress.
	fwd, rev := *p, reversePair(p, "rev_"+p.name[:min(len(p.name), 40)])
	big := 0
	if streamed {
		fwd.src, rev.src = streamingDSN(p.src), streamingDSN(rev.src)
		fwd.extra = []string{"--stream-apply", "immediate"}
		rev.extra = fwd.extra
		big = 3000
	}
	running := fwd.start()
	out, errOut, code := fwd.decant("cutover", "--reverse", rev.name, "--tables", "public.items", "--timeout", "2m")
	if code != 0 || !strings.Contains(out, "ok   reverse") || !strings.Contains(out, "safe to switch") {
		t.Fatalf("cutover --reverse: exit %d\n%s%s\nforward run:\n%s", code, out, errOut, running.stderr)
	}
	running.stop(t)
	t.Log(out)
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = '`+rev.name+`'`); n != "1" {
		t.Fatalf("the new primary has %s slots named %s, want 1", n, rev.name)
	}
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM pg_replication_origin WHERE roname = 'decant_`+p.name+`'`); n != "1" {
		t.Errorf("the forward pipeline's apply session left %s replication origins decant_%s on the target, want 1", n, p.name)
	}
	p.assertEqual()
	srcHits, tgtHits := hits(t, p.src), hits(t, p.tgt)

	// The switch: the application writes on the new primary; a straggler
	// write on the old one is replicated forward.
	psql(t, p.tgt, fmt.Sprintf(`INSERT INTO items (v) SELECT 'new primary' FROM generate_series(1, 30); UPDATE items SET n = n + 1 WHERE id BETWEEN 5 AND 14; DELETE FROM items WHERE id BETWEEN 100 AND 104;
		INSERT INTO items (v) SELECT 'new primary, large' FROM generate_series(1, %d)`, big))
	psql(t, p.src, fmt.Sprintf(`INSERT INTO items (id, v) SELECT 100000 + g, 'straggler' FROM generate_series(0, %d) g`, big))
	newPrimary, straggler := 30+10+big, 1+big
	logs := fwd.mustDecant("run", "--catch-up") + rev.mustDecant("run", "--catch-up")
	// Both directions once more: each now holds the other's applied
	// transactions, which must be skipped, not applied again.
	logs += fwd.mustDecant("run", "--catch-up") + rev.mustDecant("run", "--catch-up")
	if streamed && strings.Count(logs, "applying a transaction while it is in progress") < 2 {
		t.Errorf("the large transactions were not applied in progress in both directions: the test streamed too little\n%s", logs)
	}

	p.assertEqual()
	if got, want := hits(t, p.src)-srcHits, straggler+newPrimary; got != want {
		t.Errorf("old primary: %d rows written into items since the cutover, want %d (%d by the straggler, %d from the new primary): a change came back", got, want, straggler, newPrimary)
	}
	if got, want := hits(t, p.tgt)-tgtHits, newPrimary+straggler; got != want {
		t.Errorf("new primary: %d rows written into items since the cutover, want %d (%d by the application, %d by the straggler replicated forward): a change came back", got, want, newPrimary, straggler)
	}

	// Switching back: cutover of the reverse pipeline while it runs.
	back := rev.start()
	psql(t, p.tgt, `INSERT INTO items (v) VALUES ('last on the new primary')`)
	out = rev.mustDecant("cutover", "--timeout", "2m")
	back.stop(t)
	if !strings.Contains(out, "safe to switch") {
		t.Fatalf("cutover of the reverse pipeline said:\n%s", out)
	}
	// Sequences came back too: a new row on the old primary takes a fresh
	// id, the one the new primary would have given.
	psql(t, p.src, `INSERT INTO items (v) VALUES ('old primary again')`)
	psql(t, p.tgt, `INSERT INTO items (v) VALUES ('old primary again')`)
	p.both(`DROP SCHEMA audit CASCADE`)
	p.assertEqual()

	// The origins of the sessions of streamed transactions went with them:
	// each would keep one of the server's replication states.
	for _, side := range []struct{ dsn, pipeline string }{{p.tgt, p.name}, {p.src, rev.name}} {
		if n := queryValue(t, side.dsn, `SELECT count(*)::text FROM pg_replication_origin WHERE starts_with(roname, 'decant_`+side.pipeline+`.')`); n != "0" {
			t.Errorf("%s replication origins decant_%s.N left after the runs ended", n, side.pipeline)
		}
	}
	out = rev.mustDecant("drop", "--yes")
	if !strings.Contains(out, "replication origins dropped: ") || strings.Contains(out, "replication origins dropped: 0") {
		t.Errorf("drop of the reverse pipeline said: %s", out)
	}
	if n := queryValue(t, p.src, `SELECT count(*)::text FROM pg_replication_origin WHERE starts_with(roname, 'decant_`+rev.name+`')`); n != "0" {
		t.Errorf("%s replication origins of the reverse pipeline left after drop", n)
	}
}

// TestCutoverReverseRefused: --reverse refuses, before any step, the
// forward pipeline's own name and a MySQL target; and in its step, creating nothing, a
// renamed table and a source user that may not take replication origins.
func TestCutoverReverseRefused(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE a (id integer PRIMARY KEY)`)
	if _, errOut, code := p.decant("cutover", "--reverse", p.name); code != 2 || !strings.Contains(errOut, "a name of its own") {
		t.Errorf("--reverse with the forward name: exit %d, %s", code, errOut)
	}
	m := newMySQLPair(t)
	if _, errOut, code := m.decant("cutover", "--reverse", "back"); code != 2 || !strings.Contains(errOut, "PostgreSQL servers only") {
		t.Errorf("--reverse with a MySQL target: exit %d, %s", code, errOut)
	}
	psql(t, p.tgt, `CREATE TABLE b (id integer PRIMARY KEY)`)
	p.mustDecant("init", "--map", "public.a=public.b")
	fwd := p.start("--map", "public.a=public.b")
	defer fwd.kill()
	out, errOut, code := p.decant("cutover", "--reverse", "back_"+p.name[:min(len(p.name), 40)], "--map", "public.a=public.b", "--timeout", "30s")
	if code != 1 || !strings.Contains(out, "maps table public.a to public.b") {
		t.Errorf("--reverse over a renamed table: exit %d\n%s%s", code, out, errOut)
	}
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM pg_replication_slots WHERE slot_name LIKE 'back\_%'`); n != "0" {
		t.Errorf("a refused --reverse left %s slots on the target", n)
	}
	fwd.kill()

	// The source's user, the reverse pipeline's target user, may read and
	// replicate but not take replication origins.
	q := newPair(t)
	q.both(`CREATE TABLE a (id integer PRIMARY KEY)`)
	q.mustDecant("init")
	role := "norigin_" + q.name
	psql(t, q.src, `CREATE ROLE `+role+` LOGIN REPLICATION; GRANT SELECT ON ALL TABLES IN SCHEMA public TO `+role)
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), q.src); err == nil {
			c.Exec(context.Background(), `REVOKE ALL ON ALL TABLES IN SCHEMA public FROM `+role+`; DROP ROLE `+role)
			c.Close(context.Background())
		}
	})
	run := q.start()
	defer run.kill()
	plain := *q
	plain.src = strings.Replace(q.src, "postgres@", role+"@", 1)
	out, errOut, code = plain.decant("cutover", "--reverse", "back_"+q.name[:min(len(q.name), 40)], "--timeout", "30s")
	if code != 1 || !strings.Contains(out, "FAIL reverse") || !strings.Contains(out, "may not set up replication origins") {
		t.Errorf("--reverse onto a source user without origin privileges: exit %d\n%s%s", code, out, errOut)
	}
	if n := queryValue(t, q.tgt, `SELECT count(*)::text FROM pg_replication_slots WHERE slot_name LIKE 'back\_%'`); n != "0" {
		t.Errorf("a refused --reverse left %s slots on the target", n)
	}
}

// reversePair is the pipeline name from p's target back to its source;
// the test's end drops its slot on p's target cluster.
func reversePair(p *pair, name string) *pair {
	r := &pair{t: p.t, name: name, src: p.tgt, tgt: p.src}
	p.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, r.src); err == nil {
			c.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active`, r.name)
			c.Close(ctx)
		}
		dropOrigins(ctx, r.tgt, r.name)
	})
	return r
}

// hits counts the rows written into items on dsn's side (reverseSchema).
func hits(t *testing.T, dsn string) int {
	t.Helper()
	var n int
	c := connect(t, dsn)
	if err := c.QueryRow(t.Context(), `SELECT count(*) FROM audit.hits`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestChainCarriesEverything: a chain of pipelines, A to B and B to C,
// carries every change through B, although what the first one applies
// on B carries its replication origin: only a transaction that would go
// back to where it came from is skipped (a pipeline and its reverse).
func TestChainCarriesEverything(t *testing.T) {
	ab := newPair(t) // A: the shared source cluster, B: the shared target cluster
	ab.both(reverseSchema)
	ab.mustDecant("init", "--tables", "public.items")
	third := harness.PostgresT(t, harness.PostgresOptions{})
	if err := third.CreateDatabase(t.Context(), ab.name); err != nil {
		t.Fatal(err)
	}
	bc := reversePair(ab, "chain_"+ab.name[:min(len(ab.name), 40)])
	bc.tgt = third.DSN(ab.name)
	psql(t, bc.tgt, reverseSchema)
	bc.mustDecant("init", "--tables", "public.items")

	psql(t, ab.src, `INSERT INTO items (v) SELECT 'from A' FROM generate_series(1, 40); UPDATE items SET n = 7 WHERE id <= 5`)
	ab.mustDecant("run", "--catch-up")
	psql(t, ab.tgt, `INSERT INTO items (id, v) VALUES (1000, 'from B')`)
	bc.mustDecant("run", "--catch-up")
	if got := queryValue(t, bc.tgt, `SELECT count(*) || ' ' || sum(n) || ' ' || count(*) FILTER (WHERE v = 'from B') FROM items`); got != "41 35 1" {
		t.Errorf("C holds rows, the sum of n and rows written on B %q, want \"41 35 1\": the chain dropped what A to B applied", got)
	}
}
