package integration

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/decant/decant/integration/gaussstub"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/gauss"
)

// Operations: what decant says and does when an operator gets in its way
// (a second run on a live pipeline, a slot someone else consumed, a
// SIGTERM under load).

const opsSchema = `CREATE TABLE load (id bigserial PRIMARY KEY, client integer, v text);
CREATE TABLE marker (id integer PRIMARY KEY, xid text);`

// writer keeps committing small transactions on the source until stopped;
// it is the load under which a live run moves its slot and checkpoint all
// the time.
type writer struct {
	stop atomic.Bool
	rows atomic.Int64
	done chan error
}

func startWriter(t testing.TB, dsn string) *writer {
	t.Helper()
	w := &writer{done: make(chan error, 1)}
	go func() {
		_, err := runClients(t, dsn, 2, 1, func(conn *pgx.Conn, _ *rand.Rand, client, _ int) (bool, bool, error) {
			if w.stop.Load() {
				return false, false, nil
			}
			_, err := conn.Exec(t.Context(), `INSERT INTO load (client, v) SELECT $1, repeat('w', 20) FROM generate_series(1, 5)`, client)
			w.rows.Add(5)
			time.Sleep(2 * time.Millisecond) // hundreds of commits a second, not every cycle of the machine
			return true, err == nil, err
		})
		w.done <- err
	}()
	t.Cleanup(func() { w.stop.Store(true) })
	return w
}

// finish stops the writer and fails the test if it failed.
func (w *writer) finish(t testing.TB) {
	t.Helper()
	w.stop.Store(true)
	if err := <-w.done; err != nil {
		t.Fatalf("writer: %v", err)
	}
}

// catchUpTo waits until the running agent has applied the source's last
// commit (a final marker).
func (p *pair) catchUpTo(a *agent) {
	p.t.Helper()
	xid := finalMarker(p.t, p.src)
	waitFor(p.t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
	if a.exited() {
		p.t.Fatalf("decant run ended before catching up: %v\n%s", a.err, a.stderr.String())
	}
}

// TestSecondRunUnderLoad: a second `decant run` on a pipeline that a live
// run is applying under a continuous write load waits for the slot for
// --slot-wait and gives up saying that another session uses it; it never
// claims that something consumed the slot (whose advice, a drop and a
// recopy, would destroy a healthy pipeline). The first run goes on.
func TestSecondRunUnderLoad(t *testing.T) {
	p := newPair(t)
	p.both(opsSchema)
	p.mustDecant("init")
	w := startWriter(t, p.src)
	a := p.start()
	waitFor(t, 30*time.Second, func() bool {
		return queryValue(t, p.src, `SELECT active::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`) == "true"
	})
	for i := 0; i < 3; i++ {
		// Let the live run move slot and checkpoint under the second one.
		before := w.rows.Load()
		waitFor(t, 30*time.Second, func() bool { return w.rows.Load() > before+50 })
		start := time.Now()
		_, errOut, code := p.decant("run", "--slot-wait", "2s")
		took := time.Since(start)
		if strings.Contains(errOut, "consumed") {
			t.Fatalf("second run %d on a live pipeline claims the slot was consumed:\n%s", i+1, errOut)
		}
		if code != 4 {
			t.Errorf("second run %d: exit %d, want 4 (gave up)", i+1, code)
		}
		oneLineError(t, "second run under load", errOut, "still uses the slot", "stop the other run")
		if took < 2*time.Second {
			t.Errorf("second run %d gave up after %s, before --slot-wait 2s", i+1, took)
		}
		if a.exited() {
			t.Fatalf("the first run ended: %v\n%s", a.err, a.stderr.String())
		}
	}
	w.finish(t)
	p.catchUpTo(a)
	a.stop(t)
	p.assertEqual()
}

// TestSlotConsumed: when something else really consumed the slot past the
// target's checkpoint, run refuses to stream with the exit code for
// "needs a person", names both positions and tells how to repair the
// target (rebuild it from a new slot).
func TestSlotConsumed(t *testing.T) {
	p := newPair(t)
	p.both(opsSchema)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (1, 'applied')`)
	p.catchUp()
	psql(t, p.src, `INSERT INTO load (client, v) VALUES (2, 'lost')`)
	psql(t, p.src, `SELECT pg_replication_slot_advance('`+p.name+`', pg_current_wal_lsn())`)
	start := time.Now()
	_, errOut, code := p.decant("run", "--slot-wait", "2s")
	if code != 3 {
		t.Errorf("run on a consumed slot: exit %d, want 3", code)
	}
	oneLineError(t, "consumed slot", errOut, "slot "+p.name+" confirmed", "consumed", p.checkpointEnd(), "decant resync --pipeline "+p.name+" --yes")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("run on a consumed slot took %s to give up", took)
	}
}

// TestGaussSecondRun: the same for a GaussDB source (the stand-in), whose
// reader checks its slot alike.
func TestGaussSecondRun(t *testing.T) {
	p := newPair(t)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	srv := startStandIn(t, "7300000000000000007")
	g := gaussPair(t, p, srv, nil)
	g.mustDecant("init")
	a := g.start()
	// The feeder commits a transaction every few milliseconds, so slot and
	// checkpoint move all the time.
	var stop atomic.Bool
	fed := make(chan int, 1)
	go func() {
		i := 0
		for ; !stop.Load(); i++ {
			base := source.LSN(0x1000000 + i*0x1000)
			srv.Append(gaussstub.Txn{Xid: uint64(100 + i), CSN: uint64(10 + i), FirstLSN: base + 0x100, CommitStart: base + 0x200, CommitEnd: base + 0x230, Records: []gauss.Record{
				{Kind: gauss.KindBegin, LSN: base + 0x100, FirstLSN: base + 0x100, CSN: uint64(10 + i)},
				{Kind: gauss.KindInsert, LSN: base + 0x150, Schema: "public", Table: "t", New: []gauss.Column{{Name: "id", Type: 23, Value: []byte(itoa(i))}}},
				{Kind: gauss.KindCommit, LSN: base + 0x230, Xid: uint64(100 + i), HasXid: true},
			}})
			time.Sleep(3 * time.Millisecond)
		}
		fed <- i
	}()
	t.Cleanup(func() { stop.Store(true) })
	waitFor(t, 30*time.Second, func() bool {
		_, _, active, _ := srv.Slot(g.name)
		return active && queryValue(t, p.tgt, `SELECT count(*) FROM t`) != "0"
	})
	for i := 0; i < 3; i++ {
		_, errOut, code := g.decant("run", "--slot-wait", "1s")
		if strings.Contains(errOut, "consumed") {
			t.Fatalf("second run %d on a live pipeline claims the slot was consumed:\n%s", i+1, errOut)
		}
		if code != 4 {
			t.Errorf("second run %d: exit %d, want 4 (gave up)", i+1, code)
		}
		oneLineError(t, "second GaussDB run", errOut, "is active", "still uses the slot")
	}
	stop.Store(true)
	n := <-fed
	waitFor(t, 60*time.Second, func() bool { return queryValue(t, p.tgt, `SELECT count(*) FROM t`) == itoa(n) || a.exited() })
	if a.exited() {
		t.Fatalf("the first run ended: %v\n%s", a.err, a.stderr.String())
	}
	a.stop(t)
}

// smallDir mounts a tmpfs of size bytes (a full disk in miniature) and
// unmounts it when the test ends.
func smallDir(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a %s tmpfs at %s: %v\n%s", size, dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
		}
	})
	return dir
}

// TestSpillDirectoryFull: a transaction that outgrows --max-txn-memory and
// then the spill directory stops decant with one line that names the
// directory, the transaction and the fixes, and exit code 3; it is not
// decoded again and again. Once there is room, run applies it.
func TestSpillDirectoryFull(t *testing.T) {
	p := newPair(t)
	p.both(largeSchema)
	p.mustDecant("init")
	spill := smallDir(t, "2m")
	g := *p
	g.src = streamingDSN(p.src)
	conn := connect(t, p.src)
	var xid string
	if err := pgx.BeginFunc(t.Context(), conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(t.Context(), `INSERT INTO big SELECT g, repeat('s', 400), g FROM generate_series(1, 30000) g`); err != nil {
			return err
		}
		return tx.QueryRow(t.Context(), `SELECT pg_current_xact_id()::text`).Scan(&xid)
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, errOut, code := g.decant("run", "--catch-up", "--stream-apply", "spool", "--max-txn-memory", "1MiB", "--spill-dir", spill)
	t.Logf("exit %d after %s", code, time.Since(start))
	if code != 3 {
		t.Errorf("full spill directory: exit %d, want 3\n%s", code, errOut)
	}
	oneLineError(t, "full spill directory", errOut, "spill directory "+spill+" is full", "xid "+xid, "--spill-dir", "--max-txn-memory")
	if n := strings.Count(errOut, "msg=streaming"); n != 1 {
		t.Errorf("the stream started %d times, want once: the transaction was decoded again into the full directory", n)
	}
	if left, _ := filepath.Glob(filepath.Join(spill, "*")); len(left) > 0 {
		t.Errorf("spill files left after the failure: %v", left)
	}
	g.mustDecant("run", "--catch-up", "--stream-apply", "spool", "--max-txn-memory", "1MiB", "--spill-dir", t.TempDir())
	p.assertEqual()
}

// TestGaussSpillDirectoryFull: the same for a GaussDB transaction, which
// is spooled until its COMMIT arrives.
func TestGaussSpillDirectoryFull(t *testing.T) {
	p := newPair(t)
	p.both(largeSchema)
	work := captureWorkload(t, p, "big, marker", func() {
		psql(t, p.src, `INSERT INTO big SELECT g, repeat('x', 200), g FROM generate_series(1, 30000) g`)
		finalMarker(t, p.src)
	})
	q := newPair(t)
	psql(t, q.tgt, largeSchema)
	q.src = p.src
	srv := startStandIn(t, "7300000000000000008")
	g := gaussPair(t, q, srv, gaussFormats[2].options)
	g.mustDecant("init")
	srv.Append(work.txns...)
	srv.AddPosition(work.txns[len(work.txns)-1].CSN, uint64(work.end))
	spill := smallDir(t, "1m")
	_, errOut, code := g.decant("run", "--catch-up", "--max-txn-memory", "1MiB", "--spill-dir", spill)
	if code != 3 {
		t.Errorf("full spill directory: exit %d, want 3\n%s", code, errOut)
	}
	oneLineError(t, "full spill directory", errOut, "spill directory "+spill+" is full", "--spill-dir", "--max-txn-memory")
	if n := strings.Count(errOut, "msg=streaming"); n != 1 {
		t.Errorf("the stream started %d times, want once", n)
	}
	if left, _ := filepath.Glob(filepath.Join(spill, "*")); len(left) > 0 {
		t.Errorf("spill files left after the failure: %v", left)
	}
	g.mustDecant("run", "--catch-up", "--max-txn-memory", "1MiB", "--spill-dir", t.TempDir())
	q.assertEqual()
}

// TestTargetColumnDropped: a column dropped on the target while decant
// runs (after it compiled its statements for the table) is reported like
// one missing at the start: the table, the column, "lacks column" and the
// fix, for a single insert, a COPY-sized run of inserts and an update.
func TestTargetColumnDropped(t *testing.T) {
	for _, tc := range []struct {
		name, write string
	}{
		{"insert", `INSERT INTO wide VALUES (100, 'a', '` + secret + `')`},
		{"copy", `INSERT INTO wide SELECT g, 'a', '` + secret + `' FROM generate_series(100, 2100) g`},
		{"update", `UPDATE wide SET extra = '` + secret + `' WHERE id = 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPair(t)
			p.both(`CREATE TABLE wide (id integer PRIMARY KEY, v text, extra text);`)
			p.mustDecant("init")
			a := p.start()
			// Statements for the table are compiled and used before the
			// target loses the column.
			psql(t, p.src, `INSERT INTO wide SELECT g, 'x', 'y' FROM generate_series(1, 50) g; UPDATE wide SET v = 'z' WHERE id = 2;`)
			waitFor(t, 30*time.Second, func() bool {
				return queryValue(t, p.tgt, `SELECT count(*) FROM wide WHERE v = 'z'`) == "1" || a.exited()
			})
			psql(t, p.tgt, `ALTER TABLE wide DROP COLUMN extra`)
			psql(t, p.src, tc.write)
			waitFor(t, 30*time.Second, a.exited)
			if a.err == nil {
				t.Errorf("decant run exited 0 after the target lost a column")
			}
			out := a.stderr.String()
			oneLineError(t, "dropped target column", out, "public.wide", "lacks column(s) extra", "add them on the target")
			if strings.Contains(out, "SQLSTATE 42703") {
				t.Errorf("the raw server error is reported:\n%s", out)
			}
		})
	}
}

// TestCleanStopUnderLoad: SIGTERM while transactions are being applied is
// a clean stop: exit 0 and no warning (the open target transaction is
// abandoned on purpose); the next run resumes and the target ends equal.
func TestCleanStopUnderLoad(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			if mysql {
				psql(t, p.src, opsSchema)
				p.mustDecant("init", "--create-tables")
			} else {
				p.both(opsSchema)
				p.mustDecant("init")
			}
			w := startWriter(t, p.src)
			rng := rand.New(rand.NewPCG(5, 5))
			for i := 0; i < 10; i++ {
				a := p.start()
				start := p.checkpointEnd()
				waitFor(t, 30*time.Second, func() bool { return p.checkpointEnd() != start || a.exited() })
				time.Sleep(time.Duration(rng.IntN(400)) * time.Millisecond)
				a.stop(t)
				if out := a.stderr.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
					t.Errorf("stop %d: a clean stop logged a warning:\n%s", i+1, out)
				}
			}
			w.finish(t)
			p.catchUp()
		})
	}
}
