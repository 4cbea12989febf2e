package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Large transactions. The source decodes with logical_decoding_work_mem
// at its minimum (64kB, set for decant's replication session through the
// DSN), so PostgreSQL streams every transaction over about a thousand
// rows while it is still in progress (protocol 2), and two-phase
// transactions arrive at PREPARE (protocol 3).

const largeSchema = `
CREATE TABLE big (id integer PRIMARY KEY, v text, n integer);
CREATE TABLE marker (id integer PRIMARY KEY, xid text);
`

// streamingDSN makes decant's source sessions decode with the smallest
// memory PostgreSQL allows, so that large transactions are streamed.
func streamingDSN(dsn string) string {
	return dsn + "&options=-c%20logical_decoding_work_mem%3D64kB"
}

// largeCase is one source workload; the target must equal the source after
// it.
type largeCase struct {
	name string
	run  func(t *testing.T, src string)
}

var largeCases = []largeCase{
	{"streamed commit", func(t *testing.T, src string) {
		psql(t, src, `INSERT INTO big SELECT g, repeat('x', 50), g FROM generate_series(1, 20000) g`)
	}},
	{"streamed abort", func(t *testing.T, src string) {
		psql(t, src, `BEGIN; INSERT INTO big SELECT g, 'gone', g FROM generate_series(100001, 120000) g; ROLLBACK;`)
	}},
	{"subtransaction aborted inside a stream", func(t *testing.T, src string) {
		psql(t, src, `BEGIN;
			UPDATE big SET n = n + 1 WHERE id <= 5000;
			SAVEPOINT a;
			INSERT INTO big SELECT g, 'rolled back', g FROM generate_series(200001, 205000) g;
			SAVEPOINT b;
			DELETE FROM big WHERE id <= 100;
			ROLLBACK TO SAVEPOINT a;
			INSERT INTO big SELECT g, 'kept', g FROM generate_series(300001, 305000) g;
			SAVEPOINT c;
			DELETE FROM big WHERE id BETWEEN 5001 AND 6000;
			RELEASE SAVEPOINT c;
			COMMIT;`)
	}},
	{"interleaved streamed transactions", func(t *testing.T, src string) {
		a, b := connect(t, src), connect(t, src)
		exec := func(c *pgx.Conn, sql string) {
			t.Helper()
			if _, err := c.Exec(t.Context(), sql); err != nil {
				t.Fatalf("%s: %v", sql, err)
			}
		}
		exec(a, `BEGIN`)
		exec(b, `BEGIN`)
		for i := 0; i < 4; i++ {
			exec(a, fmt.Sprintf(`INSERT INTO big SELECT g, 'a', g FROM generate_series(%d, %d) g`, 400001+i*2000, 400000+(i+1)*2000))
			exec(b, fmt.Sprintf(`INSERT INTO big SELECT g, 'b', g FROM generate_series(%d, %d) g`, 500001+i*2000, 500000+(i+1)*2000))
		}
		exec(b, `UPDATE big SET v = 'b2' WHERE id BETWEEN 500001 AND 503000`)
		exec(b, `COMMIT`) // commits first, began second
		exec(a, `DELETE FROM big WHERE id BETWEEN 400001 AND 401000`)
		exec(a, `COMMIT`)
	}},
	{"two-phase commit and rollback", func(t *testing.T, src string) {
		psql(t, src, `BEGIN; INSERT INTO big SELECT g, 'prepared', g FROM generate_series(600001, 600100) g; PREPARE TRANSACTION 'small_commit';`)
		psql(t, src, `BEGIN; INSERT INTO big SELECT g, 'prepared', g FROM generate_series(610001, 610100) g; PREPARE TRANSACTION 'small_rollback';`)
		psql(t, src, `BEGIN; INSERT INTO big SELECT g, 'streamed prepared', g FROM generate_series(620001, 640000) g; PREPARE TRANSACTION 'big_commit';`)
		psql(t, src, `INSERT INTO big VALUES (650001, 'between', 1)`)
		// Each alone: they cannot run inside a (multi-statement) block.
		psql(t, src, `COMMIT PREPARED 'small_commit'`)
		psql(t, src, `ROLLBACK PREPARED 'small_rollback'`)
		psql(t, src, `COMMIT PREPARED 'big_commit'`)
	}},
}

// TestLargeTransactions runs every case with decant streaming, in both
// apply modes, into both targets, checking target = source after each;
// the spool mode runs with a 1 MiB memory limit so its transactions
// spill to disk.
func TestLargeTransactions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mysql bool
		args  []string
	}{
		{"postgres/spool", false, []string{"--stream-apply", "spool", "--max-txn-memory", "1MiB"}},
		{"postgres/immediate", false, []string{"--stream-apply", "immediate"}},
		{"mariadb/spool", true, []string{"--stream-apply", "spool", "--max-txn-memory", "1MiB"}},
		{"mariadb/immediate", true, []string{"--stream-apply", "immediate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTargetPair(t, tc.mysql)
			if tc.mysql {
				psql(t, p.src, largeSchema)
				p.mustDecant("init", "--create-tables")
			} else {
				p.both(largeSchema)
				p.mustDecant("init")
			}
			spill := t.TempDir()
			g := *p
			g.src = streamingDSN(p.src)
			a := g.start(append(tc.args, "--spill-dir", spill, "--log-level", "debug")...)
			for _, c := range largeCases {
				c.run(t, p.src)
				xid := finalMarker(t, p.src)
				waitFor(t, 90*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
				if a.exited() {
					t.Fatalf("decant stopped in case %q:\n%s", c.name, a.stderr.String())
				}
				p.assertEqual()
				if t.Failed() {
					t.Fatalf("target differs after case %q", c.name)
				}
				psql(t, p.src, `DELETE FROM marker`)
			}
			a.stop(t)
			log := a.stderr.String()
			if !strings.Contains(log, "streamed commit received") {
				t.Error("the source never streamed a transaction in progress")
			}
			if !strings.Contains(log, "prepared transaction held") {
				t.Error("the source never sent a prepared transaction at PREPARE")
			}
			if tc.args[1] == "spool" && !strings.Contains(log, "spilled to disk") {
				t.Error("no transaction spilled to disk under a 1 MiB limit")
			}
			if tc.args[1] == "immediate" && (!strings.Contains(log, "while it is in progress") || !strings.Contains(log, "streamed subtransaction rolled back")) {
				t.Error("no transaction was applied while in progress, or no subtransaction rolled back on the target")
			}
			if left, _ := filepath.Glob(filepath.Join(spill, "*")); len(left) > 0 {
				t.Errorf("spill files left after a clean stop: %v", left)
			}
		})
	}
}

// TestCrashMidStream SIGKILLs decant while a streamed transaction is in
// progress (in immediate mode with some of it already written into an
// open target transaction), commits it on the source, restarts decant,
// and checks the target holds it exactly once. A spill file left by the
// killed run is removed at start-up.
func TestCrashMidStream(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mysql bool
		mode  string
	}{
		{"postgres/immediate", false, "immediate"},
		{"postgres/spool", false, "spool"},
		{"mariadb/immediate", true, "immediate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newTargetPair(t, tc.mysql)
			if tc.mysql {
				psql(t, p.src, largeSchema)
				p.mustDecant("init", "--create-tables")
			} else {
				p.both(largeSchema)
				p.mustDecant("init")
			}
			spill := t.TempDir()
			g := *p
			g.src = streamingDSN(p.src)
			args := []string{"--stream-apply", tc.mode, "--max-txn-memory", "1MiB", "--spill-dir", spill}
			a := g.start(args...)
			conn := connect(t, p.src)
			if _, err := conn.Exec(t.Context(), `BEGIN`); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 10; i++ {
				if _, err := conn.Exec(t.Context(), fmt.Sprintf(`INSERT INTO big SELECT g, 'mid', g FROM generate_series(%d, %d) g`, i*3000+1, (i+1)*3000)); err != nil {
					t.Fatal(err)
				}
			}
			// Let decant take in part of the transaction, then kill it: a
			// spill file holds some of it, or its first streamed block
			// reached the writer.
			if tc.mode == "spool" {
				waitFor(t, 60*time.Second, func() bool {
					files, _ := filepath.Glob(filepath.Join(spill, "*.spill"))
					return len(files) > 0
				})
			} else {
				waitLog(t, a, "applying a transaction while it is in progress", 60*time.Second)
			}
			a.kill()
			if tc.mode == "spool" {
				if files, _ := filepath.Glob(filepath.Join(spill, "*.spill")); len(files) == 0 {
					t.Error("the killed run left no spill file: the transaction was not spooled to disk")
				}
			}
			if _, err := conn.Exec(t.Context(), `INSERT INTO big SELECT g, 'late', g FROM generate_series(30001, 31000) g`); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(t.Context(), `COMMIT`); err != nil {
				t.Fatal(err)
			}
			finalMarker(t, p.src)
			g.mustDecant(append([]string{"run", "--catch-up"}, args...)...)
			p.assertEqual()
			if files, _ := filepath.Glob(filepath.Join(spill, "*.spill")); len(files) > 0 {
				t.Errorf("spill files left: %v", files)
			}
		})
	}
}

// TestPreparedHeldAcrossRestart: a transaction prepared on the source is
// held by decant while later transactions are applied past its PREPARE;
// decant is then killed and restarted before COMMIT PREPARED. The source
// sends a prepared transaction's changes only to a consumer that starts
// before its PREPARE, so the checkpoint must hold that position: after
// COMMIT PREPARED the target has its rows.
func TestPreparedHeldAcrossRestart(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			if mysql {
				psql(t, p.src, largeSchema)
				p.mustDecant("init", "--create-tables")
			} else {
				p.both(largeSchema)
				p.mustDecant("init")
			}
			a := p.start("--log-level", "debug")
			psql(t, p.src, `BEGIN; INSERT INTO big SELECT g, 'held', g FROM generate_series(1, 500) g; PREPARE TRANSACTION 'held_gid';`)
			psql(t, p.src, `INSERT INTO big VALUES (1001, 'after', 1)`)
			xid := finalMarker(t, p.src)
			waitFor(t, 60*time.Second, func() bool { return p.checkpointXid() == xid || a.exited() })
			if !strings.Contains(a.stderr.String(), "prepared transaction held") {
				t.Fatalf("decant did not hold the prepared transaction:\n%s", a.stderr.String())
			}
			a.kill()
			psql(t, p.src, `COMMIT PREPARED 'held_gid'`)
			psql(t, p.src, `DELETE FROM marker`)
			finalMarker(t, p.src)
			p.mustDecant("run", "--catch-up")
			p.assertEqual()
		})
	}
}
