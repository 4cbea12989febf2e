package pg

import (
	"context"
	"errors"
	"fmt"
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
	origin := apply.Origin{Op: "ddl", Txn: txn, Expect: -1}
	for _, next := range d.Tables {
		prev := t.schema[next.OID]
		from, to := t.cfg.Router.Route(next.Name), t.cfg.Router.Route(next.Name)
		if prev != nil {
			from = t.cfg.Router.Route(prev.Name)
		}
		steps, notes, err := mapping.SchemaChange(mapping.DialectPostgres, prev, next, from, to, t.cfg.Columns[next.Name])
		if err := t.unsupported(txn, d, next.Name, err); err != nil {
			return err
		}
		for _, n := range notes {
			t.log.Warn("schema change: "+n, "table", next.Name.String(), "commit", txn.Commit.String())
		}
		for _, s := range steps {
			t.batch.add(s.SQL, nil, apply.Origin{Op: "ddl", Table: next.Name, Txn: txn, Expect: -1})
		}
		def, err := checkpoint.EncodeDef(next)
		if err != nil {
			return err
		}
		t.batch.add(checkpoint.PGSchemaSave, [][]byte{[]byte(t.cfg.Pipeline), oidText(next.OID), def}, origin)
		t.schema[next.OID] = next
	}
	for _, dropped := range d.Dropped {
		prev := t.schema[dropped.OID]
		if prev == nil {
			continue // not a replicated table
		}
		steps, _, err := mapping.SchemaChange(mapping.DialectPostgres, prev, nil, t.cfg.Router.Route(prev.Name), source.TableName{}, t.cfg.Columns[prev.Name])
		if err := t.unsupported(txn, d, prev.Name, err); err != nil {
			return err
		}
		for _, s := range steps {
			t.batch.add(s.SQL, nil, apply.Origin{Op: "ddl", Table: prev.Name, Txn: txn, Expect: -1})
		}
		t.batch.add(checkpoint.PGSchemaDelete, [][]byte{[]byte(t.cfg.Pipeline), oidText(dropped.OID)}, origin)
		delete(t.schema, dropped.OID)
	}
	// The rows after the change must be planned against the new shape:
	// run the DDL now and forget what was learned of the old one.
	t.forgetTables()
	return t.flush(ctx)
}

// unsupported applies --on-unsupported-ddl to a change decant cannot
// translate: stop with the statement, or record it and go on.
func (t *Target) unsupported(txn *source.Txn, d *source.DDL, table source.TableName, err error) error {
	var u *mapping.UnsupportedDDL
	if !errors.As(err, &u) {
		return err
	}
	if !t.cfg.SkipUnsupportedDDL {
		return &apply.Error{Op: "ddl", Table: table, Xid: txn.Xid, Commit: txn.Commit,
			Err: fmt.Errorf("%v; statement: %s (--on-unsupported-ddl skip records it and goes on)", u, oneLine(d.Statement))}
	}
	t.log.Warn("schema change skipped", "table", table.String(), "commit", txn.Commit.String(), "reason", u.Error(), "statement", oneLine(d.Statement))
	t.batch.add(checkpoint.PGSkipped, [][]byte{[]byte(t.cfg.Pipeline), []byte(txn.Commit.String()),
		strconv.AppendUint(nil, uint64(txn.Xid), 10), []byte(d.Statement), []byte(u.Error())},
		apply.Origin{Op: "ddl", Table: table, Txn: txn, Expect: 1})
	return nil
}

// forgetTables drops what the writer learned about target tables.
func (t *Target) forgetTables() {
	t.tables = map[source.TableName]*mapping.TargetTable{}
	t.plans = map[*source.Relation]*plan{}
	t.last = nil
}

func oidText(oid uint32) []byte { return strconv.AppendUint(nil, uint64(oid), 10) }

// oneLine shortens a statement for a one-line message.
func oneLine(s string) string {
	out := make([]rune, 0, 200)
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		if len(out) == 200 {
			return string(out) + "…"
		}
		out = append(out, r)
	}
	return string(out)
}
