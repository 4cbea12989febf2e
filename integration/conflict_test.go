package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/harness"
)

// The conflict keys are distinctive so that the test can tell they never
// reach decant's output.
const (
	keyExists  = "kx-exists-7f3a"
	keyMissing = "kx-missing-7f3a"
	keyGone    = "kx-gone-7f3a"
)

// TestConflictPolicies, on both targets, pre-seeded to conflict:
// one source transaction meets insert_exists, update_missing and
// delete_missing. error stops on each kind (exit 3); skip leaves the
// target rows and logs the three; apply makes the target row the
// source's (the update's row inserted, the insert turned into an update).
// Every resolved conflict is in decant.conflicts once, also after a run
// killed with SIGKILL while its transaction waited; no key is in
// decant's output.
func TestConflictPolicies(t *testing.T) {
	for _, my := range []bool{false, true} {
		name := "postgres"
		if my {
			name = "mariadb"
		}
		t.Run(name, func(t *testing.T) { testConflictPolicies(t, my) })
	}
}

func testConflictPolicies(t *testing.T, my bool) {
	for _, kind := range []string{"insert_exists", "update_missing", "delete_missing"} {
		t.Run("error/"+kind, func(t *testing.T) { testConflictError(t, my, kind) })
	}
	t.Run("skip", func(t *testing.T) {
		p := conflictPair(t, my)
		out := p.mustDecant("run", "--catch-up", "--log-level", "debug",
			"--on-conflict", "insert_exists=skip", "--on-conflict", "update_missing=skip", "--on-conflict", "delete_missing=skip")
		assertNoKeys(t, out)
		s := skipSides{p}
		if got := s.rows(); got != keyExists+":target,kx-plain:plain" {
			t.Errorf("target rows after skip: %q", got)
		}
		p.assertConflictLog("delete_missing skip " + keyGone + ",insert_exists skip " + keyExists + ",update_missing skip " + keyMissing)
	})
	t.Run("apply", func(t *testing.T) {
		p := conflictPair(t, my)
		// Per table in the file: items applies; the flag's delete policy
		// holds for every table.
		cfg := filepath.Join(t.TempDir(), "decant.yaml")
		if err := os.WriteFile(cfg, []byte("conflicts:\n  public.items: {insert_exists: apply, update_missing: apply}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := skipSides{p}
		release := s.lockCheckpoint()
		a := p.start("--config", cfg, "--on-conflict", "delete_missing=skip")
		waitFor(t, 30*time.Second, func() bool { return s.lockWaits() > 0 || a.exited() })
		if a.exited() {
			t.Fatalf("run ended before it waited for the checkpoint row: %v\n%s", a.err, a.stderr.String())
		}
		a.kill()
		release()
		if got := s.value(`SELECT count(*) FROM ` + s.conflicts()); got != "0" {
			t.Errorf("%s conflict rows after the killed run, want 0", got)
		}
		out := p.mustDecant("run", "--catch-up", "--config", cfg, "--on-conflict", "delete_missing=skip")
		assertNoKeys(t, out+a.stderr.String())
		if got := s.rows(); got != keyExists+":source,"+keyMissing+":updated,kx-plain:plain" {
			t.Errorf("target rows after apply: %q", got)
		}
		p.assertConflictLog("delete_missing skip " + keyGone + ",insert_exists apply " + keyExists + ",update_missing apply " + keyMissing)
		p.assertEqual()
	})
}

// conflictPair sets up items on both sides, applied, then seeds the
// target to conflict with one source transaction: an insert of a key the
// target has, an update and a delete of keys it lacks, and an insert
// that does not conflict.
func conflictPair(t *testing.T, my bool) *pair {
	p := newTargetPair(t, my)
	s := skipSides{p}
	psql(t, p.src, `CREATE TABLE items (k text PRIMARY KEY, v text, n integer)`)
	s.exec(itemsTarget(my))
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO items VALUES ('`+keyMissing+`', 'source', 1), ('`+keyGone+`', 'source', 2)`)
	p.mustDecant("run", "--catch-up")
	s.exec(`INSERT INTO items VALUES ('` + keyExists + `', 'target', 0)`)
	s.exec(`DELETE FROM items WHERE k IN ('` + keyMissing + `', '` + keyGone + `')`)
	psql(t, p.src, `BEGIN;
		INSERT INTO items VALUES ('`+keyExists+`', 'source', 3);
		UPDATE items SET v = 'updated', n = 4 WHERE k = '`+keyMissing+`';
		DELETE FROM items WHERE k = '`+keyGone+`';
		INSERT INTO items VALUES ('kx-plain', 'plain', 5);
		COMMIT;`)
	return p
}

// itemsTarget is the items table on the target.
func itemsTarget(my bool) string {
	if my {
		return `CREATE TABLE items (k VARCHAR(64) PRIMARY KEY, v TEXT, n INT)`
	}
	return `CREATE TABLE items (k text PRIMARY KEY, v text, n integer)`
}

func testConflictError(t *testing.T, my bool, kind string) {
	p := newTargetPair(t, my)
	s := skipSides{p}
	psql(t, p.src, `CREATE TABLE items (k text PRIMARY KEY, v text, n integer)`)
	s.exec(itemsTarget(my))
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO items VALUES ('`+keyMissing+`', 'source', 1)`)
	p.mustDecant("run", "--catch-up")
	change := map[string]string{
		"insert_exists":  `INSERT INTO items VALUES ('` + keyExists + `', 'source', 3)`,
		"update_missing": `UPDATE items SET v = 'updated' WHERE k = '` + keyMissing + `'`,
		"delete_missing": `DELETE FROM items WHERE k = '` + keyMissing + `'`,
	}[kind]
	s.exec(`INSERT INTO items VALUES ('` + keyExists + `', 'target', 0)`)
	s.exec(`DELETE FROM items WHERE k = '` + keyMissing + `'`)
	psql(t, p.src, change)
	// The other kinds' policies do not resolve this one.
	var others []string
	for _, k := range []string{"insert_exists", "update_missing", "delete_missing"} {
		if k != kind {
			others = append(others, "--on-conflict", k+"=skip")
		}
	}
	_, errOut, code := p.decant(append([]string{"run", "--catch-up", "--on-conflict", kind + "=error"}, others...)...)
	if code != 3 {
		t.Fatalf("run over %s with policy error: exit %d, want 3\n%s", kind, code, errOut)
	}
	want := map[bool]map[bool]string{false: {false: "no target row matches", true: "duplicate key"},
		true: {false: "changed rows found on the target", true: "Duplicate entry"}}[my][kind == "insert_exists"]
	oneLineError(t, kind, errOut, want)
	assertNoKeys(t, errOut)
	if got := s.value(`SELECT count(*) FROM ` + s.conflicts()); got != "0" {
		t.Errorf("%s conflict rows after an error, want 0", got)
	}
}

// assertConflictLog checks decant.conflicts: "kind policy key" per row,
// by kind, all of one transaction (the checkpoint's), of this pipeline
// and table.
func (p *pair) assertConflictLog(want string) {
	p.t.Helper()
	s := skipSides{p}
	got, meta, table := "", "", "public.items"
	xid := p.checkpointXid()
	if p.mysql {
		got = s.value("SELECT GROUP_CONCAT(CONCAT(kind, ' ', policy, ' ', JSON_UNQUOTE(JSON_EXTRACT(`key`, '$.k'))) ORDER BY kind SEPARATOR ',') FROM decant_conflicts")
		meta = s.value(`SELECT GROUP_CONCAT(DISTINCT CONCAT_WS(' ', pipeline, table_name, xid, commit_lsn > 0, commit_time IS NOT NULL)) FROM decant_conflicts`)
		table = "items"
		xid += " 1 1"
	} else {
		got = s.value(`SELECT string_agg(kind || ' ' || policy || ' ' || (key->>'k'), ',' ORDER BY kind) FROM decant.conflicts`)
		meta = s.value(`SELECT string_agg(DISTINCT concat_ws(' ', pipeline, table_name, xid, commit_lsn > '0/0', commit_time IS NOT NULL), ',') FROM decant.conflicts`)
		xid += " t t"
	}
	if got != want {
		p.t.Errorf("conflict log: %q, want %q", got, want)
	}
	if wantMeta := p.name + " " + table + " " + xid; meta != wantMeta {
		p.t.Errorf("conflict log rows: %q, want %q", meta, wantMeta)
	}
}

func (s skipSides) conflicts() string {
	if s.mysql {
		return "decant_conflicts"
	}
	return "decant.conflicts"
}

// rows lists the target's items as k:v, by k.
func (s skipSides) rows() string {
	if s.mysql {
		return s.value(`SELECT GROUP_CONCAT(CONCAT(k, ':', v) ORDER BY k SEPARATOR ',') FROM items`)
	}
	return s.value(`SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM items`)
}

func assertNoKeys(t *testing.T, out string) {
	t.Helper()
	for _, k := range []string{keyExists, keyMissing, keyGone} {
		if strings.Contains(out, k) {
			t.Errorf("decant's output holds the key value %s:\n%s", k, out)
		}
	}
}

// TestConflictPoliciesWholeRow, on both targets: a REPLICA
// IDENTITY FULL table finds rows by every old value, so a change that
// matches none meets update_differs or delete_differs when a row with its
// key (the target's primary key) is there with other values, and the
// missing kinds when none is; each follows its own policy.
func TestConflictPoliciesWholeRow(t *testing.T) {
	for _, my := range []bool{false, true} {
		name := "postgres"
		if my {
			name = "mariadb"
		}
		t.Run(name, func(t *testing.T) { testConflictPoliciesWholeRow(t, my) })
	}
}

func testConflictPoliciesWholeRow(t *testing.T, my bool) {
	setup := func(t *testing.T) (*pair, skipSides) {
		p := newTargetPair(t, my)
		s := skipSides{p}
		psql(t, p.src, `CREATE TABLE fitems (k text PRIMARY KEY, v text); ALTER TABLE fitems REPLICA IDENTITY FULL`)
		if my {
			s.exec(`CREATE TABLE fitems (k VARCHAR(64) PRIMARY KEY, v TEXT)`)
		} else {
			s.exec(`CREATE TABLE fitems (k text PRIMARY KEY, v text)`)
		}
		p.mustDecant("init")
		psql(t, p.src, `INSERT INTO fitems VALUES ('kx-a', 'one'), ('kx-b', 'one'), ('kx-c', 'one'), ('kx-d', 'one')`)
		p.mustDecant("run", "--catch-up")
		s.exec(`UPDATE fitems SET v = 'target' WHERE k IN ('kx-a', 'kx-c')`)
		s.exec(`DELETE FROM fitems WHERE k IN ('kx-b', 'kx-d')`)
		psql(t, p.src, `BEGIN; UPDATE fitems SET v = 'new' WHERE k IN ('kx-a', 'kx-b'); DELETE FROM fitems WHERE k IN ('kx-c', 'kx-d'); COMMIT;`)
		return p, s
	}
	t.Run("resolved", func(t *testing.T) {
		p, s := setup(t)
		p.mustDecant("run", "--catch-up", "--on-conflict", "update_differs=skip", "--on-conflict", "update_missing=apply",
			"--on-conflict", "delete_differs=skip", "--on-conflict", "delete_missing=skip")
		rows := `SELECT string_agg(k || ':' || v, ',' ORDER BY k) FROM fitems`
		log := `SELECT string_agg(kind || ' ' || policy || ' ' || (key->>'k'), ',' ORDER BY kind) FROM decant.conflicts`
		if my {
			rows = `SELECT GROUP_CONCAT(CONCAT(k, ':', v) ORDER BY k SEPARATOR ',') FROM fitems`
			log = "SELECT GROUP_CONCAT(CONCAT(kind, ' ', policy, ' ', JSON_UNQUOTE(JSON_EXTRACT(`key`, '$.k'))) ORDER BY kind SEPARATOR ',') FROM decant_conflicts"
		}
		if got := s.value(rows); got != "kx-a:target,kx-b:new,kx-c:target" {
			t.Errorf("target rows: %q", got)
		}
		got := s.value(log)
		if want := "delete_differs skip kx-c,delete_missing skip kx-d,update_differs skip kx-a,update_missing apply kx-b"; got != want {
			t.Errorf("conflict log: %q, want %q", got, want)
		}
	})
	t.Run("differs error", func(t *testing.T) {
		p, s := setup(t)
		_, errOut, code := p.decant("run", "--catch-up", "--on-conflict", "update_missing=skip", "--on-conflict", "delete_missing=skip")
		if code != 3 {
			t.Fatalf("run over update_differs with policy error: exit %d, want 3\n%s", code, errOut)
		}
		oneLineError(t, "update_differs", errOut, "a row with its key is there with other values (update_differs)", "update_differs=skip")
		if got := s.value(`SELECT count(*) FROM ` + s.conflicts()); got != "0" {
			t.Errorf("%s conflict rows after an error, want 0", got)
		}
	})
}

// TestConflictLogExactlyOnce, on both targets: 300 source transactions
// each insert a key the target has, while run with insert_exists=apply
// applies them; it is killed with SIGKILL once it has logged 50, and the
// rerun leaves exactly one log row per conflict and the source's rows.
func TestConflictLogExactlyOnce(t *testing.T) {
	for _, my := range []bool{false, true} {
		name := "postgres"
		if my {
			name = "mariadb"
		}
		t.Run(name, func(t *testing.T) {
			p := newTargetPair(t, my)
			s := skipSides{p}
			psql(t, p.src, `CREATE TABLE items (k text PRIMARY KEY, v text, n integer)`)
			s.exec(itemsTarget(my))
			p.mustDecant("init")
			const n = 300
			var tgt strings.Builder
			for i := range n {
				fmt.Fprintf(&tgt, "('k%03d', 'target', 0),", i)
			}
			s.exec("INSERT INTO items VALUES " + strings.TrimSuffix(tgt.String(), ","))
			a := p.start("--on-conflict", "insert_exists=apply")
			// One source transaction each, paced so that the kill finds
			// run in the middle of them.
			conn := connect(t, p.src)
			fed := make(chan error, 1)
			go func() {
				for i := range n {
					if _, err := conn.Exec(context.Background(), `INSERT INTO items VALUES ($1, 'source', $2)`, fmt.Sprintf("k%03d", i), i); err != nil {
						fed <- err
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				fed <- nil
			}()
			logTable := `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'decant' AND table_name = 'conflicts'`
			if my {
				logTable = `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'decant_conflicts'`
			}
			logged := func() int {
				if s.value(logTable) == "0" {
					return 0 // run has not created it yet
				}
				v, _ := strconv.Atoi(s.value(`SELECT count(*) FROM ` + s.conflicts()))
				return v
			}
			waitFor(t, 60*time.Second, func() bool { return logged() >= 50 || a.exited() })
			a.kill()
			killedAt := logged()
			if err := <-fed; err != nil {
				t.Fatal(err)
			}
			// The rerun counts what it resolves, the rest, in its metrics.
			port, err := harness.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			e := endpoint{t: t, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
			rerun := p.start("--on-conflict", "insert_exists=apply", "--http-addr", fmt.Sprintf("127.0.0.1:%d", port))
			counted := `decant_conflicts_total{kind="insert_exists",pipeline="` + p.name + `",policy="apply"}`
			waitFor(t, 60*time.Second, func() bool {
				if rerun.exited() {
					return true
				}
				if code, _ := e.get("/readyz"); code != 200 {
					return false
				}
				m, _ := e.metrics()
				return m[counted] >= float64(n-killedAt)
			})
			m, _ := e.metrics()
			rerun.stop(t)
			if m[counted] != float64(n-killedAt) {
				t.Errorf("%s = %v, want %d (the conflicts the rerun resolved)", counted, m[counted], n-killedAt)
			}
			t.Logf("killed after %d of %d conflicts logged", killedAt, n)
			if got := s.value(`SELECT count(DISTINCT ` + s.keyText() + `) FROM ` + s.conflicts()); got != strconv.Itoa(n) {
				t.Errorf("%s distinct keys logged, want %d", got, n)
			}
			if got := logged(); got != n {
				t.Errorf("%d conflict rows, want %d (one per conflict)", got, n)
			}
			if got := s.value(`SELECT count(*) FROM items WHERE v = 'source'`); got != strconv.Itoa(n) {
				t.Errorf("%s rows of the source's, want %d", got, n)
			}
			p.assertEqual()
		})
	}
}

// keyText is the conflict log's key column as text.
func (s skipSides) keyText() string {
	if s.mysql {
		return "`key`"
	}
	return "key::text"
}
