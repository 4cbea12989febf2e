package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// plan is a mapping.Plan with its SQL rendered once.
type plan struct {
	*mapping.Plan
	insertSQL string
	copySQL   string
	shapes    *mapping.Shapes // UPDATE and DELETE statements
	// Set-based statements of a window of net changes (net.go), rendered
	// on first use: the DELETE, and the UPDATEs by mask of set columns.
	isKey     []bool // by source column
	netDelete string
	netUpdate map[string]string
}

func (t *Target) plan(ctx context.Context, rel *source.Relation) (*plan, error) {
	if t.last != nil && t.last.Rel == rel {
		return t.last, nil
	}
	if p, ok := t.plans[rel.Table()]; ok && p.Rel == rel {
		t.last = p
		return p, nil
	}
	tt, err := t.table(ctx, t.cfg.Router.Route(rel.Table()))
	if err != nil {
		return nil, err
	}
	mp, err := mapping.NewPlan(rel, *tt, t.cfg.Columns[rel.Table()])
	if err != nil {
		return nil, err
	}
	p := &plan{
		Plan:      mp,
		insertSQL: renderInsert(mp),
		copySQL:   renderCopy(mp),
		shapes: mp.NewShapes(mapping.ShapeRenderers{
			Update: func(set []bool, m mapping.Match) string { return renderUpdate(mp, set, m) },
			Delete: func(m mapping.Match) string { return renderDelete(mp, m) },
			Nulls:  true,
		}),
		netUpdate: map[string]string{},
	}
	p.isKey = make([]bool, len(rel.Columns))
	for _, i := range mp.Key {
		p.isKey[i] = true
	}
	t.plans[rel.Table()] = p // replacing the plan of the table's older shape
	t.last = p
	return p, nil
}

var errOldRow = errors.New("the source sent no usable old value for a column that identifies the row")

// appendWhere appends the values that find the changed row as m says: the
// old image when the source sent one, else (an UPDATE that kept its key)
// the new one; but the old values that a whole-row match finds with IS
// NULL.
func (p *plan) appendWhere(args [][]byte, c *source.Change, m mapping.Match) ([][]byte, error) {
	row := c.Old
	if row == nil {
		if m.Whole {
			return nil, apply.ErrNoOldRow
		}
		row = c.New
	}
	for _, col := range p.WhereCols(m) {
		v := row[col]
		if v.Kind == source.ValueUnchanged || v.Kind == source.ValueBinary {
			return nil, fmt.Errorf("%w (column %s)", errOldRow, p.Rel.Columns[col].Name)
		}
		if !m.Whole || !m.Null[col] {
			args = append(args, param(v))
		}
	}
	return args, nil
}
