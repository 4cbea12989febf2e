// Package mapping decides what a source change becomes on the target:
// which target table a relation lands in, which columns are written and
// which identify a row. It is pure: no I/O. Target writers (apply/...)
// describe the target table they found, and mapping matches it against
// the relation the source announced.
package mapping

import (
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/source"
)

// TargetTable is a target table as its catalog describes it.
type TargetTable struct {
	Name        source.TableName
	Columns     []TargetColumn
	PrimaryKey  []string // column names, in key order
	Partitioned bool
}

// TargetColumn is one column of a TargetTable.
type TargetColumn struct {
	Name      string
	Generated bool // computed by the target; never written
	// IdentityAlways marks GENERATED ALWAYS AS IDENTITY: INSERT must say
	// OVERRIDING SYSTEM VALUE, and UPDATE may not set it.
	IdentityAlways bool
}

func (t *TargetTable) column(name string) (TargetColumn, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return TargetColumn{}, false
}

// Plan is how rows of one source relation are written to one target table.
// It is compiled once per relation shape and reused for every row. Column
// indexes are the source relation's.
type Plan struct {
	Rel         *source.Relation
	Target      source.TableName
	Partitioned bool
	// Names holds the target column of each source column, "" for a column
	// left out; Cols lists the written ones in source order.
	Names []string
	Cols  []int
	// Key lists the columns that identify a row in UPDATE and DELETE. With
	// WholeRow set there is no key: a row is found by all its written old
	// values (NULL-safe), and one matching row is changed at a time, so
	// identical duplicates are handled one by one.
	Key      []int
	WholeRow bool
	// Fixed lists the columns the target keeps as GENERATED ALWAYS AS
	// IDENTITY. UPDATE leaves them out of SET and instead requires the row
	// to hold the new value already, so a source UPDATE that did change one
	// stops with "no row matches" rather than diverging.
	Fixed []int
	// Generated names the target columns the target computes itself; the
	// source's values for them are not written.
	Generated []string
}

// NewPlan matches a relation against the target table, renaming and
// leaving out columns as rules say. Every written column must exist on the
// target. A column the target generates itself is never written nor used
// to find a row (Generated lists them); no column that identifies rows may
// be left out or generated.
func NewPlan(rel *source.Relation, tgt TargetTable, rules ColumnRules) (*Plan, error) {
	p := &Plan{Rel: rel, Target: tgt.Name, Partitioned: tgt.Partitioned, Names: make([]string, len(rel.Columns))}
	var missing []string
	for i, c := range rel.Columns {
		if slices.Contains(rules.Exclude, c.Name) {
			continue
		}
		name := c.Name
		if to, ok := rules.Rename[c.Name]; ok {
			name = to
		}
		tc, ok := tgt.column(name)
		switch {
		case !ok:
			missing = append(missing, name)
		case tc.Generated:
			p.Generated = append(p.Generated, name)
			continue
		case tc.IdentityAlways:
			p.Fixed = append(p.Fixed, i)
		}
		p.Names[i] = name
		p.Cols = append(p.Cols, i)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("target table %s lacks column(s) %s of source table %s; add them on the target or exclude them in the config file",
			targetText(tgt.Name), strings.Join(missing, ", "), rel.Table())
	}
	switch rel.Identity {
	case source.IdentityDefault, source.IdentityIndex:
		for i, c := range rel.Columns {
			if !c.Key {
				continue
			}
			if p.Names[i] == "" {
				return nil, fmt.Errorf("column %s identifies rows of source table %s and cannot be excluded or generated on the target", c.Name, rel.Table())
			}
			p.Key = append(p.Key, i)
		}
	case source.IdentityFull:
		// Like PostgreSQL's own apply worker: with a full old row, use the
		// target's primary key when it has one, else match the whole row.
		p.Key = p.indexesOf(tgt.PrimaryKey)
	}
	if len(p.Key) == 0 {
		p.WholeRow = true
	}
	return p, nil
}

// indexesOf returns the source columns written to the named target
// columns, or nil unless every name is found.
func (p *Plan) indexesOf(names []string) []int {
	var idx []int
	for _, name := range names {
		i := slices.Index(p.Names, name)
		if i < 0 {
			return nil
		}
		idx = append(idx, i)
	}
	return idx
}

// Identifies reports whether UPDATE and DELETE can find rows at all: a
// relation with replica identity NOTHING sends no old values.
func (p *Plan) Identifies() bool { return p.Rel.Identity != source.IdentityNothing }

// WhereCols lists the columns whose old values find a row: the key, or
// every written column when there is none.
func (p *Plan) WhereCols() []int {
	if p.WholeRow {
		return p.Cols
	}
	return p.Key
}

// UpdateShapes hands out the UPDATE statement for each set of columns an
// update writes (all written columns but unchanged TOAST values and Fixed
// columns), rendering each shape once.
type UpdateShapes struct {
	plan   *Plan
	render func(set []bool) string
	set    []bool
	key    []byte
	cache  map[string]string
}

// NewUpdateShapes returns the cache for a plan and a dialect's renderer.
func (p *Plan) NewUpdateShapes(render func(set []bool) string) *UpdateShapes {
	n := len(p.Rel.Columns)
	return &UpdateShapes{plan: p, render: render, set: make([]bool, n), key: make([]byte, n), cache: map[string]string{}}
}

// For returns the statement for a new row and the columns it sets. The
// slice is reused by the next call.
func (u *UpdateShapes) For(row []source.Value) (sql string, set []bool) {
	for i, v := range row {
		u.set[i] = v.Kind != source.ValueUnchanged && u.plan.Names[i] != ""
	}
	for _, i := range u.plan.Fixed {
		u.set[i] = false
	}
	for i, s := range u.set {
		u.key[i] = '0'
		if s {
			u.key[i] = '1'
		}
	}
	sql, ok := u.cache[string(u.key)]
	if !ok {
		sql = u.render(u.set)
		u.cache[string(u.key)] = sql
	}
	return sql, u.set
}
