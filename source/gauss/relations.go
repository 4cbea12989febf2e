package gauss

import (
	"fmt"
	"slices"
	"strings"

	"github.com/decant/decant/source"
)

// relations turns GaussDB DML records, which name their table and columns
// in every record, into source.Relations. A Relation is shared by every
// record of the same shape, so targets compile one plan per shape.
//
// The stream does not say which columns form the replica identity; the
// old tuple does: it holds the key columns (every column under REPLICA
// IDENTITY FULL). With enable-rowno, a Ustore table's row number is the
// key. The key seen last for a table is remembered for records
// without an old tuple (an UPDATE that kept its key). Before any old tuple
// was seen, a table's relation has identity FULL without key flags, so a
// target finds rows by its own primary key.
type relations struct {
	shapes map[string]*source.Relation
	keys   map[source.TableName][]string
	// generated lists, per table, the stored generated columns, which
	// old tuples carry even with skip-generated-columns: they are dropped
	// from old tuples then, so that rows are found by what the target
	// holds (a MySQL target never received their values).
	generated map[source.TableName][]string
}

func newRelations() *relations {
	return &relations{shapes: map[string]*source.Relation{}, keys: map[source.TableName][]string{}}
}

// change converts a DML record into a change.
func (rs *relations) change(r *Record) (source.Change, error) {
	table := source.TableName{Schema: r.Schema, Name: r.Table}
	if gen := rs.generated[table]; len(gen) > 0 && r.Old != nil {
		r.Old = slices.DeleteFunc(slices.Clone(r.Old), func(c Column) bool { return slices.Contains(gen, c.Name) })
	}
	cols := r.New
	if cols == nil {
		cols = r.Old
	}
	if cols == nil {
		return source.Change{}, fmt.Errorf("%s of %s carries no row", r.Kind, table)
	}
	full := false
	switch {
	case rowno(cols) != "":
		// A Ustore row number identifies the row (enable-rowno).
		rs.keys[table] = []string{rowno(cols)}
	case r.Old != nil:
		rs.keys[table] = names(r.Old)
		// The old tuple holds every column (REPLICA IDENTITY FULL); with
		// skip-generated-columns it holds the generated ones too, which
		// the new tuple lacks.
		full = covers(r.Old, cols)
	}
	rel, err := rs.relation(table, cols, rs.keys[table], full)
	if err != nil {
		return source.Change{}, err
	}
	c := source.Change{Rel: rel}
	switch r.Kind {
	case KindInsert:
		c.Op = source.OpInsert
	case KindUpdate:
		c.Op = source.OpUpdate
	case KindDelete:
		c.Op = source.OpDelete
	}
	if r.New != nil {
		if c.New, err = values(rel, r.New); err != nil {
			return source.Change{}, err
		}
	}
	if r.Old != nil {
		if c.Old, err = values(rel, r.Old); err != nil {
			return source.Change{}, err
		}
	}
	return c, nil
}

// relation returns the shared Relation for a table shape.
func (rs *relations) relation(table source.TableName, cols []Column, keys []string, full bool) (*source.Relation, error) {
	var b strings.Builder
	b.WriteString(table.String())
	for _, c := range cols {
		fmt.Fprintf(&b, "\x00%s:%d", c.Name, c.Type)
	}
	b.WriteString("\x01" + strings.Join(keys, "\x00"))
	if full {
		b.WriteString("\x01full")
	}
	if rel, ok := rs.shapes[b.String()]; ok {
		return rel, nil
	}
	rel := &source.Relation{Schema: table.Schema, Name: table.Name, Identity: source.IdentityFull}
	for _, c := range cols {
		oid := c.Type
		if c.Rowno {
			oid = 20 // int8
		}
		if oid == 0 {
			return nil, fmt.Errorf("column %s of %s has type %q, which decant does not know", c.Name, table, c.TypeName)
		}
		rel.Columns = append(rel.Columns, source.Column{Name: c.Name, Type: oid, TypeMod: -1, Key: !full && slices.Contains(keys, c.Name)})
	}
	if len(keys) > 0 && !full {
		rel.Identity = source.IdentityIndex
	}
	rs.shapes[b.String()] = rel
	return rel, nil
}

// values places a record's columns by name into a row shaped like rel;
// relation columns the record lacks (non-key columns of an old key tuple)
// are NULL, as in pgoutput's key tuples.
func values(rel *source.Relation, cols []Column) ([]source.Value, error) {
	row := make([]source.Value, len(rel.Columns))
	for _, c := range cols {
		i := index(rel, c.Name)
		if i < 0 {
			continue // an old-tuple column the new tuple does not carry
		}
		switch {
		case c.Null:
			row[i] = source.Value{Kind: source.ValueNull}
		case c.Unchanged:
			row[i] = source.Value{Kind: source.ValueUnchanged}
		case c.Rowno:
			row[i] = source.Value{Kind: source.ValueText, Data: fmt.Appendf(nil, "%d", c.RowNo)}
		default:
			data := c.Value
			if data == nil {
				data = []byte{}
			}
			row[i] = source.Value{Kind: source.ValueText, Data: data}
		}
	}
	return row, nil
}

func index(rel *source.Relation, name string) int {
	for i, c := range rel.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// rowno is the name of the row number column among cols, "" if none.
func rowno(cols []Column) string {
	for _, c := range cols {
		if c.Rowno {
			return c.Name
		}
	}
	return ""
}

// covers reports whether old holds every column of cols.
func covers(old, cols []Column) bool {
	for _, c := range cols {
		if !slices.ContainsFunc(old, func(o Column) bool { return o.Name == c.Name }) {
			return false
		}
	}
	return true
}

func names(cols []Column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}
