package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/decant/decant/source"
)

// loadFor parses args as a command with the shared flags would, and loads
// the configuration.
func loadFor(t *testing.T, args ...string) (config, error) {
	t.Helper()
	cmd := &cobra.Command{Use: "test"}
	var f flags
	addFlags(cmd, &f, true)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return f.load(cmd)
}

func TestConfigPrecedence(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "decant.yaml")
	if err := os.WriteFile(file, []byte("source: postgres://file@h/src\ntarget: postgres://file@h/tgt\npipeline: fromfile\ntables:\n  - public.*\n  - sales.orders\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	c, err := loadFor(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "postgres://file@h/src" || c.Pipeline != "fromfile" || string(c.Tables) != "public.*,sales.orders" {
		t.Errorf("file only: %+v", c)
	}
	if !c.filter.Match("sales", "orders") || c.filter.Match("sales", "other") {
		t.Errorf("tables from file not applied: %s", c.filter)
	}

	t.Setenv("DECANT_SOURCE", "postgres://env@h/src")
	t.Setenv("DECANT_PIPELINE", "fromenv")
	c, err = loadFor(t, "--config", file)
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "postgres://env@h/src" || c.Pipeline != "fromenv" || c.Target != "postgres://file@h/tgt" {
		t.Errorf("env over file: %+v", c)
	}

	c, err = loadFor(t, "--config", file, "--source", "postgres://flag@h/src", "--pipeline", "fromflag")
	if err != nil {
		t.Fatal(err)
	}
	if c.Source != "postgres://flag@h/src" || c.Pipeline != "fromflag" || c.Target != "postgres://file@h/tgt" {
		t.Errorf("flags over env over file: %+v", c)
	}
}

func TestConfigErrorsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("source: postgres://h/db\ntarget: postgres://h/db\nsorce: typo\n"), 0o600)
	for name, args := range map[string][]string{
		"unknown key":   {"--config", bad},
		"missing file":  {"--config", filepath.Join(dir, "none.yaml")},
		"no target":     {"--source", "postgres://h/db"},
		"bad pipeline":  {"--source", "postgres://h/db", "--target", "postgres://h/db", "--pipeline", "9lives"},
		"bad scheme":    {"--source", "http://h/db", "--target", "postgres://h/db"},
		"bad log level": {"--source", "postgres://h/db", "--target", "postgres://h/db", "--log-level", "loud"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadFor(t, args...)
			var u usageError
			if !errors.As(err, &u) {
				t.Fatalf("got %v, want a usage error", err)
			}
			if code := report(err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
		})
	}
	if code := report(errors.New("runtime")); code != 1 {
		t.Errorf("runtime error exit code %d, want 1", code)
	}
	full := fmt.Errorf("stream: %w", &source.SpillFullError{Dir: "/spill", Err: syscall.ENOSPC})
	if code := report(full); code != 3 {
		t.Errorf("full spill directory exit code %d, want 3", code)
	}
}

// TestSynchronousCommit: off by default on a PostgreSQL target, on on a
// MySQL one, where asking for off is a usage error; the file's key is
// synchronous_commit, and the flag beats it.
func TestSynchronousCommit(t *testing.T) {
	load := func(args ...string) (config, error) {
		t.Helper()
		cmd := &cobra.Command{Use: "run"}
		var f flags
		addFlags(cmd, &f, true)
		addStreamFlags(cmd, &f)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return f.load(cmd)
	}
	pgArgs := []string{"--source", "postgres://u@h/src", "--target", "postgres://u@h/tgt"}
	myArgs := []string{"--source", "postgres://u@h/src", "--target", "mysql://u@h:3306/tgt"}
	for _, c := range []struct {
		args []string
		want string // "" for a usage error
	}{
		{pgArgs, "off"},
		{append(pgArgs, "--synchronous-commit", "on"), "on"},
		{append(pgArgs, "--synchronous-commit", "off"), "off"},
		{append(pgArgs, "--synchronous-commit", "local"), ""},
		{myArgs, "on"},
		{append(myArgs, "--synchronous-commit", "on"), "on"},
		{append(myArgs, "--synchronous-commit", "off"), ""},
	} {
		cfg, err := load(c.args...)
		switch {
		case c.want == "" && !errors.As(err, new(usageError)):
			t.Errorf("%v: %v, want a usage error", c.args, err)
		case c.want != "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && cfg.SynchronousCommit != c.want:
			t.Errorf("%v: synchronous commit %q, want %q", c.args, cfg.SynchronousCommit, c.want)
		case c.want != "" && cfg.pgConfig(nil).AsyncCommit != (c.want == "off" && !cfg.mysqlTarget()):
			t.Errorf("%v: the PostgreSQL writer's AsyncCommit is %v", c.args, cfg.pgConfig(nil).AsyncCommit)
		}
	}
	file := filepath.Join(t.TempDir(), "decant.yaml")
	if err := os.WriteFile(file, []byte("synchronous_commit: \"on\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := load(append(pgArgs, "--config", file)...); err != nil || cfg.SynchronousCommit != "on" {
		t.Errorf("from the file: %q, %v", cfg.SynchronousCommit, err)
	}
	if cfg, err := load(append(pgArgs, "--config", file, "--synchronous-commit", "off")...); err != nil || cfg.SynchronousCommit != "off" {
		t.Errorf("flag over file: %q, %v", cfg.SynchronousCommit, err)
	}
}
