package apply

import (
	"fmt"
	"log/slog"

	"github.com/decant/decant/source"
)

// UnsupportedDDL is the error that stops a pipeline at a schema change
// the target cannot follow (--on-unsupported-ddl stop). It names the
// command tag and the table, never the statement: that is the source
// session's text (current_query()), which may quote values. With
// --on-unsupported-ddl skip the statement goes only to the target's own
// skipped-DDL table.
func UnsupportedDDL(txn *source.Txn, d *source.DDL, table source.TableName, reason error) error {
	return &Error{Op: "ddl", Table: ddlTable(d, table), Xid: txn.Xid, Commit: txn.Commit,
		Err: fmt.Errorf("%s: %w (--on-unsupported-ddl skip records it on the target and goes on)", ddlTag(d), reason)}
}

// LogSkippedDDL says that a schema change was skipped
// (--on-unsupported-ddl skip), by tag and table as UnsupportedDDL does.
func LogSkippedDDL(log *slog.Logger, txn *source.Txn, d *source.DDL, table source.TableName, reason error) {
	log.Warn("schema change skipped; recorded in the target's skipped-DDL table", "command", ddlTag(d),
		"table", ddlTable(d, table).String(), "xid", txn.Xid, "commit", txn.Commit.String(), "reason", reason.Error())
}

// ddlTable is the table a change is about: table, when the target named
// one, else the first the source says the command changed or dropped.
func ddlTable(d *source.DDL, table source.TableName) source.TableName {
	switch {
	case table.Name != "":
		return table
	case len(d.Tables) > 0:
		return d.Tables[0].Name
	case len(d.Dropped) > 0:
		return d.Dropped[0].Name
	}
	return table
}

func ddlTag(d *source.DDL) string {
	if d.Tag == "" {
		return "schema change"
	}
	return d.Tag
}
