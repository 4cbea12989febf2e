package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Conflict policies (apply.ConflictPolicies) on PostgreSQL: a change of a
// table with a policy other than error goes on its own, as one statement
// that both applies it and, when it conflicts, writes the conflict log
// row: a data-modifying CTE whose outer INSERT into decant.conflicts
// selects a row only when the change found what the policy resolves.
// Nothing else reads the target, so the result cannot race with it, and
// the log row commits with the data and the checkpoint, once.

// conflictsCreate creates the conflict log. Key values live here, in the
// target database like the rows themselves, and nowhere else.
const conflictsCreate = `CREATE SCHEMA IF NOT EXISTS decant;
CREATE TABLE IF NOT EXISTS decant.conflicts (
	id          bigserial PRIMARY KEY,
	pipeline    text NOT NULL,
	kind        text NOT NULL,
	policy      text NOT NULL,
	table_name  text NOT NULL,
	key         jsonb NOT NULL,
	commit_lsn  pg_lsn NOT NULL,
	xid         bigint,
	commit_time timestamptz,
	logged_at   timestamptz NOT NULL DEFAULT now()
)`

// logParams is how many parameters renderLog takes.
const logParams = 8

// renderLog is the outer statement that logs a conflict for each row of
// from (a FROM list and WHERE clause), taking its values from
// parameters first...first+7.
func renderLog(first int, from string) string {
	p := func(k int) string { return "$" + strconv.Itoa(first+k) }
	return fmt.Sprintf(` INSERT INTO decant.conflicts (pipeline, kind, policy, table_name, key, commit_lsn, xid, commit_time)
	SELECT %s, %s, %s, %s, %s::jsonb, %s::pg_lsn, %s::bigint, %s::timestamptz %s`,
		p(0), p(1), p(2), p(3), p(4), p(5), p(6), p(7), from)
}

// resolving applies c, a change of a table with conflict policies pol,
// as one statement that resolves and logs its conflict; where the kind c
// may meet has policy error, as usual.
func (t *Target) resolving(ctx context.Context, txn *source.Txn, p *plan, c *source.Change, pol apply.KindPolicies) error {
	var sql string
	var args [][]byte
	var kind apply.ConflictKind
	var err error
	switch c.Op {
	case source.OpInsert:
		kind = apply.InsertExists
		sql, args, err = t.insertResolving(p, c, pol[kind])
	case source.OpUpdate:
		kind = apply.UpdateMissing
		if p.MatchOf(c).Whole && c.Old != nil && (pol[kind] != apply.PolicyError || pol[apply.UpdateDiffers] != apply.PolicyError) {
			return t.wholeRowResolving(ctx, txn, p, c, pol)
		}
		if p.MatchOf(c).Whole || pol[kind] == apply.PolicyError ||
			(pol[kind] == apply.PolicyApply && !wholeImage(p, c.New)) {
			return t.plainChange(ctx, txn, p, c)
		}
		sql, args, err = t.updateResolving(p, c, pol[kind])
	case source.OpDelete:
		kind = apply.DeleteMissing
		if p.MatchOf(c).Whole && c.Old != nil && (pol[kind] != apply.PolicyError || pol[apply.DeleteDiffers] != apply.PolicyError) {
			return t.wholeRowResolving(ctx, txn, p, c, pol)
		}
		if p.MatchOf(c).Whole || pol[kind] == apply.PolicyError {
			return t.plainChange(ctx, txn, p, c)
		}
		sql, m := p.shapes.Delete(c)
		if args, err = p.appendWhere(t.args[:0], c, m); err == nil {
			sql = "WITH w AS (" + sql + " RETURNING 1)" + renderLog(len(args)+1, "WHERE NOT EXISTS (SELECT 1 FROM w)")
		}
		return t.queueLogged(ctx, txn, p, c, sql, args, err, kind, pol[kind])
	}
	if sql == "" && err == nil {
		return t.plainChange(ctx, txn, p, c)
	}
	return t.queueLogged(ctx, txn, p, c, sql, args, err, kind, pol[kind])
}

// queueLogged adds the log parameters to args and queues the statement,
// which may change any number of rows.
func (t *Target) queueLogged(ctx context.Context, txn *source.Txn, p *plan, c *source.Change, sql string, args [][]byte, err error, kind apply.ConflictKind, pol apply.ConflictPolicy) error {
	if err != nil {
		return err
	}
	key, err := apply.ConflictKey(p.Plan, c)
	if err != nil {
		return err
	}
	var when []byte
	if !txn.CommitTime.IsZero() {
		when = []byte(txn.CommitTime.UTC().Format(time.RFC3339Nano))
	}
	args = append(args, []byte(t.cfg.Pipeline), []byte(kind.String()), []byte(pol.String()), []byte(p.Target.String()),
		key, []byte(txn.Commit.String()), []byte(strconv.FormatUint(txn.Xid, 10)), when)
	t.args = args
	info := apply.Origin{Op: c.Op.String(), Table: p.Target, Txn: txn, Expect: -1, Conflict: kind, Policy: pol}
	if err := t.queue(ctx, sql, args, info); err != nil {
		return err
	}
	return t.maybeFlush(ctx)
}

// plainChange applies c as a table without policies would, one statement.
func (t *Target) plainChange(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	var err error
	switch c.Op {
	case source.OpInsert:
		err = t.insertOne(ctx, txn, p, c)
	case source.OpUpdate:
		err = t.update(ctx, txn, p, c)
	case source.OpDelete:
		err = t.delete(ctx, txn, p, c)
	}
	if err != nil {
		return err
	}
	return t.maybeFlush(ctx)
}

func (t *Target) insertOne(ctx context.Context, txn *source.Txn, p *plan, c *source.Change) error {
	args := t.args[:0]
	for _, i := range p.Cols {
		args = append(args, param(c.New[i]))
	}
	t.args = args
	return t.queue(ctx, p.insertSQL, args, apply.Origin{Op: "insert", Table: p.Target, Txn: txn, Expect: 1})
}

// insertResolving: skip inserts unless any unique constraint holds the
// row already (ON CONFLICT DO NOTHING); apply updates the row that has
// the key to the new one (ON CONFLICT (key) DO UPDATE), where a row that
// was there reads a non-zero xmax, the updating transaction.
func (t *Target) insertResolving(p *plan, c *source.Change, pol apply.ConflictPolicy) (string, [][]byte, error) {
	args := t.args[:0]
	for _, i := range p.Cols {
		args = append(args, param(c.New[i]))
	}
	switch pol {
	case apply.PolicySkip:
		return "WITH w AS (" + p.insertSQL + " ON CONFLICT DO NOTHING RETURNING 1)" +
			renderLog(len(args)+1, "WHERE NOT EXISTS (SELECT 1 FROM w)"), args, nil
	case apply.PolicyApply:
		if len(p.Key) == 0 {
			return "", nil, fmt.Errorf("--on-conflict insert_exists=apply needs a primary key on target table %s to find the existing row; add one or use insert_exists=skip", p.Target)
		}
		return "WITH w AS (" + p.insertSQL + renderUpsert(p.Plan) + " RETURNING xmax <> 0 AS existed)" +
			renderLog(len(args)+1, "FROM w WHERE w.existed"), args, nil
	}
	return "", args, nil
}

// renderUpsert is the ON CONFLICT clause that makes the row with the key
// the inserted one.
func renderUpsert(p *mapping.Plan) string {
	var keys, set []string
	isKey := map[int]bool{}
	for _, i := range p.Key {
		keys = append(keys, quoteIdent(p.Targets[i].Name))
		isKey[i] = true
	}
	for _, i := range p.Cols {
		if !isKey[i] {
			n := quoteIdent(p.Targets[i].Name)
			set = append(set, n+" = EXCLUDED."+n)
		}
	}
	if len(set) == 0 {
		set = append(set, keys[0]+" = EXCLUDED."+keys[0])
	}
	return " ON CONFLICT (" + strings.Join(keys, ", ") + ") DO UPDATE SET " + strings.Join(set, ", ")
}

// updateResolving: skip logs an update that found no row; apply inserts
// the new row then (its image is whole: the caller checked).
func (t *Target) updateResolving(p *plan, c *source.Change, pol apply.ConflictPolicy) (string, [][]byte, error) {
	sql, args, err := t.updateArgs(p, c)
	if err != nil {
		return "", nil, err
	}
	if pol == apply.PolicySkip {
		return "WITH w AS (" + sql + " RETURNING 1)" + renderLog(len(args)+1, "WHERE NOT EXISTS (SELECT 1 FROM w)"), args, nil
	}
	first := len(args) + 1
	for _, i := range p.Cols {
		args = append(args, param(c.New[i]))
	}
	return "WITH w AS (" + sql + " RETURNING 1), i AS (" + renderInsertIfNone(p.Plan, first) + ")" +
		renderLog(len(args)+1, "FROM i"), args, nil
}

// renderInsertIfNone inserts the row of parameters first... when w
// changed no row. The casts type them: a SELECT list infers no types
// from the columns it is inserted into.
func renderInsertIfNone(p *mapping.Plan, first int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO %s %s ", quoteTable(p.Target), columnList(p))
	if len(p.Fixed) > 0 {
		b.WriteString("OVERRIDING SYSTEM VALUE ")
	}
	b.WriteString("SELECT ")
	for n, i := range p.Cols {
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d::%s", first+n, p.Targets[i].Type)
	}
	b.WriteString(" WHERE NOT EXISTS (SELECT 1 FROM w) RETURNING 1")
	return b.String()
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

// createConflictLog creates decant.conflicts when a policy may write to
// it (a target set up before policies existed lacks it).
func (t *Target) createConflictLog(ctx context.Context, conn *pgx.Conn) error {
	if !t.cfg.Conflicts.Any() {
		return nil
	}
	return t.bound().Do(ctx, "creating decant.conflicts", func(ctx context.Context) error {
		if _, err := conn.Exec(ctx, conflictsCreate); err != nil {
			return fmt.Errorf("target: create decant.conflicts for --on-conflict (the target user needs CREATE on the database): %w", err)
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
	if c.Op != source.OpInsert && !p.Identifies() {
		return fmt.Errorf("source table has replica identity NOTHING, so its %ss cannot be replicated; set REPLICA IDENTITY FULL or add a primary key on the source", c.Op)
	}
	return t.resolving(ctx, txn, p, c, t.cfg.Conflicts.Of(p.Target))
}

// TakeConflicts returns the conflicts the last commit resolved.
func (t *Target) TakeConflicts() apply.ConflictTally {
	return t.committedConflicts.Take()
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

// A change of a REPLICA IDENTITY FULL table finds its row by every old
// value: when none matches, a row with its key (the target's primary
// key) may still be there with other values (update_differs,
// delete_differs), or not (update_missing, delete_missing), and the two
// kinds may have different policies. Its statement judges which kind it
// met, resolves and logs it as that kind's policy says, and returns the
// kind and policy, so that the writer counts it or, for policy error,
// stops (conflictError).

// judgedSQL renders the statement for c, a whole-row update or delete
// change whose own statement is change with nargs parameters; the
// parameters after them: the key values (when the table has a key), the
// missing and differs policies, the log's, then for an update with
// policy apply the new row.
func judgedSQL(p *plan, change string, nargs int, missing, differs apply.ConflictKind, insert bool) string {
	n := nargs
	next := func() string { n++; return "$" + strconv.Itoa(n) }
	kind := "'" + missing.String() + "'"
	if len(p.Key) > 0 {
		var b strings.Builder
		for k, i := range p.Key {
			if k > 0 {
				b.WriteString(" AND ")
			}
			fmt.Fprintf(&b, "%s = %s::%s", quoteIdent(p.Targets[i].Name), next(), p.Targets[i].Type)
		}
		kind = fmt.Sprintf("CASE WHEN EXISTS (SELECT 1 FROM %s WHERE %s) THEN '%s' ELSE %s END", tableRef(p.Plan), b.String(), differs, kind)
	}
	pm, pd := next(), next()
	sql := fmt.Sprintf(`WITH w AS (%s RETURNING 1),
	k AS (SELECT %s AS kind WHERE NOT EXISTS (SELECT 1 FROM w)),
	j AS (SELECT kind, CASE kind WHEN '%s' THEN %s::text ELSE %s::text END AS policy FROM k)`, change, kind, differs, pd, pm)
	logAt := n + 1
	sql += ",\n\tl AS (" + strings.TrimPrefix(renderLogFrom(logAt, "j.kind", "j.policy"), " ") + " FROM j WHERE j.policy <> 'error' RETURNING 1)"
	if insert {
		sql += ",\n\ti AS (" + renderInsertJudged(p.Plan, logAt+logParams-2) + ")"
	}
	return sql + "\nSELECT kind, policy FROM j"
}

// renderLogFrom is renderLog with kind and policy taken from expressions,
// so taking 6 parameters from first.
func renderLogFrom(first int, kind, policy string) string {
	p := func(k int) string { return "$" + strconv.Itoa(first+k) }
	return fmt.Sprintf(` INSERT INTO decant.conflicts (pipeline, kind, policy, table_name, key, commit_lsn, xid, commit_time)
	SELECT %s, %s, %s, %s, %s::jsonb, %s::pg_lsn, %s::bigint, %s::timestamptz`,
		p(0), kind, policy, p(1), p(2), p(3), p(4), p(5))
}

// renderInsertJudged inserts the row of parameters first... when the
// judged kind's policy is apply (update_missing).
func renderInsertJudged(p *mapping.Plan, first int) string {
	s := renderInsertIfNone(p, first)
	return strings.Replace(s, "WHERE NOT EXISTS (SELECT 1 FROM w)", "WHERE EXISTS (SELECT 1 FROM j WHERE j.policy = 'apply')", 1)
}

// wholeRowResolving queues c, an update or delete of a whole-row table
// with policies pol, as a judged statement.
func (t *Target) wholeRowResolving(ctx context.Context, txn *source.Txn, p *plan, c *source.Change, pol apply.KindPolicies) error {
	missing, differs := apply.UpdateMissing, apply.UpdateDiffers
	var sql string
	var args [][]byte
	var err error
	if c.Op == source.OpDelete {
		missing, differs = apply.DeleteMissing, apply.DeleteDiffers
		var m mapping.Match
		sql, m = p.shapes.Delete(c)
		args, err = p.appendWhere(t.args[:0], c, m)
	} else {
		sql, args, err = t.updateArgs(p, c)
	}
	if err != nil {
		return err
	}
	nargs := len(args)
	for _, i := range p.Key {
		args = append(args, param(c.Old[i]))
	}
	pm := pol[missing]
	if pm == apply.PolicyApply && !wholeImage(p, c.New) {
		pm = apply.PolicyError // an insert needs the whole row
	}
	args = append(args, []byte(pm.String()), []byte(pol[differs].String()))
	key, err := apply.ConflictKey(p.Plan, c)
	if err != nil {
		return err
	}
	var when []byte
	if !txn.CommitTime.IsZero() {
		when = []byte(txn.CommitTime.UTC().Format(time.RFC3339Nano))
	}
	args = append(args, []byte(t.cfg.Pipeline), []byte(p.Target.String()), key, []byte(txn.Commit.String()),
		[]byte(strconv.FormatUint(txn.Xid, 10)), when)
	insert := c.Op == source.OpUpdate && pm == apply.PolicyApply
	if insert {
		for _, i := range p.Cols {
			args = append(args, param(c.New[i]))
		}
	}
	t.args = args
	sql = judgedSQL(p, sql, nargs, missing, differs, insert)
	info := apply.Origin{Op: c.Op.String(), Table: p.Target, Txn: txn, Expect: -1, Judges: true}
	if err := t.queue(ctx, sql, args, info); err != nil {
		return err
	}
	return t.maybeFlush(ctx)
}

// updateArgs is c's UPDATE and its parameters.
func (t *Target) updateArgs(p *plan, c *source.Change) (string, [][]byte, error) {
	sql, set, m := p.shapes.Update(c)
	args := t.args[:0]
	for _, i := range p.Cols {
		if set[i] {
			args = append(args, param(c.New[i]))
		}
	}
	args, err := p.appendWhere(args, c, m)
	if err != nil {
		return "", nil, err
	}
	for _, col := range p.Fixed {
		args = append(args, param(c.New[col]))
	}
	return sql, args, nil
}

// judged reads a judged statement's row: counts the conflict it resolved,
// or returns the error its policy asks for.
func (t *Target) judged(rr *pgconn.ResultReader) error {
	var err error
	for rr.NextRow() {
		v := rr.Values()
		kind, okK := parseKind(string(v[0]))
		pol, okP := parsePolicy(string(v[1]))
		switch {
		case !okK || !okP:
			err = fmt.Errorf("the target judged an unknown conflict %q %q", v[0], v[1])
		case pol == apply.PolicyError:
			err = apply.ConflictError(kind)
		default:
			t.conflicts[kind][pol]++
		}
	}
	return err
}

func parseKind(s string) (apply.ConflictKind, bool) {
	for _, k := range apply.ConflictKinds() {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

func parsePolicy(s string) (apply.ConflictPolicy, bool) {
	for _, p := range []apply.ConflictPolicy{apply.PolicyError, apply.PolicySkip, apply.PolicyApply} {
		if p.String() == s {
			return p, true
		}
	}
	return 0, false
}
