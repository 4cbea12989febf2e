package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/decant/decant/integration/harness"
)

// TestLifecycle drives init (twice), run, status and drop through the CLI.
func TestLifecycle(t *testing.T) {
	p := newPair(t)
	p.both(`CREATE TABLE a (id integer PRIMARY KEY, v text); CREATE TABLE b (id integer PRIMARY KEY);
		CREATE SCHEMA other; CREATE TABLE other.c (id integer PRIMARY KEY);`)
	out := p.mustDecant("init", "--tables", "public.*")
	if !strings.Contains(out, "initialized: 2 tables") {
		t.Errorf("first init said: %s", out)
	}
	out = p.mustDecant("init", "--tables", "public.*")
	if !strings.Contains(out, "already initialized") {
		t.Errorf("second init is not a no-op: %s", out)
	}
	pub := queryValue(t, p.src, `SELECT string_agg(schemaname || '.' || tablename, ',' ORDER BY 1) FROM pg_publication_tables WHERE pubname = '`+p.name+`'`)
	if pub != "public.a,public.b" {
		t.Errorf("publication holds %s, want public.a,public.b", pub)
	}

	psql(t, p.src, `INSERT INTO a SELECT g, 'v' FROM generate_series(1, 100) g; INSERT INTO b VALUES (1); INSERT INTO other.c VALUES (1);`)
	p.mustDecant("run", "--catch-up")
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM a`); n != "100" {
		t.Errorf("target has %s rows in a, want 100", n)
	}
	if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM other.c`); n != "0" {
		t.Errorf("other.c is outside --tables but got %s rows", n)
	}

	var st struct {
		SourceLSN string `json:"source_wal_lsn"`
		Slot      struct {
			Exists    bool   `json:"exists"`
			Active    bool   `json:"active"`
			Confirmed string `json:"confirmed_flush_lsn"`
		} `json:"slot"`
		Checkpoint struct {
			Exists     bool    `json:"exists"`
			EndLSN     string  `json:"end_lsn"`
			Xid        uint32  `json:"xid"`
			CommitTime *string `json:"commit_time"`
		} `json:"checkpoint"`
		LagBytes *int64 `json:"lag_bytes"`
	}
	out = p.mustDecant("status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if !st.Slot.Exists || st.Slot.Active || !st.Checkpoint.Exists || st.Checkpoint.Xid == 0 || st.Checkpoint.CommitTime == nil || st.LagBytes == nil {
		t.Errorf("status --json is incomplete: %s", out)
	}
	if st.Slot.Confirmed != st.Checkpoint.EndLSN {
		t.Errorf("slot confirmed %s but checkpoint is %s: decant's last report is not its checkpoint", st.Slot.Confirmed, st.Checkpoint.EndLSN)
	}
	out = p.mustDecant("status")
	for _, want := range []string{"slot ", "inactive", "checkpoint ", "lag "} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}

	if _, errOut, code := p.decant("drop"); code != 2 || !strings.Contains(errOut, "--yes") {
		t.Errorf("drop without --yes: exit %d, %s", code, errOut)
	}
	out = p.mustDecant("drop", "--yes")
	if !strings.Contains(out, "slot dropped, publication dropped, append-only publication dropped, checkpoint dropped") {
		t.Errorf("drop said: %s", out)
	}
	if n := queryValue(t, p.src, `SELECT count(*)::text FROM pg_replication_slots WHERE slot_name = '`+p.name+`'`); n != "0" {
		t.Errorf("slot still exists after drop")
	}
	_, errOut, code := p.decant("run")
	if code != 1 || !strings.Contains(errOut, "decant init") {
		t.Errorf("run after drop: exit %d, %s", code, errOut)
	}
}

// TestUsageErrors: bad flags and DSNs exit 2 with one line, before
// connecting anywhere.
func TestUsageErrors(t *testing.T) {
	src, tgt := sourcePG.DSN("postgres"), targetPG.DSN("postgres")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--source", "mysql://u@h/db", "--target", tgt}, "scheme"},
		{[]string{"run", "--source", "postgres://u@h:notaport/db", "--target", tgt}, "invalid DSN"},
		{[]string{"run", "--source", src, "--target", tgt, "--pipeline", "Bad-Name"}, "--pipeline"},
		{[]string{"init", "--source", src, "--target", tgt, "--tables", "nodot"}, "--tables"},
		{[]string{"run", "--source", src, "--target", tgt, "--no-such-flag"}, "unknown flag"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"run", "--config", "/nonexistent.yaml"}, "config"},
		{[]string{"drop", "--source", src, "--target", tgt}, "--yes"},
	}
	for _, c := range cases {
		_, errOut, code := runDecant(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("decant %v: exit %d, stderr %q; want exit 2, one line containing %q", c.args, code, errOut, c.want)
		}
	}
	// No source at all.
	out, errOut, code := runDecant(t, "run", "--target", tgt)
	if code != 2 || !strings.Contains(errOut, "no source") {
		t.Errorf("run without source: exit %d, %s%s", code, out, errOut)
	}
}

// TestUnreachable: a source nobody listens on fails promptly: exit 1, and
// 4 for run, which gave up on its first connection.
func TestUnreachable(t *testing.T) {
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := "postgres://postgres@127.0.0.1:" + itoa(port) + "/db?sslmode=disable"
	p := &pair{t: t, name: "unreachable", src: dead, tgt: targetPG.DSN("postgres")}
	for _, cmd := range []string{"init", "run", "status"} {
		start := time.Now()
		_, errOut, code := p.decant(cmd)
		want := 1
		if cmd == "run" {
			want = 4 // run gave up: its first connection failed
		}
		if code != want || !strings.Contains(errOut, "connect") || !strings.Contains(errOut, itoa(port)) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s with unreachable source: exit %d, %q", cmd, code, errOut)
		}
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("%s took %s to report an unreachable source", cmd, d)
		}
	}
}

// TestLifecycleMySQL drives init (twice), run, status and drop against a
// MariaDB target, named once with a mysql:// URL and once in the driver's
// own DSN form.
func TestLifecycleMySQL(t *testing.T) {
	p := newMySQLPair(t)
	psql(t, p.src, `CREATE TABLE a (id integer PRIMARY KEY, v text); CREATE SCHEMA other; CREATE TABLE other.a (id integer PRIMARY KEY);`)
	_, errOut, code := p.decant("init", "--create-tables")
	if code != 1 {
		t.Errorf("init with a name collision: exit %d", code)
	}
	oneLineError(t, "collision", errOut, "other.a and public.a all map to a", "--map")

	p.mustDecant("init", "--create-tables", "--map", "other.*=other_*")
	driverForm := *p
	driverForm.tgt = fmt.Sprintf("decant:decant@tcp(127.0.0.1:%d)/%s", targetMy.Port, p.name)
	if out := driverForm.mustDecant("init", "--map", "other.*=other_*"); !strings.Contains(out, "already initialized") {
		t.Errorf("second init (driver DSN form) is not a no-op: %s", out)
	}
	psql(t, p.src, `INSERT INTO a SELECT g, 'v' FROM generate_series(1, 50) g; INSERT INTO other.a VALUES (7);`)
	driverForm.mustDecant("run", "--catch-up", "--map", "other.*=other_*")
	if n := p.myValue(`SELECT COUNT(*) FROM a`); n != "50" {
		t.Errorf("a has %s rows on the target, want 50", n)
	}
	if n := p.myValue(`SELECT id FROM other_a`); n != "7" {
		t.Errorf("other.a was not routed to other_a: %q", n)
	}
	var st struct {
		Slot struct {
			Confirmed string `json:"confirmed_flush_lsn"`
		} `json:"slot"`
		Checkpoint struct {
			EndLSN string `json:"end_lsn"`
			Xid    uint32 `json:"xid"`
		} `json:"checkpoint"`
	}
	out := p.mustDecant("status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Checkpoint.Xid == 0 || st.Checkpoint.EndLSN == "" || st.Slot.Confirmed != st.Checkpoint.EndLSN {
		t.Errorf("status: %s", out)
	}
	if out := p.mustDecant("drop", "--yes"); !strings.Contains(out, "checkpoint dropped") {
		t.Errorf("drop said: %s", out)
	}
	if n := p.myValue(`SELECT COUNT(*) FROM decant_checkpoint`); n != "0" {
		t.Errorf("checkpoint row left after drop")
	}
}

// TestColumnRules renames and leaves out columns through the config file,
// with tables created by init --create-tables, on both targets.
func TestColumnRules(t *testing.T) {
	for _, kind := range []string{"postgres", "mariadb"} {
		t.Run(kind, func(t *testing.T) {
			p := newTargetPair(t, kind == "mariadb")
			psql(t, p.src, `CREATE TABLE people (id integer PRIMARY KEY, email text, password_hash text, note text);`)
			cfg := filepath.Join(t.TempDir(), "decant.yaml")
			os.WriteFile(cfg, []byte("columns:\n  public.people:\n    rename: {email: email_address}\n    exclude: [password_hash]\n"), 0o600)
			p.extra = []string{"--config", cfg}
			p.mustDecant("init", "--create-tables")
			psql(t, p.src, `INSERT INTO people VALUES (1, 'a@example.com', 'SECRET', 'n1'), (2, NULL, 'x', 'n2');
				UPDATE people SET email = 'b@example.com', password_hash = 'y' WHERE id = 2;`)
			p.mustDecant("run", "--catch-up")
			q := `SELECT CONCAT_WS('|', id, email_address, note) FROM people WHERE id = 2`
			var got string
			if p.mysql {
				got = p.myValue(q)
				if n := p.myValue(`SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'people' AND COLUMN_NAME = 'password_hash'`); n != "0" {
					t.Errorf("the excluded column was created")
				}
			} else {
				got = queryValue(t, p.tgt, q)
				if n := queryValue(t, p.tgt, `SELECT count(*)::text FROM information_schema.columns WHERE table_name = 'people' AND column_name = 'password_hash'`); n != "0" {
					t.Errorf("the excluded column was created")
				}
			}
			if got != "2|b@example.com|n2" {
				t.Errorf("row 2 on the target: %q", got)
			}
		})
	}
}
