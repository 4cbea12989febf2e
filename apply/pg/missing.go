package pg

import (
	"context"
	"errors"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
	"github.com/decant/decant/source/pgsession"
)

// lacksColumns explains a row statement that failed with undefined_column.
// decant compiles a table's statements once, from the target's catalog, so
// this means a column was dropped on the target after that: the server's
// message names the column but not the table's schema, nor the fix. The
// catalog is read again (after rolling back the transaction the failure
// aborted, which the pipeline abandons anyway) and the error becomes the
// one a missing column gives at the start, naming the table, the columns
// and the fix. Any other error, or one the catalog does not confirm, is
// returned as it is.
func (t *Target) lacksColumns(ctx context.Context, err error) error {
	var ae *apply.Error
	if pgsession.Code(err) != undefinedColumn || !errors.As(err, &ae) {
		return err
	}
	if ae.Op != "insert" && ae.Op != "update" && ae.Op != "delete" {
		return err
	}
	rels := t.relationsOf(ae.Table)
	if len(rels) == 0 {
		return err
	}
	if rerr := t.Rollback(ctx); rerr != nil || t.conn == nil {
		return err
	}
	t.forgetTables() // their plans name the dropped column
	for _, rel := range rels {
		tt, terr := t.table(ctx, t.cfg.Router.Route(rel.Table()))
		if terr != nil {
			return err
		}
		if _, perr := mapping.NewPlan(rel, *tt, t.cfg.Columns[rel.Table()]); perr != nil {
			return &apply.Error{Op: ae.Op, Table: ae.Table, Xid: ae.Xid, Commit: ae.Commit, Err: perr}
		}
	}
	return err
}

// relationsOf lists the source relations with a compiled plan for table
// (named as on the target, or as on the source), the last used first.
func (t *Target) relationsOf(table source.TableName) []*source.Relation {
	var rels []*source.Relation
	if t.last != nil && (t.last.Target == table || t.last.Rel.Table() == table) {
		rels = append(rels, t.last.Rel)
	}
	for name, p := range t.plans {
		if p != t.last && (p.Target == table || name == table) {
			rels = append(rels, p.Rel)
		}
	}
	return rels
}
