package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// addedSchema: the tables add-tables brings into a running pipeline, a
// keyed one and a keyless insert-only one.
const addedSchema = `
CREATE TABLE orders (id integer PRIMARY KEY, n integer NOT NULL, note text);
CREATE TABLE audit (at integer, msg text);
INSERT INTO orders SELECT i, 0, repeat('x', 200) FROM generate_series(1, 60000) i;
INSERT INTO audit SELECT i, 'before' FROM generate_series(1, 2000) i;
`

// TestAddTables: while decant run applies a write load on the pipeline's
// tables (three clients), add-tables brings in orders (keyed) and audit
// (keyless, --append-only) with their rows, while a fourth client changes
// both, in transactions that also write to a table the pipeline had. The first
// add-tables is SIGKILLed mid-copy; run meets the tables' changes and
// waits for them, and says so (SIGKILLed then, run waits again); the
// second add-tables finishes the copy and run goes on. At the end the target equals the
// source on every table and both tables are ready; on both targets.
func TestAddTables(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newTargetPair(t, kind == "mariadb")
			psql(t, p.src, mixedSchema+addedSchema)
			p.mustDecant("init", "--create-tables", "--tables", "public.accounts,public.events,public.batches,public.marker")
			run := p.start()

			var stop atomic.Bool
			done := make(chan error, 2)
			go func() {
				for !stop.Load() {
					if _, err := workload(t, p.src, 3, 50); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			go func() { done <- orderWriter(t.Context(), p.src, &stop) }()

			p.killAddTablesMidCopy()
			if s := p.syncStates(); s != "public.audit copying,public.orders copying" {
				t.Errorf("after add-tables was killed: table states %q, want both copying", s)
			}
			if st := p.mustDecant("status"); !strings.Contains(st, "added table    public.orders copying") {
				t.Errorf("status does not show orders copying:\n%s", st)
			}
			// The run meets the tables' changes and waits for them, also
			// while no add-tables runs.
			waitFor(t, 3*time.Minute, func() bool { return strings.Contains(run.stderr.String(), waitLine) })
			// Killed while it waits, run starts again from its checkpoint,
			// before the table's first change, and waits there again.
			run.kill()
			run = p.start()
			waitFor(t, 3*time.Minute, func() bool { return strings.Contains(run.stderr.String(), waitLine) })
			out := p.mustDecant("add-tables", "public.orders,public.audit", "--create-tables", "--append-only", "public.audit", "--jobs", "2")
			if !strings.Contains(out, "added 2 table(s)") {
				t.Errorf("add-tables output does not say it added both tables:\n%s", out)
			}
			if s := p.syncStates(); s != "public.audit ready,public.orders ready" {
				t.Errorf("after add-tables: table states %q, want both ready", s)
			}
			time.Sleep(2 * time.Second) // writes after the copy, streamed
			stop.Store(true)
			for range 2 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
			finalMarker(t, p.src)
			run.stop(t)
			if log := run.stderr.String(); !strings.Contains(log, "the table's copy is ready: the stream goes on") {
				t.Errorf("run never said it went on after the copy:\n%s", log)
			}
			p.catchUp()
			if out, errOut, code := p.decant("verify"); code != 0 {
				t.Errorf("verify after add-tables: exit %d\n%s%s", code, out, errOut)
			}
			if st := p.mustDecant("status"); !strings.Contains(st, "added table    public.orders ready, copied as of") || !strings.Contains(st, "added table    public.audit ready") {
				t.Errorf("status does not show the added tables ready:\n%s", st)
			}
			out = p.mustDecant("add-tables", "public.orders")
			if !strings.Contains(out, "public.orders is replicated already") {
				t.Errorf("add-tables of a ready table: %s", out)
			}
			p.mustDecant("drop", "--yes")
			if s := p.syncStates(); s != "" {
				t.Errorf("after drop: table states %q, want none", s)
			}
		})
	}
}

// waitLine is what run logs as it waits for a table's copy.
const waitLine = "waiting for decant add-tables to finish copying the table"

// killAddTablesMidCopy starts add-tables with small copy tasks and kills
// it once the target has some of orders' rows and not all.
func (p *pair) killAddTablesMidCopy() {
	p.t.Helper()
	a := p.launch("add-tables", "public.orders,public.audit", "--create-tables", "--append-only", "public.audit", "--jobs", "1", "--split-size", "64KiB")
	waitFor(p.t, 2*time.Minute, func() bool {
		select {
		case <-a.done:
			p.t.Fatalf("add-tables ended before it was killed mid-copy:\n%s", a.stderr.String())
		default:
		}
		return p.syncStates() != "" && p.targetValue(`SELECT count(*) FROM orders`) != "0"
	})
	a.kill()
	if n := p.targetValue(`SELECT count(*) FROM orders`); n == queryValue(p.t, p.src, `SELECT count(*)::text FROM orders`) {
		p.t.Fatalf("add-tables had copied all of orders (%s rows) before it was killed", n)
	}
}

// syncStates lists the pipeline's add-tables states on the target, as
// "schema.table state" in name order; "" before there are any.
func (p *pair) syncStates() string {
	p.t.Helper()
	q := `SELECT coalesce(string_agg(table_schema || '.' || table_name || ' ' || state, ',' ORDER BY table_schema, table_name), '') FROM decant.table_sync WHERE pipeline = '` + p.name + `'`
	if p.mysql {
		if p.myValue(`SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'decant_table_sync'`) == "0" {
			return ""
		}
		return p.myValue(`SELECT coalesce(group_concat(concat(table_schema, '.', table_name, ' ', state) ORDER BY table_schema, table_name SEPARATOR ','), '') FROM decant_table_sync WHERE pipeline = '` + p.name + `'`)
	}
	if queryValue(p.t, p.tgt, `SELECT (to_regclass('decant.table_sync') IS NOT NULL)::text`) == "false" {
		return ""
	}
	return queryValue(p.t, p.tgt, q)
}

// orderWriter changes orders and audit until stop, each transaction also
// inserting into batches, a table the pipeline replicated from the start.
func orderWriter(ctx context.Context, dsn string, stop *atomic.Bool) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	rng := rand.New(rand.NewPCG(3, 3))
	for i := 1; !stop.Load(); i++ {
		sql := fmt.Sprintf(`BEGIN;
			INSERT INTO orders VALUES (%d, 1, 'new');
			UPDATE orders SET n = n + 1, note = 'changed' WHERE id = %d;
			DELETE FROM orders WHERE id = %d;
			INSERT INTO audit VALUES (%d, 'during');
			INSERT INTO batches (client, n, body) VALUES (99, %d, 'orders');
			COMMIT;`, 100000+i, 1+rng.IntN(60000), 1+rng.IntN(60000), 10000+i, i)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return fmt.Errorf("order writer txn %d: %w", i, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
