package pg

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/decant/decant/apply"
	"github.com/decant/decant/mapping"
	"github.com/decant/decant/source"
)

// Set-based statements for a window of net changes (apply.Net): per
// table, one DELETE for the keys it removes, one UPDATE per set of
// changed columns, and the inserts as one COPY (or a few INSERTs). The
// values travel as one text array per column, unnested on the server and
// cast to the columns' types there, so a statement's shape depends on the
// columns it touches, not on how many rows: it is prepared once. Each
// statement must affect exactly as many rows as it has keys.

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

// FlushQueued ends the COPY run gathered outside the window.
func (w netWriter) FlushQueued(ctx context.Context) error { return w.t.endRun(ctx) }

func (w netWriter) WriteNet(ctx context.Context, nt *apply.NetTable[*plan]) error {
	return w.t.sendNetTable(ctx, nt)
}

func (t *Target) sendNetTable(ctx context.Context, nt *apply.NetTable[*plan]) error {
	if err := t.netDeletes(ctx, nt); err != nil {
		return err
	}
	if err := t.netUpdates(ctx, nt); err != nil {
		return err
	}
	return t.netInserts(ctx, nt)
}

func (t *Target) netDeletes(ctx context.Context, nt *apply.NetTable[*plan]) error {
	p := nt.Plan
	arrays := t.arrays.Start(len(p.Key))
	n := 0
	var last *source.Txn
	for i := range nt.Rows {
		r := &nt.Rows[i]
		if r.Kind != apply.NetDelete && r.Kind != apply.NetReplace {
			continue
		}
		for k, col := range p.Key {
			arrays.Add(k, r.Key[col])
		}
		n, last = n+1, r.Txn
	}
	if n == 0 {
		return nil
	}
	if p.netDelete == "" {
		p.netDelete = renderNetDelete(p.Plan)
	}
	return t.queueNet(ctx, p.netDelete, arrays.Done(), apply.Origin{Op: "delete", Table: p.Target, Txn: last, Expect: n})
}

// netUpdates sends one UPDATE per set of columns the window's updates
// changed (key columns are never among them: a key change is a delete
// and an insert).
func (t *Target) netUpdates(ctx context.Context, nt *apply.NetTable[*plan]) error {
	p := nt.Plan
	groups := t.masks[:0]
	for i := range nt.Rows {
		r := &nt.Rows[i]
		if r.Kind != apply.NetUpdate {
			continue
		}
		mask := p.setMask(r.Row, t.mask[:0])
		t.mask = mask
		g := -1
		for j := range groups {
			if string(groups[j].mask) == string(mask) {
				g = j
				break
			}
		}
		if g < 0 {
			groups = append(groups, updateGroup{mask: append([]byte(nil), mask...)})
			g = len(groups) - 1
		}
		groups[g].rows = append(groups[g].rows, i)
	}
	t.masks = groups
	for _, g := range groups {
		set := g.setCols(p)
		arrays := t.arrays.Start(len(p.Key) + len(set))
		var last *source.Txn
		for _, i := range g.rows {
			r := &nt.Rows[i]
			for k, col := range p.Key {
				arrays.Add(k, r.Key[col])
			}
			for k, col := range set {
				arrays.Add(len(p.Key)+k, r.Row[col])
			}
			last = r.Txn
		}
		sql, ok := p.netUpdate[string(g.mask)]
		if !ok {
			sql = renderNetUpdate(p.Plan, set)
			p.netUpdate[string(g.mask)] = sql
		}
		if err := t.queueNet(ctx, sql, arrays.Done(), apply.Origin{Op: "update", Table: p.Target, Txn: last, Expect: len(g.rows)}); err != nil {
			return err
		}
	}
	return nil
}

// updateGroup is the window's updates of one table that set the same
// columns (mask, one byte per source column).
type updateGroup struct {
	mask []byte
	rows []int // indexes in NetTable.Rows
}

func (g updateGroup) setCols(p *plan) []int {
	var cols []int
	for i, m := range g.mask {
		if m == 1 {
			cols = append(cols, i)
		}
	}
	return cols
}

// setMask marks the written non-key columns that row sets.
func (p *plan) setMask(row []source.Value, mask []byte) []byte {
	for i, v := range row {
		var set byte
		if v.Kind != source.ValueUnchanged && p.Targets[i].Name != "" && !p.isKey[i] {
			set = 1
		}
		mask = append(mask, set)
	}
	return mask
}

func (t *Target) netInserts(ctx context.Context, nt *apply.NetTable[*plan]) error {
	p := nt.Plan
	for i := range nt.Rows {
		r := &nt.Rows[i]
		if r.Kind != apply.NetInsert && r.Kind != apply.NetReplace {
			continue
		}
		if t.run.plan == nil {
			t.run.start(p, r.Txn)
			t.run.net = true
		}
		t.run.txn = r.Txn
		if err := t.run.add(r.Row); err != nil {
			return apply.ChangeError(r.Txn, &source.Change{Op: source.OpInsert, Rel: p.Rel}, err)
		}
		if len(t.run.buf) >= copyBytes {
			if err := t.endRun(ctx); err != nil {
				return err
			}
		}
	}
	return t.endRun(ctx)
}

// queueNet queues a set-based statement; its failure replays the target
// transaction change by change (apply.Replay).
func (t *Target) queueNet(ctx context.Context, sql string, args [][]byte, info apply.Origin) error {
	info.Net = true
	if err := t.queue(ctx, sql, args, info); err != nil {
		return t.replay.Fail(info.Fail(err))
	}
	return t.maybeFlush(ctx)
}

// renderNetDelete deletes the rows whose keys the arrays hold.
func renderNetDelete(p *mapping.Plan) string {
	cols, types := keyColumns(p)
	return DeleteByKeysSQL(tableRef(p), cols, types)
}

// DeleteByKeysSQL deletes from table from the rows whose key columns cols
// (quoted; types as casts spell them) hold the values of text arrays $1,
// ... (TextArrays): a one-column key is compared with = ANY, which an
// index scan takes as it is; a longer key, or an array-typed one whose
// values = ANY would take for elements, is joined with the arrays
// unnested. apply/verify's repair deletes with it too.
func DeleteByKeysSQL(from string, cols, types []string) string {
	if len(cols) == 1 && !strings.HasSuffix(types[0], "]") {
		return fmt.Sprintf("DELETE FROM %s WHERE %s = ANY($1::%s[])", from, cols[0], types[0])
	}
	return fmt.Sprintf("DELETE FROM %s AS x USING %s WHERE %s", from, unnestList(len(cols)), keyJoinCols(cols, types))
}

// renderNetUpdate sets columns set of the rows whose keys the arrays
// hold: parameters are the key arrays, then one array per set column.
// With nothing to set, a key column is set to itself, so that the
// statement still counts the rows it found.
func renderNetUpdate(p *mapping.Plan, set []int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "UPDATE %s AS x SET ", tableRef(p))
	for k, col := range set {
		if k > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = v.c%d::%s", quoteIdent(p.Targets[col].Name), len(p.Key)+k+1, p.Targets[col].Type)
	}
	if len(set) == 0 {
		name := quoteIdent(p.Targets[p.Key[0]].Name)
		fmt.Fprintf(&b, "%s = x.%s", name, name)
	}
	fmt.Fprintf(&b, " FROM %s WHERE %s", unnestList(len(p.Key)+len(set)), keyJoin(p))
	return b.String()
}

// unnestList is "unnest($1::text[], ...) AS v(c1, ...)" over n arrays.
// Text arrays unnest one level whatever the column's type (an array
// column's values would otherwise flatten into their elements); each
// value is cast to its column's type where it is used.
func unnestList(n int) string {
	var b strings.Builder
	b.WriteString("unnest(")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i) + "::text[]")
	}
	b.WriteString(") AS v(")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString("c" + strconv.Itoa(i))
	}
	b.WriteByte(')')
	return b.String()
}

// keyJoin matches the target row x with the key columns v.c1... .
func keyJoin(p *mapping.Plan) string { return keyJoinCols(keyColumns(p)) }

// keyColumns is p's key columns, quoted, and their types.
func keyColumns(p *mapping.Plan) (cols, types []string) {
	for _, col := range p.Key {
		cols = append(cols, quoteIdent(p.Targets[col].Name))
		types = append(types, p.Targets[col].Type)
	}
	return cols, types
}

func keyJoinCols(cols, types []string) string {
	var b strings.Builder
	for k, col := range cols {
		if k > 0 {
			b.WriteString(" AND ")
		}
		fmt.Fprintf(&b, "x.%s = v.c%d::%s", col, k+1, types[k])
	}
	return b.String()
}

// TextArrays builds text-format array parameters, one per column, reusing
// their buffers from one statement to the next (a batch encodes its
// parameters when a statement is queued). Other set-based writers of a
// PostgreSQL target (apply/verify's repair) use it too.
type TextArrays struct {
	bufs [][]byte
}

// Start empties the arrays and makes them n.
func (a *TextArrays) Start(n int) *TextArrays {
	for len(a.bufs) < n {
		a.bufs = append(a.bufs, nil)
	}
	a.bufs = a.bufs[:n]
	for i := range a.bufs {
		a.bufs[i] = append(a.bufs[i][:0], '{')
	}
	return a
}

// Add appends v to array i: NULL, or the value double-quoted with
// backslash and double quote escaped, which array input takes for any
// element text.
func (a *TextArrays) Add(i int, v source.Value) {
	b := a.bufs[i]
	if len(b) > 1 {
		b = append(b, ',')
	}
	if v.Kind == source.ValueNull {
		a.bufs[i] = append(b, "NULL"...)
		return
	}
	b = append(b, '"')
	start := 0
	for j, c := range v.Data {
		if c == '"' || c == '\\' {
			b = append(b, v.Data[start:j]...)
			b = append(b, '\\', c)
			start = j + 1
		}
	}
	b = append(b, v.Data[start:]...)
	a.bufs[i] = append(b, '"')
}

// Done closes the arrays and returns them, as parameters; they are the
// TextArrays' buffers until the next Start.
func (a *TextArrays) Done() [][]byte {
	for i := range a.bufs {
		a.bufs[i] = append(a.bufs[i], '}')
	}
	return a.bufs
}
