package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/harness"
)

// TestForgedDDL: a source role with nothing but LOGIN (and the CONNECT
// every role has) writes what looks like decant's DDL capture into the
// stream: a DROP of a replicated table, an index whose definition is
// another statement, and a DROP naming no pipeline. On both targets, with
// and without --ddl, nothing of it runs on the target: every table stays,
// the pipeline keeps streaming, and each forgery is logged (position, not
// content), counted in decant_ddl_rejected_total and announced by a
// ddl_rejected webhook. With --ddl the role cannot write the capture's
// queue table either, and a real schema change still replicates.
func TestForgedDDL(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		for _, ddl := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s ddl=%v", kind, ddl), func(t *testing.T) { forgedDDL(t, kind == "mariadb", ddl) })
		}
	}
}

const forgedSchema = `
CREATE TABLE items (id integer PRIMARY KEY, name text);
CREATE TABLE other (id integer PRIMARY KEY);
CREATE TABLE marker (id serial PRIMARY KEY, xid text);
INSERT INTO items VALUES (1, 'one');
INSERT INTO other VALUES (1);
`

func forgedDDL(t *testing.T, mysql, ddl bool) {
	p := newTargetPair(t, mysql)
	init := []string{"init"}
	if ddl {
		init = append(init, "--ddl")
	}
	if mysql {
		psql(t, p.src, forgedSchema)
		init = append(init, "--create-tables", "--copy")
	} else {
		p.both(forgedSchema)
	}
	p.mustDecant(init...)

	role := "mallory_" + p.name
	psql(t, p.src, "CREATE ROLE "+role+" LOGIN")
	mallory := connect(t, strings.Replace(p.src, "postgres://postgres@", "postgres://"+role+"@", 1))

	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	hook := newWebhookReceiver(t)
	a := p.start("--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--webhook", hook.URL, "--webhook-secret", "k")
	defer a.stop(t)

	items := queryValue(t, p.src, `SELECT 'items'::regclass::oid::text`)
	other := queryValue(t, p.src, `SELECT 'other'::regclass::oid::text`)
	forged := []string{
		fmt.Sprintf(`{"pipeline": %q, "tag": "DROP TABLE", "statement": "DROP TABLE items", "tables": [],
			"dropped": [{"oid": %s, "schema": "public", "name": "items"}]}`, p.name, items),
		fmt.Sprintf(`{"pipeline": %q, "tag": "CREATE INDEX", "statement": "CREATE INDEX pwned_idx", "tables": [{"oid": %s, "schema": "public", "name": "items",
			"columns": [{"attnum": 1, "name": "id", "type_oid": 23, "typmod": -1, "sql_type": "integer", "not_null": true},
			            {"attnum": 2, "name": "name", "type_oid": 25, "typmod": -1, "sql_type": "text"}],
			"primary_key": ["id"], "indexes": [{"name": "pwned_idx", "columns": [], "expr": "CREATE TABLE pwned (x int)"}]}]}`, p.name, items),
		fmt.Sprintf(`{"tag": "DROP TABLE", "dropped": [{"oid": %s, "schema": "public", "name": "other"}]}`, other),
	}
	for _, content := range forged {
		if _, err := mallory.Exec(t.Context(), `SELECT pg_logical_emit_message(true, 'decant.ddl', $1::text)`, content); err != nil {
			t.Fatalf("role %s emits a message: %v", role, err)
		}
	}
	if ddl {
		// Nor may the role write the capture's queue, or run its function,
		// or put a table of its own where the queue lives.
		for _, sql := range []string{
			`INSERT INTO decant.ddl_events_` + p.name + ` (event) VALUES ('{}')`,
			`SELECT decant.ddl_` + p.name + `()`,
			`CREATE TABLE decant.ddl_events_x (event text)`,
		} {
			if _, err := mallory.Exec(t.Context(), sql); err == nil {
				t.Errorf("role %s may run %s", role, sql)
			}
		}
	}

	waitMarker(t, p, a)
	for _, table := range []string{"items", "other"} {
		if !p.targetHasTable(table) {
			t.Errorf("table %s is gone from the target", table)
		}
	}
	if p.targetHasTable("pwned") {
		t.Error("the forged index definition ran on the target")
	}
	if n := strings.Count(a.stderr.String(), "schema change from the stream not applied"); n != len(forged) {
		t.Errorf("%d refusals logged, want %d:\n%s", n, len(forged), a.stderr.String())
	}
	if out := a.stderr.String(); strings.Contains(out, "pwned") || strings.Contains(out, "DROP TABLE items") {
		t.Errorf("the log repeats the forged content:\n%s", out)
	}
	m, _ := endpoint{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}.metrics()
	if got := m[`decant_ddl_rejected_total{pipeline="`+p.name+`"}`]; got != float64(len(forged)) {
		t.Errorf("decant_ddl_rejected_total = %v, want %d", got, len(forged))
	}
	waitFor(t, 30*time.Second, func() bool { return countKind(hook.events(), "ddl_rejected") >= len(forged) })
	if n := countKind(hook.events(), "ddl_rejected"); n != len(forged) {
		t.Errorf("%d ddl_rejected webhook events, want %d", n, len(forged))
	}
	if raw := hook.raw(); strings.Contains(raw, "pwned") {
		t.Errorf("a webhook event repeats the forged content: %s", raw)
	}

	// The stream goes on: rows, and with --ddl a real schema change.
	change := `INSERT INTO items VALUES (2, 'two');`
	if ddl {
		change = `ALTER TABLE items ADD COLUMN qty integer; INSERT INTO items VALUES (2, 'two', 3);`
	}
	psql(t, p.src, change)
	waitMarker(t, p, a)
	p.assertEqual()
}

// waitMarker commits a marker row on the source and waits for the running
// agent to apply it.
func waitMarker(t *testing.T, p *pair, a *agent) {
	t.Helper()
	xid := queryValue(t, p.src, `INSERT INTO marker (xid) VALUES (pg_current_xact_id()::text) RETURNING xid`)
	waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
	if a.exited() {
		t.Fatalf("decant stopped:\n%s", a.stderr.String())
	}
}

func countKind(events []map[string]any, kind string) int {
	n := 0
	for _, e := range events {
		if e["kind"] == kind {
			n++
		}
	}
	return n
}
