package mapping

import (
	"slices"

	"github.com/decant/decant/source"
)

// NetMode says how freely a writer may gather a table's row changes
// inside one target transaction (see apply.Net).
//
// The result after COMMIT is the same either way; what differs is the
// states in between, which the target checks as it goes (unique
// constraints, row counts) and which its triggers see. So the freedom is
// granted only where no intermediate state can be told apart:
//
//   - NetPlain: every change is applied on its own, in source order, with
//     everything before it sent first. Tables with triggers or rules that
//     fire for replicated rows (they see each change).
//   - NetAppend: inserts may wait and go together with the table's other
//     inserts, after changes of other tables that came later; any other
//     change of the table ends the wait. Inserts into one table keep their
//     order, and the target checks no constraint between tables (foreign
//     keys do not fire for replicated rows). Tables not safe to compact.
//   - NetCompact: the changes of one key fold into their net effect
//     (insert then update is one insert of the final row, insert then
//     delete is nothing...), and the net changes of many keys go as one
//     statement each for deletes, updates (per set of changed columns) and
//     inserts. Only when the key decant finds rows by is the target's only
//     unique constraint, checked at once, and equal key values are
//     identical: then rows of different keys cannot meet in any
//     constraint, in whatever order they are written, and one key's text
//     always names one row.
type NetMode uint8

const (
	NetPlain NetMode = iota
	NetAppend
	NetCompact
)

// netMode decides the plan's NetMode from the target table's catalog.
// Compaction also needs: a key from the source's replica identity (not a
// whole-row match, which takes one of several equal rows at a time); no
// GENERATED ALWAYS identity column (its UPDATE requires the row to hold
// the new value already); no partitions (a partition may hold unique
// indexes of its own).
func netMode(p *Plan, tgt TargetTable) NetMode {
	switch {
	case tgt.Triggers:
		return NetPlain
	case p.WholeRow || len(p.Key) == 0 || len(p.Fixed) > 0 || tgt.Partitioned || tgt.OtherUnique || len(tgt.Unique) != 1:
		return NetAppend
	}
	key := make([]string, len(p.Key))
	for n, i := range p.Key {
		if p.Targets[i].Compare != CompareEqual {
			return NetAppend
		}
		key[n] = p.Targets[i].Name
	}
	unique := slices.Clone(tgt.Unique[0])
	slices.Sort(key)
	slices.Sort(unique)
	if !slices.Equal(key, unique) {
		return NetAppend
	}
	return NetCompact
}

// KeyChanged reports whether UPDATE c moves its row to another key: the
// source sent an old key that differs from the new one.
func (p *Plan) KeyChanged(c *source.Change) bool {
	if c.Old == nil {
		return false
	}
	for _, i := range p.Key {
		o, n := c.Old[i], c.New[i]
		if o.Kind != n.Kind || string(o.Data) != string(n.Data) {
			return true
		}
	}
	return false
}
