package pgsession

import (
	"strings"
	"testing"
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

func TestRedactDSN(t *testing.T) {
	got := redactDSN(`cannot parse "postgres://u:hunter2@h/db": bad`)
	if want := `cannot parse "postgres://***@h/db": bad`; got != want {
		t.Errorf("redactDSN = %q, want %q", got, want)
	}
	if got := redactDSN("no url here"); got != "no url here" {
		t.Errorf("redactDSN changed %q", got)
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
