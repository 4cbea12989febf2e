// Package mapping decides what a source change becomes on the target:
// which target table a relation lands in, which columns are written and
// which identify a row. It is pure: no I/O. Target writers (apply/...)
// describe the target table they found, and mapping matches it against
// the relation the source announced.
package mapping

import (
	"fmt"
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
// It is compiled once per relation shape and reused for every row.
type Plan struct {
	Rel         *source.Relation
	Target      source.TableName
	Partitioned bool
	// Key lists the source column indexes that identify a row in UPDATE and
	// DELETE. With WholeRow set there is no key: a row is found by all its
	// old values (NULL-safe), and one matching row is changed at a time, so
	// identical duplicates are handled one by one.
	Key      []int
	WholeRow bool
	// Fixed lists the source column indexes the target keeps as GENERATED
	// ALWAYS AS IDENTITY. UPDATE leaves them out of SET and instead requires
	// the row to hold the new value already, so a source UPDATE that did
	// change one stops with "no row matches" rather than diverging.
	Fixed []int
}

// Route gives the target table for a source table: the same schema and
// name (PostgreSQL to PostgreSQL).
func Route(t source.TableName) source.TableName { return t }

// NewPlan matches a relation against the target table. Every source column
// must exist on the target and not be generated there.
func NewPlan(rel *source.Relation, tgt TargetTable) (*Plan, error) {
	var missing, generated []string
	for _, c := range rel.Columns {
		tc, ok := tgt.column(c.Name)
		switch {
		case !ok:
			missing = append(missing, c.Name)
		case tc.Generated:
			generated = append(generated, c.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("target table %s lacks column(s) %s of source table %s; add them on the target",
			tgt.Name, strings.Join(missing, ", "), rel.Table())
	}
	if len(generated) > 0 {
		return nil, fmt.Errorf("target table %s generates column(s) %s that source table %s sends; make them plain columns on the target",
			tgt.Name, strings.Join(generated, ", "), rel.Table())
	}
	p := &Plan{Rel: rel, Target: tgt.Name, Partitioned: tgt.Partitioned}
	for i, c := range rel.Columns {
		if tc, _ := tgt.column(c.Name); tc.IdentityAlways {
			p.Fixed = append(p.Fixed, i)
		}
	}
	switch rel.Identity {
	case source.IdentityDefault, source.IdentityIndex:
		for i, c := range rel.Columns {
			if c.Key {
				p.Key = append(p.Key, i)
			}
		}
	case source.IdentityFull:
		// Like PostgreSQL's own apply worker: with a full old row, use the
		// target's primary key when it has one, else match the whole row.
		p.Key = pkIndexes(rel, tgt.PrimaryKey)
	}
	if len(p.Key) == 0 {
		p.WholeRow = true
	}
	return p, nil
}

func pkIndexes(rel *source.Relation, pk []string) []int {
	var idx []int
	for _, name := range pk {
		found := false
		for i, c := range rel.Columns {
			if c.Name == name {
				idx, found = append(idx, i), true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return idx
}

// Identifies reports whether UPDATE and DELETE can find rows at all: a
// relation with replica identity NOTHING sends no old values.
func (p *Plan) Identifies() bool { return p.Rel.Identity != source.IdentityNothing }
