package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestCommitOrder runs transactions that commit in a different order than
// they began, and checks that the target applied them in commit order: an
// ENABLE ALWAYS trigger on the target (it fires even under
// session_replication_role = replica) numbers rows as they arrive.
func TestCommitOrder(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		p.both(`CREATE TABLE seen (id integer PRIMARY KEY, who text);`)
		psql(t, p.tgt, `
			CREATE TABLE arrival (n serial PRIMARY KEY, id integer);
			CREATE FUNCTION note_arrival() RETURNS trigger LANGUAGE plpgsql AS
				$$ BEGIN INSERT INTO arrival (id) VALUES (NEW.id); RETURN NEW; END $$;
			CREATE TRIGGER note_arrival AFTER INSERT ON seen FOR EACH ROW EXECUTE FUNCTION note_arrival();
			ALTER TABLE seen ENABLE ALWAYS TRIGGER note_arrival;`)
		p.mustDecant("init", "--tables", "public.seen")
		commitOrder(t, p, func() string {
			return queryValue(t, p.tgt, `SELECT coalesce(string_agg(id::text, ',' ORDER BY n), '') FROM arrival`)
		})
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, `CREATE TABLE seen (id integer PRIMARY KEY, who text);`)
		p.mustDecant("init", "--tables", "public.seen", "--create-tables")
		if _, err := targetMy.Exec(t.Context(), p.name, `CREATE TABLE arrival (n serial PRIMARY KEY, id integer);
			CREATE TRIGGER note_arrival AFTER INSERT ON seen FOR EACH ROW INSERT INTO arrival (id) VALUES (NEW.id);`); err != nil {
			t.Fatal(err)
		}
		commitOrder(t, p, func() string {
			return p.myValue(`SELECT COALESCE(GROUP_CONCAT(id ORDER BY n), '') FROM arrival`)
		})
	})
}

// commitOrder commits three transactions in another order than they
// began, and checks with arrivals (the target's record of the order in
// which rows came) that the target applied them in commit order.
func commitOrder(t *testing.T, p *pair, arrivals func() string) {
	a := p.start()
	ctx := t.Context()
	conns := make([]*pgx.Conn, 3)
	for i := range conns {
		conns[i] = connect(t, p.src)
	}
	// Begin order: 0, 1, 2. Commit order: 2, 0, 1.
	txs := make([]pgx.Tx, 3)
	for i, c := range conns {
		tx, err := c.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		txs[i] = tx
		if _, err := tx.Exec(ctx, `INSERT INTO seen VALUES ($1, 'first'), ($1 + 10, 'second')`, i+1); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{2, 0, 1} {
		if _, err := txs[i].Exec(ctx, `INSERT INTO seen VALUES ($1 + 20, 'last')`, i+1); err != nil {
			t.Fatal(err)
		}
		if err := txs[i].Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := "3,13,23,1,11,21,2,12,22"
	waitFor(t, 30*time.Second, func() bool { return strings.Count(arrivals(), ",") == 8 })
	a.stop(t)
	if got := arrivals(); got != want {
		t.Errorf("target applied rows in order %s, want commit order %s", got, want)
	}
	p.assertEqual()
}

// TestSourceRestart restarts the source server while decant streams and
// a workload runs; decant reconnects and loses nothing.
func TestSourceRestart(t *testing.T) {
	disrupted(t, 1, func(*pair) {
		if err := sourcePG.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := sourcePG.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWalsenderTerminated kills decant's walsender on the source with
// pg_terminate_backend, twice; decant reconnects and loses nothing.
func TestWalsenderTerminated(t *testing.T) {
	disrupted(t, 2, func(p *pair) {
		slot := `FROM pg_replication_slots WHERE slot_name = '` + p.name + `'`
		waitFor(t, 30*time.Second, func() bool { return queryValue(t, p.src, `SELECT active::text `+slot) == "true" })
		psql(t, p.src, `SELECT pg_terminate_backend(active_pid) `+slot)
	})
}

// TestTargetRestart crashes the target server mid-stream and writes on the
// source while it is down: the open target transaction is lost, decant
// reconnects and applies everything once.
func TestTargetRestart(t *testing.T) {
	disrupted(t, 1, func(p *pair) {
		// Recovery then replays only what this test writes, not the WAL
		// of every earlier test on the shared server (up to max_wal_size:
		// 25 s of a make test run went to it).
		psql(t, p.tgt, `CHECKPOINT`)
		if err := targetPG.Crash(); err != nil {
			t.Fatal(err)
		}
		if _, err := workload(t, p.src, 2, 100); err != nil {
			t.Fatal(err)
		}
		if err := targetPG.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMariaDBRestart stops and starts the MariaDB target mid-stream.
func TestMariaDBRestart(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, mixedSchema)
	p.mustDecant("init", "--create-tables")
	disruptedPair(t, p, 1, func(p *pair) {
		if err := targetMy.Stop(); err != nil {
			t.Fatal(err)
		}
		if _, err := workload(t, p.src, 2, 100); err != nil {
			t.Fatal(err)
		}
		if err := targetMy.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

// disrupted runs a mixed workload while decant streams and calls disrupt
// after each of rounds parts of it. decant must report every disruption as
// a reconnect, apply the last transaction and leave target = source.
func disrupted(t *testing.T, rounds int, disrupt func(*pair)) {
	t.Helper()
	p := newPair(t)
	p.both(mixedSchema)
	p.mustDecant("init")
	disruptedPair(t, p, rounds, disrupt)
}

func disruptedPair(t *testing.T, p *pair, rounds int, disrupt func(*pair)) {
	t.Helper()
	a := p.start()
	for i := 0; i < rounds; i++ {
		if _, err := workload(t, p.src, 2, 150); err != nil {
			t.Fatal(err)
		}
		disrupt(p)
	}
	if _, err := workload(t, p.src, 2, 100); err != nil {
		t.Fatal(err)
	}
	xid := finalMarker(t, p.src)
	waitFor(t, 90*time.Second, func() bool { return p.checkpointXid() == xid })
	a.stop(t)
	if n := strings.Count(a.stderr.String(), "resuming from the checkpoint"); n < rounds {
		t.Errorf("decant reported %d reconnects, want %d:\n%s", n, rounds, a.stderr.String())
	}
	p.assertEqual()
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !waitUntil(timeout, cond) {
		t.Fatalf("condition not met within %s", timeout)
	}
}

// waitUntil polls cond until it holds (true) or the timeout passes (false).
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	return true
}
