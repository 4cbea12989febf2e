package source

import (
	"fmt"
	"slices"
	"strings"
)

// TableName is a schema-qualified table name, unquoted.
type TableName struct {
	Schema string
	Name   string
}

func (t TableName) String() string {
	if t.Schema == "" {
		return t.Name // a MySQL table in the connection's database
	}
	return t.Schema + "." + t.Name
}

// SystemSchema reports whether a schema belongs to the database itself (or
// to decant) and is never replicated.
func SystemSchema(schema string) bool {
	return schema == "pg_catalog" || schema == "information_schema" ||
		strings.HasPrefix(schema, "pg_toast") || strings.HasPrefix(schema, "pg_temp") ||
		schema == "decant"
}

// TableFilter selects tables by schema.table patterns in which '*' matches
// any run of characters: the syntax of GaussDB's white-table-list, e.g.
// "public.*,sales.orders,*.audit". The empty filter selects every table
// outside system schemas; no filter ever selects a system schema.
type TableFilter struct {
	patterns []tablePattern
}

type tablePattern struct{ schema, name string }

// ParseTableFilter parses a comma-separated pattern list.
func ParseTableFilter(list string) (TableFilter, error) {
	var f TableFilter
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		schema, name, ok := strings.Cut(item, ".")
		if !ok || schema == "" || name == "" || strings.Contains(name, ".") {
			return TableFilter{}, fmt.Errorf("invalid table pattern %q: want schema.table, where '*' matches any run of characters (e.g. public.*)", item)
		}
		f.patterns = append(f.patterns, tablePattern{schema, name})
	}
	return f, nil
}

// String gives the filter back in its list form ("" for every table).
func (f TableFilter) String() string {
	parts := make([]string, len(f.patterns))
	for i, p := range f.patterns {
		parts[i] = p.schema + "." + p.name
	}
	return strings.Join(parts, ",")
}

// Empty reports whether the filter has no pattern (and so selects every
// table outside system schemas). A list where "none" is the natural
// default, such as init's --append-only, checks it first.
func (f TableFilter) Empty() bool { return len(f.patterns) == 0 }

// Unmatched lists, in the filter's order, the patterns that match none of
// names: a pattern that selects nothing is most often a typo.
func (f TableFilter) Unmatched(names []TableName) []string {
	var out []string
	for _, p := range f.patterns {
		if !slices.ContainsFunc(names, func(t TableName) bool {
			return !SystemSchema(t.Schema) && wildcard(p.schema, t.Schema) && wildcard(p.name, t.Name)
		}) {
			out = append(out, p.schema+"."+p.name)
		}
	}
	return out
}

// Match reports whether the filter selects schema.name.
func (f TableFilter) Match(schema, name string) bool {
	if SystemSchema(schema) {
		return false
	}
	if len(f.patterns) == 0 {
		return true
	}
	for _, p := range f.patterns {
		if wildcard(p.schema, schema) && wildcard(p.name, name) {
			return true
		}
	}
	return false
}

// wildcard matches s against a pattern where '*' stands for any run of
// characters (possibly empty) and every other character stands for itself.
func wildcard(pattern, s string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == s
	}
	if !strings.HasPrefix(s, pattern[:star]) {
		return false
	}
	s = s[star:]
	rest := pattern[star+1:]
	if rest == "" {
		return true
	}
	for i := 0; i <= len(s); i++ {
		if wildcard(rest, s[i:]) {
			return true
		}
	}
	return false
}
