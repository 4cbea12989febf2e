package main

import (
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// addConflictFlags adds --on-conflict (run, migrate: the commands that
// apply the stream).
func addConflictFlags(cmd *cobra.Command, f *flags) {
	cmd.Flags().StringArrayVar(&f.values.OnConflict, "on-conflict", nil,
		"what to do when a change finds the target otherwise than the source left it, repeatable: KIND=POLICY with KIND insert_exists, update_missing, delete_missing, update_differs or delete_differs and POLICY error (default), skip or apply; resolved conflicts go to decant.conflicts on the target")
}

// readConflicts reads conflicts: {schema.table: {KIND: POLICY}}, the
// per-table policies over --on-conflict's, by source table.
func (f *fileSettings) readConflicts(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return usagef("%s line %d: conflicts: want schema.table: {insert_exists: skip, ...}", f.path, n.Line)
	}
	f.conflicts = map[string][]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		table, rules := n.Content[i], n.Content[i+1]
		if rules.Kind != yaml.MappingNode {
			return usagef("%s line %d: conflicts %s: want {insert_exists: skip, ...}", f.path, rules.Line, table.Value)
		}
		for j := 0; j+1 < len(rules.Content); j += 2 {
			k, v := rules.Content[j], rules.Content[j+1]
			if v.Kind != yaml.ScalarNode {
				return usagef("%s line %d: conflicts %s %s: want error, skip or apply", f.path, v.Line, table.Value, k.Value)
			}
			if _, err := apply.ParseConflictRule(k.Value + "=" + v.Value); err != nil {
				return usagef("%s line %d: conflicts %s: %v", f.path, k.Line, table.Value, err)
			}
			f.conflicts[table.Value] = append(f.conflicts[table.Value], k.Value+"="+v.Value)
		}
	}
	return nil
}

// validateConflicts reads the policies of --on-conflict and the file's
// conflicts: section, which name source tables; the writers look them up
// by target table, as --map routes each.
func (c *config) validateConflicts() error {
	rules, err := parseConflictRules(c.OnConflict)
	if err != nil {
		return usagef("--on-conflict: %v", err)
	}
	c.conflicts = apply.ConflictPolicies{}
	c.conflicts.Set(source.TableName{}, rules)
	router := c.router()
	names := make([]string, 0, len(c.Conflicts))
	for name := range c.Conflicts {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		schema, table, ok := strings.Cut(name, ".")
		if !ok {
			return usagef("conflicts: %q is not schema.table", name)
		}
		rules, err := parseConflictRules(c.Conflicts[name])
		if err != nil {
			return usagef("conflicts %s: %v", name, err)
		}
		c.conflicts.Set(router.Route(source.TableName{Schema: schema, Name: table}), rules)
	}
	return nil
}

// parseConflictRules reads KIND=POLICY specs.
func parseConflictRules(specs []string) ([]apply.ConflictRule, error) {
	var rules []apply.ConflictRule
	for _, spec := range specs {
		r, err := apply.ParseConflictRule(spec)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}
