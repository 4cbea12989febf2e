package verify

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/decant/decant/apply/mysql"
	"github.com/decant/decant/apply/pg"
	"github.com/decant/decant/source"
)

// Repairing (decant resync). With Config.Repair set, Run compares as it
// does to verify (under Config.Snapshot on the source) and, in every span
// that differs, brings the target to the source: rows only the target has
// are deleted, rows only the source has are inserted, and a row both have
// with other values is deleted and inserted again. Deletes name target
// rows by their target values (read back from the target), in a
// transaction of their own committed first; inserts go through
// Repair.Writer, which writes source rows as the stream does (mapping,
// conversions, the target's session settings); on a PostgreSQL target,
// whose differing spans are compared by row hash, the source rows to
// insert are read by key at each flush. Equal spans cost one
// checksum each on a PostgreSQL target; on a MySQL one every span is read,
// as verify reads it.
//
// A table without a key is repaired as a multiset: the source's rows are
// counted by their hash, then each target row takes one of its count or,
// when none is left, is deleted (one duplicate at a time); the source rows
// whose count is left over are inserted. Memory holds a count per distinct
// source row of such a table.
//
// Every batch commits as it is done, so an interrupted repair leaves the
// target part way between its old state and the source's: run again
// against a new snapshot, the comparison finds what is still to do.

// Repair makes Run repair the target.
type Repair struct {
	// Writer opens a writer of source rows into the target, one per
	// worker.
	Writer func(ctx context.Context) (RowWriter, error)
	// Batch is how many rows one target transaction repairs.
	Batch int
	// Progress hears each table planned, each span compared and each
	// table done; nil hears nothing.
	Progress Progress
}

// RowWriter inserts source rows into the target as the stream writes
// them (apply/pg.Target, apply/mysql.Target under apply/migrate).
type RowWriter interface {
	// Insert queues rows of rel, each indexed like rel.Columns.
	Insert(ctx context.Context, rel *source.Relation, rows [][]source.Value) error
	// Commit writes what is queued in one target transaction.
	Commit(ctx context.Context) error
	Close(ctx context.Context)
}

// Progress hears a repair: a table with its source row count (0 when
// unknown), rows compared in a span, and the table finished.
type Progress interface {
	Planned(table source.TableName, rows, bytes int64)
	Copied(table source.TableName, rows, bytes int64)
	Done(table source.TableName)
}

// progress serialises the calls and tells when a table's last span is
// done.
type progress struct {
	mu    sync.Mutex
	p     Progress
	spans map[source.TableName]int
}

func (p *progress) planned(t source.TableName, rows int64, spans int) {
	if p == nil || p.p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.spans[t] = spans
	p.p.Planned(t, rows, 0)
}

func (p *progress) compared(t source.TableName, rows int64) {
	if p == nil || p.p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.p.Copied(t, rows, 0)
	if p.spans[t]--; p.spans[t] == 0 {
		p.p.Done(t)
	}
}

// fixer is one worker's repairs: what is queued, the writer of inserts
// and, on a PostgreSQL target, a session of its own for the deletes (the
// worker's target session streams the span meanwhile).
type fixer struct {
	w      *worker
	t      *table
	writer RowWriter
	conn   *pgx.Conn
	src    *pgx.Conn  // reads the rows to insert by key (hashed.go)
	del    [][][]byte // target values: the key, or a whole row without one
	arrays pg.TextArrays
	keys   [][][]byte // source keys whose rows are to be inserted
	ins    [][]source.Value
	sent   int64 // rows deleted and inserted
}

func (w *worker) fixer(ctx context.Context, t *table) (*fixer, error) {
	if w.fix == nil {
		wr, err := w.cfg.Repair.Writer(ctx)
		if err != nil {
			return nil, err
		}
		w.fix = &fixer{w: w, writer: wr}
	}
	w.fix.t = t
	return w.fix, nil
}

func (f *fixer) close(ctx context.Context) {
	f.writer.Close(ctx)
	for _, c := range []*pgx.Conn{f.conn, f.src} {
		if c != nil {
			c.Close(ctx)
		}
	}
}

// remove queues the deletion of the target row (or of the row with the
// key, for a table with one) whose values vals are.
func (f *fixer) remove(ctx context.Context, vals [][]byte) error {
	var out [][]byte
	if f.t.key == nil {
		out = cloneAll(vals)
	} else {
		out = make([][]byte, len(f.t.key))
		for i, k := range f.t.key {
			out[i] = clone(vals[k])
		}
	}
	f.del = append(f.del, out)
	return f.maybeFlush(ctx)
}

// insert queues the source row whose compared columns vals are; in the
// hashed view, vals hold only its key, and the row is read at the flush.
func (f *fixer) insert(ctx context.Context, vals [][]byte) error {
	if f.t.full != nil {
		key := make([][]byte, len(f.t.key))
		for i, k := range f.t.key {
			key[i] = clone(vals[k])
		}
		f.keys = append(f.keys, key)
	} else {
		f.ins = append(f.ins, sourceRow(f.t, vals))
	}
	return f.maybeFlush(ctx)
}

// sourceRow makes a row of t.rel from the values of t's compared columns.
func sourceRow(t *table, vals [][]byte) []source.Value {
	row := make([]source.Value, len(t.rel.Columns))
	for n, i := range t.cols {
		if vals[n] != nil {
			row[i] = source.Value{Kind: source.ValueText, Data: clone(vals[n])}
		}
	}
	return row
}

func (f *fixer) maybeFlush(ctx context.Context) error {
	if len(f.del)+len(f.keys)+len(f.ins) < f.w.cfg.Repair.Batch {
		return nil
	}
	return f.flush(ctx)
}

// flush commits the queued deletes, then the queued inserts: a row that
// differs is deleted before it is inserted again.
func (f *fixer) flush(ctx context.Context) error {
	if len(f.del) > 0 {
		var err error
		if f.w.cfg.MySQL {
			err = f.deleteMySQL(ctx)
		} else {
			err = f.deletePG(ctx)
		}
		if err != nil {
			return fmt.Errorf("repair target table %s: delete rows: %w", f.t.target, err)
		}
		f.sent += int64(len(f.del))
		f.del = f.del[:0]
	}
	if len(f.keys) > 0 {
		if err := f.fetch(ctx); err != nil {
			return fmt.Errorf("repair target table %s: %w", f.t.target, err)
		}
	}
	if len(f.ins) > 0 {
		if err := f.writer.Insert(ctx, f.t.rel, f.ins); err != nil {
			return fmt.Errorf("repair target table %s: insert rows: %w", f.t.target, err)
		}
		if err := f.writer.Commit(ctx); err != nil {
			return fmt.Errorf("repair target table %s: %w", f.t.target, err)
		}
		f.sent += int64(len(f.ins))
		f.ins = f.ins[:0]
	}
	return nil
}

// Deletes are set-based where the table has a key: one statement per
// batch, whatever its size. A table without one deletes one row at a
// time (one duplicate, named by all its values).

// deleteRowSQL renders the statement deleting one row with the queued
// values (the first found) of a table without a key.
func (t *table) deleteRowSQL(mysqlTarget bool) string {
	from := t.tgtFrom(mysqlTarget)
	var conds []string
	for i, c := range t.tgtCols {
		if mysqlTarget {
			conds = append(conds, c+" <=> ?")
		} else {
			conds = append(conds, "("+c+")::text IS NOT DISTINCT FROM $"+strconv.Itoa(i+1))
		}
	}
	if mysqlTarget {
		return "DELETE FROM " + from + " WHERE " + strings.Join(conds, " AND ") + " LIMIT 1"
	}
	return "DELETE FROM " + from + " WHERE (tableoid, ctid) = (SELECT tableoid, ctid FROM " + from + " WHERE " + strings.Join(conds, " AND ") + " LIMIT 1)"
}

// deleteKeysPG deletes the rows of a PostgreSQL target whose keys the
// parameters hold, one text array per key column (pg.TextArrays), as the
// target's window deletes them.
func (t *table) deleteKeysPG() string {
	return pg.DeleteByKeysSQL(t.tgtFrom(false), t.tgtKey, t.tgtKeyType)
}

// deleteKeysMySQL deletes the rows of a MySQL target with n keys, as the
// target's window deletes them.
func (t *table) deleteKeysMySQL(n int) string {
	return mysql.DeleteByKeysSQL(t.tgtFrom(true), t.tgtKey, n)
}

// deletePG sends the deletes as one transaction: one statement for a
// table with a key, else one pipelined statement per row.
func (f *fixer) deletePG(ctx context.Context) error {
	if f.conn == nil {
		c, err := pg.Connect(ctx, f.w.cfg.Target)
		if err != nil {
			return err
		}
		f.conn = c
	}
	b := &pgconn.Batch{}
	b.ExecParams("BEGIN", nil, nil, nil, nil)
	if f.t.key != nil {
		arrays := f.arrays.Start(len(f.t.key))
		for _, key := range f.del {
			for i, v := range key {
				arrays.Add(i, source.Value{Kind: source.ValueText, Data: v})
			}
		}
		b.ExecParams(f.t.deleteKeysPG(), arrays.Done(), nil, nil, nil)
	} else {
		q := f.t.deleteRowSQL(false)
		for _, args := range f.del {
			b.ExecParams(q, args, nil, nil, nil)
		}
	}
	b.ExecParams("COMMIT", nil, nil, nil, nil)
	_, err := f.conn.PgConn().ExecBatch(ctx, b).ReadAll()
	return pg.Describe(err)
}

// deleteMySQL runs the deletes in one transaction: for a table with a
// key, a statement per maxFetchParams parameters; else one per row.
func (f *fixer) deleteMySQL(ctx context.Context) error {
	tx, err := f.w.run.my.BeginTx(ctx, nil)
	if err != nil {
		return mysql.Describe(err)
	}
	defer tx.Rollback()
	if f.t.key != nil {
		per := max(1, maxFetchParams/len(f.t.key))
		for start := 0; start < len(f.del); start += per {
			keys := f.del[start:min(len(f.del), start+per)]
			args := make([]any, 0, len(keys)*len(f.t.key))
			for _, key := range keys {
				for _, v := range key {
					args = append(args, v)
				}
			}
			if _, err := tx.ExecContext(ctx, f.t.deleteKeysMySQL(len(keys)), args...); err != nil {
				return mysql.Describe(err)
			}
		}
		return mysql.Describe(tx.Commit())
	}
	stmt, err := tx.PrepareContext(ctx, f.t.deleteRowSQL(true))
	if err != nil {
		return mysql.Describe(err)
	}
	defer stmt.Close()
	args := make([]any, 0, len(f.t.tgtCols))
	for _, row := range f.del {
		args = args[:0]
		for _, v := range row {
			if v == nil {
				args = append(args, nil)
			} else {
				args = append(args, v)
			}
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return mysql.Describe(err)
		}
	}
	return mysql.Describe(tx.Commit())
}

// repairKeyless brings a table without a key to the source's multiset.
func (w *worker) repairKeyless(ctx context.Context, t *table) error {
	f, err := w.fixer(ctx, t)
	if err != nil {
		return err
	}
	counts := map[[2]uint64]int64{}
	if err := w.eachSource(ctx, t, func(h [2]uint64, _ [][]byte) error { counts[h]++; return nil }); err != nil {
		return err
	}
	if err := w.eachTarget(ctx, t, func(h [2]uint64, vals [][]byte) error {
		if counts[h] > 0 {
			counts[h]--
			return nil
		}
		return f.remove(ctx, vals)
	}); err != nil {
		return err
	}
	if err := w.eachSource(ctx, t, func(h [2]uint64, vals [][]byte) error {
		if counts[h] <= 0 {
			return nil
		}
		counts[h]--
		return f.insert(ctx, vals)
	}); err != nil {
		return err
	}
	return f.flush(ctx)
}

// eachSource calls fn with every source row of a table without a key and
// its hash.
func (w *worker) eachSource(ctx context.Context, t *table, fn func(h [2]uint64, vals [][]byte) error) error {
	rows, err := w.sourceRows(ctx, t, span{})
	if err != nil {
		return err
	}
	err = eachRow(rows, t.src, fn)
	if cerr := rows.Close(); cerr != nil {
		return fmt.Errorf("read source table %s: %w", t.def.Name, cerr)
	}
	if err != nil {
		return fmt.Errorf("repair table %s: %w", t.def.Name, err)
	}
	return nil
}

// eachTarget is eachSource for the target table.
func (w *worker) eachTarget(ctx context.Context, t *table, fn func(h [2]uint64, vals [][]byte) error) error {
	rows, err := w.targetRows(ctx, t, span{})
	if err != nil {
		return err
	}
	err = eachRow(rows, t.tgt, fn)
	if cerr := rows.Close(); cerr != nil {
		return fmt.Errorf("read target table %s: %w", t.target, cerr)
	}
	if err != nil {
		return fmt.Errorf("repair table %s: %w", t.def.Name, err)
	}
	return nil
}

func eachRow(rows rawRows, norm normal, fn func(h [2]uint64, vals [][]byte) error) error {
	var r row
	for rows.Next() {
		vals := rows.Values()
		if err := r.fill(vals, norm, nil, nil); err != nil {
			return err
		}
		if err := fn(rowHash(&r), vals); err != nil {
			return err
		}
	}
	return nil
}

// rowHash is the pair of hashes sumRows adds up, for a row filled
// without a key.
func rowHash(r *row) [2]uint64 {
	return [2]uint64{r.hash, hash64(append(r.buf, 0x5a)) * 0x9e3779b97f4a7c15}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func cloneAll(vals [][]byte) [][]byte {
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = clone(v)
	}
	return out
}

// importSnapshot makes a source session read as of the snapshot: a
// read-only repeatable-read transaction that adopted it.
func importSnapshot(ctx context.Context, conn *pgx.Conn, snapshot string) error {
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("begin source transaction: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapshot, "'", "''")+"'"); err != nil {
		return fmt.Errorf("import snapshot %s on the source (it ends with the session that exported it): %w", snapshot, err)
	}
	return nil
}
