package mysql

import (
	"context"
	"strconv"
	"strings"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Set-based statements for a window of net changes (apply.Net): per
// table, DELETE ... WHERE key IN (...) for the keys it removes, one
// multi-table UPDATE per set of changed columns, joining the table with
// a derived table of the new values, and the inserts as multi-row
// INSERTs. Each statement holds at most runRows rows and about half the
// batch byte limit (so half of max_allowed_packet at most), and must
// affect exactly as many rows as it has keys: the DSN's clientFoundRows
// makes an UPDATE count the rows it matched, changed or not.
//
// The derived table (SELECT ? AS k1, ? AS c1 UNION ALL SELECT ?, ? ...,
// or on MariaDB UNION ALL VALUES (?, ?), ...) types each column from its literals, the driver's interpolated
// parameters, as a single-row UPDATE's SET col = ? does: its strings are
// in the connection's character set, and each value is converted to its
// column's type only as it is assigned, by the same conversion as the
// literal of the single-row statement. The key columns of a compacted
// table compare their values alone (mapping.NetCompact), so the join
// finds rows as the single-row WHERE does, by the primary key's index.

// sendNet writes the window: table by table, in the order of their first
// change, its deletes, then its updates, then its inserts. Keys are
// distinct within a table's window and the key is the table's only unique
// constraint (mapping.NetCompact), so no order among them can fail.
func (t *Target) sendNet(ctx context.Context) error { return t.net.Send(ctx, netWriter{t}) }

// sendNetOf writes the part of the window of p's target table (under p,
// or another relation of the same table), before a change of p that the
// window did not take (mapping.NetMode: nothing between tables needs the
// rest first).
func (t *Target) sendNetOf(ctx context.Context, p *plan) error {
	return t.net.SendTable(ctx, p.Target, netWriter{t})
}

// netWriter is the Target as the window writes through it.
type netWriter struct{ t *Target }

// FlushQueued ends the multi-row statement gathered outside the window.
func (w netWriter) FlushQueued(ctx context.Context) error { return w.t.endRun(ctx) }

func (w netWriter) WriteNet(ctx context.Context, nt *apply.NetTable[*plan]) error {
	return w.t.sendNetTable(ctx, nt)
}

// sendNetTable queues one table's part of the window as set-based
// statements, sending the batch whenever it is full.
func (t *Target) sendNetTable(ctx context.Context, nt *apply.NetTable[*plan]) error {
	limit := netLimit{rows: runRows, bytes: t.byteLimit() / 2}
	var sent error // what sending the batch returned (flush: already as it should be)
	emit := func(s stmt) error {
		t.batch.addStmt(s)
		sent = t.maybeFlush(ctx)
		return sent
	}
	err := nt.Plan.netStmts(nt.Rows, limit, emit)
	if err != nil && err != sent {
		// A value the column cannot hold, of the key's last change or of
		// an earlier one merged into it.
		err = t.replay.Fail(err)
	}
	return err
}

// netLimit bounds one set-based statement.
type netLimit struct{ rows, bytes int }

// netStmts renders a table's net rows as statements, in the order they
// must run (deletes, updates by set of columns, inserts), and hands each
// to emit. A value the target column cannot hold fails as an *apply.Error
// naming the transaction of the key's last change.
func (p *plan) netStmts(rows []apply.NetRow, limit netLimit, emit func(stmt) error) error {
	if err := p.netDeletes(rows, limit, emit); err != nil {
		return err
	}
	if err := p.netUpdates(rows, limit, emit); err != nil {
		return err
	}
	return p.netInserts(rows, limit, emit)
}

// netBuilder collects the rows of one statement at a time.
type netBuilder struct {
	limit   netLimit
	info    apply.Origin
	head    func(n int) string // the statement for n rows
	emit    func(stmt) error
	width   int  // values per row
	left    int  // rows still to come
	prepare bool // full statements are prepared (prepared.go)
	args    []any
	n       int
	bytes   int
}

// next is where the next row's values go: b.args, sized for the rows of
// the statement when it is new.
func (b *netBuilder) next() []any {
	if b.args == nil {
		b.args = make([]any, 0, min(b.left, b.limit.rows)*b.width)
	}
	return b.args
}

// add takes a row whose values were appended to b.args from index from,
// sending the statement once it is full.
func (b *netBuilder) add(txn *source.Txn, from int) error {
	b.n++
	b.left--
	b.bytes += argBytes(b.args[from:])
	b.info.Txn = txn
	if b.n >= b.limit.rows || b.bytes >= b.limit.bytes {
		return b.send()
	}
	return nil
}

// send emits the rows collected so far as one statement.
func (b *netBuilder) send() error {
	if b.n == 0 {
		return nil
	}
	info := b.info
	info.Expect, info.Net = b.n, true
	// A full statement of a kind that is prepared (a multi-row INSERT or
	// DELETE; an UPDATE's derived table would take its columns' types
	// from the first row's parameters) goes as a prepared statement.
	err := b.emit(stmt{sql: b.head(b.n), args: b.args, info: info, prepare: b.prepare && b.n == runRows})
	b.args, b.n, b.bytes = nil, 0, 0 // the args now belong to the batch
	return err
}

// fail names a value the column cannot hold.
func (b *netBuilder) fail(txn *source.Txn, err error) error {
	return &apply.Error{Op: b.info.Op, Table: b.info.Table, Xid: txn.Xid, Commit: txn.Commit, Err: err}
}

func (p *plan) netDeletes(rows []apply.NetRow, limit netLimit, emit func(stmt) error) error {
	b := netBuilder{limit: limit, emit: emit, info: apply.Origin{Op: "delete", Table: p.Rel.Table()}, head: p.netDeleteSQL,
		width: len(p.Key), prepare: true, left: count(rows, apply.NetDelete, apply.NetReplace)}
	for i := range rows {
		r := &rows[i]
		if r.Kind != apply.NetDelete && r.Kind != apply.NetReplace {
			continue
		}
		from := len(b.args)
		var err error
		if b.args, err = p.convertRow(b.next(), r.Key, p.Key); err != nil {
			return b.fail(r.Txn, err)
		}
		if err := b.add(r.Txn, from); err != nil {
			return err
		}
	}
	return b.send()
}

// netUpdates sends the updates grouped by the set of columns they change
// (key columns are never among them: a key change is a delete and an
// insert), the groups in the order of their first row.
func (p *plan) netUpdates(rows []apply.NetRow, limit netLimit, emit func(stmt) error) error {
	var groups []updateGroup
	index := map[string]int{}
	mask := make([]byte, len(p.Rel.Columns))
	for i := range rows {
		r := &rows[i]
		if r.Kind != apply.NetUpdate {
			continue
		}
		p.setMask(r.Row, mask)
		g, ok := index[string(mask)]
		if !ok {
			g = len(groups)
			index[string(mask)] = g
			groups = append(groups, updateGroup{set: p.setCols(mask)})
		}
		groups[g].rows = append(groups[g].rows, i)
	}
	for _, g := range groups {
		set := g.set
		b := netBuilder{limit: limit, emit: emit, info: apply.Origin{Op: "update", Table: p.Rel.Table()},
			head:  func(n int) string { return renderNetUpdate(p.Plan, set, n, p.maria) },
			width: len(p.Key) + len(set), left: len(g.rows)}
		for _, i := range g.rows {
			r := &rows[i]
			from := len(b.args)
			var err error
			if b.args, err = p.convertRow(b.next(), r.Key, p.Key); err == nil {
				b.args, err = p.convertRow(b.args, r.Row, set)
			}
			if err != nil {
				return b.fail(r.Txn, err)
			}
			if err := b.add(r.Txn, from); err != nil {
				return err
			}
		}
		if err := b.send(); err != nil {
			return err
		}
	}
	return nil
}

// updateGroup is the window's updates of one table that set the same
// columns.
type updateGroup struct {
	set  []int // the columns set, in source order
	rows []int // indexes in the window's rows
}

// setMask marks (1) the written non-key columns that row sets.
func (p *plan) setMask(row []source.Value, mask []byte) {
	for i, v := range row {
		mask[i] = 0
		if v.Kind != source.ValueUnchanged && p.conv[i] != nil && !p.isKey[i] {
			mask[i] = 1
		}
	}
}

func (p *plan) setCols(mask []byte) []int {
	var cols []int
	for _, i := range p.Cols {
		if mask[i] == 1 {
			cols = append(cols, i)
		}
	}
	return cols
}

func (p *plan) netInserts(rows []apply.NetRow, limit netLimit, emit func(stmt) error) error {
	b := netBuilder{limit: limit, emit: emit, info: apply.Origin{Op: "insert", Table: p.Rel.Table()}, head: p.insertSQL,
		width: len(p.Cols), prepare: true, left: count(rows, apply.NetInsert, apply.NetReplace)}
	for i := range rows {
		r := &rows[i]
		if r.Kind != apply.NetInsert && r.Kind != apply.NetReplace {
			continue
		}
		from := len(b.args)
		var err error
		if b.args, err = p.convertRow(b.next(), r.Row, p.Cols); err != nil {
			return b.fail(r.Txn, err)
		}
		if err := b.add(r.Txn, from); err != nil {
			return err
		}
	}
	return b.send()
}

// count is how many of rows are of either kind.
func count(rows []apply.NetRow, a, b apply.NetKind) int {
	n := 0
	for i := range rows {
		if rows[i].Kind == a || rows[i].Kind == b {
			n++
		}
	}
	return n
}

// insertSQL is the multi-row INSERT of n rows.
func (p *plan) insertSQL(n int) string {
	return repeatMarks(p.insertHead, p.rowMarks, n, "")
}

// netDeleteSQL deletes n rows by key.
func (p *plan) netDeleteSQL(n int) string {
	if p.netDeleteHead == "" {
		p.netDeleteHead, p.netKeyMarks = renderNetDeleteHead(p.Plan)
	}
	return repeatMarks(p.netDeleteHead, p.netKeyMarks, n, ")")
}

// repeatMarks is head, n times marks separated by ", ", then tail.
func repeatMarks(head, marks string, n int, tail string) string {
	var b strings.Builder
	b.Grow(len(head) + n*(len(marks)+2) + len(tail))
	b.WriteString(head)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(marks)
	}
	b.WriteString(tail)
	return b.String()
}

// renderNetDeleteHead is "DELETE FROM t WHERE `k` IN (" with marks "?"
// for a one-column key, "... WHERE (`a`, `b`) IN (" with "(?, ?)" for a
// composite one: InnoDB takes either as ranges on the primary key.
func renderNetDeleteHead(p *mapping.Plan) (head, marks string) {
	return deleteByKeysHead(quoteTable(p.Target), quotedKey(p))
}

// deleteByKeysHead is renderNetDeleteHead for table and key columns cols,
// quoted.
func deleteByKeysHead(table string, cols []string) (head, marks string) {
	if len(cols) == 1 {
		return "DELETE FROM " + table + " WHERE " + cols[0] + " IN (", "?"
	}
	return tupleInHead(table, cols)
}

// DeleteByKeysSQL deletes from table the rows with n keys, of the key
// columns cols (table and columns quoted), as a window's deletes do;
// apply/verify's repair deletes with it too.
func DeleteByKeysSQL(table string, cols []string, n int) string {
	head, marks := deleteByKeysHead(table, cols)
	return repeatMarks(head, marks, n, ")")
}

// renderNetUpdate sets columns set of n rows found by key: the parameters
// are, row by row, the key values and then the set values, in a derived
// table v whose columns are k1... (the key) and c1... (the set columns).
// Its first row names them; on MariaDB the others follow as a table value
// constructor (UNION ALL VALUES (...), ...), which MariaDB parses in half
// the time of as many SELECTs; MySQL 8 before 8.0.19 has none. STRAIGHT_JOIN
// reads v first and finds each row by the key's index: a scan of the table
// instead would lock every row it passes until the transaction ends. With
// nothing to set, a key column is set to itself, so that the statement
// still counts the rows it found.
func renderNetUpdate(p *mapping.Plan, set []int, n int, maria bool) string {
	var b strings.Builder
	b.WriteString("UPDATE (SELECT ")
	width := len(p.Key) + len(set)
	for k := range p.Key {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString("? AS k" + strconv.Itoa(k+1))
	}
	for k := range set {
		b.WriteString(", ? AS c" + strconv.Itoa(k+1))
	}
	marks := "?" + strings.Repeat(", ?", width-1)
	switch {
	case n == 1:
	case maria:
		b.WriteString(" UNION ALL VALUES ")
		for i := 1; i < n; i++ {
			if i > 1 {
				b.WriteString(", ")
			}
			b.WriteString("(" + marks + ")")
		}
	default:
		for i := 1; i < n; i++ {
			b.WriteString(" UNION ALL SELECT " + marks)
		}
	}
	b.WriteString(") AS v STRAIGHT_JOIN " + quoteTable(p.Target) + " AS x ON ")
	for k, col := range p.Key {
		if k > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("x." + quoteIdent(p.Targets[col].Name) + " = v.k" + strconv.Itoa(k+1))
	}
	b.WriteString(" SET ")
	for k, col := range set {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x." + quoteIdent(p.Targets[col].Name) + " = v.c" + strconv.Itoa(k+1))
	}
	if len(set) == 0 {
		name := "x." + quoteIdent(p.Targets[p.Key[0]].Name)
		b.WriteString(name + " = " + name)
	}
	return b.String()
}
