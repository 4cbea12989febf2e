package pg

import (
	"context"
	"errors"
	"fmt"

	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// plan is a mapping.Plan with its SQL rendered once.
type plan struct {
	*mapping.Plan
	insertSQL string
	copySQL   string
	deleteSQL string
	updates   *mapping.UpdateShapes
}

func (t *Target) plan(ctx context.Context, rel *source.Relation) (*plan, error) {
	if t.last != nil && t.last.Rel == rel {
		return t.last, nil
	}
	if p, ok := t.plans[rel]; ok {
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
		deleteSQL: renderDelete(mp),
		updates:   mp.NewUpdateShapes(func(set []bool) string { return renderUpdate(mp, set) }),
	}
	t.plans[rel] = p
	t.last = p
	return p, nil
}

var (
	errOldRow   = errors.New("the source sent no usable old value for a column that identifies the row")
	errNoOldRow = errors.New("the source sent no old values and the target table has no primary key to find the row by; add a primary key on the target")
)

// appendWhere appends the values that find the changed row: the old image
// when the source sent one, else (an UPDATE that kept its key) the new one.
func (p *plan) appendWhere(args [][]byte, c *source.Change) ([][]byte, error) {
	row := c.Old
	if row == nil {
		if p.WholeRow {
			return nil, errNoOldRow
		}
		row = c.New
	}
	for _, col := range p.WhereCols() {
		v := row[col]
		if v.Kind == source.ValueUnchanged || v.Kind == source.ValueBinary {
			return nil, fmt.Errorf("%w (column %s)", errOldRow, p.Rel.Columns[col].Name)
		}
		args = append(args, param(v))
	}
	return args, nil
}
