package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

// execute runs decant with args and returns its exit code and error
// text. Nothing listens on the DSNs' port: a command that got as far as
// connecting fails with exit 1, not as a usage error.
func execute(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot()
	root.SetArgs(append(args, "--source", "postgres://u@127.0.0.1:1/db?connect_timeout=1", "--target", "postgres://u@127.0.0.1:1/db?connect_timeout=1"))
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.ExecuteContext(context.Background())
	if err == nil {
		return 0, ""
	}
	return report(err), err.Error()
}

// Flags that would do nothing, or do harm later, are usage errors before
// anything connects.
func TestUsageBeforeConnecting(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"init", "--jobs", "0"}, "--jobs is for the initial copy: add --copy"},
		{[]string{"init", "--split-size", "foo"}, "--split-size is for the initial copy: add --copy"},
		{[]string{"init", "--copy", "--jobs", "0"}, "invalid --jobs 0"},
		{[]string{"init", "--copy", "--split-size", "foo"}, `invalid --split-size "foo"`},
		{[]string{"copy", "--split-size", "1KiB"}, `invalid --split-size "1KiB"`},
		{[]string{"migrate", "--jobs", "-1"}, "invalid --jobs -1"},
		{[]string{"run", "--tables", "public.a"}, "run --tables is for GaussDB and openGauss sources"},
		{[]string{"verify", "--on-unsupported-ddl", "skip"}, "unknown flag: --on-unsupported-ddl"},
		{[]string{"cutover", "--on-unsupported-ddl", "skip"}, "unknown flag: --on-unsupported-ddl"},
		{[]string{"init", "--on-unsupported-ddl", "skip"}, "unknown flag: --on-unsupported-ddl"},
		{[]string{"verify", "--jobs", "0"}, "--jobs, --span-rows and --max-keys must be at least 1"},
		{[]string{"init", "--append-only", "pgbench_history"}, `--append-only: invalid table pattern "pgbench_history"`},
		{[]string{"migrate", "--append-only", "public.a,history"}, `--append-only: invalid table pattern "history"`},
		{[]string{"run", "--append-only", "public.a"}, "unknown flag: --append-only"},
		{[]string{"init", "--pipeline", "shop_append_only"}, "is the append-only publication of pipeline shop"},
	} {
		code, msg := execute(t, c.args...)
		if code != 2 || !strings.Contains(msg, c.want) {
			t.Errorf("decant %s: exit %d, %q; want exit 2 and %q", strings.Join(c.args, " "), code, msg, c.want)
		}
	}
	// A GaussDB slot decodes every change of its tables: no append-only.
	root := newRoot()
	root.SetArgs([]string{"init", "--source", "gaussdb://u@127.0.0.1:1/db", "--target", "postgres://u@127.0.0.1:1/db", "--append-only", "public.a"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.ExecuteContext(context.Background()); report(err) != 2 || !strings.Contains(err.Error(), "--append-only is for PostgreSQL sources") {
		t.Errorf("init --append-only on a GaussDB source: %v", err)
	}
	// Valid copy flags get as far as connecting.
	if code, msg := execute(t, "init", "--copy", "--jobs", "2", "--split-size", "1MiB"); code != 1 {
		t.Errorf("init --copy with valid flags: exit %d, %q; want a connection failure", code, msg)
	}
}

// The commands that apply the stream take --on-unsupported-ddl; --target
// says which DSNs it takes.
func TestFlagHelp(t *testing.T) {
	root := newRoot()
	for _, name := range []string{"run", "migrate"} {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Flags().Lookup("on-unsupported-ddl") == nil {
			t.Errorf("%s lacks --on-unsupported-ddl (%v)", name, err)
		}
	}
	cmd, _, _ := root.Find([]string{"init"})
	if usage := cmd.Flags().Lookup("target").Usage; !strings.Contains(usage, "mysql://") || !strings.Contains(usage, "postgres://") {
		t.Errorf("--target help: %s", usage)
	}
}
