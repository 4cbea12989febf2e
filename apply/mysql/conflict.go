package mysql

import (
	"context"
	"fmt"
	"strings"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/source"
)

// Conflict policies (apply.ConflictPolicies) on MySQL and MariaDB, which
// have no data-modifying CTE: a change of a table with a policy other
// than error goes on its own as a few statements of the batch, on one
// session. The first counts the rows with the change's key into a
// session variable, locking them (or the gap where the key would be), so
// nothing changes them before the rest; the change is then made to
// depend on that count, and the last statement writes the conflict log
// row only when the count says the change met its conflict. They commit
// with the checkpoint, once.

// conflictsCreate creates the conflict log. Key values live here, in the
// target database like the rows themselves, and nowhere else.
const conflictsCreate = `CREATE TABLE IF NOT EXISTS decant_conflicts (
	id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
	pipeline    VARCHAR(63) NOT NULL,
	kind        VARCHAR(32) NOT NULL,
	policy      VARCHAR(16) NOT NULL,
	table_name  VARCHAR(200) NOT NULL,
	` + "`key`" + `       LONGTEXT NOT NULL,
	commit_lsn  BIGINT UNSIGNED NOT NULL,
	xid         BIGINT UNSIGNED NULL,
	commit_time DATETIME(6) NULL,
	logged_at   DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// found is the session variable holding how many target rows have the
// change's key.
const found = "@decant_found"

// createConflictLog creates decant_conflicts when a policy may write to
// it (a target set up before policies existed lacks it). CREATE TABLE
// commits by itself: it runs before any transaction is open.
func (t *Target) createConflictLog(ctx context.Context) error {
	if !t.cfg.Conflicts.Any() {
		return nil
	}
	return t.bound().Do(ctx, "creating decant_conflicts", func(ctx context.Context) error {
		if _, err := t.conn.ExecContext(ctx, conflictsCreate); err != nil {
			return fmt.Errorf("target: create decant_conflicts for --on-conflict (the target user needs CREATE on the database): %w", describe(err))
		}
		return nil
	})
}

// resolvingChange applies a change of a table with conflict policies on
// its own, after everything gathered before it (the window's set-based
// statements could not tell which row conflicted).
func (t *Target) resolvingChange(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	if err := t.sendNet(ctx); err != nil {
		return err
	}
	if err := t.endRun(ctx); err != nil {
		return err
	}
	pol := t.cfg.Conflicts.Of(p.Target)
	var kind apply.ConflictKind
	switch c.Op {
	case source.OpInsert:
		kind = apply.InsertExists
	case source.OpUpdate:
		kind = apply.UpdateMissing
	case source.OpDelete:
		kind = apply.DeleteMissing
	}
	if c.Op != source.OpInsert && p.MatchOf(c).Whole && c.Old != nil {
		differs := apply.UpdateDiffers
		if kind == apply.DeleteMissing {
			differs = apply.DeleteDiffers
		}
		if pol[kind] == apply.PolicyError && pol[differs] == apply.PolicyError {
			return t.plainChange(ctx, txn, p, c)
		}
		if err := t.wholeRowResolving(txn, p, c, pol); err != nil {
			return err
		}
		return t.maybeFlush(ctx)
	}
	if pol[kind] == apply.PolicyError || len(p.Key) == 0 || (c.Op != source.OpInsert && p.MatchOf(c).Whole) ||
		(kind == apply.UpdateMissing && pol[kind] == apply.PolicyApply && !wholeImage(p, c.New)) {
		return t.plainChange(ctx, txn, p, c)
	}
	if err := t.findKey(txn, p, c); err != nil {
		return err
	}
	if err := t.resolve(txn, p, c, kind, pol[kind]); err != nil {
		return err
	}
	if err := t.logConflict(txn, p, c, kind, pol[kind]); err != nil {
		return err
	}
	return t.maybeFlush(ctx)
}

// plainChange applies c as a table without policies would.
func (t *Target) plainChange(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	switch c.Op {
	case source.OpInsert:
		if err := t.insert(ctx, txn, p, c); err != nil {
			return err
		}
		return t.endRun(ctx)
	case source.OpUpdate:
		return t.update(ctx, txn, p, c)
	}
	return t.delete(ctx, txn, p, c)
}

// findKey counts the target rows with c's key (the old one of an update
// or delete) into found, locking them.
func (t *Target) findKey(txn *source.Txn, p *plan, c *source.Change) error {
	row := c.New
	if c.Op != source.OpInsert {
		var err error
		if row, err = keyRow(p, c, p.MatchOf(c)); err != nil {
			return err
		}
	}
	args, err := p.convertRow(nil, row, p.Key)
	if err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT COUNT(*) INTO %s FROM %s WHERE ", found, quoteTable(p.Target))
	for n, i := range p.Key {
		if n > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(p.cmp[i](p.Targets[i].Name, false))
	}
	b.WriteString(" FOR UPDATE")
	t.batch.add(b.String(), args, apply.Origin{Op: c.Op.String(), Table: p.Rel.Table(), Txn: txn, Expect: -1})
	return nil
}

// resolve queues the change as the policy makes it: skip inserts only a
// key that is not there and updates or deletes what there is; apply
// updates the row with an inserted key (ON DUPLICATE KEY UPDATE), and
// inserts the updated row when no row had its key.
func (t *Target) resolve(txn *source.Txn, p *plan, c *source.Change, kind apply.ConflictKind, pol apply.ConflictPolicy) error {
	info := apply.Origin{Op: c.Op.String(), Table: p.Rel.Table(), Txn: txn, Expect: -1}
	switch {
	case kind == apply.InsertExists && pol == apply.PolicySkip:
		return t.insertIfNone(info, p, c)
	case kind == apply.InsertExists:
		args, err := p.convertRow(nil, c.New, p.Cols)
		if err != nil {
			return err
		}
		t.batch.add(p.insertHead+p.rowMarks+renderUpsert(p), args, info)
		return nil
	case kind == apply.UpdateMissing:
		sql, args, err := p.updateStmt(c)
		if err != nil {
			return err
		}
		t.batch.add(sql, args, info)
		if pol == apply.PolicyApply {
			return t.insertIfNone(info, p, c)
		}
		return nil
	}
	sql, args, err := p.deleteStmt(c)
	if err != nil {
		return err
	}
	t.batch.add(sql, args, info)
	return nil
}

// insertIfNone inserts c's new row when found counted no row.
func (t *Target) insertIfNone(info apply.Origin, p *plan, c *source.Change) error {
	return t.insertIfMet(info, p, c, found+" = 0")
}

// renderUpsert makes an inserted row whose key is there update that row.
func renderUpsert(p *plan) string {
	var set []string
	for _, i := range p.Cols {
		if !p.isKey[i] {
			n := quoteIdent(p.Targets[i].Name)
			set = append(set, n+" = VALUES("+n+")")
		}
	}
	if len(set) == 0 {
		n := quoteIdent(p.Targets[p.Key[0]].Name)
		set = append(set, n+" = "+n)
	}
	return " ON DUPLICATE KEY UPDATE " + strings.Join(set, ", ")
}

// logConflict queues the conflict log row, written when found shows the
// conflict: a row with an inserted key, none with an updated or deleted
// one. The rows it reports are the conflicts it logged.
func (t *Target) logConflict(txn *source.Txn, p *plan, c *source.Change, kind apply.ConflictKind, pol apply.ConflictPolicy) error {
	cond := found + " = 0"
	if kind == apply.InsertExists {
		cond = found + " > 0"
	}
	return t.logConflictIf(txn, p, c, kind, pol, cond)
}

// logConflictIf queues the conflict log row, written when cond holds.
func (t *Target) logConflictIf(txn *source.Txn, p *plan, c *source.Change, kind apply.ConflictKind, pol apply.ConflictPolicy, cond string) error {
	key, err := apply.ConflictKey(p.Plan, c)
	if err != nil {
		return err
	}
	var when any
	if !txn.CommitTime.IsZero() {
		when = txn.CommitTime.UTC().Format("2006-01-02 15:04:05.999999")
	}
	args := []any{t.cfg.Pipeline, kind.String(), pol.String(), targetText(p.Target), string(key), uint64(txn.Commit), txn.Xid, when}
	t.batch.add(`INSERT INTO decant_conflicts (pipeline, kind, policy, table_name, `+"`key`"+`, commit_lsn, xid, commit_time, logged_at)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6) FROM DUAL WHERE `+cond, args,
		apply.Origin{Op: c.Op.String(), Table: p.Rel.Table(), Txn: txn, Expect: -1, Conflict: kind, Policy: pol})
	return nil
}

// wholeImage reports whether row holds every written column's value (no
// unchanged TOAST value), as an insert needs.
func wholeImage(p *plan, row []source.Value) bool {
	for _, i := range p.Cols {
		if row[i].Kind == source.ValueUnchanged {
			return false
		}
	}
	return true
}

// conflictsCommitted moves the open transaction's conflicts, just
// committed, to those TakeConflicts returns.
func (t *Target) conflictsCommitted() {
	dst := t
	if t.parent != nil {
		dst = t.parent
	}
	t.conflicts.MoveTo(&dst.committedConflicts)
}

// TakeConflicts returns the conflicts the commits since the last call
// resolved.
func (t *Target) TakeConflicts() apply.ConflictTally {
	return t.committedConflicts.Take()
}

// A change of a REPLICA IDENTITY FULL table finds its row by every old
// value. When none matches, a row with the key of the target's primary
// key may still be there with other values (update_differs,
// delete_differs) or not (the missing kinds), each with its own policy.
// After the change, matched holds how many rows it found; each kind's
// log row (or, applying update_missing, the insert) depends on found and
// matched, and for a kind whose policy is error a guard statement must
// match the pipeline's checkpoint row, which it does unless that kind
// was met: its row count stops the writer naming the kind.
const matched = "@decant_matched"

// wholeRowResolving queues c, an update or delete of a whole-row table.
func (t *Target) wholeRowResolving(txn *source.Txn, p *plan, c *source.Change, pol apply.KindPolicies) error {
	missing, differs := apply.UpdateMissing, apply.UpdateDiffers
	if c.Op == source.OpDelete {
		missing, differs = apply.DeleteMissing, apply.DeleteDiffers
	}
	info := apply.Origin{Op: c.Op.String(), Table: p.Rel.Table(), Txn: txn, Expect: -1}
	if len(p.Key) > 0 {
		if err := t.findKey(txn, p, c); err != nil {
			return err
		}
	} else {
		t.batch.add("SET "+found+" = 0", nil, info)
	}
	if err := t.resolve(txn, p, c, missing, apply.PolicySkip); err != nil {
		return err
	}
	t.batch.add("SET "+matched+" = ROW_COUNT()", nil, info)
	pm := pol[missing]
	if pm == apply.PolicyApply && !wholeImage(p, c.New) {
		pm = apply.PolicyError // an insert needs the whole row
	}
	met := map[apply.ConflictKind]string{
		missing: matched + " = 0 AND " + found + " = 0",
		differs: matched + " = 0 AND " + found + " > 0",
	}
	if pm == apply.PolicyApply {
		if err := t.insertIfMet(info, p, c, met[missing]); err != nil {
			return err
		}
	}
	for _, k := range []apply.ConflictKind{missing, differs} {
		kp := pol[k]
		if k == missing {
			kp = pm
		}
		if kp == apply.PolicyError {
			t.batch.add("UPDATE decant_checkpoint SET pipeline = pipeline WHERE pipeline = ? AND NOT ("+met[k]+")", []any{t.cfg.Pipeline},
				apply.Origin{Op: c.Op.String(), Table: p.Rel.Table(), Txn: txn, Expect: 1, Conflict: k, Judges: true})
			continue
		}
		if err := t.logConflictIf(txn, p, c, k, kp, met[k]); err != nil {
			return err
		}
	}
	return nil
}

// insertIfMet inserts c's new row when cond holds.
func (t *Target) insertIfMet(info apply.Origin, p *plan, c *source.Change, cond string) error {
	args, err := p.convertRow(nil, c.New, p.Cols)
	if err != nil {
		return err
	}
	head := strings.TrimSuffix(p.insertHead, "VALUES ")
	marks := strings.Trim(p.rowMarks, "()")
	t.batch.add(head+"SELECT "+marks+" FROM DUAL WHERE "+cond, args, info)
	return nil
}
