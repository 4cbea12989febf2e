// Command demo shows a migration with decant end to end on throwaway
// servers: it starts a PostgreSQL 15 source and a PostgreSQL or MariaDB
// target, loads a small shop on the source, and while four clients keep
// writing to it, copies every table into the empty target (`decant init
// --copy --create-tables`, with progress) and streams what changed since
// (`decant run`); then `decant verify`, `decant cutover --verify`, and a
// check of its own that every target table equals the source.
//
//	go run ./integration/demo        (or: make demo)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/compare"
	"github.com/decant/decant/integration/harness"
	"github.com/decant/decant/mapping"
)

const schema = `
CREATE TABLE customers (id integer PRIMARY KEY, name text NOT NULL, email text, balance numeric(12,2) NOT NULL DEFAULT 0, updated timestamptz);
CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer_id integer NOT NULL, status text NOT NULL,
	total numeric(12,2) NOT NULL, placed timestamptz NOT NULL DEFAULT now(), notes jsonb);
CREATE TABLE order_items (order_id bigint NOT NULL, line integer NOT NULL, sku text NOT NULL, qty integer NOT NULL,
	price numeric(10,2) NOT NULL, PRIMARY KEY (order_id, line));
CREATE TABLE audit (at timestamptz NOT NULL DEFAULT now(), what text);  -- no key: replicated by whole row
ALTER TABLE audit REPLICA IDENTITY FULL;
`

// preload is the shop before the migration starts.
const preload = `
INSERT INTO customers (id, name, email, balance, updated)
	SELECT g, 'Customer ' || g, 'c' || g || '@example.com', (g %% 1000) / 10.0, now() FROM generate_series(0, %[1]d) g;
INSERT INTO orders (customer_id, status, total, notes)
	SELECT g %% %[1]d, (ARRAY['new', 'paid', 'shipped'])[1 + g %% 3], 0, jsonb_build_object('batch', g %% 10) FROM generate_series(1, %[2]d) g;
INSERT INTO order_items SELECT o.id, l, 'SKU-' || (o.id * l %% 100), 1 + l %% 3, 9.99 * l FROM orders o, generate_series(1, 3) l;
UPDATE orders o SET total = (SELECT sum(qty * price) FROM order_items i WHERE i.order_id = o.id);
INSERT INTO audit (what) SELECT 'imported ' || g FROM generate_series(1, 1000) g;
ANALYZE;
`

func main() {
	target := flag.String("target", "postgres", "target kind: postgres or mysql (a MariaDB server)")
	seconds := flag.Int("seconds", 15, "how long the workload runs")
	orders := flag.Int("orders", 100000, "orders on the source before the migration (3 items each)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *target, time.Duration(*seconds)*time.Second, *orders); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, target string, duration time.Duration, orders int) error {
	if target != "postgres" && target != "mysql" {
		return fmt.Errorf("target %q: use postgres or mysql (MariaDB)", target)
	}
	began := time.Now()
	step("building decant")
	dir, err := os.MkdirTemp("", "decant-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := harness.BuildDecant(ctx, dir)
	if err != nil {
		return err
	}

	step("starting a throwaway PostgreSQL 15 source and a " + target + " target")
	src, err := harness.StartPostgres(ctx, harness.PostgresOptions{})
	if err != nil {
		return err
	}
	defer src.Remove()
	if err := src.CreateDatabase(ctx, "shop"); err != nil {
		return err
	}
	srcDSN := src.DSN("shop")
	if err := execSQL(ctx, srcDSN, schema); err != nil {
		return err
	}
	var tgtDSN string
	if target == "mysql" {
		my, err := harness.StartMariaDB(ctx)
		if err != nil {
			return err
		}
		defer my.Remove()
		if err := my.CreateDatabase(ctx, "shop"); err != nil {
			return err
		}
		tgtDSN = my.DSN("shop")
	} else {
		tgt, err := harness.StartPostgres(ctx, harness.PostgresOptions{})
		if err != nil {
			return err
		}
		defer tgt.Remove()
		if err := tgt.CreateDatabase(ctx, "shop"); err != nil {
			return err
		}
		tgtDSN = tgt.DSN("shop")
	}
	fmt.Printf("  source %s\n  target %s (empty)\n", srcDSN, tgtDSN)
	decant := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, append(args, "--source", srcDSN, "--target", tgtDSN, "--pipeline", "shop")...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd
	}

	step(fmt.Sprintf("loading the shop on the source: %d customers, %d orders, %d order items", orders/20+1, orders, 3*orders))
	if err := execSQL(ctx, srcDSN, fmt.Sprintf(preload, orders/20, orders)); err != nil {
		return err
	}

	step("4 clients write to the source for " + duration.String() + " from now on")
	type outcome struct {
		n   int
		err error
	}
	written := make(chan outcome, 1)
	go func() {
		n, err := workload(ctx, srcDSN, 4, duration)
		written <- outcome{n, err}
	}()
	time.Sleep(time.Second)

	step("decant init --copy --create-tables: create the target tables, copy every row as of one snapshot, build the indexes")
	if err := decant("init", "--copy", "--create-tables").Run(); err != nil {
		return fmt.Errorf("decant init --copy: %w", err)
	}

	step("decant run (in the background): stream what the clients changed since the snapshot")
	runCmd := decant("run")
	logFile, err := os.Create(filepath.Join(dir, "run.log"))
	if err != nil {
		return err
	}
	runCmd.Stdout, runCmd.Stderr = logFile, logFile
	if err := runCmd.Start(); err != nil {
		return err
	}
	defer runCmd.Process.Kill()
	w := <-written
	if w.err != nil {
		return w.err
	}
	fmt.Printf("  %d transactions committed on the source while decant copied and streamed\n", w.n)

	step("waiting for decant to apply the last of them")
	last, err := lastXid(ctx, srcDSN)
	if err != nil {
		return err
	}
	if err := waitApplied(ctx, bin, srcDSN, tgtDSN, last, time.Minute); err != nil {
		return err
	}
	step("decant status")
	if err := decant("status").Run(); err != nil {
		return err
	}

	step("decant verify: row counts and checksums over key ranges, table by table")
	if err := decant("verify").Run(); err != nil {
		return fmt.Errorf("decant verify: %w", err)
	}

	step("decant cutover --verify: fence, catch-up, sequences, verify")
	if err := decant("cutover", "--verify", "--timeout", "2m").Run(); err != nil {
		return fmt.Errorf("decant cutover: %w", err)
	}

	step("stopping decant run (SIGTERM)")
	runCmd.Process.Signal(syscall.SIGTERM)
	if err := runCmd.Wait(); err != nil {
		return fmt.Errorf("decant run: %w (log in %s)", err, logFile.Name())
	}

	step("checking, with the demo's own comparison, that the target equals the source")
	if err := check(ctx, srcDSN, tgtDSN, target == "mysql"); err != nil {
		return err
	}
	step(fmt.Sprintf("done in %s", time.Since(began).Round(100*time.Millisecond)))
	return nil
}

func step(s string) { fmt.Printf("\n== %s\n", s) }

func execSQL(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// workload runs clients sessions of shop traffic for d: new customers,
// orders with items, payments, cancellations, audit lines.
func workload(ctx context.Context, dsn string, clients int, d time.Duration) (int, error) {
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	deadline := time.Now().Add(d)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errc <- err
				return
			}
			defer conn.Close(context.WithoutCancel(ctx))
			rng := rand.New(rand.NewPCG(uint64(c), 1))
			for n := 0; time.Now().Before(deadline); n++ {
				if err := shopTxn(ctx, conn, rng); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				total++
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	close(errc)
	return total, <-errc
}

func shopTxn(ctx context.Context, conn *pgx.Conn, rng *rand.Rand) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		cust := rng.IntN(500)
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO customers (id, name, email) VALUES ($1, $2, $3) ON CONFLICT (id) DO UPDATE SET updated = now()`,
			cust, fmt.Sprintf("Customer %d ✓", cust), fmt.Sprintf("c%d@example.com", cust))
		switch rng.IntN(4) {
		case 0, 1:
			batch.Queue(`WITH o AS (INSERT INTO orders (customer_id, status, total, notes) VALUES ($1, 'new', 0, $2) RETURNING id)
				INSERT INTO order_items SELECT o.id, g, 'SKU-' || (g * 7 % 100), 1 + g % 3, 9.99 * g FROM o, generate_series(1, $3::int) g`,
				cust, map[string]any{"gift": rng.IntN(2) == 0}, 1+rng.IntN(5))
			batch.Queue(`UPDATE orders o SET total = (SELECT sum(qty * price) FROM order_items i WHERE i.order_id = o.id) WHERE o.status = 'new' AND o.customer_id = $1`, cust)
		case 2:
			batch.Queue(`UPDATE customers SET balance = balance + $2, updated = now() WHERE id = $1`, cust, rng.IntN(10000)/100.0)
			batch.Queue(`UPDATE orders SET status = 'paid' WHERE id = (SELECT min(id) FROM orders WHERE customer_id = $1 AND status = 'new')`, cust)
		case 3:
			batch.Queue(`DELETE FROM order_items WHERE order_id = (SELECT min(id) FROM orders WHERE customer_id = $1 AND status = 'new')`, cust)
			batch.Queue(`DELETE FROM orders WHERE id = (SELECT min(id) FROM orders WHERE customer_id = $1 AND status = 'new')`, cust)
		}
		batch.Queue(`INSERT INTO audit (what) VALUES ($1)`, fmt.Sprintf("customer %d touched", cust))
		return tx.SendBatch(ctx, batch).Close()
	})
}

func lastXid(ctx context.Context, dsn string) (string, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var xid string
	err = conn.QueryRow(ctx, `INSERT INTO audit (what) VALUES ('the end') RETURNING pg_current_xact_id()::text`).Scan(&xid)
	return xid, err
}

// waitApplied polls decant status until the checkpoint names xid.
func waitApplied(ctx context.Context, bin, srcDSN, tgtDSN, xid string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		out, err := exec.CommandContext(ctx, bin, "status", "--json", "--source", srcDSN, "--target", tgtDSN, "--pipeline", "shop").Output()
		if err != nil {
			return fmt.Errorf("decant status: %w", err)
		}
		var st struct {
			Checkpoint struct {
				Xid uint64 `json:"xid"`
			} `json:"checkpoint"`
		}
		if err := json.Unmarshal(out, &st); err != nil {
			return err
		}
		if fmt.Sprint(st.Checkpoint.Xid) == xid {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("decant did not apply the last transaction within a minute")
}

// check compares every table by its rows (following the type mapping on
// MySQL) and prints a summary.
func check(ctx context.Context, srcDSN, tgtDSN string, mysql bool) error {
	var results []compare.Result
	var err error
	if mysql {
		results, err = compare.MySQL(ctx, srcDSN, tgtDSN, mapping.PolicyError)
	} else {
		results, err = compare.PG(ctx, srcDSN, tgtDSN)
	}
	if err != nil {
		return err
	}
	fmt.Printf("  %-20s %10s %10s  %s\n", "table", "source", "target", "rows equal")
	ok := true
	for _, r := range results {
		ok = ok && r.Equal()
		fmt.Printf("  %-20s %10d %10d  %v\n", r.Table, len(r.Source), len(r.Dest), r.Equal())
	}
	if !ok {
		return errors.New("target differs from source")
	}
	fmt.Println("  target equals source")
	return nil
}
