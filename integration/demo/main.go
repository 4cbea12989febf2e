// Command demo shows decant end to end on throwaway servers: it starts a
// PostgreSQL 15 source and target, creates a small shop schema, runs a
// concurrent workload while `decant run` replicates it, prints `decant
// status`, and checks that every target table equals the source.
//
//	go run ./integration/demo        (or: make demo)
package main

import (
	"context"
	"crypto/md5"
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

	"github.com/decant/decant/integration/harness"
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

func main() {
	target := flag.String("target", "postgres", "target kind: postgres")
	seconds := flag.Int("seconds", 15, "how long the workload runs")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *target, time.Duration(*seconds)*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, target string, duration time.Duration) error {
	if target != "postgres" {
		return fmt.Errorf("target %q: this build of the demo supports postgres", target)
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

	step("starting a throwaway PostgreSQL 15 source and target")
	src, err := harness.StartPostgres(ctx, harness.PostgresOptions{})
	if err != nil {
		return err
	}
	defer src.Remove()
	tgt, err := harness.StartPostgres(ctx, harness.PostgresOptions{})
	if err != nil {
		return err
	}
	defer tgt.Remove()
	for _, s := range []*harness.Postgres{src, tgt} {
		if err := s.CreateDatabase(ctx, "shop"); err != nil {
			return err
		}
	}
	srcDSN, tgtDSN := src.DSN("shop"), tgt.DSN("shop")
	fmt.Printf("  source %s\n  target %s\n", srcDSN, tgtDSN)
	for _, dsn := range []string{srcDSN, tgtDSN} {
		if err := execSQL(ctx, dsn, schema); err != nil {
			return err
		}
	}
	decant := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, append(args, "--source", srcDSN, "--target", tgtDSN, "--pipeline", "shop")...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		return cmd
	}

	step("decant init")
	if err := decant("init").Run(); err != nil {
		return fmt.Errorf("decant init: %w", err)
	}

	step("decant run (in the background) while 4 clients write for " + duration.String())
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
	n, err := workload(ctx, srcDSN, 4, duration)
	if err != nil {
		return err
	}
	fmt.Printf("  %d transactions committed on the source\n", n)

	step("waiting for decant to apply the last of them")
	last, err := lastXid(ctx, srcDSN)
	if err != nil {
		return err
	}
	if err := waitApplied(ctx, tgtDSN, last, time.Minute); err != nil {
		return err
	}
	step("decant status")
	if err := decant("status").Run(); err != nil {
		return err
	}

	step("stopping decant run (SIGTERM)")
	runCmd.Process.Signal(syscall.SIGTERM)
	if err := runCmd.Wait(); err != nil {
		return fmt.Errorf("decant run: %w (log in %s)", err, logFile.Name())
	}

	step("checking that the target equals the source")
	if err := compare(ctx, srcDSN, tgtDSN); err != nil {
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

func waitApplied(ctx context.Context, dsn, xid string, timeout time.Duration) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		var got string
		if err := conn.QueryRow(ctx, `SELECT coalesce(xid::text, '') FROM decant.checkpoint WHERE pipeline = 'shop'`).Scan(&got); err != nil {
			return err
		}
		if got == xid {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return errors.New("decant did not apply the last transaction within a minute")
}

// compare checks every table by row count and a digest of its sorted rows.
func compare(ctx context.Context, srcDSN, tgtDSN string) error {
	fmt.Printf("  %-12s %10s %10s  %s\n", "table", "source", "target", "rows equal")
	ok := true
	for _, table := range []string{"customers", "orders", "order_items", "audit"} {
		sn, sd, err := digest(ctx, srcDSN, table)
		if err != nil {
			return err
		}
		tn, td, err := digest(ctx, tgtDSN, table)
		if err != nil {
			return err
		}
		same := sn == tn && sd == td
		ok = ok && same
		fmt.Printf("  %-12s %10d %10d  %v\n", table, sn, tn, same)
	}
	if !ok {
		return errors.New("target differs from source")
	}
	fmt.Println("  target equals source")
	return nil
}

func digest(ctx context.Context, dsn, table string) (int, string, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return 0, "", err
	}
	cfg.RuntimeParams["TimeZone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, "", err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT r::text FROM %s r ORDER BY 1`, pgx.Identifier{table}.Sanitize()))
	if err != nil {
		return 0, "", err
	}
	h := md5.New()
	n := 0
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return 0, "", err
		}
		h.Write([]byte(s))
		h.Write([]byte{0})
		n++
	}
	return n, fmt.Sprintf("%x", h.Sum(nil)), rows.Err()
}
