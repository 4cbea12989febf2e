package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestPostgres(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Now()
	p := PostgresT(t, PostgresOptions{})
	t.Logf("StartPostgres took %v", time.Since(start))

	if got := pgQuery(t, p.DSN("postgres"), "SHOW wal_level"); got != "logical" {
		t.Errorf("wal_level = %q, want logical", got)
	}
	if got := pgQuery(t, p.DSN("postgres"), "SHOW max_prepared_transactions"); got != "10" {
		t.Errorf("max_prepared_transactions = %q, want 10", got)
	}
	if err := p.CreateDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	pgQuery(t, p.DSN("app"), "CREATE TABLE t AS SELECT 'kept'::text AS v")

	if err := p.Crash(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Start after Crash took %v", time.Since(start))
	if got := pgQuery(t, p.DSN("app"), "SELECT v FROM t"); got != "kept" {
		t.Errorf("after crash: v = %q, want kept", got)
	}
	if !strings.Contains(p.LogTail(50), "not properly shut down") {
		t.Errorf("log does not show crash recovery:\n%s", p.LogTail(50))
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pgQuery(t, p.DSN("app"), "SELECT 1::text")

	removeAndCheck(t, p.Remove, p.Dir)
}

func TestPostgresSettings(t *testing.T) {
	t.Parallel()
	p := PostgresT(t, PostgresOptions{Settings: map[string]string{"wal_level": "replica"}})
	if got := pgQuery(t, p.DSN("postgres"), "SHOW wal_level"); got != "replica" {
		t.Errorf("wal_level = %q, want replica", got)
	}
}

func TestMariaDB(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	start := time.Now()
	m := MariaDBT(t)
	t.Logf("StartMariaDB took %v", time.Since(start))

	if err := m.CreateDatabase(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if got := mustExec(t, m, "", "SELECT 1"); got != "1" {
		t.Errorf("SELECT 1 = %q", got)
	}
	mustExec(t, m, "app", "CREATE TABLE t (v VARCHAR(10)); INSERT INTO t VALUES ('kept')")
	if got := mustExec(t, m, "", "SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'app'"); got != "utf8mb4_bin" {
		t.Errorf("collation = %q, want utf8mb4_bin", got)
	}
	// The decant user works over TCP, as the DSN says.
	out, err := exec.Command("mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", strconv.Itoa(m.Port),
		"-udecant", "-pdecant", "--batch", "--skip-column-names", "app", "-e", "SELECT v FROM t").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "kept" {
		t.Errorf("TCP login as decant: %v: %s", err, out)
	}

	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := m.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	start = time.Now()
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Start after Stop took %v", time.Since(start))
	if got := mustExec(t, m, "app", "SELECT v FROM t"); got != "kept" {
		t.Errorf("after restart: v = %q, want kept", got)
	}

	if err := m.Crash(); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := mustExec(t, m, "app", "SELECT v FROM t"); got != "kept" {
		t.Errorf("after crash: v = %q, want kept", got)
	}

	removeAndCheck(t, m.Remove, m.Dir)
}

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil || port <= 0 || port == 5432 || port == 3306 {
		t.Fatalf("FreePort() = %d, %v", port, err)
	}
}

// removeAndCheck calls remove and checks that the server's temp dir is gone;
// a second remove (as the test cleanup does) must succeed.
func removeAndCheck(t *testing.T, remove func() error, dataDir string) {
	t.Helper()
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(dataDir)); !os.IsNotExist(err) {
		t.Errorf("after Remove, %s still exists (stat: %v)", filepath.Dir(dataDir), err)
	}
	if err := remove(); err != nil {
		t.Errorf("second Remove: %v", err)
	}
}

func pgQuery(t *testing.T, dsn, sql string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var s string
	if strings.HasPrefix(sql, "CREATE") {
		_, err = conn.Exec(ctx, sql)
	} else {
		err = conn.QueryRow(ctx, sql).Scan(&s)
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func mustExec(t *testing.T, m *MariaDB, db, sql string) string {
	t.Helper()
	out, err := m.Exec(t.Context(), db, sql)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}
