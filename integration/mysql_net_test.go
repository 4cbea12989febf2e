package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/compare"
	"github.com/decant/decant/source"
)

// Compaction on MariaDB: inside one target transaction decant folds each
// key's changes into their net effect and writes them as set-based
// statements (apply.Net, apply/mysql/net.go), where the target table's
// only unique index is the key and its key columns compare their values
// alone. These tests run decant with its defaults (compaction on).

// netSchema: hot rows with a large value stored out of line (an unchanged
// TOAST value in updates that do not set it), and a composite key.
const netSchema = `
CREATE TABLE hot (id integer PRIMARY KEY, n integer NOT NULL DEFAULT 0, note text, body text);
ALTER TABLE hot ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE TABLE pair (a integer, b integer, v text, PRIMARY KEY (a, b));
INSERT INTO hot SELECT g, 0, 'note ' || g,
	CASE WHEN g <= 5 THEN (SELECT string_agg(md5(g::text || i::text), '') FROM generate_series(1, 2000) i) END
FROM generate_series(1, 300) g;
INSERT INTO pair SELECT g / 10, g % 10, 'v' || g FROM generate_series(1, 300) g;
`

// netWorkload is many source transactions (each statement is one, but
// for BEGIN ... COMMIT); round varies the values.
func netWorkload(round int) string {
	r := strconv.Itoa(round)
	k := strconv.Itoa(1000 + round) // a key new in each round
	var b strings.Builder
	b.WriteString(`
-- hot rows: many updates of few keys, in one transaction and in many
DO $$ BEGIN FOR i IN 1..300 LOOP UPDATE hot SET n = n + 1 WHERE id = i % 5 + 1; END LOOP; END $$;
`)
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "UPDATE hot SET n = n + 1, note = %s WHERE id IN (1, 2, 40);\n", map[bool]string{true: "NULL", false: "'n" + r + "'"}[i%3 == 0])
	}
	b.WriteString(`
-- insert, update and delete of one key in one transaction, and across transactions
BEGIN; INSERT INTO hot VALUES (999, 1, 'new'); UPDATE hot SET n = 2 WHERE id = 999; DELETE FROM hot WHERE id = 999; COMMIT;
INSERT INTO hot VALUES (` + k + `, 1, 'a');
UPDATE hot SET note = NULL WHERE id = ` + k + `;
DELETE FROM hot WHERE id = ` + k + `;
INSERT INTO hot VALUES (` + k + `, 7, 'again');
UPDATE hot SET n = n + 8 WHERE id = ` + k + `;
-- a delete and an insert of one key (a replace)
BEGIN; DELETE FROM hot WHERE id = 50; INSERT INTO hot VALUES (50, 50, 'replaced ` + r + `'); COMMIT;
DELETE FROM hot WHERE id = 51;
INSERT INTO hot VALUES (51, 51, NULL, 'replaced across');
-- key changes of whole rows, and of one with an unchanged TOAST value
UPDATE hot SET id = id + 10000 WHERE id BETWEEN 10 AND 20;
UPDATE hot SET n = n + 1 WHERE id BETWEEN 10005 AND 10015;
UPDATE hot SET id = id - 10000 WHERE id BETWEEN 10010 AND 10020;
UPDATE hot SET id = id + 5000 WHERE id = 3;
UPDATE hot SET n = n + 99 WHERE id = 5003;
UPDATE hot SET id = id - 5000 WHERE id = 5003;
-- a key change into a key just freed
DELETE FROM hot WHERE id = 30;
UPDATE hot SET id = 30 WHERE id = 31;
INSERT INTO hot VALUES (31, 31, 'refilled');
-- NULLs and back
UPDATE hot SET note = NULL WHERE id % 3 = 0;
UPDATE hot SET note = 'back ` + r + `' WHERE id % 6 = 0;
-- the rows with large values: updates that leave them unchanged
UPDATE hot SET n = n + 1 WHERE id <= 5;
UPDATE hot SET note = 'toast ` + r + `' WHERE id <= 5;
-- deletes, and the rows back
DELETE FROM hot WHERE id BETWEEN 200 AND 250;
INSERT INTO hot SELECT g, ` + r + `, 'again' FROM generate_series(200, 240) g;
-- composite key
UPDATE pair SET v = NULL WHERE b = 3;
UPDATE pair SET b = b + 100 WHERE a = 5;
UPDATE pair SET b = b - 100 WHERE a = 5;
DELETE FROM pair WHERE a = 7;
INSERT INTO pair SELECT 7, g, 'back' || g FROM generate_series(0, 4) g;
UPDATE pair SET v = 'x ` + r + `' WHERE a = 7;
`)
	return b.String()
}

// myStatus reads a global status counter of the MariaDB target (the
// integration tests run one at a time).
func (p *pair) myStatus(name string) int {
	p.t.Helper()
	n, err := strconv.Atoi(p.myValue("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = '" + name + "'"))
	if err != nil {
		p.t.Fatal(err)
	}
	return n
}

// TestMySQLNetChanges applies hot rows, changes of one key within and
// across transactions, key changes, NULLs and unchanged TOAST values,
// first as a backlog (many source transactions per target transaction)
// then live, and compares source and target.
func TestMySQLNetChanges(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, netSchema)
	p.mustDecant("copy", "--create-tables")

	multi := p.myStatus("COM_UPDATE_MULTI")
	psql(t, p.src, netWorkload(1))
	p.catchUp()
	if p.myStatus("COM_UPDATE_MULTI") == multi {
		t.Error("decant sent no set-based UPDATE: the tables were not compacted")
	}

	a := p.start()
	psql(t, p.src, netWorkload(2))
	time.Sleep(200 * time.Millisecond)
	a.stop(t)
	p.catchUp()
}

// TestMySQLNetDiverged: a row deleted on the target behind decant's back
// makes a set-based UPDATE find fewer rows than it has keys; decant
// replays the target transaction change by change and stops naming the
// table, xid and commit of the exact source transaction.
func TestMySQLNetDiverged(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `CREATE TABLE acct (id integer PRIMARY KEY, v integer);
		INSERT INTO acct SELECT g, 0 FROM generate_series(1, 100) g;`)
	p.mustDecant("copy", "--create-tables")
	p.myExec("DELETE FROM acct WHERE id = 42")
	peek := p.peekSlot()

	psql(t, p.src, `UPDATE acct SET v = v + 1 WHERE id <= 10;
		UPDATE acct SET v = v + 1 WHERE id BETWEEN 20 AND 30;`)
	xid := queryValue(t, p.src, `WITH u AS (UPDATE acct SET v = v + 1 WHERE id BETWEEN 40 AND 45 RETURNING 1)
		SELECT pg_current_xact_id()::text FROM u LIMIT 1`)
	psql(t, p.src, `UPDATE acct SET v = v + 1 WHERE id >= 90;`)

	_, errOut, code := p.decant("run", "--catch-up")
	if code != 3 {
		t.Fatalf("run over a diverged target: exit %d, want 3 (needs a person)\n%s", code, errOut)
	}
	commit := peek.commitOf(xid)
	oneLineError(t, "diverged", errOut, "apply update at xid "+xid+" commit "+commit.String()+" table public.acct", "target has diverged")
	if !strings.Contains(errOut, "applies them again one by one") {
		t.Errorf("decant did not replay a set-based statement change by change:\n%s", errOut)
	}
}

// peek is a second slot on the pipeline's publication, to read the commit
// positions the source gives its transactions.
type peek struct {
	p    *pair
	slot string
}

// peekSlot creates the slot; it sees the transactions that commit after.
func (p *pair) peekSlot() *peek {
	p.t.Helper()
	s := &peek{p: p, slot: p.name + "_peek"}
	psql(p.t, p.src, fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, s.slot))
	p.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := compare.Connect(ctx, p.src); err == nil {
			c.Exec(ctx, `SELECT pg_drop_replication_slot($1)`, s.slot)
			c.Close(ctx)
		}
	})
	return s
}

// commitOf reads the commit position of transaction xid: the final LSN
// of its pgoutput Begin message (byte 'B', final LSN, commit time, xid).
func (s *peek) commitOf(xid string) source.LSN {
	t := s.p.t
	t.Helper()
	c := connect(t, s.p.src)
	rows, err := c.Query(t.Context(), `SELECT data FROM pg_logical_slot_peek_binary_changes($1, NULL, NULL,
		'proto_version', '1', 'publication_names', $2)`, s.slot, s.p.name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			t.Fatal(err)
		}
		if len(data) == 21 && data[0] == 'B' && strconv.FormatUint(uint64(binary.BigEndian.Uint32(data[17:])), 10) == xid {
			return source.LSN(binary.BigEndian.Uint64(data[1:]))
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("transaction xid %s not found in slot %s", xid, s.slot)
	return 0
}

// TestMySQLNetPlainTables: a table with a trigger gets every change on its
// own (the trigger sees each), and a table with a second unique index is
// not compacted (a swap of unique values goes through an intermediate
// value, which a set-based UPDATE would skip and then collide on).
func TestMySQLNetPlainTables(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `CREATE TABLE trg (id integer PRIMARY KEY, v integer);
		CREATE TABLE uq (id integer PRIMARY KEY, code varchar(10) NOT NULL UNIQUE, v integer);
		INSERT INTO trg SELECT g, 0 FROM generate_series(1, 10) g;
		INSERT INTO uq SELECT g, 'c' || g, 0 FROM generate_series(1, 10) g;`)
	p.mustDecant("copy", "--create-tables")
	p.myExec("CREATE TABLE trg_log (old_v int, new_v int); " +
		"CREATE TRIGGER trg_au AFTER UPDATE ON trg FOR EACH ROW INSERT INTO trg_log VALUES (OLD.v, NEW.v)")

	// Each part is one target transaction of its own, so that a replay
	// of one (after a failed set-based statement) cannot hide the other.
	var trg strings.Builder
	trg.WriteString(`DO $$ BEGIN FOR i IN 1..30 LOOP UPDATE trg SET v = v + 1 WHERE id = 1; END LOOP; END $$;` + "\n")
	for i := 0; i < 20; i++ {
		trg.WriteString("UPDATE trg SET v = v + 1 WHERE id = 2;\n")
	}
	uq := `BEGIN; UPDATE uq SET code = 'tmp' WHERE id = 1; UPDATE uq SET code = 'c1' WHERE id = 2; UPDATE uq SET code = 'c2' WHERE id = 1; COMMIT;
		UPDATE uq SET code = 'tmp' WHERE id = 3;
		UPDATE uq SET code = 'c3' WHERE id = 4;
		UPDATE uq SET code = 'c4' WHERE id = 3;
		UPDATE uq SET v = v + 1;
		DELETE FROM uq WHERE id = 5;
		INSERT INTO uq VALUES (5, 'c5', 1), (11, 'c11', 1);
		DELETE FROM uq WHERE id = 11;
		UPDATE uq SET v = v + 1 WHERE id = 5;`
	for _, part := range []string{trg.String(), uq} {
		multi := p.myStatus("COM_UPDATE_MULTI")
		psql(t, p.src, part)
		out := p.mustDecant("run", "--catch-up")
		if n := p.myStatus("COM_UPDATE_MULTI"); n != multi {
			t.Errorf("decant sent %d set-based UPDATEs to a table with a trigger or a second unique index", n-multi)
		}
		if strings.Contains(out, "applies them again one by one") {
			t.Errorf("a set-based statement failed and was replayed:\n%s", out)
		}
	}
	p.assertEqual()
	if got := p.myValue("SELECT CONCAT(COUNT(*), ' ', SUM(new_v = old_v + 1)) FROM trg_log"); got != "50 50" {
		t.Errorf("the trigger saw %s updates (count, of one step each), want 50 50: the changes of a table with a trigger were compacted", got)
	}
}
