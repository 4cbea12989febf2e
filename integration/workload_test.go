package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// mixedSchema has keyed and keyless tables for the mixed workload.
const mixedSchema = `
CREATE TABLE accounts (id integer PRIMARY KEY, owner text NOT NULL, balance numeric(12,2) NOT NULL, note text);
CREATE TABLE events (kind integer, payload text);
ALTER TABLE events REPLICA IDENTITY FULL;
CREATE TABLE batches (id bigserial PRIMARY KEY, client integer, n integer, body text);
CREATE TABLE marker (id integer PRIMARY KEY, xid text);
`

// workload runs clients concurrent sessions on the source, each committing
// txns transactions of mixed inserts, updates and deletes over keyed and
// keyless tables (where identical duplicates are common), with rollbacks,
// savepoints and the odd large transaction. Source-side deadlocks roll back
// like any other aborted transaction. It returns the number committed.
// It may run outside the test goroutine, so it returns errors.
func workload(t testing.TB, dsn string, clients, txns int) (int64, error) {
	return runClients(t, dsn, clients, 42, func(conn *pgx.Conn, rng *rand.Rand, client, i int) (bool, bool, error) {
		if i >= txns {
			return false, false, nil
		}
		ok, err := mixedTxn(t.Context(), conn, rng, client)
		if err != nil {
			err = fmt.Errorf("client %d txn %d: %w", client, i, err)
		}
		return true, ok, err
	})
}

// runClients runs step on clients connections at once, each with its own
// random source, until step says to stop or fails, and counts the steps
// that committed. It may run outside the test goroutine, so it returns
// the first error.
func runClients(t testing.TB, dsn string, clients int, seed uint64,
	step func(conn *pgx.Conn, rng *rand.Rand, client, i int) (more, committed bool, err error)) (int64, error) {
	var committed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(client int) {
			defer wg.Done()
			conn, err := pgx.Connect(t.Context(), dsn)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(context.Background())
			rng := rand.New(rand.NewPCG(uint64(client), seed))
			for i := 0; ; i++ {
				more, ok, err := step(conn, rng, client, i)
				if err != nil {
					errs <- err
					return
				}
				if !more {
					return
				}
				if ok {
					committed.Add(1)
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return committed.Load(), err
	}
	return committed.Load(), nil
}

// mixedTxn runs one random transaction; it reports whether it committed.
func mixedTxn(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, client int) (bool, error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	steps := 1 + rng.IntN(4)
	for s := 0; s < steps; s++ {
		var sql string
		var args []any
		id := rng.IntN(400)
		switch rng.IntN(10) {
		case 0, 1:
			sql, args = `INSERT INTO accounts VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + 1`,
				[]any{id, fmt.Sprintf("owner %d", client), rng.IntN(100000), nullable(rng, "note ✓")}
		case 2:
			sql, args = `UPDATE accounts SET balance = balance - 1, note = $2 WHERE id = $1`, []any{id, nullable(rng, "upd\ttab")}
		case 3:
			sql, args = `DELETE FROM accounts WHERE id = $1`, []any{id}
		case 4, 5:
			sql, args = `INSERT INTO events VALUES ($1, $2)`, []any{rng.IntN(5), nullable(rng, "dup")}
		case 6:
			sql, args = `UPDATE events SET payload = $2 WHERE ctid = (SELECT ctid FROM events WHERE kind = $1 LIMIT 1)`, []any{rng.IntN(5), nullable(rng, "changed")}
		case 7:
			sql, args = `DELETE FROM events WHERE ctid = (SELECT ctid FROM events WHERE kind = $1 LIMIT 1)`, []any{rng.IntN(5)}
		case 8:
			n := 1 + rng.IntN(60)
			sql, args = `INSERT INTO batches (client, n, body) SELECT $1, g, repeat('b', g) FROM generate_series(1, $2::int) g`, []any{client, n}
		case 9:
			sql, args = `DELETE FROM batches WHERE id IN (SELECT id FROM batches WHERE client = $1 ORDER BY id LIMIT 5)`, []any{client}
		}
		if rng.IntN(8) == 0 {
			if _, err := tx.Exec(ctx, "SAVEPOINT sp"); err != nil {
				return false, err
			}
			if _, err := tx.Exec(ctx, sql, args...); err != nil {
				return rollbackIfConflict(ctx, tx, err)
			}
			if _, err := tx.Exec(ctx, "ROLLBACK TO SAVEPOINT sp"); err != nil {
				return false, err
			}
			continue
		}
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			return rollbackIfConflict(ctx, tx, err)
		}
	}
	if rng.IntN(12) == 0 {
		return false, tx.Rollback(ctx)
	}
	if err := tx.Commit(ctx); err != nil {
		return rollbackIfConflict(ctx, tx, err)
	}
	return true, nil
}

// rollbackIfConflict treats deadlocks and serialization failures between
// clients as aborted transactions.
func rollbackIfConflict(ctx context.Context, tx pgx.Tx, err error) (bool, error) {
	if code := sqlState(err); code == "40P01" || code == "40001" {
		return false, tx.Rollback(ctx)
	}
	return false, err
}

func nullable(rng *rand.Rand, s string) any {
	if rng.IntN(4) == 0 {
		return nil
	}
	if rng.IntN(3) == 0 {
		return ""
	}
	return s
}

// finalMarker commits a last transaction and returns its xid, which the
// checkpoint must name once everything is applied.
func finalMarker(t testing.TB, dsn string) string {
	t.Helper()
	return queryValue(t, dsn, `INSERT INTO marker VALUES (1, pg_current_xact_id()::text) RETURNING xid`)
}
