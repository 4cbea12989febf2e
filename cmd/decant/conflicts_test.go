package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// TestConflictSettings: --on-conflict for every table, the file's
// conflicts: per source table over it, routed by --map to the target
// table the writer looks up; mistakes are usage errors naming the line
// or the flag.
func TestConflictSettings(t *testing.T) {
	load := func(file string, args ...string) (config, error) {
		t.Helper()
		cmd := &cobra.Command{Use: "run"}
		var f flags
		addFlags(cmd, &f, true)
		addMappingFlags(cmd, &f)
		addConflictFlags(cmd, &f)
		if file != "" {
			path := filepath.Join(t.TempDir(), "decant.yaml")
			if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--config", path)
		}
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return f.load(cmd)
	}
	pg := []string{"--source", "postgres://u@h/src", "--target", "postgres://u@h/tgt"}
	c, err := load("conflicts:\n  public.items: {insert_exists: apply, delete_missing: error}\n",
		append(pg, "--on-conflict", "delete_missing=skip", "--on-conflict", "update_missing=skip", "--map", "public.items=shop.items")...)
	if err != nil {
		t.Fatal(err)
	}
	items := c.conflicts.Of(source.TableName{Schema: "shop", Name: "items"})
	if items[apply.InsertExists] != apply.PolicyApply || items[apply.DeleteMissing] != apply.PolicyError || items[apply.UpdateMissing] != apply.PolicySkip {
		t.Errorf("shop.items (routed from public.items): %v", items)
	}
	other := c.conflicts.Of(source.TableName{Schema: "public", Name: "other"})
	if other[apply.DeleteMissing] != apply.PolicySkip || other[apply.InsertExists] != apply.PolicyError {
		t.Errorf("public.other: %v", other)
	}
	if c, err := load("", pg...); err != nil || c.conflicts.Any() {
		t.Errorf("no policies: %v, %v", c.conflicts, err)
	}
	for _, tc := range []struct {
		file string
		args []string
		want string
	}{
		{"", append(pg, "--on-conflict", "insert_exists=maybe"), `--on-conflict: unknown conflict policy "maybe"`},
		{"", append(pg, "--on-conflict", "update_differs=apply"), "update_differs takes error or skip"},
		{"conflicts:\n  public.items: {delete_missing: apply}\n", pg, "line 2: conflicts public.items: conflict policy apply is for"},
		{"conflicts:\n  items: {delete_missing: skip}\n", pg, `conflicts: "items" is not schema.table`},
		{"conflicts: [a]\n", pg, "line 1: conflicts: want schema.table"},
	} {
		_, err := load(tc.file, tc.args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v: %v, want a usage error with %q", tc.file, tc.args, err, tc.want)
		}
	}
}
