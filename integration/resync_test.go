package integration

import (
	"strings"
	"testing"
	"time"
)

// decant resync (issue 14 part 2): a target that diverged, or whose slot
// was lost, is repaired from a new slot's snapshot, and run streams on
// from its consistent point; on both targets.

const resyncSchema = `CREATE TABLE items (id integer PRIMARY KEY, name text, qty integer, price numeric(10,2), at timestamptz);
CREATE TABLE pairs (a integer, b text, v text, PRIMARY KEY (a, b));
CREATE TABLE bag (v text, n integer);
ALTER TABLE bag REPLICA IDENTITY FULL;
CREATE TABLE marker (id integer PRIMARY KEY, xid text);`

const resyncRows = `INSERT INTO items SELECT g, 'item ' || g, g % 7, g * 1.5, '2024-01-01 00:00:00+00'::timestamptz + g * interval '1 minute' FROM generate_series(1, 5000) g;
INSERT INTO pairs SELECT g % 50, 'k' || g, 'v' || g FROM generate_series(1, 2000) g;
INSERT INTO bag SELECT 'dup ' || (g % 10), g % 3 FROM generate_series(1, 300) g;`

// newResyncPair makes a pair with resyncSchema's tables copied to the
// target and streamed up to date.
func newResyncPair(t *testing.T, mysql bool) *pair {
	p := newTargetPair(t, mysql)
	// items analyzed: resync cuts its integer key into even spans from
	// the planner's estimate; pairs' spans come from reading its keys.
	psql(t, p.src, resyncSchema+resyncRows+"ANALYZE items;")
	if mysql {
		p.mustDecant("init", "--copy", "--create-tables")
	} else {
		psql(t, p.tgt, resyncSchema)
		p.mustDecant("init", "--copy")
	}
	psql(t, p.src, `UPDATE items SET qty = qty + 1 WHERE id <= 100`)
	p.catchUp()
	return p
}

// diverge changes the target behind decant's back: rows deleted, added
// and changed, in tables with a key, a two-column key and none (a
// duplicate added, one copy of another removed, a row only it has).
func (p *pair) diverge() {
	p.t.Helper()
	common := `DELETE FROM items WHERE id BETWEEN 10 AND 20;
INSERT INTO items (id, name, qty) VALUES (100001, 'extra', 1), (100002, 'extra', 2);
UPDATE items SET name = 'changed' WHERE id BETWEEN 100 AND 110;
UPDATE items SET qty = NULL WHERE id = 200;
DELETE FROM pairs WHERE a = 1 AND b = 'k51';
INSERT INTO pairs VALUES (999, 'zz', 'x');
UPDATE pairs SET v = 'other' WHERE a = 2;
INSERT INTO bag VALUES ('dup 1', 1), ('dup 1', 1), ('only here', 7);`
	if p.mysql {
		p.myExec(common + `DELETE FROM bag WHERE v = 'dup 2' LIMIT 1;`)
		return
	}
	psql(p.t, p.tgt, common+`DELETE FROM bag WHERE ctid = (SELECT ctid FROM bag WHERE v = 'dup 2' LIMIT 1);`)
}

// moreChanges writes on the source what run must stream after a resync.
func (p *pair) moreChanges() {
	p.t.Helper()
	psql(p.t, p.src, `INSERT INTO items (id, name) VALUES (7001, 'after resync');
UPDATE items SET name = 'renamed after' WHERE id = 30;
DELETE FROM items WHERE id = 31;
INSERT INTO bag VALUES ('after', 1);
DELETE FROM pairs WHERE a = 3;`)
	finalMarker(p.t, p.src)
}

func forTargets(t *testing.T, fn func(t *testing.T, mysql bool)) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) { fn(t, mysql) })
	}
}

// TestResyncDiverged: a diverged target, with source changes the old slot
// never streamed, is repaired by resync (which refuses to drop the slot
// without --yes when not on a terminal); verify then finds it equal, and
// run streams new changes from the new slot.
func TestResyncDiverged(t *testing.T) {
	forTargets(t, func(t *testing.T, mysql bool) {
		p := newResyncPair(t, mysql)
		p.diverge()
		psql(t, p.src, `INSERT INTO items (id, name) VALUES (6001, 'while stopped'); DELETE FROM items WHERE id = 40;`)
		if _, _, code := p.decant("verify", "--recheck-wait", "0"); code != 1 {
			t.Fatalf("verify of a diverged target: exit %d, want 1", code)
		}
		_, errOut, code := p.decant("resync")
		if code != 2 {
			t.Errorf("resync without --yes off a terminal: exit %d, want 2", code)
		}
		oneLineError(t, "resync without --yes", errOut, "slot "+p.name+" exists", "add --yes")
		out := p.mustDecant("resync", "--yes", "--span-rows", "500", "--batch", "7")
		t.Log(out)
		for _, want := range []string{"3 differ", "repaired  public.items", "repaired  public.pairs", "repaired  public.bag"} {
			if !strings.Contains(out, want) {
				t.Errorf("resync output lacks %q", want)
			}
		}
		p.assertEqual()
		p.mustDecant("verify", "--recheck-wait", "0")
		out = p.mustDecant("resync", "--yes")
		if !strings.Contains(out, "0 differ") {
			t.Errorf("a second resync found differences: %s", out)
		}
		p.moreChanges()
		p.catchUp()
	})
}

// TestResyncAfterSlotRecreated: the slot dropped and made again behind
// decant's back; run refuses, advising resync; resync recovers and run
// goes on.
func TestResyncAfterSlotRecreated(t *testing.T) {
	forTargets(t, func(t *testing.T, mysql bool) {
		p := newResyncPair(t, mysql)
		psql(t, p.src, `SELECT pg_drop_replication_slot('`+p.name+`');
INSERT INTO items (id, name) VALUES (6002, 'lost in the gap');
SELECT pg_create_logical_replication_slot('`+p.name+`', 'pgoutput');
INSERT INTO items (id, name) VALUES (6003, 'after the new slot');`)
		_, errOut, code := p.decant("run", "--catch-up")
		if code != 3 {
			t.Errorf("run over a gap: exit %d, want 3", code)
		}
		oneLineError(t, "slot made again", errOut, "slot "+p.name+" confirmed", "decant resync --pipeline "+p.name+" --yes")
		p.mustDecant("resync", "--yes")
		p.assertEqual()
		p.moreChanges()
		p.catchUp()
	})
}

// TestResyncKilled: a resync killed (SIGKILL) in the middle of its
// repairs leaves a pipeline run refuses; resync run again ends equal.
func TestResyncKilled(t *testing.T) {
	p := newResyncPair(t, false)
	psql(t, p.tgt, `DELETE FROM items WHERE id % 2 = 0`)
	before := queryValue(t, p.tgt, `SELECT count(*) FROM items`)
	a := p.launch("resync", "--yes", "--jobs", "1", "--batch", "1", "--span-rows", "100")
	waitFor(t, 60*time.Second, func() bool {
		return a.exited() || queryValue(t, p.tgt, `SELECT count(*) FROM items`) != before
	})
	a.kill()
	if n := queryValue(t, p.tgt, `SELECT count(*) FROM items`); n == "5000" || n == before {
		t.Fatalf("resync was not killed in the middle of its repairs (items: %s rows of 5000, %s before)\n%s", n, before, a.stderr.String())
	}
	if end := p.checkpointEnd(); end != "0/0" {
		t.Errorf("checkpoint after a killed resync is %s, want 0/0", end)
	}
	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Errorf("run after a killed resync: exit %d, want 3", code)
	}
	oneLineError(t, "run after a killed resync", errOut, "decant resync --pipeline "+p.name)
	p.mustDecant("resync", "--yes")
	p.assertEqual()
	p.moreChanges()
	p.catchUp()
}
