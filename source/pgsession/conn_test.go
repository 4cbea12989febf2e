package pgsession

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"time"
)

func TestParseDSNSessionSettings(t *testing.T) {
	cfg, err := ParseDSN("postgres://u:secret@db.example:5433/shop?application_name=mine&TimeZone=Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "db.example" || cfg.Port != 5433 || cfg.Database != "shop" || cfg.User != "u" || cfg.Password != "secret" {
		t.Errorf("parsed %s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	want := map[string]string{
		"DateStyle": "ISO, MDY", "IntervalStyle": "postgres", "TimeZone": "UTC", "extra_float_digits": "3",
		"bytea_output": "hex", "client_encoding": "UTF8",
		"application_name": "mine", // the DSN's own name stays; every other setting is decant's
	}
	for k, v := range want {
		if got := cfg.RuntimeParams[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if _, set := cfg.RuntimeParams["replication"]; set {
		t.Error("an SQL session asks for replication")
	}
	if cfg.ConnectTimeout != defaultConnectTimeout || cfg.DialFunc == nil {
		t.Errorf("connect timeout %s, dial func set %v", cfg.ConnectTimeout, cfg.DialFunc != nil)
	}
}

func TestParseDSNDefaults(t *testing.T) {
	cfg, err := ParseDSN("host=127.0.0.1 port=5432 user=u dbname=d connect_timeout=3")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RuntimeParams["application_name"] != "decant" {
		t.Errorf("application_name = %q, want decant", cfg.RuntimeParams["application_name"])
	}
	if cfg.ConnectTimeout != 3*time.Second {
		t.Errorf("connect timeout %s, want the DSN's 3s", cfg.ConnectTimeout)
	}
}

func TestParseDSNErrors(t *testing.T) {
	for dsn, want := range map[string]string{
		"":                                   "empty DSN",
		"mysql://u:p@h/db":                   `DSN scheme "mysql" is not postgres://`,
		"postgres://u:hunter2@h:notaport/db": "invalid DSN",
		"postgresql://u:hunter2@h/db?sslmode=nope": "invalid DSN",
	} {
		_, err := ParseDSN(dsn)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDSN(%q) = %v, want an error containing %q", dsn, err, want)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
			t.Errorf("ParseDSN(%q) error %q leaks the password or spans lines", dsn, err)
		}
	}
}

func TestReplicationConfig(t *testing.T) {
	cfg, err := ReplicationConfig("postgres://u@h/db")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RuntimeParams["replication"] != "database" || cfg.RuntimeParams["TimeZone"] != "UTC" {
		t.Errorf("replication config params %v", cfg.RuntimeParams)
	}
	if _, err := ReplicationConfig("mysql://u@h/db"); err == nil {
		t.Error("a mysql:// DSN makes a replication config")
	}
}

func TestConnectAsNamesRole(t *testing.T) {
	_, err := ConnectAs(t.Context(), "target", "postgres://u:hunter2@h:x/db")
	if err == nil || !strings.HasPrefix(err.Error(), "target: invalid DSN") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("ConnectAs with a bad DSN = %v, want a target: invalid DSN error without the password", err)
	}
}

// TestMultiHostDSN: a DSN listing several hosts keeps them all, in order,
// with target_session_attrs' check, for replication and SQL sessions
// alike; a connect that finds none names every host it tried.
func TestMultiHostDSN(t *testing.T) {
	dsn := "postgres://u@127.0.0.1:1,127.0.0.1:2/db?sslmode=disable&target_session_attrs=read-write"
	for _, parse := range []func(string) (*pgconn.Config, error){ParseDSN, ReplicationConfig} {
		cfg, err := parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if got := Hosts(cfg); got != "127.0.0.1:1,127.0.0.1:2" {
			t.Errorf("hosts %q, want both in order", got)
		}
		if cfg.ValidateConnect == nil {
			t.Error("target_session_attrs=read-write sets no check of the session")
		}
	}
	if got := Hosts(mustParse(t, "postgres://u@h:5/db")); got != "h:5" {
		t.Errorf("hosts of sslmode=prefer (two fallbacks for one server) %q, want h:5", got)
	}
	_, err := ConnectReplication(t.Context(), dsn)
	if err == nil || !strings.Contains(err.Error(), "connect to source 127.0.0.1:1,127.0.0.1:2 for replication") {
		t.Errorf("replication connect to two closed ports: %v", err)
	}
	_, err = Connect(t.Context(), dsn)
	if err == nil || !strings.Contains(err.Error(), "connect to source 127.0.0.1:1,127.0.0.1:2:") {
		t.Errorf("connect to two closed ports: %v", err)
	}
}

func mustParse(t *testing.T, dsn string) *pgconn.Config {
	t.Helper()
	cfg, err := ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
