package integration

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// verifySchema mixes key kinds (an integer key cut into spans, a composite
// key with text, which is read as one span, no key at all) and value
// types whose text differs between PostgreSQL and MariaDB.
const verifySchema = `
CREATE TABLE items (id integer PRIMARY KEY, name text, amount numeric(12,3), at timestamptz, doc jsonb,
	data bytea, flag boolean, score float8, ratio real, big bigint);
CREATE TABLE stock (region text, n integer, qty integer, note varchar(40), PRIMARY KEY (region, n));
CREATE TABLE grid (x integer, y integer, v text, PRIMARY KEY (y, x));
CREATE TABLE events (kind text, payload text);
ALTER TABLE events REPLICA IDENTITY FULL;
`

const verifyRows = `
INSERT INTO items SELECT i, 'item ' || i, i * 1.5, '2024-03-01 12:00:00.25+02'::timestamptz + i * interval '1 hour',
	jsonb_build_object('i', i, 'tags', jsonb_build_array('a', i), 'x', 1.50), decode(lpad(to_hex(i), 4, '0'), 'hex'),
	i % 2 = 0, i / 3.0, i / 7.0, i::bigint * 10000000000
	FROM generate_series(1, 40) i;
INSERT INTO items (id) VALUES (41);
INSERT INTO stock SELECT r, n, n * 10, 'note ' || n FROM unnest(ARRAY['eu', 'Us', 'asia', 'Éire']) r, generate_series(1, 5) n;
INSERT INTO grid SELECT x, y, x || ',' || y FROM generate_series(1, 6) x, generate_series(1, 5) y;
INSERT INTO events SELECT 'k' || (i % 3), 'payload ' || i FROM generate_series(1, 12) i;
INSERT INTO events VALUES ('dup', 'same'), ('dup', 'same');
`

// verifyReport is the part of verify --json the test reads.
type verifyReport struct {
	Pipeline string `json:"pipeline"`
	Equal    bool   `json:"equal"`
	Tables   []struct {
		Source        string     `json:"source"`
		Equal         bool       `json:"equal"`
		Key           []string   `json:"key"`
		SourceRows    int64      `json:"source_rows"`
		TargetRows    int64      `json:"target_rows"`
		Spans         int        `json:"spans"`
		Missing       int64      `json:"missing"`
		Extra         int64      `json:"extra"`
		Different     int64      `json:"different"`
		MissingKeys   [][]string `json:"missing_keys"`
		ExtraKeys     [][]string `json:"extra_keys"`
		DifferentKeys [][]string `json:"different_keys"`
	} `json:"tables"`
}

// newVerifyPair makes a pipeline of the verify tables, target tables made
// by init, and loads their rows on the source.
func newVerifyPair(t *testing.T, mysql bool) *pair {
	p := newTargetPair(t, mysql)
	psql(t, p.src, verifySchema)
	p.mustDecant("init", "--create-tables")
	psql(t, p.src, verifyRows)
	return p
}

// TestVerify: equal tables verify as equal; a row changed behind decant's
// back on the target, a row deleted there and one added are found and
// named by key, in text and JSON, on both targets.
func TestVerify(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newVerifyPair(t, kind == "mariadb")
			p.catchUp()

			out := p.mustDecant("verify", "--span-rows", "7", "--jobs", "3")
			t.Log(out)
			if !strings.Contains(out, "4 equal, 0 differ") {
				t.Errorf("verify of equal tables: %s", out)
			}

			// Behind decant's back on the target.
			tamper := `UPDATE items SET amount = amount + 1 WHERE id = 17;
				DELETE FROM items WHERE id = 23;
				INSERT INTO items (id, name) VALUES (99, 'extra');
				UPDATE stock SET note = 'changed' WHERE region = 'asia' AND n = 2;
				DELETE FROM stock WHERE region = 'Éire' AND n = 5;
				DELETE FROM grid WHERE x = 2 AND y = 3;
				INSERT INTO events VALUES ('dup', 'same')`
			if p.mysql {
				p.myExec(tamper)
			} else {
				psql(t, p.tgt, tamper)
			}

			stdout, stderr, code := p.decant("verify", "--span-rows", "7", "--recheck-wait", "1s")
			t.Log(stdout, stderr)
			if code != 1 {
				t.Fatalf("verify of differing tables exited %d, want 1\n%s%s", code, stdout, stderr)
			}
			for _, want := range []string{
				"different: id=17", "missing on the target: id=23", "extra on the target: id=99",
				"different: (region=asia, n=2)", "missing on the target: (region=Éire, n=5)",
				"missing on the target: (y=3, x=2)", "public.events -> ", "0 equal, 4 differ",
			} {
				if !strings.Contains(stdout, want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if !strings.Contains(stderr, "4 of 4 tables differ") {
				t.Errorf("error line: %s", stderr)
			}
			for _, secret := range []string{"item 17", "changed", "payload"} {
				if strings.Contains(stdout+stderr, secret) {
					t.Errorf("the report shows a row value %q", secret)
				}
			}

			stdout, stderr, code = p.decant("verify", "--json", "--span-rows", "7", "--recheck-wait", "0")
			if code != 1 {
				t.Fatalf("verify --json exited %d, want 1\n%s%s", code, stdout, stderr)
			}
			var rep verifyReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
				t.Fatalf("verify --json: %v\n%s", err, stdout)
			}
			if rep.Equal || rep.Pipeline != p.name || len(rep.Tables) != 4 {
				t.Fatalf("verify --json: %+v", rep)
			}
			byName := map[string]int{}
			for i, tr := range rep.Tables {
				byName[tr.Source] = i
			}
			items := rep.Tables[byName["public.items"]]
			if items.Equal || items.SourceRows != 41 || items.TargetRows != 41 || items.Spans < 6 ||
				fmt.Sprint(items.MissingKeys) != "[[23]]" || fmt.Sprint(items.ExtraKeys) != "[[99]]" ||
				fmt.Sprint(items.DifferentKeys) != "[[17]]" || !slices.Equal(items.Key, []string{"id"}) {
				t.Errorf("items: %+v", items)
			}
			stock := rep.Tables[byName["public.stock"]]
			if stock.Equal || stock.Missing != 1 || stock.Different != 1 || stock.Extra != 0 ||
				fmt.Sprint(stock.MissingKeys) != "[[Éire 5]]" || fmt.Sprint(stock.DifferentKeys) != "[[asia 2]]" {
				t.Errorf("stock: %+v", stock)
			}
			grid := rep.Tables[byName["public.grid"]]
			if grid.Equal || grid.Spans < 4 || fmt.Sprint(grid.MissingKeys) != "[[3 2]]" || grid.Missing+grid.Extra+grid.Different != 1 {
				t.Errorf("grid: %+v", grid)
			}
			events := rep.Tables[byName["public.events"]]
			if events.Equal || events.SourceRows != 14 || events.TargetRows != 15 || len(events.Key) != 0 {
				t.Errorf("events: %+v", events)
			}

			// --tables restricts the comparison.
			stdout, _, code = p.decant("verify", "--tables", "public.stock", "--recheck-wait", "0")
			if code != 1 || !strings.Contains(stdout, "1 tables, 20 source rows: 0 equal, 1 differ") || strings.Contains(stdout, "items") {
				t.Errorf("verify --tables public.stock: exit %d\n%s", code, stdout)
			}
		})
	}
}

// TestVerifyWhileRunning: verify while decant run applies a backlog
// reports no difference: spans that differ only because changes are in
// flight are compared again once the target has caught up.
func TestVerifyWhileRunning(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newVerifyPair(t, kind == "mariadb")
			a := p.start()
			psql(t, p.src, `INSERT INTO items (id, name) SELECT i, 'late ' || i FROM generate_series(1000, 30000) i;
				UPDATE stock SET qty = qty + 1;`)
			out := p.mustDecant("verify", "--span-rows", "5000", "--log-level", "info")
			t.Log(out)
			if !strings.Contains(out, "4 equal, 0 differ") {
				t.Errorf("verify while running: %s", out)
			}
			a.stop(t)
		})
	}
}

// TestVerifyTextOnlyDifferences: values equal under their type but
// printed otherwise (numeric display scale, jsonb numbers, -0 in a float,
// keyed and keyless) differ to verify on a PostgreSQL target, whose
// checksums hash most types by value, and so do values swapped between
// two rows of a span or of a keyless table, which a sum of linearly
// combined column hashes would miss; resync repairs them.
func TestVerifyTextOnlyDifferences(t *testing.T) {
	p := newTargetPair(t, false)
	schema := `CREATE TABLE vals (id integer PRIMARY KEY, n numeric, j jsonb, f float8, s numeric(6,2));
CREATE TABLE loose (n numeric, j jsonb);
ALTER TABLE loose REPLICA IDENTITY FULL;`
	psql(t, p.src, schema)
	psql(t, p.tgt, schema)
	p.mustDecant("init")
	psql(t, p.src, `INSERT INTO vals SELECT g, 1.5, '{"x": 1.0}', 0, g FROM generate_series(1, 40) g;
INSERT INTO loose VALUES (1.5, '{"x": 1.0}'), (2, '{"x": 2}');`)
	p.catchUp()
	p.mustDecant("verify", "--span-rows", "10")
	psql(t, p.tgt, `UPDATE vals SET n = 1.50 WHERE id = 3;
UPDATE vals SET j = '{"x": 1.00}' WHERE id = 14;
UPDATE vals SET f = '-0' WHERE id = 25;
UPDATE vals SET s = 67 - id WHERE id IN (33, 34);`)
	stdout, stderr, code := p.decant("verify", "--span-rows", "10", "--recheck-wait", "0")
	t.Log(stdout, stderr)
	if code != 1 {
		t.Fatalf("verify of text-only differences exited %d, want 1", code)
	}
	for _, want := range []string{"different: id=3", "different: id=33", "different: id=34", "different: id=14", "different: id=25"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, tamper := range []string{`UPDATE loose SET n = 1.50 WHERE n = 1.5`, `UPDATE loose SET j = CASE WHEN n = 2 THEN '{"x": 1.0}'::jsonb ELSE '{"x": 2}' END`} {
		p.mustDecant("resync", "--yes", "--span-rows", "10")
		psql(t, p.tgt, tamper)
		stdout, _, code := p.decant("verify", "--span-rows", "10", "--recheck-wait", "0")
		if code != 1 || !strings.Contains(stdout, "DIFF  public.loose -> ") {
			t.Errorf("verify after %s: exit %d, want 1 naming public.loose\n%s", tamper, code, stdout)
		}
	}
	p.mustDecant("resync", "--yes", "--span-rows", "10")
	p.mustDecant("verify", "--span-rows", "10")
}
