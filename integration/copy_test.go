package integration

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The initial copy: decant init --copy copies every table under the
// snapshot exported with the slot, then streaming starts at the slot's
// consistent point.

const copySchema = mixedSchema + `
CREATE TABLE big (id integer PRIMARY KEY, v text, amount numeric(12,2), at timestamptz, doc jsonb, flag boolean);
CREATE INDEX big_at ON big (at);
`

const copyRows = `
INSERT INTO big SELECT g, 'row ' || g, g * 1.25, '2024-01-01'::timestamptz + g * interval '1 minute',
	jsonb_build_object('g', g, 'tag', 'x' || (g %% 7)), g %% 3 = 0 FROM generate_series(1, %d) g;
INSERT INTO accounts SELECT g, 'owner ' || g, g, CASE WHEN g %% 5 = 0 THEN NULL ELSE 'n' END FROM generate_series(0, 399) g;
INSERT INTO events SELECT g %% 5, 'e' FROM generate_series(1, 300) g;
INSERT INTO batches (client, n, body) SELECT g %% 4, g, 'b' FROM generate_series(1, 200) g;
`

// copyWriters keeps clients writing until stop: the mixed workload, plus
// updates and deletes of rows of big that the copy is reading and inserts
// past them. writing returns once every client has committed a write.
func copyWriters(t *testing.T, dsn string, clients int, stop *atomic.Bool) (writing func(), wait func() int64) {
	done := make(chan struct{})
	started := make(chan struct{})
	var begun atomic.Int32
	var n int64
	var err error
	go func() {
		defer close(done)
		n, err = runClients(t, dsn, clients, 7, func(conn *pgx.Conn, rng *rand.Rand, client, i int) (bool, bool, error) {
			if stop.Load() {
				return false, false, nil
			}
			var err error
			id := 1 + rng.IntN(100000)
			switch i % 4 {
			case 0:
				_, err = conn.Exec(t.Context(), `UPDATE big SET v = v || '+', amount = amount + 1, doc = doc || '{"u": 1}' WHERE id = $1`, id)
			case 1:
				_, err = conn.Exec(t.Context(), `DELETE FROM big WHERE id = $1`, id)
			case 2:
				_, err = conn.Exec(t.Context(), `INSERT INTO big VALUES ($1, 'new', 1, now(), '{}', true) ON CONFLICT (id) DO NOTHING`, 1000000+client*100000+i)
			default:
				_, err = mixedTxn(t.Context(), conn, rng, client)
			}
			if err != nil {
				err = fmt.Errorf("writer %d: %w", client, err)
			} else if i == 0 && int(begun.Add(1)) == clients {
				close(started)
			}
			return true, true, err
		})
	}()
	writing = func() {
		t.Helper()
		select {
		case <-started:
		case <-done:
			t.Fatalf("the writers ended before each wrote once: %v", err)
		}
	}
	return writing, func() int64 {
		<-done
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
}

// TestCopyWhileWriting copies tables while four clients keep writing to
// them (updating and deleting the rows being copied), then catches up:
// the target must equal the source, on both targets.
func TestCopyWhileWriting(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			p.loadCopySource(100000)
			args := []string{"init", "--copy", "--jobs", "4"}
			if mysql {
				args = append(args, "--create-tables")
			} else {
				psql(t, p.tgt, copySchema) // empty tables
			}
			var stop atomic.Bool
			writing, wait := copyWriters(t, p.src, 4, &stop)
			writing() // writes in flight when the snapshot is taken
			out := p.mustDecant(args...)
			stop.Store(true)
			n := wait()
			t.Logf("%d writes during the copy; %s", n, lastLine(out))
			if n == 0 {
				t.Fatal("no writes ran during the copy")
			}
			finalMarker(t, p.src)
			p.mustDecant("run", "--catch-up")
			p.assertEqual()
		})
	}
}

// TestCopyWithoutLocalInfile copies into a MariaDB server that forbids
// LOAD DATA LOCAL INFILE: the copy goes by multi-row INSERTs instead.
func TestCopyWithoutLocalInfile(t *testing.T) {
	p := newMySQLPair(t)
	setGlobal(t, "local_infile", "0")
	p.loadCopySource(20000)
	out := p.mustDecant("copy", "--create-tables", "--jobs", "2") // decant copy is init --copy
	if !strings.Contains(out, "local_infile") {
		t.Errorf("init --copy did not say it falls back from LOAD DATA LOCAL INFILE:\n%s", out)
	}
	finalMarker(t, p.src)
	p.mustDecant("run", "--catch-up")
	p.assertEqual()
}

// TestCopyResumesAfterTargetCrash crashes the target server during a copy
// cut into many block ranges: decant, still holding its snapshot, resumes
// once the server is back and copies only the ranges not yet done.
func TestCopyResumesAfterTargetCrash(t *testing.T) {
	p := newPair(t)
	p.loadCopySource(300000)
	psql(t, p.tgt, copySchema)
	psql(t, p.tgt, `CHECKPOINT`) // the crash recovery replays this test's WAL, not every earlier test's
	a := p.launch("init", "--copy", "--jobs", "1", "--split-size", "1MiB")
	waitFor(t, 60*time.Second, func() bool { return p.copyTasksDone() >= 3 })
	if err := targetPG.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := targetPG.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.wait(); err != nil {
		t.Fatalf("init --copy across a target crash: %v\n%s", err, a.stderr)
	}
	log := a.stderr.String()
	if !strings.Contains(log, "initial copy interrupted; resuming") {
		t.Errorf("init --copy did not say it resumes:\n%s", log)
	}
	if m := regexp.MustCompile(`copying tables.*skipped_tasks=(\d+)`).FindAllStringSubmatch(log, -1); len(m) < 2 || m[len(m)-1][1] == "0" {
		t.Errorf("the resumed copy skipped no task done before the crash:\n%s", log)
	}
	finalMarker(t, p.src)
	p.mustDecant("run", "--catch-up")
	p.assertEqual()
}

// TestMigrate: decant migrate --catch-up copies, then streams what was
// committed meanwhile, and exits once caught up.
func TestMigrate(t *testing.T) {
	p := newPair(t)
	p.loadCopySource(20000)
	var stop atomic.Bool
	writing, wait := copyWriters(t, p.src, 2, &stop)
	writing()
	go func() { time.Sleep(time.Second); stop.Store(true) }() // writes during the first second of migrate
	out := p.mustDecant("migrate", "--create-tables", "--catch-up")
	if !strings.Contains(out, "copied 5 tables") {
		t.Errorf("migrate did not report the copy:\n%s", out)
	}
	wait()
	finalMarker(t, p.src)
	p.mustDecant("run", "--catch-up")
	p.assertEqual()
}

// TestCopyKilled SIGKILLs decant during the copy: streaming is refused
// until the copy is done, and init --copy again restarts it (its snapshot
// ended with the killed process); after catch-up the target equals the
// source.
func TestCopyKilled(t *testing.T) {
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			p.loadCopySource(400000)
			args := []string{"init", "--copy", "--jobs", "1", "--create-tables"}
			a := p.launch(args...)
			waitFor(t, 60*time.Second, p.copyPlanned) // killed once the copy's plan is on the target
			a.kill()
			psql(t, p.src, `UPDATE big SET v = 'after the kill' WHERE id % 1000 = 0; DELETE FROM accounts WHERE id < 10;`)

			_, stderr, code := p.decant("run", "--catch-up")
			if code != 1 || !strings.Contains(stderr, "did not finish") {
				t.Fatalf("run after a killed copy: exit %d, want 1 refusing to stream: %s", code, stderr)
			}
			restart := p.mustDecant(args...)
			for _, want := range []string{"dropped a target table left by an interrupted initial copy", "restarting an interrupted initial copy"} {
				if !strings.Contains(restart, want) {
					t.Errorf("init --copy did not say %q:\n%s", want, restart)
				}
			}
			// The tables made again have their keys and indexes.
			indexes := `SELECT count(*)::text FROM pg_indexes WHERE tablename = 'big'`
			if mysql {
				indexes = `SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'big'`
			}
			if n := p.targetValue(indexes); n != "2" {
				t.Errorf("target table big has %s indexes after the copy, want 2 (primary key, big_at)", n)
			}
			finalMarker(t, p.src)
			p.mustDecant("run", "--catch-up")
			p.assertEqual()
		})
	}
}

// TestCutover migrates tables with sequences (serial and identity), keeps
// decant running while clients write, then runs cutover: fence, catch-up,
// sequences and verify pass, and a row inserted on the target afterwards
// takes the next id the source would give. Without a running decant the
// fence is never reached: cutover says it is not safe.
func TestCutover(t *testing.T) {
	const schema = `
CREATE TABLE orders (id bigserial PRIMARY KEY, item text);
CREATE TABLE notes (id integer GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, body text);
CREATE TABLE marker (id integer PRIMARY KEY, xid text);
INSERT INTO orders (item) SELECT 'o' || g FROM generate_series(1, 500) g;
INSERT INTO notes (body) SELECT 'n' || g FROM generate_series(1, 50) g;
`
	for _, mysql := range []bool{false, true} {
		t.Run(map[bool]string{false: "postgres", true: "mariadb"}[mysql], func(t *testing.T) {
			p := newTargetPair(t, mysql)
			psql(t, p.src, schema)
			p.mustDecant("init", "--copy", "--create-tables")
			_, stderr, code := p.decant("cutover", "--timeout", "3s")
			if code != 1 || !strings.Contains(stderr+"", "not safe") {
				t.Errorf("cutover without decant run: exit %d, want 1 (not safe): %s", code, stderr)
			}
			a := p.start()
			psql(t, p.src, `INSERT INTO orders (item) SELECT 'later' FROM generate_series(1, 100); INSERT INTO notes (body) VALUES ('later');`)
			out := p.mustDecant("cutover", "--verify", "--timeout", "60s")
			a.stop(t)
			if !strings.Contains(out, "safe to switch") {
				t.Errorf("cutover did not say it is safe:\n%s", out)
			}
			p.assertEqual()
			want := queryValue(t, p.src, `SELECT nextval('orders_id_seq')::text`)
			var got string
			if mysql {
				p.myExec(`INSERT INTO orders (item) VALUES ('on the target')`)
				got = p.myValue(`SELECT MAX(id) FROM orders`)
			} else {
				got = queryValue(t, p.tgt, `INSERT INTO orders (item) VALUES ('on the target') RETURNING id::text`)
			}
			if got != want {
				t.Errorf("a row inserted on the target after cutover got id %s, the source's next is %s", got, want)
			}
		})
	}
}

// loadCopySource creates the copy tests' tables on the source, big with
// rows rows.
func (p *pair) loadCopySource(rows int) {
	p.t.Helper()
	psql(p.t, p.src, copySchema)
	psql(p.t, p.src, fmt.Sprintf(copyRows, rows))
}

// targetValue runs a query returning one value on the target.
func (p *pair) targetValue(query string) string {
	p.t.Helper()
	if p.mysql {
		return p.myValue(query)
	}
	return queryValue(p.t, p.tgt, query)
}

// copyTasksDone counts the copy tasks the target records as done (0
// before the copy state exists).
func (p *pair) copyTasksDone() int {
	conn, err := pgx.Connect(p.t.Context(), p.tgt)
	if err != nil {
		return 0
	}
	defer conn.Close(p.t.Context())
	var n int
	if conn.QueryRow(p.t.Context(), `SELECT count(*) FROM decant.copy_state WHERE pipeline = $1 AND done`, p.name).Scan(&n) != nil {
		return 0
	}
	return n
}

// copyPlanned says whether the target holds the pipeline's copy state
// (the copy's tasks, stored before the first is copied).
func (p *pair) copyPlanned() bool {
	query := `SELECT count(*) FROM decant.copy_state WHERE pipeline = '` + p.name + `'`
	var n int
	var err error
	if p.mysql {
		conn, close := p.myConn()
		defer close()
		err = conn.QueryRowContext(p.t.Context(), strings.Replace(query, "decant.copy_state", "decant_copy_state", 1)).Scan(&n)
	} else {
		conn, cerr := pgx.Connect(p.t.Context(), p.tgt)
		if cerr != nil {
			return false
		}
		defer conn.Close(p.t.Context())
		err = conn.QueryRow(p.t.Context(), query).Scan(&n)
	}
	return err == nil && n > 0 // the table does not exist before
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
