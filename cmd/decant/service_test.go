package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/source/gauss"
	"github.com/decant/decant/source/pgsession"
)

// A password file's contents reach the DSN of a MySQL target or a
// GaussDB source, less one trailing newline, and no error quotes them.
func TestPasswordFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one, two, empty := write("one", "s3cr:t@/x\n"), write("two", "pw\n\n"), write("empty", "\n")
	pg, my, gs := "postgres://u@h/db", "mysql://apply@h:3306/db", "gaussdb://repl@h:8000/db"
	c, err := loadFor(t, "--source", gs, "--target", my, "--source-password-file", two, "--target-password-file", one)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := mysql.ParseDSN(c.Target); err != nil || cfg.Passwd != "s3cr:t@/x" {
		t.Errorf("target password: %v", err)
	}
	if cfg, err := gauss.ParseDSN(c.Source); err != nil || cfg.Password != "pw\n" {
		t.Errorf("source password: %v (only one newline is dropped)", err)
	}
	t.Setenv("DECANT_TARGET_PASSWORD_FILE", one)
	if c, err := loadFor(t, "--source", gs, "--target", "apply@tcp(h:3306)/db"); err != nil || !strings.Contains(c.Target, "s3cr:t@/x") {
		t.Errorf("password file from the environment, driver DSN form: %v", err)
	}
	for name, args := range map[string][]string{
		"postgres target":   {"--source", gs, "--target", pg},
		"postgres source":   {"--source", pg, "--target", my, "--source-password-file", one},
		"empty file":        {"--source", gs, "--target", my, "--source-password-file", empty},
		"missing file":      {"--source", gs, "--target", my, "--source-password-file", filepath.Join(dir, "none")},
		"password in DSN":   {"--source", gs, "--target", "mysql://apply:old@h:3306/db"},
		"no user in target": {"--source", gs, "--target", "mysql://h:3306/db"},
	} {
		_, err := loadFor(t, args...)
		if !errors.As(err, new(usageError)) {
			t.Errorf("%s: %v, want a usage error", name, err)
		} else if strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "old") {
			t.Errorf("%s: the error quotes a password: %v", name, err)
		}
	}
}

// PostgreSQL DSNs take the password from PGPASSWORD or a passfile
// (PGPASSFILE, the passfile parameter, ~/.pgpass) through pgx, as libpq
// does: decant needs no flag for them.
func TestPostgresPasswordFromEnvironment(t *testing.T) {
	passfile := filepath.Join(t.TempDir(), "pgpass")
	if err := os.WriteFile(passfile, []byte("db.example:5432:shop:repl:fromfile\n*:*:*:other:wildcard\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSWORD", "")
	os.Unsetenv("PGPASSWORD")
	t.Setenv("PGPASSFILE", passfile)
	for dsn, want := range map[string]string{
		"postgres://repl@db.example:5432/shop":         "fromfile",
		"host=db.example user=repl dbname=shop":        "fromfile",
		"postgres://other@else.example/any":            "wildcard",
		"postgres://repl:inline@db.example:5432/shop":  "inline",
		"postgres://nobody@db.example:5432/shop":       "",
		"postgres://repl@db.example:5433/shop":         "",
		"postgres://repl@db.example/shop?passfile=/no": "",
	} {
		cfg, err := pgsession.ParseDSN(dsn)
		if err != nil || cfg.Password != want {
			t.Errorf("%s: password %q, %v; want %q", dsn, cfg.Password, err, want)
		}
	}
	t.Setenv("PGPASSWORD", "fromenv")
	if cfg, err := pgsession.ParseDSN("postgres://repl@db.example:5432/shop"); err != nil || cfg.Password != "fromenv" {
		t.Errorf("PGPASSWORD: %q, %v; it comes before the passfile", cfg.Password, err)
	}
}

// Under --log-json (or DECANT_LOG_JSON) the final error is one JSON log
// record with the keys of the others; otherwise one line of text.
func TestFinalErrorFormat(t *testing.T) {
	final := func(args ...string) string {
		t.Helper()
		root := newRoot()
		root.SetArgs(args)
		cmd, err := root.ExecuteContextC(context.Background())
		if err == nil {
			t.Fatalf("%v: no error", args)
		}
		var buf bytes.Buffer
		printError(&buf, asLogged(cmd, err), strings.ReplaceAll(err.Error(), "\n", " "))
		return buf.String()
	}
	bad := []string{"status", "--pipeline", "BAD", "--source", "postgres://h/db", "--target", "postgres://h/db"}
	if out := final(bad...); !strings.HasPrefix(out, `decant: error: invalid --pipeline "BAD"`) || strings.Count(out, "\n") != 1 {
		t.Errorf("text: %q", out)
	}
	check := func(name, out string) {
		t.Helper()
		var rec map[string]any
		if err := json.Unmarshal([]byte(out), &rec); err != nil || strings.Count(out, "\n") != 1 {
			t.Fatalf("%s: not one JSON line: %q (%v)", name, out, err)
		}
		if rec["level"] != "ERROR" || rec["time"] == nil || !strings.Contains(rec["msg"].(string), "--pipeline") || len(rec) != 3 {
			t.Errorf("%s: %v", name, rec)
		}
	}
	check("--log-json", final(append(bad, "--log-json")...))
	t.Setenv("DECANT_LOG_JSON", "true")
	check("DECANT_LOG_JSON", final(bad...))
	// A broken config file still reports as JSON when the environment
	// asks for it.
	out := final("status", "--config", filepath.Join(t.TempDir(), "none.yaml"))
	if !strings.HasPrefix(out, "{") || !strings.Contains(out, "read config file") {
		t.Errorf("missing config file under DECANT_LOG_JSON: %q", out)
	}
}

func TestVersion(t *testing.T) {
	stamped := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.1.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"},
	}}).String()
	for _, want := range []string{"decant v0.1.0\n", "commit 0123abcd (modified)\n", "built  2026-01-02T03:04:05Z\n", "go     go1.99\n"} {
		if !strings.Contains(stamped, want) {
			t.Errorf("stamped build: %q lacks %q", stamped, want)
		}
	}
	bare := fromBuildInfo(&debug.BuildInfo{GoVersion: "go1.99"}).String()
	if bare != "decant (devel)\ncommit unknown\nbuilt  unknown\ngo     go1.99\n" {
		t.Errorf("go run build: %q", bare)
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil || out.String() != readVersion().String() {
			t.Errorf("decant %s: %q, %v", args[0], out.String(), err)
		}
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		root := newRoot()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"completion", shell})
		if err := root.Execute(); err != nil || !strings.Contains(out.String(), "decant") {
			t.Errorf("completion %s: %v, %d bytes", shell, err, out.Len())
		}
	}
}
