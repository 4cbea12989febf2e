package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/decant/decant/integration/compare"
)

// TestCrashRecovery is the exactly-once proof: `decant run` is SIGKILLed at
// random moments while 4 clients commit thousands of mixed transactions,
// and restarted each time. After a final `run --catch-up` the target must
// hold exactly the source's rows (a replayed insert into the keyless table
// would show as a duplicate) and the checkpoint must name the last commit.
func TestCrashRecovery(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init")
		crashTest(t, p, false)
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, mixedSchema)
		p.mustDecant("init", "--create-tables")
		crashTest(t, p, false)
	})
}

// TestCrashRecoveryDDL is the crash test with schema changes in the
// workload: columns are added and dropped while rows are written and
// decant is killed. On MariaDB, where DDL commits by itself, this is the
// proof that a crash between a schema change and its checkpoint does not
// break the restart.
func TestCrashRecoveryDDL(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		p := newPair(t)
		p.both(mixedSchema)
		p.mustDecant("init", "--ddl")
		crashTest(t, p, true)
	})
	t.Run("mariadb", func(t *testing.T) {
		p := newMySQLPair(t)
		psql(t, p.src, mixedSchema)
		p.mustDecant("init", "--ddl", "--create-tables")
		crashTest(t, p, true)
	})
}

// crashTest keeps 4 clients writing, in rounds, until decant has been
// killed at least 10 times and 5,000 transactions committed, so that every
// kill lands while there is work in flight.
func crashTest(t *testing.T, p *pair, ddl bool) {
	var stop atomic.Bool
	var committed atomic.Int64
	done, running := make(chan error, 2), 1
	if ddl {
		running++
		go func() { done <- schemaChurn(t, p.src, &stop) }()
	}
	go func() {
		for !stop.Load() {
			n, err := workload(t, p.src, 4, 100)
			committed.Add(n)
			if err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	rng := rand.New(rand.NewPCG(7, 7))
	kills, advanced := 0, 0
	last := p.checkpointEnd()
	for kills < 10 || committed.Load() < 5000 {
		a := p.start()
		// A run's first commit comes after it starts streaming (which
		// waits while the killed run's walsender still holds the slot)
		// and after its first group (up to 500 ms while a backlog lasts),
		// so the kill's moment is drawn from when the run says it
		// streams: counted from the process's start, a machine slow to
		// start processes and open sessions (under the whole suite) sent
		// most kills before any work.
		waitUntil(30*time.Second, func() bool { return a.exited() || streaming(a) })
		time.Sleep(time.Duration(250+rng.IntN(2000)) * time.Millisecond)
		a.kill()
		kills++
		if end := p.checkpointEnd(); end != last {
			advanced, last = advanced+1, end
		}
		if out := a.stderr.String(); strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
			t.Fatalf("decant run crashed by itself:\n%s", out)
		}
	}
	stop.Store(true)
	for range running {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// Every run had work to do; a run may still end before its first
	// commit (see the sleep above), but most must have applied something.
	if advanced < kills/2 {
		t.Fatalf("the checkpoint moved during only %d of %d runs: the kills did not interrupt real work", advanced, kills)
	}
	xid := finalMarker(t, p.src)
	p.catchUp()
	if got := p.checkpointXid(); got != xid {
		t.Errorf("checkpoint names xid %s, want the last commit's xid %s", got, xid)
	}
	t.Logf("%d transactions committed, decant killed %d times, %d of the runs applied work", committed.Load(), kills, advanced)
}

// schemaChurn adds a column to accounts, sets it in a transaction of its
// own, and drops the previous one, over and over until stop.
func schemaChurn(t *testing.T, dsn string, stop *atomic.Bool) error {
	conn, err := compare.Connect(t.Context(), dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for n := 1; !stop.Load(); n++ {
		sql := fmt.Sprintf(`BEGIN; ALTER TABLE accounts ADD COLUMN extra_%d integer DEFAULT %d;
			UPDATE accounts SET extra_%d = extra_%d + 1 WHERE id %% 7 = 0; COMMIT;`, n, n, n, n)
		if n > 1 {
			sql += fmt.Sprintf(`ALTER TABLE accounts DROP COLUMN extra_%d;`, n-1)
		}
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			if sqlState(err) != "40P01" {
				return fmt.Errorf("schema change %d: %w", n, err)
			}
			conn.Exec(t.Context(), "ROLLBACK")
		}
		time.Sleep(300 * time.Millisecond)
	}
	return nil
}

// streaming reports whether a run has logged that it streams.
func streaming(a *agent) bool { return strings.Contains(a.stderr.String(), "msg=streaming ") }
