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
	// Unique lists the unique constraints and indexes (the primary key
	// among them) that are checked at once, on plain columns, for every
	// row: column names.
	Unique [][]string
	// OtherUnique: the table has a uniqueness the target checks otherwise
	// (a partial, expression or deferrable unique index, an exclusion
	// constraint).
	OtherUnique bool
	// Triggers: triggers or rules fire for replicated rows (on PostgreSQL
	// those enabled ALWAYS or REPLICA, and rewrite rules; on MySQL any).
	Triggers bool
}

// TargetColumn is one column of a TargetTable.
type TargetColumn struct {
	Name      string
	Generated bool // computed by the target; never written
	// IdentityAlways marks GENERATED ALWAYS AS IDENTITY: INSERT must say
	// OVERRIDING SYSTEM VALUE, and UPDATE may not set it.
	IdentityAlways bool
	// Type is the column's type as a cast spells it, with its modifier
	// ("numeric(12,2)", "character(5)", "mood[]"), so that an old value cast
	// to it is coerced as an inserted one was; PostgreSQL targets only.
	Type string
	// Compare is how a whole-row match compares the column with an old
	// value (PostgreSQL targets). CompareEqual also says that equal values
	// are identical, which compaction asks of key columns (NetMode); MySQL
	// targets set it where that holds.
	Compare Compare
}

// Compare is how a PostgreSQL target compares a column with the old value
// the source sent (the type's output text) when it finds a row by its
// whole old image. The type's own equality lets the planner use any index
// on the column; but equality may hold between values that are not the
// same (1.0 and 1.00, '1 day' and '24 hours', -0 and 0), and some types have
// none (point, box, json, xml), so those compare their output text, which
// is what the source sent.
type Compare uint8

const (
	// CompareText compares output text only: the type has no equality.
	CompareText Compare = iota
	// CompareEqualText uses the type's equality to find candidates and
	// output text to tell equal but different values apart.
	CompareEqualText
	// CompareEqual uses the type's equality alone: equal values are
	// identical (the btree operator class says so: equalimage).
	CompareEqual
)

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
	// Targets holds, by source column, the target column it is written to
	// (the zero TargetColumn, named "", for a column left out); Cols lists
	// the written ones in source order.
	Targets []TargetColumn
	Cols    []int
	// Key lists the columns that identify a row: the source's replica
	// identity key, or with replica identity FULL the target's primary key
	// when every column of it is written (nil otherwise).
	Key []int
	// WholeRow (replica identity FULL) finds a row by all its written old
	// values, never by Key alone, and changes one matching row at a time,
	// so identical duplicates are handled one by one. A target key is no
	// proof of identity here: it may be deferrable, and so not unique in
	// the middle of a transaction that swaps two keys, or be a key the
	// source does not have.
	WholeRow bool
	// Fixed lists the columns the target keeps as GENERATED ALWAYS AS
	// IDENTITY. UPDATE leaves them out of SET and instead requires the row
	// to hold the new value already, so a source UPDATE that did change one
	// stops with "no row matches" rather than diverging.
	Fixed []int
	// Generated names the target columns the target computes itself; the
	// source's values for them are not written.
	Generated []string
	// Net is how freely the table's changes may be gathered (NetMode).
	Net NetMode
}

// NewPlan matches a relation against the target table, renaming and
// leaving out columns as rules say. Every written column must exist on the
// target. A column the target generates itself is never written nor used
// to find a row (Generated lists them); no column that identifies rows may
// be left out or generated.
func NewPlan(rel *source.Relation, tgt TargetTable, rules ColumnRules) (*Plan, error) {
	p := &Plan{Rel: rel, Target: tgt.Name, Partitioned: tgt.Partitioned,
		Targets: make([]TargetColumn, len(rel.Columns))}
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
		p.Targets[i] = tc
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
			if p.Targets[i].Name == "" {
				return nil, fmt.Errorf("column %s identifies rows of source table %s and cannot be excluded or generated on the target", c.Name, rel.Table())
			}
			p.Key = append(p.Key, i)
		}
	case source.IdentityFull:
		p.Key = p.indexesOf(tgt.PrimaryKey)
	}
	p.WholeRow = len(p.Key) == 0 || rel.Identity == source.IdentityFull
	p.Net = netMode(p, tgt)
	return p, nil
}

// indexesOf returns the source columns written to the named target
// columns, or nil unless every name is found.
func (p *Plan) indexesOf(names []string) []int {
	var idx []int
	for _, name := range names {
		i := slices.IndexFunc(p.Targets, func(c TargetColumn) bool { return c.Name == name })
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

// Match is how one UPDATE or DELETE finds its row: by the plan's Key, or
// (Whole) by every written column's old value, Null marking, by source
// column, the old values that are NULL (only where a dialect asks for it;
// see ShapeRenderers.Nulls).
type Match struct {
	Whole bool
	Null  []bool
}

// MatchOf says how change c finds its row: by the whole old row when the
// plan says so and c carries one; by Key otherwise. A source that names no
// replica identity may send no old row at all (GaussDB, for an UPDATE that
// kept its key); its relations are FULL, and the target's primary key is
// then the only way to the row.
func (p *Plan) MatchOf(c *source.Change) Match {
	return Match{Whole: p.WholeRow && (c.Old != nil || len(p.Key) == 0)}
}

// WhereCols lists the columns whose old values find a row: the key, or
// every written column for a whole-row match.
func (p *Plan) WhereCols(m Match) []int {
	if m.Whole {
		return p.Cols
	}
	return p.Key
}

// Shapes hands out a plan's UPDATE and DELETE statements by shape,
// rendering each shape once: which columns an UPDATE sets (every written
// column but unchanged TOAST values and Fixed columns), whether the row is
// found by key or by the whole old row, and, when the dialect asks for it
// (ShapeRenderers.Nulls), which old values of a whole-row match are NULL,
// for a dialect that must say "IS NULL" for them rather than compare with
// a parameter.
type Shapes struct {
	plan  *Plan
	r     ShapeRenderers
	set   []bool
	null  []bool
	key   []byte
	cache map[string]string
}

// ShapeRenderers are a dialect's renderers for one plan; set and Match.Null
// are indexed by source column.
type ShapeRenderers struct {
	Update func(set []bool, m Match) string
	Delete func(m Match) string
	Nulls  bool
}

// NewShapes returns the statement cache for a plan and a dialect.
func (p *Plan) NewShapes(r ShapeRenderers) *Shapes {
	n := len(p.Rel.Columns)
	return &Shapes{plan: p, r: r, set: make([]bool, n), null: make([]bool, n), key: make([]byte, n+2), cache: map[string]string{}}
}

// Update returns the UPDATE for c, the columns it sets and how it finds
// the row. The slices are reused by the next call.
func (s *Shapes) Update(c *source.Change) (sql string, set []bool, m Match) {
	for i, v := range c.New {
		s.set[i] = v.Kind != source.ValueUnchanged && s.plan.Targets[i].Name != ""
	}
	for _, i := range s.plan.Fixed {
		s.set[i] = false
	}
	m = s.match(c)
	return s.lookup('u', m, func() string { return s.r.Update(s.set, m) }), s.set, m
}

// Delete returns the DELETE for c and how it finds the row. The slice in
// Match is reused by the next call.
func (s *Shapes) Delete(c *source.Change) (sql string, m Match) {
	clear(s.set)
	m = s.match(c)
	return s.lookup('d', m, func() string { return s.r.Delete(m) }), m
}

func (s *Shapes) match(c *source.Change) Match {
	m := s.plan.MatchOf(c)
	clear(s.null)
	m.Null = s.null
	if s.r.Nulls && m.Whole && c.Old != nil {
		for _, i := range s.plan.Cols {
			s.null[i] = c.Old[i].Kind == source.ValueNull
		}
	}
	return m
}

func (s *Shapes) lookup(op byte, m Match, render func() string) string {
	s.key[0], s.key[1] = op, 'k'
	if m.Whole {
		s.key[1] = 'w'
	}
	for i := range s.set {
		s.key[i+2] = '0'
		if s.set[i] {
			s.key[i+2] |= 1
		}
		if s.null[i] {
			s.key[i+2] |= 2
		}
	}
	sql, ok := s.cache[string(s.key)]
	if !ok {
		sql = render()
		s.cache[string(s.key)] = sql
	}
	return sql
}
