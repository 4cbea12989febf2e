package pg

import (
	"context"
	"errors"
	"strconv"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// applyDDL brings the target's tables to the definitions a schema change
// produced, inside the open transaction (PostgreSQL DDL is transactional,
// so the change commits with the rows around it and the checkpoint). The
// change is the difference between the definition stored at the last
// change and the new one; the new one is stored in the same transaction.
func (t *Target) applyDDL(ctx context.Context, txn *source.Txn, d *source.DDL) error {
	if d.Unsupported != "" {
		// Stop, or record the statement and apply what the source
		// could describe of it.
		if err := t.unsupported(txn, d, source.TableName{}, &mapping.UnsupportedDDL{What: d.Unsupported}); err != nil {
			return err
		}
	}
	for _, c := range mapping.SchemaChanges(mapping.DialectPostgres, t.schema, d, t.cfg.Router, t.cfg.Columns) {
		if err := t.unsupported(txn, d, c.Table, c.Err); err != nil {
			return err
		}
		for _, n := range c.Notes {
			t.log.Warn("schema change: "+n, "table", c.Table.String(), "commit", txn.Commit.String())
		}
		origin := apply.Origin{Op: "ddl", Table: c.Table, Txn: txn, Expect: -1}
		for _, s := range c.Steps {
			t.batch.add(s.SQL, nil, origin)
		}
		if c.Def == nil {
			t.batch.add(checkpoint.PGSchemaDelete, [][]byte{[]byte(t.cfg.Pipeline), oidText(c.OID)}, origin)
			delete(t.schema, c.OID)
			continue
		}
		def, err := checkpoint.EncodeDef(c.Def)
		if err != nil {
			return err
		}
		t.batch.add(checkpoint.PGSchemaSave, [][]byte{[]byte(t.cfg.Pipeline), oidText(c.OID), def}, origin)
		t.schema[c.OID] = c.Def
	}
	// The rows after the change must be planned against the new shape:
	// run the DDL now and forget what was learned of the old one.
	t.forgetTables()
	return t.flush(ctx)
}

// unsupported applies --on-unsupported-ddl to a change decant cannot
// translate: stop naming its tag and table, or record it and go on.
func (t *Target) unsupported(txn *source.Txn, d *source.DDL, table source.TableName, err error) error {
	var u *mapping.UnsupportedDDL
	if !errors.As(err, &u) {
		return err
	}
	if !t.cfg.SkipUnsupportedDDL {
		return apply.UnsupportedDDL(txn, d, table, u)
	}
	apply.LogSkippedDDL(t.log, txn, d, table, u)
	// The statement itself is kept only here, on the target.
	t.batch.add(checkpoint.PGSkipped, [][]byte{[]byte(t.cfg.Pipeline), []byte(txn.Commit.String()),
		strconv.AppendUint(nil, txn.Xid, 10), []byte(d.Statement), []byte(u.Error())},
		apply.Origin{Op: "ddl", Table: table, Txn: txn, Expect: 1})
	return nil
}

// forgetTables drops what the writer learned about target tables.
func (t *Target) forgetTables() {
	t.tables = map[source.TableName]*mapping.TargetTable{}
	t.plans = map[source.TableName]*plan{}
	t.last = nil
}

func oidText(oid uint32) []byte { return strconv.AppendUint(nil, uint64(oid), 10) }
