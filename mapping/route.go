package mapping

import (
	"fmt"
	"sort"
	"strings"

	"github.com/decant/decant/source"
)

// Rule routes the source tables that match a pattern to target tables,
// e.g. "sales.*=sales_*" or "public.orders=shop.orders". Each '*' in the
// source pattern matches any run of characters; the target's '*'s take
// those runs in order.
type Rule struct {
	from tablePat
	to   string
}

type tablePat struct{ schema, name string }

// ParseRule parses "schema.table=target" where target is "table" or
// "schema.table" (on MySQL, "database.table").
func ParseRule(spec string) (Rule, error) {
	from, to, ok := strings.Cut(spec, "=")
	from, to = strings.TrimSpace(from), strings.TrimSpace(to)
	schema, name, dotted := strings.Cut(from, ".")
	if !ok || !dotted || schema == "" || name == "" || to == "" || strings.Count(to, ".") > 1 {
		return Rule{}, fmt.Errorf("invalid --map %q: want schema.table=target or schema.table=schema.table, '*' as a wildcard (e.g. 'sales.*=sales_*')", spec)
	}
	if stars(to) > stars(from) {
		return Rule{}, fmt.Errorf("invalid --map %q: the target has more '*' than the source pattern", spec)
	}
	return Rule{from: tablePat{schema, name}, to: to}, nil
}

func stars(s string) int { return strings.Count(s, "*") }

// Router decides the target table of every source table.
type Router struct {
	rules []Rule
	flat  bool
}

// NewRouter returns a router trying rules in order. With flat set (MySQL
// targets, which have no schemas inside a database) the default target of
// schema.table is table in the target's own database, spelled with an empty
// Schema; otherwise (PostgreSQL) the default is the same schema.table.
func NewRouter(rules []Rule, flat bool) *Router { return &Router{rules: rules, flat: flat} }

// Route returns the target table for a source table.
func (r *Router) Route(t source.TableName) source.TableName {
	for _, rule := range r.rules {
		caps, ok := capture(rule.from.schema, t.Schema, nil)
		if ok {
			caps, ok = capture(rule.from.name, t.Name, caps)
		}
		if !ok {
			continue
		}
		to := rule.to
		for _, c := range caps {
			to = strings.Replace(to, "*", c, 1)
		}
		if schema, name, dotted := strings.Cut(to, "."); dotted {
			return source.TableName{Schema: schema, Name: name}
		}
		return r.fallback(t, to)
	}
	return r.fallback(t, t.Name)
}

func (r *Router) fallback(t source.TableName, name string) source.TableName {
	if r.flat {
		return source.TableName{Name: name}
	}
	return source.TableName{Schema: t.Schema, Name: name}
}

// CheckCollisions refuses two source tables that land in one target table,
// listing every such group.
func (r *Router) CheckCollisions(tables []source.TableName) error {
	by := map[source.TableName][]string{}
	for _, t := range tables {
		to := r.Route(t)
		by[to] = append(by[to], t.String())
	}
	var groups []string
	for to, from := range by {
		if len(from) > 1 {
			sort.Strings(from)
			groups = append(groups, fmt.Sprintf("%s all map to %s", strings.Join(from, " and "), targetText(to)))
		}
	}
	if len(groups) == 0 {
		return nil
	}
	sort.Strings(groups)
	return fmt.Errorf("table name collision on the target: %s; add --map rules to tell them apart (e.g. --map 'sales.*=sales_*')", strings.Join(groups, "; "))
}

func targetText(t source.TableName) string {
	if t.Schema == "" {
		return t.Name
	}
	return t.String()
}

// capture matches s against a pattern where '*' stands for any run of
// characters, appending what each '*' matched to caps.
func capture(pattern, s string, caps []string) ([]string, bool) {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return caps, pattern == s
	}
	if !strings.HasPrefix(s, pattern[:star]) {
		return nil, false
	}
	s, rest := s[star:], pattern[star+1:]
	for i := len(s); i >= 0; i-- { // longest first
		if out, ok := capture(rest, s[i:], append(caps, s[:i])); ok {
			return out, true
		}
	}
	return nil, false
}

// ColumnRules renames and leaves out columns of one source table.
type ColumnRules struct {
	Rename  map[string]string `yaml:"rename"`  // source name → target name
	Exclude []string          `yaml:"exclude"` // source columns not written
}

// TargetColumn is a source column's name on the target, after renames.
func (r ColumnRules) TargetColumn(column string) string {
	if to, ok := r.Rename[column]; ok {
		return to
	}
	return column
}
