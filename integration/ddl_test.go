package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// ddlSteps are schema changes interleaved with writes, run one after the
// other while decant streams; after each the target must equal the source.
var ddlSteps = []struct {
	name, sql string
}{
	{"add a column and write it in the same transaction", `BEGIN;
		ALTER TABLE items ADD COLUMN qty integer DEFAULT 0;
		INSERT INTO items VALUES (10, 'ten', 5);
		UPDATE items SET qty = 7 WHERE id = 1;
		COMMIT;`},
	{"drop a column", `ALTER TABLE items DROP COLUMN note; INSERT INTO items (id, name, qty) VALUES (11, 'eleven', 1);`},
	{"rename a column", `BEGIN; ALTER TABLE items RENAME COLUMN qty TO quantity; UPDATE items SET quantity = quantity + 1; COMMIT;`},
	{"rename a table", `BEGIN; ALTER TABLE items RENAME TO goods; INSERT INTO goods VALUES (12, 'twelve', 3); COMMIT;`},
	{"change a type", `ALTER TABLE goods ALTER COLUMN quantity TYPE bigint; UPDATE goods SET quantity = quantity * 1000000000;`},
	{"add a NOT NULL column with a default", `ALTER TABLE goods ADD COLUMN status text NOT NULL DEFAULT 'new'; UPDATE goods SET status = 'old' WHERE id < 3;`},
	{"set and drop defaults and NOT NULL", `ALTER TABLE goods ALTER COLUMN name SET NOT NULL; ALTER TABLE goods ALTER COLUMN quantity DROP DEFAULT;
		INSERT INTO goods (id, name, quantity) VALUES (13, 'thirteen', 2);`},
	{"add a unique constraint and an index", `ALTER TABLE goods ADD CONSTRAINT goods_name_key UNIQUE (name); CREATE INDEX goods_status_idx ON goods (status);
		INSERT INTO goods (id, name, quantity) VALUES (14, 'fourteen', 4);`},
	{"create a table and fill it in the same transaction", `BEGIN;
		CREATE TABLE fresh (id integer PRIMARY KEY, v text, made timestamptz DEFAULT now());
		INSERT INTO fresh (id, v) SELECT g, 'v' || g FROM generate_series(1, 50) g;
		COMMIT;
		UPDATE fresh SET v = 'changed' WHERE id % 5 = 0; DELETE FROM fresh WHERE id > 45;`},
	{"change the primary key", `ALTER TABLE fresh DROP CONSTRAINT fresh_pkey; ALTER TABLE fresh ADD PRIMARY KEY (id, v);
		UPDATE fresh SET made = '2020-01-01' WHERE id = 1;`},
	{"drop a table", `DROP TABLE other; INSERT INTO goods (id, name, quantity) VALUES (15, 'fifteen', 5);`},
	{"truncate", `TRUNCATE fresh; INSERT INTO fresh (id, v) VALUES (1, 'again');`},
}

const ddlSchema = `
CREATE TABLE items (id integer PRIMARY KEY, name text, note text);
CREATE TABLE other (id integer PRIMARY KEY);
CREATE TABLE marker (id serial PRIMARY KEY, xid text);
`

const ddlRows = `
INSERT INTO items VALUES (1, 'one', 'n1'), (2, 'two', NULL);
INSERT INTO other VALUES (1);
`

// TestDDL replicates a sequence of schema changes, interleaved with rows
// written by several clients, into both targets, checking target = source
// after every step.
func TestDDL(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			var p *pair
			if kind == "mariadb" {
				p = newMySQLPair(t)
				psql(t, p.src, ddlSchema)
				p.mustDecant("init", "--ddl", "--create-tables")
				psql(t, p.src, ddlRows) // streamed: the target starts empty
			} else {
				p = newPair(t)
				p.both(ddlSchema + ddlRows)
				p.mustDecant("init", "--ddl")
			}
			a := p.start()
			for _, step := range ddlSteps {
				done := make(chan struct{})
				go func() { defer close(done); writers(t, p.src) }()
				psql(t, p.src, step.sql)
				<-done
				xid := queryValue(t, p.src, `INSERT INTO marker (xid) VALUES (pg_current_xact_id()::text) RETURNING xid`)
				waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
				if a.exited() {
					t.Fatalf("decant stopped at step %q:\n%s", step.name, a.stderr.String())
				}
				p.assertEqual()
				if t.Failed() {
					t.Fatalf("target differs after step %q", step.name)
				}
			}
			a.stop(t)
			if p.targetHasTable("other") {
				t.Error("table other was dropped on the source but not on the target")
			}
			if p.targetHasTable("items") || !p.targetHasTable("goods") {
				t.Error("table items was not renamed to goods on the target")
			}
		})
	}
}

// writers runs a few concurrent clients, alongside each schema change, on
// a table that exists at every step.
func writers(t *testing.T, dsn string) {
	t.Helper()
	var wg sync.WaitGroup
	for c := 0; c < 3; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn := connect(t, dsn)
			defer conn.Close(context.Background()) // one step of many: do not keep it to the test's end
			for i := 0; i < 5; i++ {
				conn.Exec(t.Context(), `INSERT INTO marker (xid) VALUES ($1)`, fmt.Sprintf("client %d row %d", c, i))
			}
		}(c)
	}
	wg.Wait()
}

// targetHasTable reports whether the target has a table of that name.
func (p *pair) targetHasTable(name string) bool {
	p.t.Helper()
	if p.mysql {
		return p.myValue(`SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = '`+name+`'`) != "0"
	}
	return queryValue(p.t, p.tgt, `SELECT count(*)::text FROM pg_tables WHERE schemaname = 'public' AND tablename = '`+name+`'`) != "0"
}

// exited reports whether the background run has ended.
func (a *agent) exited() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}
