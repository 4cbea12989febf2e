package integration

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/decant/decant/integration/harness"
)

// TestMySQLTLS replicates into a MariaDB that serves TLS with a private
// CA, as a user that must present a client certificate (REQUIRE X509):
// decant verifies the server with tls-ca and authenticates with tls-cert
// and tls-key. A wrong CA, a wrong server name and a missing client
// certificate each fail with one line saying what to fix.
func TestMySQLTLS(t *testing.T) {
	m := harness.MariaDBT(t, harness.MariaDBOptions{TLS: true})
	p := newPair(t)
	psql(t, p.src, mixedSchema)
	ctx := t.Context()
	if err := m.CreateDatabase(ctx, p.name); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(ctx, "", "CREATE USER 'x509'@'127.0.0.1' IDENTIFIED BY 'x509' REQUIRE X509; GRANT ALL ON *.* TO 'x509'@'127.0.0.1';"); err != nil {
		t.Fatal(err)
	}
	dsn := func(params ...string) string {
		q := url.Values{}
		for i := 0; i < len(params); i += 2 {
			q.Set(params[i], params[i+1])
		}
		return fmt.Sprintf("mysql://x509:x509@127.0.0.1:%d/%s?%s", m.Port, p.name, q.Encode())
	}
	p.mysql = true
	for name, c := range map[string]struct {
		dsn  string
		want string
	}{
		"wrong CA":          {dsn("tls-ca", m.TLS.OtherCA, "tls-cert", m.TLS.ClientCert, "tls-key", m.TLS.ClientKey), "not signed by a CA decant trusts; give the CA's certificate as tls-ca=FILE"},
		"wrong server name": {dsn("tls-ca", m.TLS.CA, "tls-cert", m.TLS.ClientCert, "tls-key", m.TLS.ClientKey, "tls-server-name", "db.example"), "is not valid for the name decant verifies"},
		"no client cert":    {dsn("tls-ca", m.TLS.CA), "Access denied for user 'x509'"},
	} {
		t.Run(name, func(t *testing.T) {
			q := *p
			q.tgt = c.dsn
			_, errOut, code := q.decant("init", "--create-tables")
			if code != 1 || !strings.Contains(errOut, c.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("exit %d, want 1 and one line with %q:\n%s", code, c.want, errOut)
			}
		})
	}

	p.tgt = dsn("tls-ca", m.TLS.CA, "tls-cert", m.TLS.ClientCert, "tls-key", m.TLS.ClientKey)
	p.mustDecant("init", "--create-tables")
	if _, err := workload(t, p.src, 2, 20); err != nil {
		t.Fatal(err)
	}
	finalMarker(t, p.src)
	// The user cannot connect without a client certificate ("no client
	// cert" above), so these rows came over TLS.
	p.catchUp()
}

// TestPostgresTLS replicates into a PostgreSQL target that serves TLS
// with a private CA, verified with sslmode=verify-full and sslrootcert;
// a wrong CA fails with one line.
func TestPostgresTLS(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{TLS: true})
	p := newPair(t)
	p.both(mixedSchema)
	ctx := t.Context()
	if err := pg.CreateDatabase(ctx, p.name); err != nil {
		t.Fatal(err)
	}
	dsn := func(ca string) string {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?%s", pg.Port, p.name,
			url.Values{"sslmode": {"verify-full"}, "sslrootcert": {ca}}.Encode())
	}
	p.tgt = dsn(pg.TLS.CA)
	psql(t, p.tgt, mixedSchema)
	if got := queryValue(t, p.tgt, `SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()`); got != "true" {
		t.Fatalf("a session with the DSN decant gets does not use TLS: ssl = %s", got)
	}

	q := *p
	q.tgt = dsn(pg.TLS.OtherCA)
	_, errOut, code := q.decant("init")
	if code != 1 || !strings.Contains(errOut, "certificate signed by unknown authority") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("wrong CA: exit %d, want 1 and one line naming the unknown authority:\n%s", code, errOut)
	}

	p.mustDecant("init")
	if _, err := workload(t, p.src, 2, 20); err != nil {
		t.Fatal(err)
	}
	finalMarker(t, p.src)
	p.catchUp()
}
