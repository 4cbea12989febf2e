package integration

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/decant/decant/integration/gaussstub"
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

// The rules for remote hosts (a warning per side for a link that is not
// verified, no cleartext password and no password encrypted to a key the
// server sent, over an unencrypted link) exempt this machine, and the
// only network here is loopback. remoteRules sets
// DECANT_LOOPBACK_IS_REMOTE=1 for the decant processes the test runs,
// which makes decant judge loopback links as remote ones: the rules run
// as they would against another host, with real servers. (t.Setenv: the
// test must not be parallel, and no other test runs while it does.)
func remoteRules(t *testing.T) { t.Setenv("DECANT_LOOPBACK_IS_REMOTE", "1") }

// linkWarnings are the warnings in decant's stderr about side's links.
func linkWarnings(stderr, side string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "side="+side) {
			out = append(out, l)
		}
	}
	return out
}

// wantLinkWarning checks that stderr warns exactly once about side's
// link, saying what and naming the fix; want "" checks it does not warn.
func wantLinkWarning(t *testing.T, what, stderr, side, want, fix string) {
	t.Helper()
	got := linkWarnings(stderr, side)
	switch {
	case want == "" && len(got) > 0:
		t.Errorf("%s: %s link warned: %q", what, side, got)
	case want != "" && len(got) != 1:
		t.Errorf("%s: %d warnings about the %s link, want 1:\n%s", what, len(got), side, stderr)
	case want != "" && (!strings.Contains(got[0], want) || !strings.Contains(got[0], fix)):
		t.Errorf("%s: warning %q lacks %q or %q", what, got[0], want, fix)
	}
	if strings.Contains(stderr, secret) {
		t.Errorf("%s: stderr shows the password:\n%s", what, stderr)
	}
}

const (
	notEncrypted = "connection is not encrypted"
	notVerified  = "encrypted but the server's certificate is not verified"
	pgFix        = "sslmode=verify-full and sslrootcert=FILE"
	myFix        = "tls-ca=FILE"
)

// TestPostgresLinkRules: a PostgreSQL target verified (verify-full) is
// not warned about; encrypted but unverified (require) is, once, though
// decant connects to it several times; a role whose pg_hba method is
// password (cleartext) is refused over an unencrypted link, allowed with
// allow_cleartext_password=true, and, on a loopback link, exempt.
func TestPostgresLinkRules(t *testing.T) {
	pg := harness.PostgresT(t, harness.PostgresOptions{TLS: true, HBA: []string{"host all pwuser 127.0.0.1/32 password"}})
	p := newPair(t)
	p.both(`CREATE TABLE t (id integer PRIMARY KEY);`)
	ctx := t.Context()
	if err := pg.CreateDatabase(ctx, p.name); err != nil {
		t.Fatal(err)
	}
	dsn := func(user string, q url.Values) string {
		return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?%s", user, pg.Port, p.name, q.Encode())
	}
	verified := url.Values{"sslmode": {"verify-full"}, "sslrootcert": {pg.TLS.CA}}
	p.tgt = dsn("postgres", verified)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY); CREATE ROLE pwuser LOGIN SUPERUSER PASSWORD '`+secret+`';`)
	remoteRules(t)

	_, errOut, code := p.decant("init")
	if code != 0 {
		t.Fatalf("verified: exit %d:\n%s", code, errOut)
	}
	wantLinkWarning(t, "verified", errOut, "target", "", "")
	// The source is the suite's plain cluster: warned about, once.
	wantLinkWarning(t, "verified", errOut, "source", notEncrypted, pgFix)

	pw := url.UserPassword("pwuser", secret).String()
	refused := []string{"refused", "cleartext password", "sslmode=verify-full", "allow_cleartext_password=true"}
	runLinkCases(t, p, "target", pgFix, []linkCase{
		{what: "unverified", dsn: dsn("postgres", url.Values{"sslmode": {"require"}}), remote: true, warn: notVerified},
		{what: "cleartext refused", dsn: dsn(pw, url.Values{"sslmode": {"disable"}}), remote: true, code: 1, warn: notEncrypted, refusal: refused},
		{what: "cleartext allowed", dsn: dsn(pw, url.Values{"sslmode": {"disable"}, "allow_cleartext_password": {"true"}}), remote: true, warn: notEncrypted},
		{what: "cleartext on loopback", dsn: dsn(pw, url.Values{"sslmode": {"disable"}})},
	})
}

// linkCase is one decant status against a DSN for the side under test.
type linkCase struct {
	what, dsn string
	remote    bool     // DECANT_LOOPBACK_IS_REMOTE stays set
	code      int      // decant's exit code
	warn      string   // the one warning about the side's link; "" for none
	refusal   []string // what the one-line refusal says; nil: not refused
	check     func(t *testing.T, stderr string)
}

// runLinkCases runs decant status for each case with its DSN as p's
// side ("source", "target"), and checks exit code, warning and refusal.
func runLinkCases(t *testing.T, p *pair, side, fix string, cases []linkCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.what, func(t *testing.T) {
			if !c.remote {
				t.Setenv("DECANT_LOOPBACK_IS_REMOTE", "")
			}
			q := *p
			if side == "source" {
				q.src = c.dsn
			} else {
				q.tgt = c.dsn
			}
			_, errOut, code := q.decant("status")
			if code != c.code {
				t.Fatalf("exit %d, want %d:\n%s", code, c.code, errOut)
			}
			wantLinkWarning(t, c.what, errOut, side, c.warn, fix)
			if c.refusal != nil {
				oneLineError(t, c.what, errOut, c.refusal...)
			}
			if c.check != nil {
				c.check(t, errOut)
			}
		})
	}
}

// TestMySQLLinkRules: a MariaDB target verified with tls-ca is not warned
// about; with tls=skip-verify or without TLS it is, once. A server that
// sends its RSA public key over an unencrypted link (caching_sha2_password
// full authentication; MariaDB has no such plugin, so harness.KeyServer
// speaks it) is refused before the password is encrypted to the key,
// allowed with allowPublicKeyRetrieval=true, and, on loopback, exempt.
func TestMySQLLinkRules(t *testing.T) {
	m := harness.MariaDBT(t, harness.MariaDBOptions{TLS: true})
	ks, err := harness.StartKeyServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ks.Close)
	p := newPair(t)
	psql(t, p.src, `CREATE TABLE t (id integer PRIMARY KEY);`)
	ctx := t.Context()
	if err := m.CreateDatabase(ctx, p.name); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Exec(ctx, p.name, "CREATE TABLE t (id integer PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	p.mysql = true
	dsn := func(addr string, q url.Values) string {
		return fmt.Sprintf("mysql://decant:%s@%s/%s?%s", url.QueryEscape(secret), addr, p.name, q.Encode())
	}
	local := fmt.Sprintf("127.0.0.1:%d", m.Port)
	if _, err := m.Exec(ctx, "", "ALTER USER 'decant'@'127.0.0.1' IDENTIFIED BY '"+secret+"'"); err != nil {
		t.Fatal(err)
	}
	p.tgt = dsn(local, url.Values{"tls-ca": {m.TLS.CA}})
	remoteRules(t)

	_, errOut, code := p.decant("init")
	if code != 0 {
		t.Fatalf("verified: exit %d:\n%s", code, errOut)
	}
	wantLinkWarning(t, "verified", errOut, "target", "", "")

	// sent checks that the key server got n passwords encrypted to its
	// key during the case, and that its refusal is what failed then.
	sent := func(n int64) func(*testing.T, string) {
		before := ks.PasswordsSent()
		return func(t *testing.T, stderr string) {
			if got := ks.PasswordsSent() - before; got != n {
				t.Errorf("the key server got %d encrypted passwords, want %d:\n%s", got, n, stderr)
			}
			if n > 0 && !strings.Contains(stderr, "decant key stand-in") {
				t.Errorf("the stand-in's refusal of the password is not what failed:\n%s", stderr)
			}
		}
	}
	refused := []string{"refused", "RSA public key", "tls-ca=FILE", "allowPublicKeyRetrieval=true"}
	for _, c := range []struct {
		linkCase
		passwords int64 // the key server gets
	}{
		{linkCase{what: "unverified", dsn: dsn(local, url.Values{"tls": {"skip-verify"}}), remote: true, warn: notVerified}, 0},
		{linkCase{what: "plain", dsn: dsn(local, nil), remote: true, warn: notEncrypted}, 0},
		{linkCase{what: "key refused", dsn: dsn(ks.Addr, nil), remote: true, code: 1, warn: notEncrypted, refusal: refused}, 0},
		{linkCase{what: "key allowed", dsn: dsn(ks.Addr, url.Values{"allowPublicKeyRetrieval": {"true"}}), remote: true, code: 1, warn: notEncrypted}, 1},
		{linkCase{what: "key on loopback", dsn: dsn(ks.Addr, nil), code: 1}, 1},
	} {
		// The count is taken as the case starts: one case at a time.
		c.check = sent(c.passwords)
		runLinkCases(t, p, "target", myFix, []linkCase{c.linkCase})
	}
}

// TestGaussLinkRules: the same rules for a GaussDB source (the stand-in,
// serving TLS with the harness's CA and asking for a cleartext password,
// pg_hba's password method).
func TestGaussLinkRules(t *testing.T) {
	files, err := harness.MakeTLS(filepath.Join(t.TempDir(), "tls"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.ServerCert, files.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gaussstub.Start(gaussstub.Config{User: "decant", Password: secret, AuthMethod: "password", SystemID: "7300000000000000029",
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	p := newPair(t)
	psql(t, p.tgt, `CREATE TABLE t (id integer PRIMARY KEY);`)
	g := gaussPair(t, p, srv, nil)
	base := g.src
	src := func(q url.Values) string { return base + "?" + q.Encode() }
	g.src = src(url.Values{"sslmode": {"verify-full"}, "sslrootcert": {files.CA}})
	remoteRules(t)

	_, errOut, code := g.decant("init")
	if code != 0 {
		t.Fatalf("verified: exit %d:\n%s", code, errOut)
	}
	wantLinkWarning(t, "verified", errOut, "source", "", "")

	refused := []string{"refused", "cleartext password", "sslmode=verify-full", "allow_cleartext_password=true"}
	runLinkCases(t, g, "source", pgFix, []linkCase{
		{what: "unverified", dsn: src(url.Values{"sslmode": {"require"}}), remote: true, warn: notVerified},
		{what: "cleartext refused", dsn: src(url.Values{"sslmode": {"disable"}}), remote: true, code: 1, warn: notEncrypted, refusal: refused},
		{what: "cleartext allowed", dsn: src(url.Values{"sslmode": {"disable"}, "allow_cleartext_password": {"true"}}), remote: true, warn: notEncrypted},
		{what: "cleartext on loopback", dsn: src(url.Values{"sslmode": {"disable"}})},
	})
}
