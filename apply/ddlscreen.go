package apply

import (
	"github.com/decant/decant/checkpoint"
	"github.com/decant/decant/source"
)

// Schema changes are the one part of the stream decant executes rather
// than stores, and the stream is written by every role that can connect
// to the source (DESIGN.md, invariant 8). A schema change is applied only
// when the pipeline was initialised with --ddl (checkpoint.Row.DDL) and
// the source reader vouches that decant's own capture wrote it
// (source.DDL.Untrusted empty). Any other is refused without stopping the
// stream, since a refusal that stopped it would let any role halt
// replication: it is logged with its position (never its content),
// counted and announced (Observer.DDLRejected).

// RejectedDDL is a schema change the pipeline refused to apply.
type RejectedDDL struct {
	Commit source.LSN // the commit of the source transaction that carried it
	Xid    uint64
	Reason string // why it was not applied; holds nothing of the event's content
}

// notWithoutDDL is why a schema change is refused on a pipeline without --ddl.
const notWithoutDDL = "the pipeline was initialised without --ddl, so it applies no schema change from the stream (run decant init --ddl to replicate schema changes)"

// screenDDL returns changes without the schema changes the pipeline must
// not apply, reporting each. It copies only when it leaves one out. The
// verdict depends on nothing but the change and cp.DDL, so a replay of the
// transaction screens the same changes, and a partial position
// (checkpoint.Row.Skip), counted over what screenDDL leaves, means the
// same after a restart.
func (p *Pipeline) screenDDL(txn *source.Txn, changes []source.Change, cp checkpoint.Row) []source.Change {
	var kept []source.Change
	for i := range changes {
		reason := refusal(changes[i], cp)
		if reason == "" {
			if kept != nil {
				kept = append(kept, changes[i])
			}
			continue
		}
		if kept == nil {
			kept = append(make([]source.Change, 0, len(changes)-1), changes[:i]...)
		}
		p.log.Warn("schema change from the stream not applied; the pipeline goes on", "commit", txn.Commit.String(), "xid", txn.Xid, "reason", reason)
		p.obs.DDLRejected(RejectedDDL{Commit: txn.Commit, Xid: txn.Xid, Reason: reason})
	}
	if kept == nil {
		return changes
	}
	return kept
}

// refusal says why change must not be applied; "" when it may.
func refusal(c source.Change, cp checkpoint.Row) string {
	switch {
	case c.Op != source.OpDDL:
		return ""
	case c.DDL.Untrusted != "":
		return c.DDL.Untrusted
	case !cp.DDL:
		return notWithoutDDL
	}
	return ""
}
