package integration

import (
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// appendOnlySchema is pgbench's shape: keyed tables, and pgbench_history,
// which has no key and no replica identity and whose rows are only
// inserted.
const appendOnlySchema = `
CREATE TABLE pgbench_accounts (aid integer PRIMARY KEY, bid integer, abalance integer, filler char(84));
CREATE TABLE pgbench_history (tid integer, bid integer, aid integer, delta integer, mtime timestamp, filler char(22));
`

// historyRows inserts history rows lo..hi, delta = aid = i.
func historyRows(lo, hi int) string {
	return `INSERT INTO pgbench_history SELECT i % 10, 1, i, i, '2024-05-01 10:00'::timestamp + i * interval '1 minute', NULL
		FROM generate_series(` + itoa(lo) + `, ` + itoa(hi) + `) i;
		UPDATE pgbench_accounts SET abalance = abalance + 1 WHERE aid = ` + itoa(lo%10+1) + `;`
}

// TestAppendOnly: a keyless table is refused with --append-only named in
// the error; with --append-only its rows are copied and its inserts
// streamed while the source's UPDATEs and DELETEs on it work and are not
// replicated; init warns once for it; verify compares it as a multiset;
// a TRUNCATE is replicated; on both targets.
func TestAppendOnly(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newTargetPair(t, kind == "mariadb")
			psql(t, p.src, appendOnlySchema)
			psql(t, p.src, `INSERT INTO pgbench_accounts SELECT i, 1, 0, '' FROM generate_series(1, 10) i;`+historyRows(1, 50))

			_, errOut, code := p.decant("init", "--create-tables")
			if code != 1 {
				t.Errorf("init with keyless pgbench_history and no --append-only: exit %d, want 1", code)
			}
			oneLineError(t, "keyless refused", errOut, "public.pgbench_history", "REPLICA IDENTITY FULL", "--append-only")
			p.assertPublications("", "")

			_, errOut, code = p.decant("init", "--create-tables", "--append-only", "public.pgbench_hist")
			if code != 2 {
				t.Errorf("init --append-only with a pattern that matches nothing: exit %d, want 2", code)
			}
			oneLineError(t, "unmatched pattern", errOut, "public.pgbench_hist", "--append-only")

			out := p.mustDecant("init", "--copy", "--create-tables", "--append-only", "public.pgbench_history")
			p.assertAppendOnlyWarning(out, "public.pgbench_history")
			p.assertPublications("public.pgbench_accounts", "public.pgbench_history")
			p.catchUp()
			p.assertHistory(50, 50*51/2)
			p.assertVerify(true)

			// On the source, without a replica identity: neither fails,
			// neither is replicated.
			psql(t, p.src, `UPDATE pgbench_history SET delta = 0 WHERE aid <= 10; DELETE FROM pgbench_history WHERE aid > 40;`)
			psql(t, p.src, historyRows(51, 60))
			out = p.mustDecant("run", "--catch-up")
			if strings.Contains(out, "level=ERROR") {
				t.Errorf("run after UPDATE/DELETE on the append-only table logged an error:\n%s", out)
			}
			p.assertHistory(60, 60*61/2)
			if got, want := p.targetValue(`SELECT concat(sum(abalance)) FROM pgbench_accounts`), queryValue(t, p.src, `SELECT concat(sum(abalance)) FROM pgbench_accounts`); got != want {
				t.Errorf("pgbench_accounts on the target: sum(abalance) %s, source %s", got, want)
			}
			p.assertVerify(false)

			psql(t, p.src, `TRUNCATE pgbench_history;`+historyRows(61, 63))
			p.mustDecant("run", "--catch-up")
			p.assertHistory(3, 61+62+63)
		})
	}
}

// TestAppendOnlyLifecycle: re-running init with a changed --append-only
// list updates the second publication (tables added, removed, moved
// between the two), status shows it, and drop removes both publications.
func TestAppendOnlyLifecycle(t *testing.T) {
	p := newPair(t)
	psql(t, p.src, appendOnlySchema+`CREATE TABLE audit (at timestamptz, msg text);`)
	p.mustDecant("init", "--create-tables", "--tables", "public.pgbench_*", "--append-only", "public.pgbench_history")
	p.assertPublications("public.pgbench_accounts", "public.pgbench_history")

	out := p.mustDecant("init", "--create-tables", "--tables", "public.pgbench_*,public.audit", "--append-only", "public.pgbench_history,public.audit")
	p.assertAppendOnlyWarning(out, "public.audit")
	p.assertPublications("public.pgbench_accounts", "public.audit,public.pgbench_history")
	psql(t, p.src, `INSERT INTO audit VALUES ('2024-05-01 10:00+00', 'one'), ('2024-05-01 10:00+00', 'one');
		UPDATE audit SET msg = 'two'; DELETE FROM audit;`+historyRows(1, 5))
	p.catchUpWithout()
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM audit WHERE msg = 'one'`); n != "2" {
		t.Errorf("audit on the target: %s rows as inserted, want 2 (the source's UPDATE and DELETE not replicated)", n)
	}

	// audit gets a replica identity: it moves to the main publication,
	// whose updates and deletes it now replicates.
	psql(t, p.src, `ALTER TABLE audit REPLICA IDENTITY FULL;`)
	out = p.mustDecant("init", "--tables", "public.pgbench_*,public.audit", "--append-only", "public.pgbench_history,public.audit")
	if !strings.Contains(out, "moved") || !strings.Contains(out, "replicated whole") {
		t.Errorf("init moving audit to the main publication does not say so:\n%s", out)
	}
	p.assertPublications("public.audit,public.pgbench_accounts", "public.pgbench_history")

	out = p.mustDecant("init", "--tables", "public.pgbench_accounts,public.audit")
	if strings.Contains(out, "append-only table:") {
		t.Errorf("init without append-only tables warns of one:\n%s", out)
	}
	p.assertPublications("public.audit,public.pgbench_accounts", "")

	out = p.mustDecant("status")
	if !strings.Contains(out, "append-only    "+p.name+"_append_only: 0 table(s)") {
		t.Errorf("status does not show the empty append-only publication:\n%s", out)
	}
	p.mustDecant("init", "--tables", "public.pgbench_*,public.audit", "--append-only", "public.pgbench_history")
	out = p.mustDecant("status")
	if !strings.Contains(out, "append-only    "+p.name+"_append_only: 1 table(s), inserts and truncates only (public.pgbench_history)") {
		t.Errorf("status does not show the append-only table:\n%s", out)
	}

	out = p.mustDecant("drop", "--yes")
	if !strings.Contains(out, "publication dropped, append-only publication dropped") {
		t.Errorf("drop output: %s", out)
	}
	if n := queryValue(t, p.src, `SELECT count(*)::text FROM pg_publication WHERE pubname IN ('`+p.name+`', '`+p.name+`_append_only')`); n != "0" {
		t.Errorf("drop left %s publications", n)
	}
}

// catchUpWithout is catchUp without comparing every table (the
// append-only ones differ from the source by design).
func (p *pair) catchUpWithout() {
	p.t.Helper()
	p.t.Log(p.mustDecant("run", "--catch-up"))
}

// assertPublications checks the tables of the pipeline's publication and
// of its append-only one (comma lists in name order; "" for none, or for
// the append-only one also absent when whole is "" too, as after a
// refused init), and that the append-only one publishes inserts and
// truncates only.
func (p *pair) assertPublications(whole, appendOnly string) {
	p.t.Helper()
	list := func(pub string) string {
		return queryValue(p.t, p.src, `SELECT coalesce(string_agg(schemaname || '.' || tablename, ',' ORDER BY schemaname, tablename), '')
			FROM pg_publication_tables WHERE pubname = '`+pub+`'`)
	}
	if got := list(p.name); got != whole {
		p.t.Errorf("publication %s: tables %q, want %q", p.name, got, whole)
	}
	ao := p.name + "_append_only"
	if got := list(ao); got != appendOnly {
		p.t.Errorf("publication %s: tables %q, want %q", ao, got, appendOnly)
	}
	want := "insert truncate"
	if whole == "" && appendOnly == "" {
		want = ""
	}
	got := queryValue(p.t, p.src, `SELECT coalesce(max(concat_ws(' ', CASE WHEN pubinsert THEN 'insert' END, CASE WHEN pubupdate THEN 'update' END,
		CASE WHEN pubdelete THEN 'delete' END, CASE WHEN pubtruncate THEN 'truncate' END)), '') FROM pg_publication WHERE pubname = '`+ao+`'`)
	if got != want {
		p.t.Errorf("publication %s publishes %q, want %q", ao, got, want)
	}
}

// assertAppendOnlyWarning checks that init's output warns exactly once
// that table's UPDATEs and DELETEs are not replicated, on one line.
func (p *pair) assertAppendOnlyWarning(out, table string) {
	p.t.Helper()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "append-only table:") && strings.Contains(line, "table="+table) {
			n++
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "not replicated") {
				p.t.Errorf("append-only warning: %s", line)
			}
		}
	}
	if n != 1 {
		p.t.Errorf("init warned %d times of append-only table %s, want once:\n%s", n, table, out)
	}
}

// assertHistory checks pgbench_history on the target: rows as inserted
// (count and sum of delta).
func (p *pair) assertHistory(rows, deltaSum int) {
	p.t.Helper()
	got := p.targetValue(`SELECT concat(count(*), ' ', coalesce(sum(delta), 0)) FROM pgbench_history`)
	if want := itoa(rows) + " " + itoa(deltaSum); got != want {
		p.t.Errorf("pgbench_history on the target: count and sum(delta) %q, want %q", got, want)
	}
}

// assertVerify runs verify and checks that it compares pgbench_history
// as an append-only multiset, equal or not as want says, and the keyed
// table equal.
func (p *pair) assertVerify(equal bool) {
	p.t.Helper()
	out, errOut, code := p.decant("verify", "--json", "--recheck-wait", "0s")
	var rep struct {
		Tables []struct {
			Source     string   `json:"source"`
			Equal      bool     `json:"equal"`
			Key        []string `json:"key"`
			AppendOnly bool     `json:"append_only"`
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		p.t.Fatalf("verify --json (exit %d): %v\n%s\n%s", code, err, out, errOut)
	}
	if want := map[bool]int{true: 0, false: 1}[equal]; code != want {
		p.t.Errorf("verify: exit %d, want %d\n%s", code, want, out)
	}
	for _, tr := range rep.Tables {
		history := tr.Source == "public.pgbench_history"
		if tr.AppendOnly != history || (history && len(tr.Key) > 0) {
			p.t.Errorf("verify of %s: append_only %v, key %v", tr.Source, tr.AppendOnly, tr.Key)
		}
		if want := equal || !history; tr.Equal != want {
			p.t.Errorf("verify of %s: equal %v, want %v", tr.Source, tr.Equal, want)
		}
	}
}

// TestAppendOnlyOlderPipeline: a pipeline whose slot exists without the
// append-only publication (as an older decant made it) streams its one
// publication, and is refused append-only tables with what to do, since
// PostgreSQL 15 fails to decode changes older than a publication asked
// for.
func TestAppendOnlyOlderPipeline(t *testing.T) {
	p := newPair(t)
	psql(t, p.src, appendOnlySchema)
	p.mustDecant("init", "--create-tables", "--tables", "public.pgbench_accounts")
	psql(t, p.src, `DROP PUBLICATION `+p.name+`_append_only;
		INSERT INTO pgbench_accounts SELECT i, 1, 0, '' FROM generate_series(1, 5) i;`)

	p.mustDecant("init", "--tables", "public.pgbench_accounts")
	if n := queryValue(t, p.src, `SELECT count(*)::text FROM pg_publication WHERE pubname = '`+p.name+`_append_only'`); n != "0" {
		t.Errorf("init made the append-only publication for a pipeline whose slot exists")
	}
	_, errOut, code := p.decant("init", "--create-tables", "--tables", "public.pgbench_*", "--append-only", "public.pgbench_history")
	if code != 1 {
		t.Errorf("init --append-only on a pipeline without the append-only publication: exit %d, want 1", code)
	}
	oneLineError(t, "older pipeline", errOut, p.name+"_append_only", "decant drop --yes", "--append-only")
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM pgbench_accounts`); n != "0" {
		t.Fatalf("target has %s rows before run", n)
	}
	psql(t, p.src, `UPDATE pgbench_accounts SET abalance = 7 WHERE aid = 3;`)
	p.t.Log(p.mustDecant("run", "--catch-up"))
	if got := queryValue(t, p.tgt, `SELECT concat(count(*), ' ', sum(abalance)) FROM pgbench_accounts`); got != "5 7" {
		t.Errorf("pgbench_accounts on the target: count and sum %q, want \"5 7\"", got)
	}
}

// TestAppendOnlyPgbench: pgbench's tpcb-like workload, four clients,
// with pgbench_history append-only (no ALTER TABLE on the source) and
// decant run streaming meanwhile: the target equals the source on every
// table, on both targets.
func TestAppendOnlyPgbench(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newTargetPair(t, kind == "mariadb")
			p.pgbench("-i", "-q", "-s", "1")
			p.mustDecant("init", "--copy", "--create-tables", "--append-only", "public.pgbench_history")
			a := p.start()
			// -n: no vacuum, and no TRUNCATE of pgbench_history first.
			p.pgbench("-n", "-c", "4", "-j", "2", "-t", "250")
			a.stop(t)
			if n := queryValue(t, p.src, `SELECT count(*)::text FROM pgbench_history`); n != "1000" {
				t.Fatalf("pgbench left %s history rows, want 1000", n)
			}
			p.catchUp()
		})
	}
}

// pgbench runs PostgreSQL's pgbench against the test's source database.
func (p *pair) pgbench(args ...string) {
	p.t.Helper()
	cmd := exec.CommandContext(p.t.Context(), "/usr/lib/postgresql/15/bin/pgbench",
		append(args, "-h", "127.0.0.1", "-p", strconv.Itoa(sourcePG.Port), "-U", "postgres", p.name)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		p.t.Fatalf("pgbench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
